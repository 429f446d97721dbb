//===- BooleanAbi.cpp - i1 kernel arguments as one byte per element -*- C++
//-*-===//
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
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

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

} // namespace monarch::codegen::detail
