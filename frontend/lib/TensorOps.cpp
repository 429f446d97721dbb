//===- TensorOps.cpp - Tensor ops of the TraceBuilder -----------*- C++ -*-===//
//
// Elementwise math with numpy broadcasting (one `linalg.generic` per op;
// broadcast operands use projected-permutation indexing maps, size-1
// dimensions are collapsed away first), matmul (`linalg.matmul` /
// `linalg.batch_matmul`), reductions (`linalg.reduce`), softmax, reshape
// (`tensor.collapse_shape` / `tensor.expand_shape`), transpose
// (`linalg.transpose`) and casts. Shapes and dtypes are checked before any
// IR is built, so an error leaves the module unchanged.
//
//===----------------------------------------------------------------------===//

#include "TraceBuilderImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <set>

using namespace mlir;

namespace monarch::frontend {
namespace {

using BodyFn =
    llvm::function_ref<mlir::Value(OpBuilder &, Location, ValueRange)>;

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

/// Inserts unit dimensions: `v` becomes `outShape`, whose dimensions not in
/// `keep` have extent 1 (a copy through `linalg.generic`, which shards).
mlir::Value insertUnitDims(OpBuilder &b, Location loc, mlir::Value v,
                           ArrayRef<int64_t> outShape, ArrayRef<bool> keep);

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

} // namespace

/// Elementwise op over `operands`: tensors broadcast, scalars are captured
/// in the body. `body` receives one element per operand, in order.
static Result<Value> elementwise(TraceBuilder::Impl &I,
                                 const std::vector<Value> &operands,
                                 Type resultElem, BodyFn body,
                                 const SourceLoc &l, const std::string &what) {
  std::vector<ValueRecord *> recs;
  for (Value v : operands) {
    Result<ValueRecord *> r = I.get(v, l);
    if (!r)
      return r.error();
    recs.push_back(*r);
  }
  // Broadcast shape of the tensor operands.
  std::vector<int64_t> out;
  bool anyTensor = false;
  for (ValueRecord *r : recs) {
    if (r->scalar)
      continue;
    std::vector<int64_t> s = shapeOf(r->value);
    if (!anyTensor) {
      out = s;
      anyTensor = true;
      continue;
    }
    std::vector<int64_t> merged(std::max(out.size(), s.size()), 1);
    for (size_t i = 0; i < merged.size(); ++i) {
      int64_t a = i < out.size() ? out[out.size() - 1 - i] : 1;
      int64_t c = i < s.size() ? s[s.size() - 1 - i] : 1;
      if (a != c && a != 1 && c != 1) {
        std::string shapes;
        for (ValueRecord *q : recs)
          if (!q->scalar)
            shapes +=
                (shapes.empty() ? "" : " and ") + shapeStr(shapeOf(q->value));
        return I.error(l, "cannot broadcast shapes " + shapes + " in " + what);
      }
      merged[merged.size() - 1 - i] = a == 1 ? c : a;
    }
    out = merged;
  }
  Location loc = I.loc(l);
  if (!anyTensor) {
    SmallVector<mlir::Value> elems;
    for (ValueRecord *r : recs)
      elems.push_back(r->value);
    mlir::Value result = body(I.b, loc, elems);
    return I.add(result, "", Dist{}, true);
  }
  Result<std::string> mesh = I.placement(operands, l);
  if (!mesh)
    return mesh.error();
  SmallVector<mlir::Value> inputs;
  SmallVector<AffineMap> maps;
  SmallVector<int> slot; // operand -> input index, -1 for scalars
  int64_t rank = static_cast<int64_t>(out.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    if (recs[i]->scalar) {
      slot.push_back(-1);
      continue;
    }
    Result<mlir::Value> v = I.materialize(operands[i], *mesh, l);
    if (!v)
      return v.error();
    std::vector<int64_t> s = shapeOf(*v);
    int64_t offset = rank - static_cast<int64_t>(s.size());
    SmallVector<bool> keep;
    SmallVector<AffineExpr> exprs;
    bool collapse = false;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
      bool k = s[d] == out[offset + d];
      keep.push_back(k);
      collapse |= !k;
      if (k)
        exprs.push_back(I.b.getAffineDimExpr(offset + d));
    }
    mlir::Value in = *v;
    if (collapse)
      in = dropUnitDims(I.b, loc, in, keep);
    slot.push_back(static_cast<int>(inputs.size()));
    inputs.push_back(in);
    maps.push_back(AffineMap::get(rank, 0, exprs, &I.ctx));
  }
  // Refresh record pointers: materialize may have grown the table.
  std::vector<mlir::Value> scalars;
  for (size_t i = 0; i < operands.size(); ++i)
    scalars.push_back(I.values[operands[i].id].value);
  mlir::Value result =
      generic(I.b, loc, inputs, maps, out, resultElem,
              [&](OpBuilder &nb, Location bl, ValueRange args) {
                SmallVector<mlir::Value> elems;
                for (size_t i = 0; i < slot.size(); ++i)
                  elems.push_back(slot[i] < 0 ? scalars[i] : args[slot[i]]);
                return body(nb, bl, elems);
              });
  return I.add(result, *mesh, Dist{}, false);
}

