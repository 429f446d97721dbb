//===- Elementwise.cpp - Elementwise ops of the TraceBuilder ----*- C++ -*-===//
//
// Elementwise math with numpy broadcasting: one `linalg.generic` per op;
// broadcast operands use projected-permutation indexing maps, size-1
// dimensions are reduced away first, scalars are captured in the body (a
// Python number takes the tensor's dtype, as in numpy). Also comparisons,
// select and casts. Shapes and dtypes are checked before any IR is built.
//
//===----------------------------------------------------------------------===//

#include "OpBuilders.h"
#include "TraceBuilderImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace monarch::frontend {

/// Elementwise op over `operands`: tensors broadcast, scalars are captured
/// in the body. `body` receives one element per operand, in order.
static Result<Value> elementwise(TraceBuilder::Impl &I,
                                 const std::vector<Value> &operands,
                                 Type resultElem, BodyFn body,
                                 const SourceLoc &l, const std::string &what) {
  std::vector<ValueRecord *> recs;
  // Whether each operand is a scalar, read now: `materialize` below may grow
  // the value table and leave the record pointers dangling.
  std::vector<bool> isScalar;
  for (Value v : operands) {
    Result<ValueRecord *> r = I.get(v, l);
    if (!r)
      return r.status();
    recs.push_back(*r);
    isScalar.push_back((*r)->scalar);
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
        return I.error(l, "cannot broadcast shapes " + shapes + " in " + what,
                       ErrorKind::Shape);
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
    return mesh.status();
  SmallVector<mlir::Value> inputs;
  SmallVector<AffineMap> maps;
  SmallVector<int> slot; // operand -> input index, -1 for scalars
  int64_t rank = static_cast<int64_t>(out.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    if (isScalar[i]) {
      slot.push_back(-1);
      continue;
    }
    Result<mlir::Value> v = I.materialize(operands[i], *mesh, l);
    if (!v)
      return v.status();
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
  if (!isTraceableDType(dtype))
    return I.dtypeError(loc, dtype);
  mlir::Value c = constantLike(I.b, I.loc(loc), I.elementType(dtype), value);
  return I.add(c, "", Dist{}, true);
}

Result<Value> TraceBuilder::constantTensor(const std::string &data,
                                           std::vector<int64_t> shape,
                                           DType dtype, SourceLoc loc) {
  Impl &I = *pimpl;
  if (I.stack.empty())
    return I.error(loc, "no function or endpoint is being traced");
  if (!isTraceableDType(dtype))
    return I.dtypeError(loc, dtype);
  if (dtype == DType::I1)
    return I.error(loc, "internal error: boolean constants are built from "
                        "int32 ones");
  Type elem = I.elementType(dtype);
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return I.error(loc, "a constant of negative extent");
    count *= d;
  }
  int64_t width = elem.getIntOrFloatBitWidth() / 8;
  // One element's bytes make a splat (every element equal, stored once).
  if (static_cast<int64_t>(data.size()) != count * width &&
      !(count > 0 && static_cast<int64_t>(data.size()) == width))
    return I.error(loc,
                   "a constant of shape " + shapeStr(shape) + " needs " +
                       std::to_string(count * width) +
                       " bytes (or one element's), got " +
                       std::to_string(data.size()),
                   ErrorKind::Shape);
  auto type = RankedTensorType::get(shape, elem);
  auto attr = DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(data.data(), data.size()));
  // On the function's mesh (constants are cloned into the work that uses
  // them) or, in an endpoint, per rank.
  std::string mesh;
  if (Scope *scope = I.currentScope(); scope && scope->kind == Scope::Function)
    mesh = scope->defaultMesh;
  mlir::Value c = arith::ConstantOp::create(I.b, I.loc(loc), type, attr);
  return I.add(c, mesh, Dist{}, false);
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
    return r.status();
  Type elem = elemOf(**r);
  bool integral =
      op == UnaryOp::Neg || op == UnaryOp::Relu || op == UnaryOp::Abs;
  // Transcendental functions of integers and booleans compute in float, as
  // numpy's do (float64 there, float32 here); so do booleans everywhere.
  if (!isFloat(elem) && (!integral || elem.isInteger(1)))
    elem = Float32Type::get(&I.ctx);
  bool fp = isFloat(elem);
  // float16 and bfloat16 compute in float32 and round once at the end: a
  // composite such as gelu (1 + tanh(..) near -1) loses most of its digits
  // when every step rounds to 16 bits.
  Type resultElem = elem;
  if (fp && llvm::cast<FloatType>(elem).getWidth() < 32)
    elem = Float32Type::get(&I.ctx);
  auto body = [&](OpBuilder &b, Location l, ValueRange e) -> mlir::Value {
    mlir::Value r = [&]() -> mlir::Value {
      mlir::Value v = convertElement(b, l, e[0], elem);
      auto c = [&](double value) { return constantLike(b, l, elem, value); };
      switch (op) {
      case UnaryOp::Neg:
        return fp ? arith::NegFOp::create(b, l, v).getResult()
                  : arith::SubIOp::create(b, l, c(0), v).getResult();
      case UnaryOp::Relu:
        return fp ? arith::MaximumFOp::create(b, l, v, c(0)).getResult()
                  : arith::MaxSIOp::create(b, l, v, c(0)).getResult();
      case UnaryOp::Abs: {
        if (fp)
          return math::AbsFOp::create(b, l, v);
        // x < 0 ? 0 - x : x (math.absi has no CPU lowering in the kernel
        // pipeline); INT_MIN stays INT_MIN, as in numpy.
        mlir::Value negative =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, v, c(0));
        return arith::SelectOp::create(b, l, negative,
                                       arith::SubIOp::create(b, l, c(0), v), v);
      }
      case UnaryOp::Exp:
        return math::ExpOp::create(b, l, v);
      case UnaryOp::Log:
        return math::LogOp::create(b, l, v);
      case UnaryOp::Tanh:
        return math::TanhOp::create(b, l, v);
      case UnaryOp::Sqrt:
        return math::SqrtOp::create(b, l, v);
      case UnaryOp::Sigmoid: {
        mlir::Value e =
            math::ExpOp::create(b, l, arith::NegFOp::create(b, l, v));
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
    }();
    return convertElement(b, l, r, resultElem);
  };
  return elementwise(I, {x}, resultElem, body, loc, unaryName(op));
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
  case BinaryOp::FloorDiv:
    return "floor divide (//)";
  case BinaryOp::Mod:
    return "remainder (%)";
  }
  return "?";
}

