//===- TensorOps.cpp - Structured tensor ops of the TraceBuilder -*- C++
//-*-===//
//
// Matmul (`linalg.matmul` / `linalg.batch_matmul`), reductions
// (`linalg.reduce`; mean scales inside the reduction), softmax, reshape
// (unit dimensions with ops that shard; other reshapes through
// `tensor.collapse_shape` / `tensor.expand_shape`, which the partitioner
// cannot shard) and transpose (`linalg.transpose`). Shapes are checked
// before any IR is built, so an error leaves the module unchanged.
//
//===----------------------------------------------------------------------===//

#include "OpBuilders.h"
#include "TraceBuilderImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

using namespace mlir;

namespace monarch::frontend {

/// The element type of `v`'s record.
static Type elemOf(const ValueRecord &r) {
  return getElementTypeOrSelf(r.value.getType());
}

Result<Value> TraceBuilder::matmul(Value a, Value b, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> ra = I.get(a, loc);
  if (!ra)
    return ra.error();
  Result<ValueRecord *> rb = I.get(b, loc);
  if (!rb)
    return rb.error();
  if ((*ra)->scalar || (*rb)->scalar)
    return I.error(loc, "matmul (@) needs tensors, got " + I.typeStr(**ra) +
                            " @ " + I.typeStr(**rb));
  std::vector<int64_t> sa = shapeOf((*ra)->value), sb = shapeOf((*rb)->value);
  std::string shapes = shapeStr(sa) + " @ " + shapeStr(sb);
  Type ea = elemOf(**ra), eb = elemOf(**rb);
  if (ea != eb)
    return I.error(loc, "dtype mismatch in matmul: " + I.typeStr(**ra) + " @ " +
                            I.typeStr(**rb));
  if (ea.isInteger(1))
    return I.error(loc, "unsupported op: matmul of bool tensors");
  bool batched = sa.size() == 3 && sb.size() == 3;
  if (!(sa.size() == 2 && sb.size() == 2) && !batched)
    return I.error(loc, "matmul (@) supports 2-D @ 2-D and batched 3-D @ 3-D "
                        "tensors, got " +
                            shapes + " (reshape first)");
  size_t k = sa.size() - 1;
  if (sa[k] != sb[k - 1])
    return I.error(loc, "matmul shape mismatch: " + shapes + ": " +
                            std::to_string(sa[k]) +
                            " != " + std::to_string(sb[k - 1]));
  if (batched && sa[0] != sb[0])
    return I.error(loc, "batched matmul shape mismatch: " + shapes +
                            ": batch sizes differ");
  Result<std::string> mesh = I.placement({a, b}, loc);
  if (!mesh)
    return mesh.error();
  Result<mlir::Value> va = I.materialize(a, *mesh, loc);
  if (!va)
    return va.error();
  Result<mlir::Value> vb = I.materialize(b, *mesh, loc);
  if (!vb)
    return vb.error();
  Location l = I.loc(loc);
  std::vector<int64_t> out;
  if (batched)
    out = {sa[0], sa[1], sb[2]};
  else
    out = {sa[0], sb[1]};
  mlir::Value init = filled(I.b, l, out, ea, 0.0);
  mlir::Value result;
  if (batched)
    result = linalg::BatchMatmulOp::create(I.b, l, ValueRange{*va, *vb},
                                           ValueRange{init})
                 .getResult(0);
  else
    result =
        linalg::MatmulOp::create(I.b, l, ValueRange{*va, *vb}, ValueRange{init})
            .getResult(0);
  return I.add(result, *mesh, Dist{}, false);
}

/// Reduces `in` over the sorted `axes` with `kind`; mean scales each element
/// by 1/n inside the reduction (one op: shard-partition mishandles a rank-0
/// reduction followed by more work).
static mlir::Value buildReduce(OpBuilder &b, Location l, mlir::Value in,
                               ArrayRef<int64_t> axes, ReduceOp kind) {
  auto type = llvm::cast<RankedTensorType>(in.getType());
  Type elem = type.getElementType();
  bool fp = isFloat(elem);
  SmallVector<int64_t> out;
  int64_t count = 1;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (llvm::is_contained(axes, d))
      count *= type.getDimSize(d);
    else
      out.push_back(type.getDimSize(d));
  }
  double init = 0.0;
  if (kind == ReduceOp::Max)
    init = fp ? -std::numeric_limits<double>::infinity()
              : static_cast<double>(std::numeric_limits<int32_t>::min());
  if (kind == ReduceOp::Min)
    init = fp ? std::numeric_limits<double>::infinity()
              : static_cast<double>(std::numeric_limits<int32_t>::max());
  mlir::Value acc = filled(b, l, out, elem, init);
  auto op = linalg::ReduceOp::create(
      b, l, ValueRange{in}, ValueRange{acc}, axes,
      [&](OpBuilder &nb, Location bl, ValueRange args) {
        mlir::Value x = args[0], y = args[1], r;
        switch (kind) {
        case ReduceOp::Mean:
          if (fp)
            x = arith::MulFOp::create(nb, bl, x,
                                      constantLike(nb, bl, elem, 1.0 / count));
          [[fallthrough]];
        case ReduceOp::Sum:
          r = fp ? arith::AddFOp::create(nb, bl, x, y).getResult()
                 : arith::AddIOp::create(nb, bl, x, y).getResult();
          break;
        case ReduceOp::Max:
          r = fp ? arith::MaximumFOp::create(nb, bl, x, y).getResult()
                 : arith::MaxSIOp::create(nb, bl, x, y).getResult();
          break;
        case ReduceOp::Min:
          r = fp ? arith::MinimumFOp::create(nb, bl, x, y).getResult()
                 : arith::MinSIOp::create(nb, bl, x, y).getResult();
          break;
        }
        linalg::YieldOp::create(nb, bl, r);
      });
  return op.getResult(0);
}

