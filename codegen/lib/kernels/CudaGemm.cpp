//===- CudaGemm.cpp - Matmuls of CUDA kernels as cuBLAS calls - -*- C++ -*-===//
//
// On the CUDA target a bufferized kernel's matmuls (linalg.matmul and
// linalg.batch_matmul, with either operand transposed through its indexing
// map) are not lowered to loops: each becomes a `func.call` to a private
// declaration `monarch_gemm_<i>` tagged `monarch.gemm = i`, which stays on
// the host side of the kernel like a launch, and a GemmCall with the cuBLAS
// arguments. The manifest (CudaPipeline.cpp) writes a `monarch.gemm` line at
// its place among the launches and fills in the operands.
//
// Row-major C[M][N] = A[M][K] · B[K][N] is column-major Cᵀ = Bᵀ · Aᵀ, so
// cuBLAS gets (m, n, k) = (N, M, K), its A is our B and its B is our A; a
// transposed operand flips its op; leading dimensions are the row strides of
// the (possibly strided) views. A matmul whose output is zero-filled right
// before it uses beta = 0 and the fill goes. A matmul outside this (integer
// types, a view without unit inner stride, a dynamic offset, broadcast maps)
// keeps the generated loops.
//
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"
#include "monarch/IR/ElementTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace monarch::plan;

namespace monarch::codegen::detail {
namespace {

std::optional<DType> gemmType(Type type) {
  std::optional<DType> dtype = dtypeOf(type);
  if (dtype && isFloatDType(*dtype))
    return dtype;
  return std::nullopt;
}

/// Row stride (leading dimension) and batch stride of a view whose
/// innermost stride is 1; fails on anything cuBLAS cannot address.
struct ViewLayout {
  int64_t ld = 0, batchStride = 0;
};
std::optional<ViewLayout> viewLayout(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic) || strides.back() != 1)
    return std::nullopt;
  ViewLayout layout;
  int64_t rank = type.getRank();
  int64_t rows = type.getShape()[rank - 2], cols = type.getShape().back();
  if (rows > 1 && strides[rank - 2] < cols)
    return std::nullopt; // Overlapping rows.
  // A single row may carry any stride; cuBLAS wants ld >= its row length.
  layout.ld = std::max<int64_t>(strides[rank - 2], cols);
  if (rank == 3)
    layout.batchStride = strides[0];
  return layout;
}

/// True when `value` is a chain of views over a kernel argument or a
/// temporary (what the manifest can name).
bool isAddressable(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto v = dyn_cast<memref::SubViewOp>(def))
      value = v.getSource();
    else if (auto v = dyn_cast<memref::ExpandShapeOp>(def))
      value = v.getSrc();
    else if (auto v = dyn_cast<memref::CollapseShapeOp>(def))
      value = v.getSrc();
    else if (auto v = dyn_cast<memref::CastOp>(def))
      value = v.getSource();
    else
      return isa<memref::AllocOp>(def);
  }
  return isa<BlockArgument>(value);
}

/// Which operand is transposed: the A map is (m, k) or (k, m), B (k, n) or
/// (n, k), C (m, n), with a leading batch dimension for batch matmuls.
std::optional<std::pair<bool, bool>> transposes(linalg::LinalgOp op,
                                                bool batch) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext *ctx = op->getContext();
  unsigned n = batch ? 4 : 3, o = batch ? 1 : 0;
  auto map = [&](std::initializer_list<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    if (batch)
      exprs.push_back(getAffineDimExpr(0, ctx));
    for (unsigned d : dims)
      exprs.push_back(getAffineDimExpr(d + o, ctx));
    return AffineMap::get(n, 0, exprs, ctx);
  };
  // Dims: m = 0, n = 1, k = 2 (after the batch dimension).
  if (maps.size() != 3 || maps[2] != map({0, 1}))
    return std::nullopt;
  bool transA = maps[0] == map({2, 0});
  bool transB = maps[1] == map({1, 2});
  if (!transA && maps[0] != map({0, 2}))
    return std::nullopt;
  if (!transB && maps[1] != map({2, 1}))
    return std::nullopt;
  return std::make_pair(transA, transB);
}