/// numpy's promotion lattice over our dtypes: bool < int32 < float16,
/// bfloat16 < float32. Where numpy would widen to float64 (int32 with a
/// float type, float16 with bfloat16), float32 stands in for it.
static Type promoteTypes(Type a, Type b) {
  if (a == b)
    return a;
  if (a.isInteger(1))
    return b;
  if (b.isInteger(1))
    return a;
  MLIRContext *ctx = a.getContext();
  if (!isFloat(a) && !isFloat(b))
    return a; // only int32 remains
  if (isFloat(a) && isFloat(b) &&
      llvm::cast<FloatType>(a).getWidth() !=
          llvm::cast<FloatType>(b).getWidth())
    return llvm::cast<FloatType>(a).getWidth() >
                   llvm::cast<FloatType>(b).getWidth()
               ? a
               : b;
  return Float32Type::get(ctx);
}

/// The element type two operands compute in (NEP 50): tensors promote as
/// `promoteTypes`; a scalar is weak and takes the tensor's type, unless a
/// float scalar meets an integer or bool tensor (numpy computes in float
/// then) or an int scalar meets a bool tensor.
static Result<Type> commonElement(TraceBuilder::Impl &I, Value a, Value b,
                                  const SourceLoc &l) {
  Result<ValueRecord *> ra = I.get(a, l);
  if (!ra)
    return ra.status();
  Result<ValueRecord *> rb = I.get(b, l);
  if (!rb)
    return rb.status();
  Type ea = elemOf(**ra), eb = elemOf(**rb);
  if (ea == eb)
    return ea;
  if ((*ra)->scalar != (*rb)->scalar) {
    Type scalar = (*ra)->scalar ? ea : eb;
    Type tensor = (*ra)->scalar ? eb : ea;
    if (isFloat(scalar) && !isFloat(tensor))
      return Float32Type::get(&I.ctx);
    if (scalar.isInteger(32) && tensor.isInteger(1))
      return scalar;
    return tensor;
  }
  return promoteTypes(ea, eb);
}

