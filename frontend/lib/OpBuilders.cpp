//===- OpBuilders.cpp - IR building blocks of the tensor ops ----*- C++ -*-===//
//
// See OpBuilders.h.
//
//===----------------------------------------------------------------------===//

#include "OpBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace monarch::frontend {

bool isFloat(Type t) { return isa<FloatType>(t); }

/// Converts element `v` to `to` (float widths, int <-> float, bool).
mlir::Value convertElement(OpBuilder &b, Location loc, mlir::Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (isFloat(from) && isFloat(to)) {
    if (llvm::cast<FloatType>(from).getWidth() <
        llvm::cast<FloatType>(to).getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (llvm::cast<FloatType>(from).getWidth() >
        llvm::cast<FloatType>(to).getWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // f16 <-> bf16: through f32.
    mlir::Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (isFloat(from) && to.isInteger(1)) {
    mlir::Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(from, 0.0));
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
  }
  if (isFloat(from))
    return arith::FPToSIOp::create(b, loc, to, v);
  if (from.isInteger(1) && isFloat(to))
    return arith::UIToFPOp::create(b, loc, to, v);
  if (isFloat(to))
    return arith::SIToFPOp::create(b, loc, to, v);
  if (from.isInteger(1))
    return arith::ExtUIOp::create(b, loc, to, v);
  if (to.isInteger(1)) {
    mlir::Value zero =
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(from, 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  return arith::TruncIOp::create(b, loc, to, v);
}

mlir::Value constantLike(OpBuilder &b, Location loc, Type t, double value) {
  if (isFloat(t))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(t, static_cast<int64_t>(value)));
}

std::vector<int64_t> shapeOf(mlir::Value v) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

/// `tensor.empty` of `shape` x `elem`.
mlir::Value empty(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elem) {
  return tensor::EmptyOp::create(b, loc, shape, elem);
}

mlir::Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elem, double value) {
  mlir::Value init = empty(b, loc, shape, elem);
  mlir::Value c = constantLike(b, loc, elem, value);
  return linalg::FillOp::create(b, loc, ValueRange{c}, ValueRange{init})
      .getResult(0);
}

/// Drops the dimensions of `v` not in `keep` (all of extent 1) with a
/// reduction over them (`-0.0 + x == x`): unlike `tensor.collapse_shape`,
/// `linalg.reduce` has the sharding interface the partitioner needs.
mlir::Value dropUnitDims(OpBuilder &b, Location loc, mlir::Value v,
                         ArrayRef<bool> keep) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  Type elem = type.getElementType();
  SmallVector<int64_t> shape, dims;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (keep[d])
      shape.push_back(type.getDimSize(d));
    else
      dims.push_back(d);
  }
  mlir::Value acc = filled(b, loc, shape, elem, isFloat(elem) ? -0.0 : 0.0);
  auto op = linalg::ReduceOp::create(
      b, loc, ValueRange{v}, ValueRange{acc}, dims,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        mlir::Value r;
        if (isFloat(elem))
          r = arith::AddFOp::create(nb, l, args[0], args[1]);
        else if (elem.isInteger(1))
          r = arith::OrIOp::create(nb, l, args[0], args[1]);
        else
          r = arith::AddIOp::create(nb, l, args[0], args[1]);
        linalg::YieldOp::create(nb, l, r);
      });
  return op.getResult(0);
}

/// Generic op over an iteration space of `outShape`; `maps` are the input
/// indexing maps (the output uses the identity).
mlir::Value generic(OpBuilder &b, Location loc, ValueRange inputs,
                    ArrayRef<AffineMap> maps, ArrayRef<int64_t> outShape,
                    Type outElem, BodyFn body) {
  int64_t rank = static_cast<int64_t>(outShape.size());
  mlir::Value init = empty(b, loc, outShape, outElem);
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{RankedTensorType::get(outShape, outElem)}, inputs,
      ValueRange{init}, all, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        mlir::Value r = body(nb, l, args.drop_back());
        linalg::YieldOp::create(nb, l, r);
      });
  return op.getResult(0);
}

mlir::Value insertUnitDims(OpBuilder &b, Location loc, mlir::Value v,
                           ArrayRef<int64_t> outShape, ArrayRef<bool> keep) {
  SmallVector<AffineExpr> exprs;
  for (size_t d = 0; d < outShape.size(); ++d)
    if (keep[d])
      exprs.push_back(b.getAffineDimExpr(d));
  AffineMap map = AffineMap::get(outShape.size(), 0, exprs, b.getContext());
  Type elem = llvm::cast<RankedTensorType>(v.getType()).getElementType();
  return generic(b, loc, ValueRange{v}, {map}, outShape, elem,
                 [](OpBuilder &, Location, ValueRange e) { return e[0]; });
}

} // namespace monarch::frontend