/// The GemmCall of `op`, or nothing when cuBLAS cannot run it.
std::optional<GemmCall> analyze(linalg::LinalgOp op) {
  bool batch = isa<linalg::BatchMatmulOp>(op);
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  std::optional<std::pair<bool, bool>> trans = transposes(op, batch);
  if (!trans)
    return std::nullopt;
  Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
        c = op.getDpsInits()[0];
  auto ta = cast<MemRefType>(a.getType()), tb = cast<MemRefType>(b.getType()),
       tc = cast<MemRefType>(c.getType());
  std::optional<DType> ea = gemmType(ta.getElementType()),
                       eb = gemmType(tb.getElementType()),
                       ec = gemmType(tc.getElementType());
  if (!ea || !eb || !ec || *ea != *eb)
    return std::nullopt;
  // Same type throughout, or half-precision inputs accumulating into f32.
  if (*ec != *ea &&
      !(*ec == DType::F32 && (*ea == DType::F16 || *ea == DType::BF16)))
    return std::nullopt;
  std::optional<ViewLayout> la = viewLayout(a), lb = viewLayout(b),
                            lc = viewLayout(c);
  if (!la || !lb || !lc || !isAddressable(a) || !isAddressable(b) ||
      !isAddressable(c))
    return std::nullopt;
  int64_t r = batch ? 1 : 0;
  int64_t M = tc.getShape()[r], N = tc.getShape()[r + 1];
  int64_t K = trans->first ? ta.getShape()[r] : ta.getShape()[r + 1];
  GemmCall g;
  g.transA = trans->second; // cuBLAS A is our B
  g.transB = trans->first;
  g.m = N;
  g.n = M;
  g.k = K;
  g.lda = lb->ld;
  g.ldb = la->ld;
  g.ldc = lc->ld;
  g.batch = batch ? tc.getShape()[0] : 1;
  if (batch) {
    g.strideA = lb->batchStride;
    g.strideB = la->batchStride;
    g.strideC = lc->batchStride;
  }
  g.typeA = *eb;
  g.typeB = *ea;
  g.typeC = *ec;
  g.alpha = 1.0;
  g.beta = 1.0;
  return g;
}

/// A `linalg.fill` of zero into exactly `c`, immediately before `op`.
linalg::FillOp zeroFillBefore(Operation *op, Value c) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || !fill.hasPureBufferSemantics() || fill.getDpsInits()[0] != c)
    return {};
  auto constant = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  if (!value || !value.getValue().isZero())
    return {};
  return fill;
}

} // namespace

void extractGemms(ModuleOp scratch, func::FuncOp fn,
                  std::vector<GemmCall> &gemms) {
  SmallVector<linalg::LinalgOp> matmuls;
  for (Operation &op : fn.getBody().front())
    if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
      matmuls.push_back(cast<linalg::LinalgOp>(op));
  OpBuilder b(fn.getContext());
  for (linalg::LinalgOp op : matmuls) {
    std::optional<GemmCall> gemm = analyze(op);
    if (!gemm)
      continue;
    Value c = op.getDpsInits()[0];
    if (linalg::FillOp fill = zeroFillBefore(op, c)) {
      gemm->beta = 0.0;
      fill->erase();
    }
    unsigned index = gemms.size();
    gemms.push_back(*gemm);
    SmallVector<Value> operands = {op.getDpsInputs()[0], op.getDpsInputs()[1],
                                   c};
    b.setInsertionPointToEnd(scratch.getBody());
    std::string name = "monarch_gemm_" + std::to_string(index);
    auto decl = func::FuncOp::create(
        b, op.getLoc(), name,
        b.getFunctionType(ValueRange(operands).getTypes(), {}));
    decl.setPrivate();
    b.setInsertionPoint(op);
    auto call = func::CallOp::create(b, op.getLoc(), decl, operands);
    call->setAttr(kGemmAttrName, b.getI64IntegerAttr(index));
    op->erase();
  }
}

} // namespace monarch::codegen::detail