/// `a // b` in `t` with numpy's semantics: floored; an integer divisor of 0
/// gives 0 (numpy warns and returns 0), and INT_MIN // -1 wraps instead of
/// trapping.
static mlir::Value floorDivide(OpBuilder &b, Location l, mlir::Value x,
                               mlir::Value y, Type t) {
  if (isFloat(t))
    return math::FloorOp::create(b, l, arith::DivFOp::create(b, l, x, y));
  mlir::Value zero = constantLike(b, l, t, 0);
  mlir::Value one = constantLike(b, l, t, 1);
  mlir::Value minusOne = constantLike(b, l, t, -1);
  mlir::Value isZero =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
  mlir::Value isMinusOne =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, minusOne);
  mlir::Value safe = arith::SelectOp::create(
      b, l, arith::OrIOp::create(b, l, isZero, isMinusOne), one, y);
  mlir::Value q = arith::FloorDivSIOp::create(b, l, x, safe);
  mlir::Value negated = arith::SubIOp::create(b, l, zero, x);
  return arith::SelectOp::create(
      b, l, isZero, zero,
      arith::SelectOp::create(b, l, isMinusOne, negated, q));
}

/// `a % b` with numpy's semantics: the remainder has the divisor's sign
/// (`a - (a // b) * b`); an integer divisor of 0 gives 0.
static mlir::Value remainder(OpBuilder &b, Location l, mlir::Value x,
                             mlir::Value y, Type t) {
  mlir::Value q = floorDivide(b, l, x, y, t);
  if (isFloat(t))
    return arith::SubFOp::create(b, l, x, arith::MulFOp::create(b, l, q, y));
  mlir::Value zero = constantLike(b, l, t, 0);
  mlir::Value r =
      arith::SubIOp::create(b, l, x, arith::MulIOp::create(b, l, q, y));
  mlir::Value isZero =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
  return arith::SelectOp::create(b, l, isZero, zero, r);
}

Result<Value> TraceBuilder::binary(BinaryOp op, Value a, Value b,
                                   SourceLoc loc) {
  Impl &I = *pimpl;
  Result<Type> elem = commonElement(I, a, b, loc);
  if (!elem)
    return elem.status();
  Type t = *elem;
  // numpy's `/` is true division: integers and booleans divide as floats
  // (float64 in numpy, float32 here); `//` and `%` of booleans as int32.
  if (op == BinaryOp::Div && !isFloat(t))
    t = Float32Type::get(&I.ctx);
  if ((op == BinaryOp::FloorDiv || op == BinaryOp::Mod) && t.isInteger(1))
    t = I.b.getI32Type();
  bool fp = isFloat(t);
  if ((t.isInteger(1) && op != BinaryOp::Max && op != BinaryOp::Min) ||
      (!fp && op == BinaryOp::Pow))
    return I.error(loc,
                   std::string("unsupported op: ") + binaryName(op) + " on " +
                       (t.isInteger(1) ? "bool" : "int32") +
                       " tensors (cast to float32 first)",
                   ErrorKind::Unsupported);
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
      return arith::DivFOp::create(nb, l, x, y);
    case BinaryOp::FloorDiv:
      return floorDivide(nb, l, x, y, t);
    case BinaryOp::Mod:
      return remainder(nb, l, x, y, t);
    case BinaryOp::Max:
      if (t.isInteger(1))
        return arith::OrIOp::create(nb, l, x, y);
      return fp ? arith::MaximumFOp::create(nb, l, x, y).getResult()
                : arith::MaxSIOp::create(nb, l, x, y).getResult();
    case BinaryOp::Min:
      if (t.isInteger(1))
        return arith::AndIOp::create(nb, l, x, y);
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
  Result<Type> elem = commonElement(I, a, b, loc);
  if (!elem)
    return elem.status();
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
    return rc.status();
  if (!elemOf(**rc).isInteger(1))
    return I.error(loc, "the condition of where/select must be bool, not " +
                            I.typeStr(**rc));
  Result<Type> elem = commonElement(I, a, b, loc);
  if (!elem)
    return elem.status();
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
    return r.status();
  if (!isTraceableDType(dtype))
    return I.dtypeError(loc, dtype);
  Type to = I.elementType(dtype);
  if (elemOf(**r) == to)
    return x;
  auto body = [&](OpBuilder &nb, Location l, ValueRange e) -> mlir::Value {
    return convertElement(nb, l, e[0], to);
  };
  return elementwise(I, {x}, to, body, loc, "cast");
}

} // namespace monarch::frontend