/// Normalizes `axes` (negative from the end; empty: all) for rank `rank`.
static Result<std::vector<int64_t>>
normalizeAxes(TraceBuilder::Impl &I, std::vector<int64_t> axes, int64_t rank,
              const std::vector<int64_t> &shape, const SourceLoc &l) {
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  std::set<int64_t> seen;
  for (int64_t &a : axes) {
    int64_t orig = a;
    if (a < 0)
      a += rank;
    if (a < 0 || a >= rank)
      return I.error(l, "axis " + std::to_string(orig) +
                            " is out of range for a tensor of shape " +
                            shapeStr(shape));
    if (!seen.insert(a).second)
      return I.error(l, "axis " + std::to_string(orig) + " repeats");
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

Result<Value> TraceBuilder::reduce(ReduceOp kind, Value x,
                                   std::vector<int64_t> axes, bool keepDims,
                                   SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.error();
  if ((*r)->scalar)
    return I.error(loc, "reductions need a tensor, got a scalar");
  Type elem = elemOf(**r);
  if (elem.isInteger(1))
    return I.error(loc, "unsupported op: reduction of a bool tensor");
  if (kind == ReduceOp::Mean && !isFloat(elem))
    return I.error(loc, "unsupported op: mean of " + I.typeStr(**r) +
                            " (cast to a float type first)");
  std::vector<int64_t> shape = shapeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(shape.size());
  Result<std::vector<int64_t>> norm =
      normalizeAxes(I, std::move(axes), rank, shape, loc);
  if (!norm)
    return norm.error();
  Result<std::string> mesh = I.placement({x}, loc);
  if (!mesh)
    return mesh.error();
  Result<mlir::Value> in = I.materialize(x, *mesh, loc);
  if (!in)
    return in.error();
  Location l = I.loc(loc);
  mlir::Value out = buildReduce(I.b, l, *in, *norm, kind);
  if (keepDims) {
    SmallVector<int64_t> kept;
    SmallVector<bool> keep;
    for (int64_t d = 0; d < rank; ++d) {
      bool reduced = llvm::is_contained(*norm, d);
      kept.push_back(reduced ? 1 : shape[d]);
      keep.push_back(!reduced);
    }
    out = insertUnitDims(I.b, l, out, kept, keep);
  }
  return I.add(out, *mesh, Dist{}, false);
}

Result<Value> TraceBuilder::softmax(Value x, int64_t axis, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.error();
  if ((*r)->scalar || !isFloat(elemOf(**r)))
    return I.error(loc, "softmax needs a float tensor, got " + I.typeStr(**r));
  std::vector<int64_t> shape = shapeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(shape.size());
  Result<std::vector<int64_t>> norm =
      normalizeAxes(I, {axis}, rank, shape, loc);
  if (!norm)
    return norm.error();
  int64_t a = (*norm)[0];
  Result<std::string> mesh = I.placement({x}, loc);
  if (!mesh)
    return mesh.error();
  Result<mlir::Value> in = I.materialize(x, *mesh, loc);
  if (!in)
    return in.error();
  Location l = I.loc(loc);
  Type elem = elemOf(I.values[x.id]);
  // Reduced operands are read through a map that skips `a`.
  SmallVector<AffineExpr> skip;
  for (int64_t d = 0; d < rank; ++d)
    if (d != a)
      skip.push_back(I.b.getAffineDimExpr(d));
  AffineMap id = I.b.getMultiDimIdentityMap(rank);
  AffineMap reduced = AffineMap::get(rank, 0, skip, &I.ctx);
  mlir::Value m = buildReduce(I.b, l, *in, {a}, ReduceOp::Max);
  mlir::Value e = generic(I.b, l, ValueRange{*in, m}, {id, reduced}, shape,
                          elem, [&](OpBuilder &nb, Location bl, ValueRange v) {
                            mlir::Value d =
                                arith::SubFOp::create(nb, bl, v[0], v[1]);
                            return math::ExpOp::create(nb, bl, d).getResult();
                          });
  mlir::Value s = buildReduce(I.b, l, e, {a}, ReduceOp::Sum);
  mlir::Value y =
      generic(I.b, l, ValueRange{e, s}, {id, reduced}, shape, elem,
              [&](OpBuilder &nb, Location bl, ValueRange v) {
                return arith::DivFOp::create(nb, bl, v[0], v[1]).getResult();
              });
  return I.add(y, *mesh, Dist{}, false);
}

Result<Value> TraceBuilder::reshape(Value x, std::vector<int64_t> shape,
                                    SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.error();
  if ((*r)->scalar)
    return I.error(loc, "reshape needs a tensor, got a scalar");
  std::vector<int64_t> from = shapeOf((*r)->value);
  int64_t total = std::accumulate(from.begin(), from.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0)
        return I.error(loc, "reshape: only one dimension can be -1");
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return I.error(loc, "reshape: negative dimension in " + shapeStr(shape));
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0 && known > 0 && total % known == 0)
    shape[inferred] = total / known;
  int64_t count = std::accumulate(shape.begin(), shape.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  if (count != total || (inferred >= 0 && shape[inferred] < 0))
    return I.error(loc, "cannot reshape a tensor of shape " + shapeStr(from) +
                            " (" + std::to_string(total) +
                            " elements) into shape " + shapeStr(shape));
  if (shape == from)
    return x;
  Result<std::string> mesh = I.placement({x}, loc);
  if (!mesh)
    return mesh.error();
  Result<mlir::Value> in = I.materialize(x, *mesh, loc);
  if (!in)
    return in.error();
  Location l = I.loc(loc);
  Type elem = elemOf(I.values[x.id]);
  // Adding or removing unit dimensions only: ops that shard.
  auto squeezed = [](const std::vector<int64_t> &s) {
    std::vector<int64_t> out;
    for (int64_t d : s)
      if (d != 1)
        out.push_back(d);
    return out;
  };
  if (squeezed(from) == squeezed(shape)) {
    SmallVector<bool> keepFrom;
    for (int64_t d : from)
      keepFrom.push_back(d != 1);
    mlir::Value v = *in;
    if (llvm::is_contained(keepFrom, false))
      v = dropUnitDims(I.b, l, v, keepFrom);
    SmallVector<bool> keepTo;
    for (int64_t d : shape)
      keepTo.push_back(d != 1);
    if (llvm::is_contained(keepTo, false))
      v = insertUnitDims(I.b, l, v, shape, keepTo);
    return I.add(v, *mesh, Dist{}, false);
  }
  // Controller code is partitioned by upstream passes, which cannot shard
  // tensor.collapse_shape / expand_shape: say so at the user's line.
  if (!mesh->empty())
    return I.error(loc, "unsupported: reshape of " + shapeStr(from) + " into " +
                            shapeStr(shape) +
                            " in a compiled function (only adding or "
                            "removing size-1 dimensions is supported there); "
                            "reshape inside an actor endpoint instead");
  auto reassoc = [](size_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank == 0)
      return groups;
    ReassociationIndices all;
    for (size_t i = 0; i < rank; ++i)
      all.push_back(static_cast<int64_t>(i));
    groups.push_back(all);
    return groups;
  };
  // Through a 1-D tensor (or rank 0 when there is one element and either
  // side has rank 0).
  mlir::Value v = *in;
  bool viaScalar = from.empty() || shape.empty();
  if (from.size() != 1 || viaScalar) {
    SmallVector<int64_t> flat;
    if (!viaScalar)
      flat.push_back(total);
    v = tensor::CollapseShapeOp::create(
        I.b, l, RankedTensorType::get(flat, elem), v,
        viaScalar ? SmallVector<ReassociationIndices>{} : reassoc(from.size()));
  }
  if (shape.size() != 1 || viaScalar) {
    if (!(viaScalar && shape.empty()))
      v = tensor::ExpandShapeOp::create(
          I.b, l, RankedTensorType::get(shape, elem), v,
          viaScalar ? SmallVector<ReassociationIndices>{}
                    : reassoc(shape.size()));
  }
  return I.add(v, *mesh, Dist{}, false);
}

Result<Value> TraceBuilder::transpose(Value x, std::vector<int64_t> perm,
                                      SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.error();
  if ((*r)->scalar)
    return I.error(loc, "transpose needs a tensor, got a scalar");
  std::vector<int64_t> from = shapeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(from.size());
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  std::vector<int64_t> sorted = perm;
  for (int64_t &p : sorted)
    if (p < 0)
      p += rank;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(rank);
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    return I.error(loc, "transpose: " + shapeStr(perm) +
                            " is not a permutation of the dimensions of a "
                            "tensor of shape " +
                            shapeStr(from));
  for (int64_t &p : perm)
    if (p < 0)
      p += rank;
  if (perm == iota)
    return x;
  Result<std::string> mesh = I.placement({x}, loc);
  if (!mesh)
    return mesh.error();
  Result<mlir::Value> in = I.materialize(x, *mesh, loc);
  if (!in)
    return in.error();
  Location l = I.loc(loc);
  std::vector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(from[p]);
  mlir::Value init = empty(I.b, l, out, elemOf(I.values[x.id]));
  auto op = linalg::TransposeOp::create(I.b, l, *in, init, perm);
  return I.add(op.getResult()[0], *mesh, Dist{}, false);
}

} // namespace monarch::frontend