/// The element type of `v`'s record.
static Type elemOf(const ValueRecord &r) {
  return getElementTypeOrSelf(r.value.getType());
}

Result<Value> TraceBuilder::constant(double value, DType dtype, SourceLoc loc) {
  Impl &I = *pimpl;
  if (I.stack.empty())
    return I.error(loc, "no function or endpoint is being traced");
  mlir::Value c = constantLike(I.b, I.loc(loc), I.elementType(dtype), value);
  return I.add(c, "", Dist{}, true);
}

static const char *unaryName(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg:
    return "neg";
  case UnaryOp::Relu:
    return "relu";
  case UnaryOp::Exp:
    return "exp";
  case UnaryOp::Log:
    return "log";
  case UnaryOp::Tanh:
    return "tanh";
  case UnaryOp::Sigmoid:
    return "sigmoid";
  case UnaryOp::Gelu:
    return "gelu";
  case UnaryOp::Sqrt:
    return "sqrt";
  case UnaryOp::Abs:
    return "abs";
  }
  return "?";
}

Result<Value> TraceBuilder::unary(UnaryOp op, Value x, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.error();
  Type elem = elemOf(**r);
  bool fp = isFloat(elem);
  if (elem.isInteger(1) ||
      (!fp && op != UnaryOp::Neg && op != UnaryOp::Relu && op != UnaryOp::Abs))
    return I.error(loc, std::string("unsupported op: ") + unaryName(op) +
                            " on " + I.typeStr(**r) +
                            " (cast to a float type first)");
  auto body = [&](OpBuilder &b, Location l, ValueRange e) -> mlir::Value {
    mlir::Value v = e[0];
    auto c = [&](double value) { return constantLike(b, l, elem, value); };
    switch (op) {
    case UnaryOp::Neg:
      return fp ? arith::NegFOp::create(b, l, v).getResult()
                : arith::SubIOp::create(b, l, c(0), v).getResult();
    case UnaryOp::Relu:
      return fp ? arith::MaximumFOp::create(b, l, v, c(0)).getResult()
                : arith::MaxSIOp::create(b, l, v, c(0)).getResult();
    case UnaryOp::Abs:
      return fp ? math::AbsFOp::create(b, l, v).getResult()
                : math::AbsIOp::create(b, l, v).getResult();
    case UnaryOp::Exp:
      return math::ExpOp::create(b, l, v);
    case UnaryOp::Log:
      return math::LogOp::create(b, l, v);
    case UnaryOp::Tanh:
      return math::TanhOp::create(b, l, v);
    case UnaryOp::Sqrt:
      return math::SqrtOp::create(b, l, v);
    case UnaryOp::Sigmoid: {
      mlir::Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, v));
      mlir::Value d = arith::AddFOp::create(b, l, c(1), e);
      return arith::DivFOp::create(b, l, c(1), d);
    }
    case UnaryOp::Gelu: {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      mlir::Value x2 = arith::MulFOp::create(b, l, v, v);
      mlir::Value x3 = arith::MulFOp::create(b, l, x2, v);
      mlir::Value inner = arith::AddFOp::create(
          b, l, v, arith::MulFOp::create(b, l, c(0.044715), x3));
      mlir::Value t = math::TanhOp::create(
          b, l, arith::MulFOp::create(b, l, c(0.7978845608028654), inner));
      mlir::Value half = arith::MulFOp::create(b, l, c(0.5), v);
      return arith::MulFOp::create(b, l, half,
                                   arith::AddFOp::create(b, l, c(1), t));
    }
    }
    return v;
  };
  return elementwise(I, {x}, elem, body, loc, unaryName(op));
}

static const char *binaryName(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "add (+)";
  case BinaryOp::Sub:
    return "subtract (-)";
  case BinaryOp::Mul:
    return "multiply (*)";
  case BinaryOp::Div:
    return "divide (/)";
  case BinaryOp::Max:
    return "maximum";
  case BinaryOp::Min:
    return "minimum";
  case BinaryOp::Pow:
    return "power (**)";
  }
  return "?";
}

/// The element type two operands compute in: tensors must agree; a scalar
/// takes the tensor's type (like a Python number in numpy).
static Result<Type> commonElement(TraceBuilder::Impl &I, Value a, Value b,
                                  const SourceLoc &l, const std::string &what) {
  Result<ValueRecord *> ra = I.get(a, l);
  if (!ra)
    return ra.error();
  Result<ValueRecord *> rb = I.get(b, l);
  if (!rb)
    return rb.error();
  Type ea = elemOf(**ra), eb = elemOf(**rb);
  if (ea == eb)
    return ea;
  if ((*ra)->scalar != (*rb)->scalar)
    return (*ra)->scalar ? eb : ea;
  return I.error(l, "dtype mismatch in " + what + ": " + I.typeStr(**ra) +
                        " and " + I.typeStr(**rb) +
                        " (cast one of them explicitly)");
}

