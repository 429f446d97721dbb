//===- TensorOps.cpp - Structured tensor ops ------------------ -*- C++ -*-===//
//
// Matmul (`linalg.matmul` / `linalg.batch_matmul`), reductions
// (`linalg.reduce`; mean scales inside the reduction), softmax, reshape
// (unit dimensions with ops that shard; other reshapes through
// `tensor.collapse_shape` / `tensor.expand_shape`, which monarch-partition
// runs on whole values) and transpose (`linalg.transpose`). Shapes are checked
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
#include <cctype>
#include <limits>
#include <map>
#include <numeric>
#include <set>

using namespace mlir;

namespace monarch::frontend {

/// The element type of `v`'s record.
static Type elemOf(const ValueRecord &r) {
  return getElementTypeOrSelf(r.value.getType());
}

/// Where `operands` compute (their mesh, or the function's) and each of
/// them placed there.
struct Placed {
  std::string mesh;
  SmallVector<mlir::Value> values;
};
static Result<Placed> placeOperands(TraceBuilder::Impl &I,
                                    const std::vector<Value> &operands,
                                    const SourceLoc &loc) {
  Result<std::string> mesh = I.placement(operands, loc);
  if (!mesh)
    return mesh.status();
  Placed placed{*mesh, {}};
  for (Value v : operands) {
    Result<mlir::Value> in = I.materialize(v, *mesh, loc);
    if (!in)
      return in.status();
    placed.values.push_back(*in);
  }
  return placed;
}

/// `a @ b` with numpy's rules for every rank: a 1-D operand gains a unit
/// dimension (removed from the result), batch dimensions broadcast. One
/// linalg.generic contraction over (batch..., m, n, k), which upstream
/// partitioning shards like a matmul (k split: partial sums).
/// `acc + x * y` (`x * y` without `acc`): the body of a contraction.
static mlir::Value multiplyAdd(OpBuilder &b, Location l, mlir::Value x,
                               mlir::Value y, mlir::Value acc, bool fp) {
  mlir::Value prod = fp ? arith::MulFOp::create(b, l, x, y).getResult()
                        : arith::MulIOp::create(b, l, x, y).getResult();
  if (!acc)
    return prod;
  return fp ? arith::AddFOp::create(b, l, acc, prod).getResult()
            : arith::AddIOp::create(b, l, acc, prod).getResult();
}

Result<Value> TraceBuilder::contract(Value a, Value b, SourceLoc loc) {
  Impl &I = *pimpl;
  std::vector<int64_t> sa = shapeOf(I.values[a.id].value),
                       sb = shapeOf(I.values[b.id].value);
  std::string shapes = shapeStr(sa) + " @ " + shapeStr(sb);
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA)
    sa.insert(sa.begin(), 1);
  if (vecB)
    sb.push_back(1);
  int64_t m = sa[sa.size() - 2], kA = sa.back(), kB = sb[sb.size() - 2],
          n = sb.back();
  if (kA != kB)
    return I.error(loc,
                   "matmul shape mismatch: " + shapes + ": " +
                       std::to_string(kA) + " != " + std::to_string(kB),
                   ErrorKind::Shape);
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2),
      bb(sb.begin(), sb.end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  std::vector<int64_t> batch(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    int64_t x = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    int64_t y = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    if (x != y && x != 1 && y != 1)
      return I.error(
          loc, "matmul cannot broadcast the batch dimensions of " + shapes,
          ErrorKind::Shape);
    batch[i] = x == 1 ? y : x;
  }
  Result<Placed> placed = placeOperands(I, {a, b}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *va = &placed->values[0], *vb = &placed->values[1];
  Location l = I.loc(loc);
  Type elem = getElementTypeOrSelf(va->getType());
  // Loops: batch..., m, n, k.
  int64_t rank = static_cast<int64_t>(nb) + 3;
  int64_t dm = nb, dn = nb + 1, dk = nb + 2;
  // An operand's map: its batch dimensions aligned right (size-1 ones that
  // broadcast dropped first), then its two matrix dimensions.
  auto operand = [&](mlir::Value v, const std::vector<int64_t> &bdims, bool vec,
                     bool isA, AffineMap &map) {
    std::vector<int64_t> shape = shapeOf(v);
    SmallVector<bool> keep(shape.size(), true);
    SmallVector<AffineExpr> exprs;
    size_t offset = nb - bdims.size();
    for (size_t i = 0; i < bdims.size(); ++i) {
      if (bdims[i] != batch[offset + i]) {
        keep[i] = false;
        continue;
      }
      exprs.push_back(I.b.getAffineDimExpr(offset + i));
    }
    if (isA) {
      if (vec) {
        exprs.push_back(I.b.getAffineDimExpr(dk));
      } else {
        exprs.push_back(I.b.getAffineDimExpr(dm));
        exprs.push_back(I.b.getAffineDimExpr(dk));
      }
    } else {
      if (vec) {
        exprs.push_back(I.b.getAffineDimExpr(dk));
      } else {
        exprs.push_back(I.b.getAffineDimExpr(dk));
        exprs.push_back(I.b.getAffineDimExpr(dn));
      }
    }
    if (llvm::is_contained(keep, false))
      v = dropUnitDims(I.b, l, v, keep);
    map = AffineMap::get(rank, 0, exprs, &I.ctx);
    return v;
  };
  AffineMap mapA, mapB;
  mlir::Value inA = operand(*va, ba, vecA, true, mapA);
  mlir::Value inB = operand(*vb, bb, vecB, false, mapB);
  std::vector<int64_t> outShape(batch);
  SmallVector<AffineExpr> outExprs;
  for (size_t i = 0; i < nb; ++i)
    outExprs.push_back(I.b.getAffineDimExpr(i));
  if (!vecA) {
    outShape.push_back(m);
    outExprs.push_back(I.b.getAffineDimExpr(dm));
  }
  if (!vecB) {
    outShape.push_back(n);
    outExprs.push_back(I.b.getAffineDimExpr(dn));
  }
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[dk] = utils::IteratorType::reduction;
  SmallVector<AffineMap> maps = {mapA, mapB,
                                 AffineMap::get(rank, 0, outExprs, &I.ctx)};
  // Unused loops (m for a 1-D a, n for a 1-D b) are removed from the space.
  SmallVector<int64_t> unused;
  if (vecA)
    unused.push_back(dm);
  if (vecB)
    unused.push_back(dn);
  if (!unused.empty()) {
    llvm::SmallBitVector drop(rank);
    for (int64_t d : unused)
      drop.set(d);
    for (AffineMap &map : maps)
      map = compressDims(map, drop);
    SmallVector<utils::IteratorType> kept;
    for (int64_t d = 0; d < rank; ++d)
      if (!drop.test(d))
        kept.push_back(iterators[d]);
    iterators = kept;
  }
  mlir::Value init = filled(I.b, l, outShape, elem, 0.0);
  bool fp = isFloat(elem);
  auto op = linalg::GenericOp::create(
      I.b, l, TypeRange{init.getType()}, ValueRange{inA, inB}, ValueRange{init},
      maps, iterators, [&](OpBuilder &nb2, Location bl, ValueRange args) {
        linalg::YieldOp::create(
            nb2, bl, multiplyAdd(nb2, bl, args[0], args[1], args[2], fp));
      });
  return I.add(op.getResult(0), *mesh, Dist{}, false);
}

/// The dtype a contraction of `a` and `b` of different element types
/// computes in, as numpy promotes: the wider float; float32 stands in for
/// float64 where numpy widens further (int32 with a float, float16 with
/// bfloat16).
static DType promotedForContraction(TraceBuilder::Impl &I, const ValueRecord &a,
                                    const ValueRecord &b) {
  Type ea = elemOf(a), eb = elemOf(b);
  if (isFloat(ea) && isFloat(eb) &&
      ea.getIntOrFloatBitWidth() != eb.getIntOrFloatBitWidth())
    return I
        .argTypeOf(ea.getIntOrFloatBitWidth() > eb.getIntOrFloatBitWidth()
                       ? a.value
                       : b.value)
        .dtype;
  return DType::F32;
}

/// `a` and `b` cast to `to`.
static Result<std::pair<Value, Value>>
castBoth(TraceBuilder &t, Value a, Value b, DType to, const SourceLoc &loc) {
  Result<Value> ca = t.cast(a, to, loc);
  if (!ca)
    return ca.status();
  Result<Value> cb = t.cast(b, to, loc);
  if (!cb)
    return cb.status();
  return std::make_pair(*ca, *cb);
}

/// The two operands of a contraction (`what`: "matmul (@)" or "einsum"),
/// refused at the user's line when one is a scalar or boolean.
static Result<std::pair<ValueRecord *, ValueRecord *>>
contractionOperands(TraceBuilder::Impl &I, Value a, Value b,
                    const std::string &what, const std::string &between,
                    const std::string &boolName, const SourceLoc &loc) {
  Result<ValueRecord *> ra = I.get(a, loc);
  if (!ra)
    return ra.status();
  Result<ValueRecord *> rb = I.get(b, loc);
  if (!rb)
    return rb.status();
  if ((*ra)->scalar || (*rb)->scalar)
    return I.error(loc, what + " needs tensors, got " + I.typeStr(**ra) +
                            between + I.typeStr(**rb));
  if (elemOf(**ra).isInteger(1) || elemOf(**rb).isInteger(1))
    return I.error(loc, "unsupported op: " + boolName + " of bool tensors",
                   ErrorKind::Unsupported);
  return std::make_pair(*ra, *rb);
}

Result<Value> TraceBuilder::matmul(Value a, Value b, SourceLoc loc) {
  Impl &I = *pimpl;
  auto records =
      contractionOperands(I, a, b, "matmul (@)", " @ ", "matmul", loc);
  if (!records)
    return records.status();
  auto [ra, rb] = *records;
  std::vector<int64_t> sa = shapeOf(ra->value), sb = shapeOf(rb->value);
  std::string shapes = shapeStr(sa) + " @ " + shapeStr(sb);
  Type ea = elemOf(*ra), eb = elemOf(*rb);
  if (ea != eb) {
    auto both = castBoth(*this, a, b, promotedForContraction(I, *ra, *rb), loc);
    if (!both)
      return both.status();
    return matmul(both->first, both->second, loc);
  }
  if (sa.empty() || sb.empty())
    return I.error(loc,
                   "matmul (@) needs tensors of rank 1 or more, got " + shapes);
  bool batched = sa.size() == 3 && sb.size() == 3 && sa[0] == sb[0];
  if (!(sa.size() == 2 && sb.size() == 2) && !batched)
    return contract(a, b, loc);
  size_t k = sa.size() - 1;
  if (sa[k] != sb[k - 1])
    return I.error(loc,
                   "matmul shape mismatch: " + shapes + ": " +
                       std::to_string(sa[k]) +
                       " != " + std::to_string(sb[k - 1]),
                   ErrorKind::Shape);
  if (batched && sa[0] != sb[0])
    return I.error(loc,
                   "batched matmul shape mismatch: " + shapes +
                       ": batch sizes differ",
                   ErrorKind::Shape);
  Result<Placed> placed = placeOperands(I, {a, b}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *va = &placed->values[0], *vb = &placed->values[1];
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

Result<Value> TraceBuilder::einsum(Value a, Value b, const std::string &labelsA,
                                   const std::string &labelsB,
                                   const std::string &labelsOut,
                                   SourceLoc loc) {
  Impl &I = *pimpl;
  auto records = contractionOperands(I, a, b, "einsum", " and ", "einsum", loc);
  if (!records)
    return records.status();
  auto [ra, rb] = *records;
  Type ea = elemOf(*ra), eb = elemOf(*rb);
  std::vector<int64_t> sa = shapeOf(ra->value), sb = shapeOf(rb->value);
  std::string spec = labelsA + "," + labelsB + "->" + labelsOut;
  // Loops: the result's labels, then the summed ones in order of first use.
  std::string loops;
  std::map<char, int64_t> size;
  auto take = [&](const std::string &labels,
                  const std::vector<int64_t> &shape) -> Status {
    if (labels.size() != shape.size())
      return I.error(loc,
                     "einsum '" + spec + "': " + std::to_string(labels.size()) +
                         " labels for an operand of shape " + shapeStr(shape),
                     ErrorKind::Shape);
    for (size_t i = 0; i < labels.size(); ++i) {
      char c = labels[i];
      if (!std::isalpha(static_cast<unsigned char>(c)) || labels.find(c) != i)
        return I.error(loc, "einsum '" + spec + "': label '" +
                                std::string(1, c) +
                                "' is not a letter or is repeated");
      auto [it, fresh] = size.emplace(c, shape[i]);
      if (!fresh && it->second != shape[i])
        return I.error(loc,
                       "einsum '" + spec + "': label '" + std::string(1, c) +
                           "' has sizes " + std::to_string(it->second) +
                           " and " + std::to_string(shape[i]),
                       ErrorKind::Shape);
    }
    return Status::ok();
  };
  if (Status st = take(labelsA, sa); !st)
    return st;
  if (Status st = take(labelsB, sb); !st)
    return st;
  std::vector<int64_t> outShape;
  for (size_t i = 0; i < labelsOut.size(); ++i) {
    char c = labelsOut[i];
    if (!size.count(c) || labelsOut.find(c) != i)
      return I.error(loc, "einsum '" + spec + "': output label '" +
                              std::string(1, c) +
                              "' is repeated or in neither operand");
    outShape.push_back(size[c]);
    loops.push_back(c);
  }
  for (char c : labelsA + labelsB)
    if (loops.find(c) == std::string::npos)
      loops.push_back(c);
  if (ea != eb) {
    auto both = castBoth(*this, a, b, promotedForContraction(I, *ra, *rb), loc);
    if (!both)
      return both.status();
    return einsum(both->first, both->second, labelsA, labelsB, labelsOut, loc);
  }
  Result<Placed> placed = placeOperands(I, {a, b}, loc);
  if (!placed)
    return placed.status();
  Location l = I.loc(loc);
  auto mapOf = [&](const std::string &labels) {
    SmallVector<AffineExpr> exprs;
    for (char c : labels)
      exprs.push_back(I.b.getAffineDimExpr(loops.find(c)));
    return AffineMap::get(loops.size(), 0, exprs, &I.ctx);
  };
  SmallVector<AffineMap> maps = {mapOf(labelsA), mapOf(labelsB),
                                 mapOf(labelsOut)};
  SmallVector<utils::IteratorType> iterators;
  for (size_t d = 0; d < loops.size(); ++d)
    iterators.push_back(d < labelsOut.size() ? utils::IteratorType::parallel
                                             : utils::IteratorType::reduction);
  // Nothing summed: an elementwise product, which reads no accumulator.
  bool sums = loops.size() > labelsOut.size();
  mlir::Value init =
      sums ? filled(I.b, l, outShape, ea, 0.0)
           : tensor::EmptyOp::create(I.b, l, outShape, ea).getResult();
  bool fp = isFloat(ea);
  auto op = linalg::GenericOp::create(
      I.b, l, TypeRange{init.getType()},
      ValueRange{placed->values[0], placed->values[1]}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location bl, ValueRange args) {
        linalg::YieldOp::create(nb, bl,
                                multiplyAdd(nb, bl, args[0], args[1],
                                            sums ? args[2] : mlir::Value(),
                                            fp));
      });
  return I.add(op.getResult(0), placed->mesh, Dist{}, false);
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
  if (kind == ReduceOp::Prod)
    init = 1.0;
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
        case ReduceOp::Prod:
          r = fp ? arith::MulFOp::create(nb, bl, x, y).getResult()
                 : arith::MulIOp::create(nb, bl, x, y).getResult();
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
      return I.error(l,
                     "axis " + std::to_string(orig) +
                         " is out of range for a tensor of shape " +
                         shapeStr(shape),
                     ErrorKind::Shape);
    if (!seen.insert(a).second)
      return I.error(l, "axis " + std::to_string(orig) + " repeats",
                     ErrorKind::Shape);
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
    return r.status();
  if ((*r)->scalar) {
    // numpy: the reduction of a scalar is the scalar (a mean in float).
    if (kind == ReduceOp::Mean && !isFloat(elemOf(**r)))
      return cast(x, DType::F32, loc);
    return x;
  }
  Type elem = elemOf(**r);
  // numpy's dtypes: a mean of integers or booleans is float (float64 there,
  // float32 here), a sum or product of booleans is int32, max/min of
  // booleans are booleans.
  if (kind == ReduceOp::Mean && !isFloat(elem)) {
    Result<Value> f = cast(x, DType::F32, loc);
    if (!f)
      return f.status();
    return reduce(kind, *f, std::move(axes), keepDims, loc);
  }
  if (elem.isInteger(1)) {
    Result<Value> i = cast(x, DType::I32, loc);
    if (!i)
      return i.status();
    Result<Value> red = reduce(kind, *i, std::move(axes), keepDims, loc);
    // Sums and products of booleans are integers, as in numpy.
    if (!red || kind == ReduceOp::Sum || kind == ReduceOp::Prod)
      return red;
    return cast(*red, DType::I1, loc);
  }
  std::vector<int64_t> shape = shapeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(shape.size());
  Result<std::vector<int64_t>> norm =
      normalizeAxes(I, std::move(axes), rank, shape, loc);
  if (!norm)
    return norm.status();
  // Nothing to reduce (a 0-d value): the value itself, as in numpy. A
  // linalg.reduce over no dimensions is elementwise and reads its init;
  // fused into a broadcasting consumer it accumulated once per element.
  if (norm->empty())
    return x;
  Result<Placed> placed = placeOperands(I, {x}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *in = &placed->values[0];
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
    return r.status();
  if ((*r)->scalar)
    return I.error(loc, "softmax needs a tensor, got " + I.typeStr(**r));
  if (!isFloat(elemOf(**r))) {
    // Of integers or booleans: in float, as numpy would (float32 here).
    Result<Value> f = cast(x, DType::F32, loc);
    if (!f)
      return f.status();
    return softmax(*f, axis, loc);
  }
  std::vector<int64_t> shape = shapeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(shape.size());
  Result<std::vector<int64_t>> norm =
      normalizeAxes(I, {axis}, rank, shape, loc);
  if (!norm)
    return norm.status();
  int64_t a = (*norm)[0];
  Result<Placed> placed = placeOperands(I, {x}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *in = &placed->values[0];
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
    return r.status();
  if ((*r)->scalar) {
    // A per-rank scalar of an endpoint reshapes as its 0-d tensor (numpy:
    // `np.float32(2).reshape((1,))`).
    Value t = I.scalarAsTensor(x, loc);
    if (t.id == x.id)
      return I.error(loc, "reshape needs a tensor, got a scalar",
                     ErrorKind::Shape);
    return reshape(t, std::move(shape), loc);
  }
  std::vector<int64_t> from = shapeOf((*r)->value);
  int64_t total = std::accumulate(from.begin(), from.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0)
        return I.error(loc, "reshape: only one dimension can be -1",
                       ErrorKind::Shape);
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return I.error(loc, "reshape: negative dimension in " + shapeStr(shape),
                     ErrorKind::Shape);
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0 && known > 0 && total % known == 0)
    shape[inferred] = total / known;
  int64_t count = std::accumulate(shape.begin(), shape.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  if (count != total || (inferred >= 0 && shape[inferred] < 0))
    return I.error(loc,
                   "cannot reshape a tensor of shape " + shapeStr(from) + " (" +
                       std::to_string(total) + " elements) into shape " +
                       shapeStr(shape),
                   ErrorKind::Shape);
  if (shape == from)
    return x;
  Result<Placed> placed = placeOperands(I, {x}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *in = &placed->values[0];
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
  // The finest regrouping of the dimensions: runs of `from` and `shape`
  // with equal products. A run of one `from` dimension becomes several
  // (tensor.expand_shape), a run of several becomes one
  // (tensor.collapse_shape), a run of several on both sides goes through
  // one. So (B*T, D) -> (B, T, H, Dh) is one expand of each dimension and a
  // sharded dimension keeps its shards when monarch-partition can map it
  // onto the first dimension of its run (attention heads).
  SmallVector<ReassociationIndices> fromGroups, toGroups;
  if (!from.empty() && !shape.empty()) {
    size_t i = 0, j = 0;
    while (i < from.size() || j < shape.size()) {
      ReassociationIndices fg, tg;
      int64_t pf = 1, pt = 1;
      if (i < from.size())
        pf *= from[i], fg.push_back(static_cast<int64_t>(i++));
      if (j < shape.size())
        pt *= shape[j], tg.push_back(static_cast<int64_t>(j++));
      while (pf != pt || (i < from.size() && from[i] == 1 &&
                          (j >= shape.size() || shape[j] != 1))) {
        if (pf <= pt && i < from.size())
          pf *= from[i], fg.push_back(static_cast<int64_t>(i++));
        else if (j < shape.size())
          pt *= shape[j], tg.push_back(static_cast<int64_t>(j++));
        else
          break;
      }
      // Trailing unit dimensions join the last run.
      while (i < from.size() && from[i] == 1 && j == shape.size())
        fg.push_back(static_cast<int64_t>(i++));
      while (j < shape.size() && shape[j] == 1 && i == from.size())
        tg.push_back(static_cast<int64_t>(j++));
      if (fg.empty() || tg.empty())
        break; // Unreachable for equal totals; falls back below.
      fromGroups.push_back(fg);
      toGroups.push_back(tg);
    }
  }
  bool fine =
      !fromGroups.empty() &&
      fromGroups.back().back() + 1 == static_cast<int64_t>(from.size()) &&
      toGroups.back().back() + 1 == static_cast<int64_t>(shape.size());
  mlir::Value v = *in;
  if (fine) {
    // Collapse each run of several `from` dimensions, then expand each run
    // into its `shape` dimensions.
    SmallVector<int64_t> mid;
    SmallVector<ReassociationIndices> collapse, expand;
    bool collapses = false, expands = false;
    for (auto [fg, tg] : llvm::zip(fromGroups, toGroups)) {
      int64_t size = 1;
      for (int64_t d : fg)
        size *= from[d];
      mid.push_back(size);
      collapse.push_back(fg);
      expand.push_back(tg);
      collapses |= fg.size() > 1;
      expands |= tg.size() > 1;
    }
    if (collapses)
      v = tensor::CollapseShapeOp::create(
          I.b, l, RankedTensorType::get(mid, elem), v, collapse);
    if (expands)
      v = tensor::ExpandShapeOp::create(
          I.b, l, RankedTensorType::get(shape, elem), v, expand);
    return I.add(v, *mesh, Dist{}, false);
  }
  // Through a 0-d tensor (one element, either side of rank 0).
  bool viaScalar = from.empty() || shape.empty();
  auto all = [](size_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank == 0)
      return groups;
    ReassociationIndices g;
    for (size_t i = 0; i < rank; ++i)
      g.push_back(static_cast<int64_t>(i));
    groups.push_back(g);
    return groups;
  };
  if (from.size() != 1 || viaScalar) {
    SmallVector<int64_t> flat;
    if (!viaScalar)
      flat.push_back(total);
    v = tensor::CollapseShapeOp::create(
        I.b, l, RankedTensorType::get(flat, elem), v,
        viaScalar ? SmallVector<ReassociationIndices>{} : all(from.size()));
  }
  if (shape.size() != 1 || viaScalar) {
    if (!(viaScalar && shape.empty()))
      v = tensor::ExpandShapeOp::create(
          I.b, l, RankedTensorType::get(shape, elem), v,
          viaScalar ? SmallVector<ReassociationIndices>{} : all(shape.size()));
  }
  return I.add(v, *mesh, Dist{}, false);
}

Result<Value> TraceBuilder::slice(Value x, std::vector<int64_t> offsets,
                                  std::vector<int64_t> sizes,
                                  std::vector<int64_t> strides,
                                  std::vector<int64_t> drop, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.status();
  if ((*r)->scalar)
    return I.error(loc, "indexing needs a tensor, got a scalar");
  std::vector<int64_t> from = shapeOf((*r)->value);
  size_t rank = from.size();
  if (offsets.size() != rank || sizes.size() != rank || strides.size() != rank)
    return I.error(loc,
                   "indexing a tensor of shape " + shapeStr(from) +
                       " needs one slice per dimension",
                   ErrorKind::Shape);
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] <= 0)
      return I.error(loc,
                     "unsupported: a slice step of " +
                         std::to_string(strides[d]) + " (only positive steps)",
                     ErrorKind::Unsupported);
    if (offsets[d] < 0 || sizes[d] < 0 ||
        (sizes[d] > 0 && offsets[d] + (sizes[d] - 1) * strides[d] >= from[d]))
      return I.error(loc,
                     "index out of range for dimension " + std::to_string(d) +
                         " of size " + std::to_string(from[d]),
                     ErrorKind::Shape);
  }
  std::vector<int64_t> kept;
  for (size_t d = 0; d < rank; ++d) {
    bool dropped = llvm::is_contained(drop, static_cast<int64_t>(d));
    if (dropped && sizes[d] != 1)
      return I.error(loc, "internal error: an indexed dimension has size " +
                              std::to_string(sizes[d]));
    if (!dropped)
      kept.push_back(sizes[d]);
  }
  for (int64_t s : kept)
    if (s == 0)
      return I.error(loc,
                     "unsupported: an empty slice (a dimension of size "
                     "0)",
                     ErrorKind::Unsupported);
  Result<Placed> placed = placeOperands(I, {x}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *in = &placed->values[0];
  Location l = I.loc(loc);
  Type elem = elemOf(I.values[x.id]);
  // The slice keeps every dimension; integer indices are dropped after it
  // (a rank-reducing strided slice crashed the memref lowering of kernels).
  auto type = RankedTensorType::get(sizes, elem);
  mlir::Value v = tensor::ExtractSliceOp::create(
      I.b, l, type, *in, ValueRange{}, ValueRange{}, ValueRange{},
      I.b.getDenseI64ArrayAttr(offsets), I.b.getDenseI64ArrayAttr(sizes),
      I.b.getDenseI64ArrayAttr(strides));
  if (!drop.empty()) {
    SmallVector<bool> keep;
    for (size_t d = 0; d < rank; ++d)
      keep.push_back(!llvm::is_contained(drop, static_cast<int64_t>(d)));
    v = dropUnitDims(I.b, l, v, keep);
  }
  return I.add(v, *mesh, Dist{}, false);
}

Result<Value> TraceBuilder::take(Value x, Value indices, int64_t axis,
                                 SourceLoc loc) {
  return gather(x, indices, axis, /*along=*/false, loc);
}

Result<Value> TraceBuilder::takeAlong(Value x, Value indices, int64_t axis,
                                      SourceLoc loc) {
  return gather(x, indices, axis, /*along=*/true, loc);
}

Result<Value> TraceBuilder::gather(Value x, Value indices, int64_t axis,
                                   bool along, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.status();
  Result<ValueRecord *> ri = I.get(indices, loc);
  if (!ri)
    return ri.status();
  if ((*r)->scalar)
    return I.error(loc, "take needs a tensor to index, got a scalar");
  if ((*ri)->scalar)
    return I.error(loc, "take needs a tensor of indices, got a scalar "
                        "(index with an integer instead)");
  Type idxElem = elemOf(**ri);
  if (!idxElem.isInteger() || idxElem.isInteger(1))
    return I.error(loc,
                   "indices must be an integer tensor, got " + I.typeStr(**ri));
  std::vector<int64_t> from = shapeOf((*r)->value), idx = shapeOf((*ri)->value);
  int64_t rank = static_cast<int64_t>(from.size());
  if (rank == 0)
    return I.error(loc, "take cannot index a zero-dimensional tensor",
                   ErrorKind::Shape);
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return I.error(loc,
                   "axis " + std::to_string(axis) +
                       " is out of range for a tensor of rank " +
                       std::to_string(rank),
                   ErrorKind::Shape);
  int64_t n = from[a];
  if (n == 0)
    return I.error(loc, "cannot take from an empty dimension");
  if (along) {
    bool same = idx.size() == from.size();
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == a || idx[d] == from[d];
    if (!same)
      return I.error(loc,
                     "take_along_axis needs indices of the tensor's "
                     "shape except along the axis, got " +
                         I.typeStr(**ri) + " for " + I.typeStr(**r),
                     ErrorKind::Shape);
  }
  if (elemOf(**r).isInteger(1)) {
    // Boolean tensors are bytes in kernels; the gather reads int32 ones.
    Result<Value> wide = cast(x, DType::I32, loc);
    if (!wide)
      return wide.status();
    Result<Value> taken = gather(*wide, indices, axis, along, loc);
    if (!taken)
      return taken.status();
    return cast(*taken, DType::I1, loc);
  }
  // take: x.shape[:a] + indices.shape + x.shape[a+1:]; along: indices'.
  std::vector<int64_t> out = idx;
  if (!along) {
    out.assign(from.begin(), from.begin() + a);
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), from.begin() + a + 1, from.end());
  }
  for (int64_t s : out)
    if (s == 0)
      return I.error(loc,
                     "unsupported: an empty gather (a dimension of "
                     "size 0)",
                     ErrorKind::Unsupported);
  Result<Placed> placed = placeOperands(I, {x, indices}, loc);
  if (!placed)
    return placed.status();
  mlir::Value table = placed->values[0];
  Location l = I.loc(loc);
  // take: the indices run along loops a..a+k-1; along: along all loops.
  int64_t k = along ? 1 : static_cast<int64_t>(idx.size());
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d)
    exprs.push_back(I.b.getAffineDimExpr(along ? d : a + d));
  // A 0-d gather runs as a 1-element one (the vectorizer of kernels builds
  // an invalid vector.gather for a 0-d linalg.generic reading a capture).
  bool zeroD = out.empty();
  std::vector<int64_t> iter = zeroD ? std::vector<int64_t>{1} : out;
  SmallVector<AffineMap> maps{
      AffineMap::get(iter.size(), 0, exprs, I.b.getContext())};
  SmallVector<mlir::Value> inputs{placed->values[1]};
  // The other coordinates of the table come in as data, `arange` of each
  // dimension, not as `linalg.index`: partitioned over those loops (a
  // gather whose result is split), a rank's loop indices are local but the
  // table it reads is whole, and the slices of the aranges hold the global
  // coordinates.
  for (int64_t d = 0; d < rank; ++d) {
    if (d == a)
      continue;
    int64_t loop = d < a ? d : d - 1 + k;
    SmallVector<int32_t> iota(from[d]);
    std::iota(iota.begin(), iota.end(), 0);
    auto type = RankedTensorType::get({from[d]}, I.b.getI32Type());
    inputs.push_back(arith::ConstantOp::create(
        I.b, l, type, DenseElementsAttr::get(type, ArrayRef<int32_t>(iota))));
    maps.push_back(AffineMap::get(iter.size(), 0, I.b.getAffineDimExpr(loop)));
  }
  Type elem = elemOf(I.values[x.id]);
  // The table is captured by the body (random access); monarch-partition
  // gives the body a replicated copy of it.
  mlir::Value y = generic(
      I.b, l, inputs, maps, iter, elem,
      [&](OpBuilder &nb, Location bl, ValueRange v) {
        mlir::Value i =
            arith::IndexCastOp::create(nb, bl, nb.getIndexType(), v[0]);
        mlir::Value zero = arith::ConstantIndexOp::create(nb, bl, 0);
        mlir::Value size = arith::ConstantIndexOp::create(nb, bl, n);
        mlir::Value last = arith::ConstantIndexOp::create(nb, bl, n - 1);
        mlir::Value negative =
            arith::CmpIOp::create(nb, bl, arith::CmpIPredicate::slt, i, zero);
        mlir::Value wrapped = arith::SelectOp::create(
            nb, bl, negative, arith::AddIOp::create(nb, bl, i, size), i);
        mlir::Value clamped = arith::MinSIOp::create(
            nb, bl, arith::MaxSIOp::create(nb, bl, wrapped, zero), last);
        SmallVector<mlir::Value> coords;
        for (int64_t d = 0, next = 1; d < rank; ++d) {
          if (d == a)
            coords.push_back(clamped);
          else
            coords.push_back(arith::IndexCastOp::create(
                nb, bl, nb.getIndexType(), v[next++]));
        }
        return tensor::ExtractOp::create(nb, bl, table, coords).getResult();
      });
  if (zeroD)
    y = dropUnitDims(I.b, l, y, {false});
  return I.add(y, placed->mesh, Dist{}, false);
}

