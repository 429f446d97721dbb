//===- BooleanAbi.cpp - i1 kernel arguments as one byte ------- -*- C++ -*-===//
//
// In memory a boolean is one byte per element: numpy's bool, the plan's
// buffer sizes (BufferAttr::getSizeInBytes rounds i1 up to a byte) and the
// reference lowering's scalar `store i1` all agree. A vectorized kernel,
// however, would load and store `vector<16xi1>`, which LLVM packs into bits.
// So before any lowering, every i1 argument of a scratch kernel becomes i8:
// an input is converted back to i1 with `cmpi ne 0` (fused into its
// consumers), an output receives `extui` of the i1 result. The vector code
// then only ever touches i8 memory, and the in-memory format no longer
// depends on the lowering.
//
// The same holds inside a kernel: a boolean tensor that fusion leaves in
// memory (a comparison read through a slice or a transpose, say) would be
// written as packed bits by a vector store and read back a byte per element
// by a scalar loop or a differently shaped vector. So after fusion every i1
// tensor left becomes i8 too (widenBooleanTensors): generics read `byte != 0`
// and write `extui`, every other op only changes its element type.
//
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

bool isBoolean(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.getElementType().isInteger(1);
}

/// An elementwise linalg.generic from `input` to a new tensor of the same
/// shape and element type `to`; `body` computes the element.
Value convertElements(OpBuilder &b, Location loc, Value input, Type to,
                      function_ref<Value(OpBuilder &, Location, Value)> body) {
  auto type = cast<RankedTensorType>(input.getType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), to);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{input}, ValueRange{init},
      ArrayRef<AffineMap>{identity, identity}, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args[0]));
      });
  return generic.getResult(0);
}

} // namespace

LogicalResult widenBooleanArguments(func::FuncOp kernel, llvm::StringRef name) {
  MLIRContext *ctx = kernel.getContext();
  Type i8 = IntegerType::get(ctx, 8), i1 = IntegerType::get(ctx, 1);
  Block &entry = kernel.getBody().front();
  OpBuilder b(ctx);
  SmallVector<Type> argTypes(kernel.getArgumentTypes());
  bool changed = false;
  for (auto [index, arg] : llvm::enumerate(entry.getArguments())) {
    if (!isBoolean(arg.getType()))
      continue;
    changed = true;
    Location loc = arg.getLoc();
    if (auto tensor = dyn_cast<RankedTensorType>(arg.getType())) {
      // Input: bytes in, i1 for the body (`byte != 0`, like numpy).
      arg.setType(tensor.clone(i8));
      b.setInsertionPointToStart(&entry);
      Value asBool = convertElements(
          b, loc, arg, i1, [&](OpBuilder &nb, Location nl, Value byte) {
            Value zero = arith::ConstantIntOp::create(nb, nl, i8, 0);
            return arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne, byte,
                                         zero)
                .getResult();
          });
      arg.replaceAllUsesExcept(asBool, asBool.getDefiningOp());
      argTypes[index] = arg.getType();
      continue;
    }
    // Output: every write must be a materialization of a whole i1 tensor,
    // which then writes its zero-extension instead.
    auto memref = cast<MemRefType>(arg.getType());
    for (Operation *user : arg.getUsers()) {
      auto write = dyn_cast<bufferization::MaterializeInDestinationOp>(user);
      if (!write || write.getDest() != arg ||
          !isa<RankedTensorType>(write.getSource().getType()))
        return user->emitError("kernel '")
               << name << "' writes its i1 output #" << index << " with '"
               << user->getName()
               << "'; i1 outputs must be written by "
                  "bufferization.materialize_in_destination";
    }
    arg.setType(MemRefType::get(memref.getShape(), i8));
    for (Operation *user : llvm::to_vector(arg.getUsers())) {
      auto write = cast<bufferization::MaterializeInDestinationOp>(user);
      b.setInsertionPoint(write);
      Value bytes = convertElements(
          b, write.getLoc(), write.getSource(), i8,
          [&](OpBuilder &nb, Location nl, Value bit) {
            return arith::ExtUIOp::create(nb, nl, i8, bit).getResult();
          });
      write.getSourceMutable().assign(bytes);
    }
    argTypes[index] = arg.getType();
  }
  if (changed)
    kernel.setFunctionType(
        FunctionType::get(ctx, argTypes, kernel.getResultTypes()));
  return success();
}

namespace {

RankedTensorType asBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.getElementType().isInteger(1))
    return {};
  return tensor.clone(IntegerType::get(type.getContext(), 8));
}