Result<Value> TraceBuilder::binary(BinaryOp op, Value a, Value b,
                                   SourceLoc loc) {
  Impl &I = *pimpl;
  Result<Type> elem = commonElement(I, a, b, loc, binaryName(op));
  if (!elem)
    return elem.error();
  Type t = *elem;
  bool fp = isFloat(t);
  if (t.isInteger(1) || (!fp && op == BinaryOp::Pow))
    return I.error(loc, std::string("unsupported op: ") + binaryName(op) +
                            " on " + (t.isInteger(1) ? "bool" : "int32") +
                            " tensors");
  auto body = [&](OpBuilder &nb, Location l, ValueRange e) -> mlir::Value {
    mlir::Value x = convertElement(nb, l, e[0], t);
    mlir::Value y = convertElement(nb, l, e[1], t);
    switch (op) {
    case BinaryOp::Add:
      return fp ? arith::AddFOp::create(nb, l, x, y).getResult()
                : arith::AddIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Sub:
      return fp ? arith::SubFOp::create(nb, l, x, y).getResult()
                : arith::SubIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Mul:
      return fp ? arith::MulFOp::create(nb, l, x, y).getResult()
                : arith::MulIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Div:
      return fp ? arith::DivFOp::create(nb, l, x, y).getResult()
                : arith::DivSIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Max:
      return fp ? arith::MaximumFOp::create(nb, l, x, y).getResult()
                : arith::MaxSIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Min:
      return fp ? arith::MinimumFOp::create(nb, l, x, y).getResult()
                : arith::MinSIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Pow:
      return math::PowFOp::create(nb, l, x, y);
    }
    return x;
  };
  return elementwise(I, {a, b}, t, body, loc, binaryName(op));
}

Result<Value> TraceBuilder::compare(CompareOp op, Value a, Value b,
                                    SourceLoc loc) {
  Impl &I = *pimpl;
  Result<Type> elem = commonElement(I, a, b, loc, "comparison");
  if (!elem)
    return elem.error();
  Type t = *elem;
  bool fp = isFloat(t);
  auto body = [&](OpBuilder &nb, Location l, ValueRange e) -> mlir::Value {
    mlir::Value x = convertElement(nb, l, e[0], t);
    mlir::Value y = convertElement(nb, l, e[1], t);
    if (fp) {
      arith::CmpFPredicate p = arith::CmpFPredicate::OEQ;
      switch (op) {
      case CompareOp::Lt:
        p = arith::CmpFPredicate::OLT;
        break;
      case CompareOp::Le:
        p = arith::CmpFPredicate::OLE;
        break;
      case CompareOp::Gt:
        p = arith::CmpFPredicate::OGT;
        break;
      case CompareOp::Ge:
        p = arith::CmpFPredicate::OGE;
        break;
      case CompareOp::Eq:
        p = arith::CmpFPredicate::OEQ;
        break;
      case CompareOp::Ne:
        p = arith::CmpFPredicate::UNE;
        break;
      }
      return arith::CmpFOp::create(nb, l, p, x, y);
    }
    arith::CmpIPredicate p = arith::CmpIPredicate::eq;
    switch (op) {
    case CompareOp::Lt:
      p = arith::CmpIPredicate::slt;
      break;
    case CompareOp::Le:
      p = arith::CmpIPredicate::sle;
      break;
    case CompareOp::Gt:
      p = arith::CmpIPredicate::sgt;
      break;
    case CompareOp::Ge:
      p = arith::CmpIPredicate::sge;
      break;
    case CompareOp::Eq:
      p = arith::CmpIPredicate::eq;
      break;
    case CompareOp::Ne:
      p = arith::CmpIPredicate::ne;
      break;
    }
    return arith::CmpIOp::create(nb, l, p, x, y);
  };
  return elementwise(I, {a, b}, I.b.getI1Type(), body, loc, "comparison");
}

Result<Value> TraceBuilder::select(Value cond, Value a, Value b,
                                   SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> rc = I.get(cond, loc);
  if (!rc)
    return rc.error();
  if (!elemOf(**rc).isInteger(1))
    return I.error(loc, "the condition of where/select must be bool, not " +
                            I.typeStr(**rc));
  Result<Type> elem = commonElement(I, a, b, loc, "where/select");
  if (!elem)
    return elem.error();
  Type t = *elem;
  auto body = [&](OpBuilder &nb, Location l, ValueRange e) -> mlir::Value {
    return arith::SelectOp::create(nb, l, e[0], convertElement(nb, l, e[1], t),
                                   convertElement(nb, l, e[2], t));
  };
  return elementwise(I, {cond, a, b}, t, body, loc, "where/select");
}

Result<Value> TraceBuilder::cast(Value x, DType dtype, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(x, loc);
  if (!r)
    return r.error();
  Type to = I.elementType(dtype);
  if (elemOf(**r) == to)
    return x;
  auto body = [&](OpBuilder &nb, Location l, ValueRange e) -> mlir::Value {
    return convertElement(nb, l, e[0], to);
  };
  return elementwise(I, {x}, to, body, loc, "cast");
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
