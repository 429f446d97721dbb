//===- KernelProfile.cpp - Time each loop nest of a kernel ---- -*- C++ -*-===//
//
// KernelCompileOptions::profile (monarch-kernels --profile,
// MONARCH_KERNEL_PROFILE): every linalg op at the top level of a CPU kernel,
// after fusion and before its schedule, so one loop nest of the final code,
// is bracketed by two calls into the library's hook object:
//
//   %t = func.call @monarch_prof_now() : () -> i64
//   <the op: its tiles, packs and BLAS call>
//   func.call @monarch_prof_add(%counts, %c<i>, %t)
//
// `monarch_prof_add` adds the elapsed nanoseconds and one call to slot i of
// the kernel's `<symbol>_prof_counts` (i64 pairs). `<symbol>_prof_ops`
// describes the slots, one line each: op, the user's file:line:col, operand
// shapes, floating-point operations and bytes of operands per call, tab
// separated. Both are exported, so whoever loads the library reads them
// (KernelRuntime.h, LoadedKernelLibrary::profile). Calls to an external
// function are not moved across by MLIR or LLVM, so the time between two
// calls is the op's.
//
//===----------------------------------------------------------------------===//
#include "BlasCalls.h"
#include "KernelPipelines.h"

#include "monarch/IR/OpCost.h"
#include "monarch/IR/SourceLocation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

/// Arithmetic ops per iteration of `op`'s body (contractions: 2).
std::string shapeText(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shaped.getShape(), os, "x");
  if (shaped.getRank() == 0)
    os << "0-d";
  os << ":";
  shaped.getElementType().print(os);
  return s;
}

/// One line of `<symbol>_prof_ops` for `op`.
std::string describe(linalg::LinalgOp op) {
  std::string name = op->getName().getStringRef().str();
  if (isa<linalg::GenericOp>(op)) {
    bool reduction = op.getNumReductionLoops() > 0;
    name = linalg::isaContractionOpInterface(op) ? "generic:contraction"
           : scatterRowLoop(op)                  ? "generic:scatter"
           : reduction                           ? "generic:reduction"
                                                 : "generic:elementwise";
  }
  if (isMarkedForBlas(op))
    name += " (blas)";
  std::string location = formatFileLoc(op.getLoc());
  if (location.empty())
    location = "-";
  std::string shapes;
  int64_t bytes = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!shapes.empty())
      shapes += op.isDpsInit(&operand) &&
                        operand.getOperandNumber() == op.getNumDpsInputs()
                    ? " -> "
                    : ", ";
    shapes += shapeText(operand.get().getType());
    if (auto shaped = dyn_cast<ShapedType>(operand.get().getType()))
      if (shaped.hasStaticShape() && shaped.getElementType().isIntOrFloat())
        bytes += shaped.getNumElements() *
                 std::max<int64_t>(
                     1, shaped.getElementType().getIntOrFloatBitWidth() / 8);
  }
  int64_t flops = monarch::arithmeticOps(op);
  return name + "\t" + location + "\t" + shapes + "\t" + std::to_string(flops) +
         "\t" + std::to_string(bytes) + "\n";
}

} // namespace

LogicalResult instrumentForProfile(ModuleOp scratch, llvm::StringRef symbol) {
  auto kernel = scratch.lookupSymbol<func::FuncOp>(kImplName);
  if (!kernel || kernel.isExternal())
    return success();
  markBlasContractions(scratch); // so that the table says which call BLAS
  SmallVector<linalg::LinalgOp> ops;
  for (Operation &op : kernel.getBody().front())
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      ops.push_back(linalgOp);
  if (ops.empty())
    return success();

  MLIRContext *ctx = scratch.getContext();
  OpBuilder b(ctx);
  Location loc = kernel.getLoc();
  std::string table;
  for (linalg::LinalgOp op : ops)
    table += describe(op);
  table.push_back('\0');

  // The counts and the description, exported.
  b.setInsertionPointToStart(scratch.getBody());
  auto i64 = b.getI64Type();
  auto countsType =
      MemRefType::get({2 * static_cast<int64_t>(ops.size())}, i64);
  std::string countsName = (symbol + "_prof_counts").str();
  memref::GlobalOp::create(
      b, loc, countsName, b.getStringAttr("public"), countsType,
      DenseElementsAttr::get(RankedTensorType::get(countsType.getShape(), i64),
                             b.getI64IntegerAttr(0).getValue()),
      /*constant=*/false, /*alignment=*/IntegerAttr());
  auto i8 = b.getI8Type();
  auto opsType = MemRefType::get({static_cast<int64_t>(table.size())}, i8);
  SmallVector<APInt> chars;
  for (char c : table)
    chars.push_back(APInt(8, static_cast<uint8_t>(c)));
  memref::GlobalOp::create(
      b, loc, (symbol + "_prof_ops").str(), b.getStringAttr("public"), opsType,
      DenseElementsAttr::get(RankedTensorType::get(opsType.getShape(), i8),
                             chars),
      /*constant=*/true, /*alignment=*/IntegerAttr());
  auto nowFn = func::FuncOp::create(b, loc, "monarch_prof_now",
                                    b.getFunctionType({}, {i64}));
  nowFn.setPrivate();
  auto addFn = func::FuncOp::create(
      b, loc, "monarch_prof_add",
      b.getFunctionType({countsType, b.getIndexType(), i64}, {}));
  addFn.setPrivate();

  b.setInsertionPointToStart(&kernel.getBody().front());
  Value counts = memref::GetGlobalOp::create(b, loc, countsType, countsName);
  for (auto [index, op] : llvm::enumerate(ops)) {
    b.setInsertionPoint(op);
    Value start = func::CallOp::create(b, op.getLoc(), nowFn).getResult(0);
    b.setInsertionPointAfter(op);
    Value slot = arith::ConstantIndexOp::create(b, op.getLoc(), index);
    func::CallOp::create(b, op.getLoc(), addFn,
                         ValueRange{counts, slot, start});
  }
  return success();
}

} // namespace monarch::codegen::detail