Result<Value> TraceBuilder::scatterAdd(Value values, Value indices, int64_t n,
                                       int64_t axis, SourceLoc loc) {
  return scatter(values, indices, n, axis, /*along=*/false, loc);
}

Result<Value> TraceBuilder::scatterAddAlong(Value values, Value indices,
                                            int64_t n, int64_t axis,
                                            SourceLoc loc) {
  return scatter(values, indices, n, axis, /*along=*/true, loc);
}

Result<Value> TraceBuilder::scatter(Value values, Value indices, int64_t n,
                                    int64_t axis, bool along, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(values, loc);
  if (!r)
    return r.status();
  Result<ValueRecord *> ri = I.get(indices, loc);
  if (!ri)
    return ri.status();
  if ((*r)->scalar || (*ri)->scalar)
    return I.error(loc, "scatter_add needs tensors of values and indices, "
                        "got a scalar");
  Type elem = elemOf(**r), idxElem = elemOf(**ri);
  if (!idxElem.isInteger() || idxElem.isInteger(1))
    return I.error(loc,
                   "indices must be an integer tensor, got " + I.typeStr(**ri));
  if (elem.isInteger(1))
    return I.error(loc, "scatter_add adds numbers, got a boolean tensor (cast "
                        "it first)");
  if (n <= 0)
    return I.error(loc, "scatter_add needs a positive size along the axis, "
                        "got " +
                            std::to_string(n));
  std::vector<int64_t> vals = shapeOf((*r)->value), idx = shapeOf((*ri)->value);
  int64_t vr = static_cast<int64_t>(vals.size());
  int64_t k = static_cast<int64_t>(idx.size());
  // The result's rank: take's adjoint replaces the index dimensions of
  // `values` by one of size n; take_along's keeps the rank.
  int64_t rank = along ? vr : vr - k + 1;
  int64_t a = axis < 0 ? axis + rank : axis;
  if (rank <= 0 || a < 0 || a >= rank)
    return I.error(loc,
                   "axis " + std::to_string(axis) +
                       " is out of range for a result of rank " +
                       std::to_string(std::max<int64_t>(rank, 0)),
                   ErrorKind::Shape);
  bool fits = along ? idx == vals
                    : std::equal(idx.begin(), idx.end(), vals.begin() + a);
  if (!fits)
    return I.error(loc,
                   std::string("scatter_add") + (along ? "_along" : "") +
                       ": values " + I.typeStr(**r) + " do not match indices " +
                       I.typeStr(**ri) + " at axis " + std::to_string(a),
                   ErrorKind::Shape);
  for (int64_t s : vals)
    if (s == 0)
      return I.error(loc,
                     "unsupported: an empty scatter (a dimension of "
                     "size 0)",
                     ErrorKind::Unsupported);
  // Loops: the result's dimensions (i, the row added into, at a), then the
  // index dimensions, summed. take: values = pre + idx + post; along: the
  // one index dimension is the result's axis.
  std::vector<int64_t> out;
  SmallVector<AffineExpr> outExprs, idxExprs, valExprs;
  int64_t loops = along ? rank + 1 : rank + k;
  auto dim = [&](int64_t d) { return I.b.getAffineDimExpr(d); };
  for (int64_t d = 0; d < rank; ++d) {
    outExprs.push_back(dim(d));
    if (along)
      out.push_back(d == a ? n : vals[d]);
    else
      out.push_back(d < a ? vals[d] : d == a ? n : vals[d + k - 1]);
  }
  if (along) {
    for (int64_t d = 0; d < rank; ++d) {
      idxExprs.push_back(dim(d == a ? rank : d));
      valExprs.push_back(dim(d == a ? rank : d));
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (d != a) {
        valExprs.push_back(dim(d));
        continue;
      }
      for (int64_t j = 0; j < k; ++j) {
        idxExprs.push_back(dim(rank + j));
        valExprs.push_back(dim(rank + j));
      }
    }
  }
  Result<Placed> placed = placeOperands(I, {indices, values}, loc);
  if (!placed)
    return placed.status();
  Location l = I.loc(loc);
  MLIRContext *ctx = &I.ctx;
  // The rows' coordinates come in as data (an arange), as in `gather`: a
  // rank holding a slice of the rows reads their global numbers from its
  // slice of the arange.
  SmallVector<int32_t> iota(n);
  std::iota(iota.begin(), iota.end(), 0);
  auto coordType = RankedTensorType::get({n}, I.b.getI32Type());
  mlir::Value coords = arith::ConstantOp::create(
      I.b, l, coordType,
      DenseElementsAttr::get(coordType, ArrayRef<int32_t>(iota)));
  SmallVector<AffineMap> maps{AffineMap::get(loops, 0, idxExprs, ctx),
                              AffineMap::get(loops, 0, valExprs, ctx),
                              AffineMap::get(loops, 0, dim(a)),
                              AffineMap::get(loops, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iterators(loops,
                                             utils::IteratorType::parallel);
  for (int64_t d = rank; d < loops; ++d)
    iterators[d] = utils::IteratorType::reduction;
  mlir::Value init = filled(I.b, l, out, elem, 0.0);
  bool fp = isFloat(elem);
  // out[.., i, ..] += values[.., j, ..] where the wrapped and clamped
  // index j reads i (as `gather` reads it): a compare and a select, which
  // kernels on the CPU run as a scatter loop (one pass over the values)
  // and any other backend as this dense loop nest.
  auto op = linalg::GenericOp::create(
      I.b, l, TypeRange{init.getType()},
      ValueRange{placed->values[0], placed->values[1], coords},
      ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location bl, ValueRange args) {
        mlir::Value i = args[0];
        Type it = i.getType();
        auto cst = [&](int64_t v) {
          return arith::ConstantOp::create(nb, bl, it, nb.getIntegerAttr(it, v))
              .getResult();
        };
        mlir::Value zero = cst(0);
        mlir::Value negative =
            arith::CmpIOp::create(nb, bl, arith::CmpIPredicate::slt, i, zero);
        mlir::Value wrapped = arith::SelectOp::create(
            nb, bl, negative, arith::AddIOp::create(nb, bl, i, cst(n)), i);
        mlir::Value row = arith::MinSIOp::create(
            nb, bl, arith::MaxSIOp::create(nb, bl, wrapped, zero), cst(n - 1));
        unsigned width = it.getIntOrFloatBitWidth();
        if (width > 32)
          row = arith::TruncIOp::create(nb, bl, nb.getI32Type(), row);
        else if (width < 32)
          row = arith::ExtSIOp::create(nb, bl, nb.getI32Type(), row);
        mlir::Value hit = arith::CmpIOp::create(
            nb, bl, arith::CmpIPredicate::eq, row, args[2]);
        mlir::Value none = constantLike(nb, bl, elem, 0.0);
        mlir::Value picked =
            arith::SelectOp::create(nb, bl, hit, args[1], none);
        mlir::Value sum =
            fp ? arith::AddFOp::create(nb, bl, args[3], picked).getResult()
               : arith::AddIOp::create(nb, bl, args[3], picked).getResult();
        linalg::YieldOp::create(nb, bl, sum);
      });
  return I.add(op.getResult(0), placed->mesh, Dist{}, false);
}

Result<Value> TraceBuilder::concatenate(const std::vector<Value> &parts,
                                        int64_t axis, SourceLoc loc) {
  Impl &I = *pimpl;
  if (parts.empty())
    return I.error(loc, "concatenate needs at least one tensor");
  std::vector<std::vector<int64_t>> shapes;
  Type elem;
  for (Value v : parts) {
    Result<ValueRecord *> r = I.get(v, loc);
    if (!r)
      return r.status();
    if ((*r)->scalar)
      return I.error(loc, "concatenate needs tensors, got a scalar");
    shapes.push_back(shapeOf((*r)->value));
    Type e = elemOf(**r);
    if (elem && e != elem)
      return I.error(
          loc,
          "dtype mismatch in concatenate: " + I.typeStr(I.values[parts[0].id]) +
              " and " + I.typeStr(**r) + " (cast one of them)",
          ErrorKind::Shape);
    elem = e;
  }
  int64_t rank = static_cast<int64_t>(shapes[0].size());
  if (rank == 0)
    return I.error(loc, "zero-dimensional tensors cannot be concatenated",
                   ErrorKind::Shape);
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return I.error(loc,
                   "axis " + std::to_string(axis) +
                       " is out of range for tensors of rank " +
                       std::to_string(rank),
                   ErrorKind::Shape);
  for (const auto &s : shapes) {
    bool same = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == a || s[d] == shapes[0][d];
    if (!same)
      return I.error(loc,
                     "concatenate: shapes " + shapeStr(shapes[0]) + " and " +
                         shapeStr(s) + " differ outside axis " +
                         std::to_string(a),
                     ErrorKind::Shape);
  }
  if (parts.size() == 1)
    return parts[0];
  Result<Placed> placed = placeOperands(I, parts, loc);
  if (!placed)
    return placed.status();
  mlir::Value out =
      tensor::ConcatOp::create(I.b, I.loc(loc), a, placed->values);
  return I.add(out, placed->mesh, Dist{}, false);
}

Result<Value> TraceBuilder::transpose(Value x, std::vector<int64_t> perm,
                                      SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.status();
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
    return I.error(loc,
                   "transpose: " + shapeStr(perm) +
                       " is not a permutation of the dimensions of a "
                       "tensor of shape " +
                       shapeStr(from),
                   ErrorKind::Shape);
  for (int64_t &p : perm)
    if (p < 0)
      p += rank;
  if (perm == iota)
    return x;
  Result<Placed> placed = placeOperands(I, {x}, loc);
  if (!placed)
    return placed.status();
  std::string *mesh = &placed->mesh;
  mlir::Value *in = &placed->values[0];
  Location l = I.loc(loc);
  std::vector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(from[p]);
  mlir::Value init = empty(I.b, l, out, elemOf(I.values[x.id]));
  auto op = linalg::TransposeOp::create(I.b, l, *in, init, perm);
  return I.add(op.getResult()[0], *mesh, Dist{}, false);
}

} // namespace monarch::frontend