/// Block arguments of `generic` that are now i8 but still i1: made i8, with
/// `byte != 0` for their uses; yielded i1 values of i8 outputs: `extui`.
void widenGenericBody(linalg::GenericOp generic) {
  Block &body = generic.getRegion().front();
  MLIRContext *ctx = generic.getContext();
  Type i8 = IntegerType::get(ctx, 8), i1 = IntegerType::get(ctx, 1);
  OpBuilder b(ctx);
  for (OpOperand &operand : generic->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    BlockArgument arg = body.getArgument(operand.getOperandNumber());
    if (!type || !type.getElementType().isInteger(8) ||
        !arg.getType().isInteger(1))
      continue;
    arg.setType(i8);
    b.setInsertionPointToStart(&body);
    Value zero = arith::ConstantIntOp::create(b, arg.getLoc(), i8, 0);
    Value bit = arith::CmpIOp::create(b, arg.getLoc(), arith::CmpIPredicate::ne,
                                      arg, zero);
    arg.replaceAllUsesExcept(bit, bit.getDefiningOp());
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  b.setInsertionPoint(yield);
  for (auto [index, result] : llvm::enumerate(generic->getResults())) {
    Value yielded = yield.getOperand(index);
    if (!cast<RankedTensorType>(result.getType())
             .getElementType()
             .isInteger(8) ||
        yielded.getType() != i1)
      continue;
    yield->setOperand(index,
                      arith::ExtUIOp::create(b, yield.getLoc(), i8, yielded));
  }
}

} // namespace

LogicalResult widenBooleanTensors(func::FuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  Type i8 = IntegerType::get(ctx, 8);
  // Named ops with boolean results (a transpose the reference lowering did
  // not generalize) become generics, whose bodies can convert.
  SmallVector<linalg::LinalgOp> named;
  kernel.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::FillOp>(op) &&
        llvm::any_of(op->getResultTypes(),
                     [](Type t) { return bool(asBytes(t)); }))
      named.push_back(op);
  });
  IRRewriter rewriter(ctx);
  for (linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, op)))
      return op->emitOpError("has boolean results and cannot be generalized");
  }
  SmallVector<linalg::GenericOp> generics;
  WalkResult walk = kernel.walk([&](Operation *op) -> WalkResult {
    bool changed = false;
    for (Value r : op->getResults())
      if (RankedTensorType bytes = asBytes(r.getType())) {
        r.setType(bytes);
        changed = true;
      }
    if (auto fill = dyn_cast<linalg::FillOp>(op); fill && changed) {
      OpBuilder b(fill);
      Value value = fill.getInputs()[0];
      if (value.getType().isInteger(1))
        fill.getInputsMutable()[0].assign(
            arith::ExtUIOp::create(b, fill.getLoc(), i8, value));
      // The region of a named op is built from its operand types.
      OpBuilder rb(fill);
      auto replacement = linalg::FillOp::create(
          rb, fill.getLoc(), fill.getInputs()[0], fill.getOutputs()[0]);
      fill->replaceAllUsesWith(replacement);
      fill->erase();
      return WalkResult::skip();
    }
    // A 0-d boolean crossing a kernel boundary (a scalar compare before a
    // collective): its element goes in as a byte and comes out as `!= 0`.
    if (auto elements = dyn_cast<tensor::FromElementsOp>(op);
        elements && changed) {
      OpBuilder b(elements);
      for (OpOperand &o : elements->getOpOperands())
        if (o.get().getType().isInteger(1))
          o.set(arith::ExtUIOp::create(b, elements.getLoc(), i8, o.get()));
      return WalkResult::advance();
    }
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      Value r = extract.getResult();
      if (r.getType().isInteger(1) &&
          getElementTypeOrSelf(extract.getTensor().getType()).isInteger(8)) {
        r.setType(i8);
        OpBuilder b(ctx);
        b.setInsertionPointAfter(extract);
        Value zero = arith::ConstantIntOp::create(b, extract.getLoc(), i8, 0);
        Value bit = arith::CmpIOp::create(b, extract.getLoc(),
                                          arith::CmpIPredicate::ne, r, zero);
        r.replaceAllUsesExcept(bit, bit.getDefiningOp());
      }
      return WalkResult::advance();
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      generics.push_back(generic);
    else if (changed && isa<linalg::LinalgOp>(op))
      return op->emitOpError("has a boolean tensor result; only generics and "
                             "fills may produce one in a kernel");
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (linalg::GenericOp generic : generics)
    widenGenericBody(generic);
  return success();
}

} // namespace monarch::codegen::detail
