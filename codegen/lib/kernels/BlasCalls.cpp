//===- BlasCalls.cpp - Contractions as calls to cblas_?gemm --- -*- C++ -*-===//
//
// A contraction of the CPU pipeline (linalg.matmul, batch_matmul, and every
// contraction linalg.generic: `@` on 3-D/4-D tensors, transposed operands of
// the backward, einsum pairs) whose loops are all batch, M, N or K (a loop
// summed over one operand alone is none of them: generated code computes
// that op) with float32 or float64 operands is computed by OpenBLAS's
// cblas_sgemm/cblas_dgemm instead of the generated schedule. That is what
// XLA:CPU and IREE do for shapes their own code does not reach: on the AVX2
// machines of this project the packed MLIR schedule runs at 0.5-0.8 of
// OpenBLAS (bench_kernels), and the transposed and batched layouts of the
// backward had no packed schedule at all (0.01-0.24).
//
//  1. markBlasContractions (on tensors, before the schedules) tags the ops
//     to call BLAS (`monarch_blas`), all of them unless
//     MONARCH_CPU_GEMM=generated: measured with `monarch-kernels --emit=check
//     --times`, the call wins at every size down to 8x8x16 (0.3 us against
//     0.8 us generated; 128^3: 65 against 115 us, and 52 against 1117 us
//     with B transposed). Transposes and broadcasts feeding the op are
//     folded into its maps first; a zero-filled destination becomes an
//     empty tensor that the call overwrites (`monarch_blas_overwrite`).
//     Tagged ops skip the matmul schedule and the tile-and-vectorize of the
//     generic path, and elementwise producers do not fuse into them
//     (CpuPipeline.cpp, willCallBlas).
//  2. lowerBlasContractions (on buffers, after bufferization) replaces each
//     tagged op by the call. The loops of each role (M, N, K) merge into one
//     BLAS dimension where they are contiguous in both operands that have
//     them; batch loops and the rest are a loop nest around the call. Each
//     operand's matrix is read off its memref's static strides: row-major
//     (unit column stride) or transposed storage (unit row stride) become
//     CblasNoTrans/CblasTrans with that leading dimension; a C with unit
//     stride along M is computed as C^T = B^T A^T. An operand neither can
//     express (a strided slice) is first copied to a contiguous buffer (and
//     C copied back). beta is 1 (linalg accumulates into its destination)
//     or 0 for an overwriting call.
//
// The library links against OpenBLAS (`--as-needed`: only when a kernel
// calls it); the runtime keeps it to one thread per worker (KernelRuntime).
//
//===----------------------------------------------------------------------===//
#include "BlasCalls.h"

#include "monarch/Support/Knobs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <climits>
#include <optional>

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

constexpr llvm::StringLiteral kBlasAttr = "monarch_blas";
/// The destination was a fill of zeros, replaced by an empty tensor: the
/// call overwrites it (beta = 0) instead of accumulating into it.
constexpr llvm::StringLiteral kOverwriteAttr = "monarch_blas_overwrite";

// CBLAS enumerators (cblas.h).
constexpr int32_t kRowMajor = 101, kNoTrans = 111, kTrans = 112;

/// The loop dimension `dim` in `map`'s results: its position, or none (the
/// operand does not vary along it).
std::optional<unsigned> resultPosition(AffineMap map, unsigned dim) {
  for (unsigned i = 0, e = map.getNumResults(); i < e; ++i)
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(i)))
      if (d.getPosition() == dim)
        return i;
  return std::nullopt;
}

/// The contraction's loops by role, when BLAS can compute it: M (in A and
/// C), N (in B and C), K (in A and B) and batch dimensions; several loops
/// may play one role (`x @ w` with x of 3-D has two M loops).
struct GemmDims {
  SmallVector<unsigned> batch, m, n, k;
};

std::optional<GemmDims> gemmDims(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  // Every loop must play a role: a reduction loop of one operand alone
  // (einsum 'ij,ipq->jp' sums q over B only) is no GEMM dimension, and the
  // call would read one q of B (found by the fuzzer with q of size 2).
  if (dims->batch.size() + dims->m.size() + dims->n.size() + dims->k.size() !=
      op.getNumLoops())
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
  GemmDims result;
  result.batch.assign(dims->batch.begin(), dims->batch.end());
  result.m.assign(dims->m.begin(), dims->m.end());
  result.n.assign(dims->n.begin(), dims->n.end());
  result.k.assign(dims->k.begin(), dims->k.end());
  return result;
}

/// float32 or float64 throughout (the two BLAS calls made here).
bool hasBlasElementTypes(linalg::LinalgOp op) {
  Type elem;
  for (OpOperand &operand : op->getOpOperands()) {
    auto shaped = dyn_cast<ShapedType>(operand.get().getType());
    if (!shaped || !shaped.hasStaticShape())
      return false;
    if (!elem)
      elem = shaped.getElementType();
    if (shaped.getElementType() != elem)
      return false;
  }
  return elem && (elem.isF32() || elem.isF64());
}

SmallVector<int64_t> staticStrides(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return {};
  return strides;
}

/// An operand on buffers: its memref, indexing map and static strides.
struct Operand {
  Value buffer;
  AffineMap map;
  SmallVector<int64_t> strides;

  Operand(Value buffer, AffineMap map)
      : buffer(buffer), map(map), strides(staticStrides(buffer)) {}
  /// Its stride along loop dimension `dim` (0 when it does not vary along
  /// it).
  int64_t stride(unsigned dim) const {
    std::optional<unsigned> pos = resultPosition(map, dim);
    return pos ? strides[*pos] : 0;
  }
};

/// The loops of one role that become one BLAS dimension: `inner` is the
/// innermost of them, `size` the product of their trip counts. Loops of the
/// role that do not merge are left to the loop nest around the call.
struct Merged {
  unsigned inner;
  int64_t size;
};

/// Merges `dims` (one role) into one BLAS dimension, for the two operands
/// `x` and `y` that have it: the innermost is the loop of least stride in
/// `x`, and a loop joins when, in both operands, it steps over exactly the
/// loops merged so far (its stride = the innermost stride x their size).
/// Loops that do not join go to `loops`; loops of one trip to neither.
Merged mergeRole(ArrayRef<unsigned> dims, const Operand &x, const Operand &y,
                 ArrayRef<int64_t> ranges, SmallVector<unsigned> &loops) {
  SmallVector<unsigned> rest;
  for (unsigned d : dims)
    if (ranges[d] > 1)
      rest.push_back(d);
  if (rest.empty())
    return Merged{dims.back(), 1};
  auto innerIt = llvm::min_element(
      rest, [&](unsigned p, unsigned q) { return x.stride(p) < x.stride(q); });
  Merged merged{*innerIt, ranges[*innerIt]};
  rest.erase(innerIt);
  for (bool grew = true; grew && !rest.empty();) {
    grew = false;
    for (auto it = rest.begin(); it != rest.end(); ++it) {
      unsigned d = *it;
      if (x.stride(d) == x.stride(merged.inner) * merged.size &&
          y.stride(d) == y.stride(merged.inner) * merged.size) {
        merged.size *= ranges[d];
        rest.erase(it);
        grew = true;
        break;
      }
    }
  }
  loops.append(rest.begin(), rest.end());
  return merged;
}

/// How BLAS reads one operand as a (rows x cols) matrix: transposed or
/// not, and its leading dimension; none when its strides fit neither.
struct BlasLayout {
  bool transposed;
  int64_t ld;
};

std::optional<BlasLayout> blasLayout(const Operand &x, const Merged &row,
                                     const Merged &col) {
  if (x.strides.empty())
    return std::nullopt;
  int64_t rows = row.size, cols = col.size;
  int64_t rowStride = x.stride(row.inner), colStride = x.stride(col.inner);
  // Row-major: consecutive columns adjacent, rows ld apart (ld >= cols).
  if (colStride == 1 || cols == 1) {
    int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rowStride;
    if (ld >= std::max<int64_t>(cols, 1) && ld <= INT32_MAX)
      return BlasLayout{false, ld};
  }
  // Transposed storage: consecutive rows adjacent, columns ld apart.
  if (rowStride == 1 || rows == 1) {
    int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : colStride;
    if (ld >= std::max<int64_t>(rows, 1) && ld <= INT32_MAX)
      return BlasLayout{true, ld};
  }
  return std::nullopt;
}

/// The call for one contraction: which operand plays BLAS's A, B and C
/// (C^T = B^T A^T when C is stored transposed), the merged dimensions, the
/// layouts and the loops around the call.
struct GemmPlan {
  const Operand *lhs, *rhs, *out;
  Merged m, n, k;
  BlasLayout lhsLayout, rhsLayout, outLayout;
  SmallVector<unsigned> loops;
};

std::optional<GemmPlan> planGemm(const GemmDims &dims, const Operand &a,
                                 const Operand &b, const Operand &c,
                                 ArrayRef<int64_t> ranges) {
  if (a.strides.empty() || b.strides.empty() || c.strides.empty())
    return std::nullopt;
  GemmPlan plan;
  plan.loops.assign(dims.batch.begin(), dims.batch.end());
  Merged m = mergeRole(dims.m, a, c, ranges, plan.loops);
  Merged n = mergeRole(dims.n, b, c, ranges, plan.loops);
  plan.k = mergeRole(dims.k, a, b, ranges, plan.loops);
  if (m.size > INT32_MAX || n.size > INT32_MAX || plan.k.size > INT32_MAX)
    return std::nullopt;
  std::optional<BlasLayout> cLayout = blasLayout(c, m, n);
  if (!cLayout)
    return std::nullopt;
  if (!cLayout->transposed) {
    plan.lhs = &a, plan.rhs = &b, plan.out = &c;
    plan.m = m, plan.n = n;
  } else {
    // C^T (N x M, row-major) = B^T (N x K) * A^T (K x M).
    plan.lhs = &b, plan.rhs = &a, plan.out = &c;
    plan.m = n, plan.n = m;
  }
  std::optional<BlasLayout> lhs = blasLayout(*plan.lhs, plan.m, plan.k);
  std::optional<BlasLayout> rhs = blasLayout(*plan.rhs, plan.k, plan.n);
  std::optional<BlasLayout> out = blasLayout(*plan.out, plan.m, plan.n);
  if (!lhs || !rhs || !out || out->transposed)
    return std::nullopt;
  plan.lhsLayout = *lhs, plan.rhsLayout = *rhs, plan.outLayout = *out;
  return plan;
}

bool hasIdentityLayout(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getLayout().isIdentity();
}

/// A contiguous (identity layout) copy of `buffer`, made at `b`'s insertion
/// point; the caller deallocates it.
Value contiguousCopy(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  auto contiguous = MemRefType::get(type.getShape(), type.getElementType());
  Value copy = memref::AllocOp::create(b, loc, contiguous);
  linalg::CopyOp::create(b, loc, buffer, copy);
  return copy;
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The address of `x`'s first element at the loop indices `index` (one per
/// dimension of `loops`), as an !llvm.ptr.
Value elementAddress(OpBuilder &b, Location loc, const Operand &x,
                     ArrayRef<unsigned> loops, ValueRange index) {
  auto type = cast<MemRefType>(x.buffer.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, x.buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, metadata.getBaseBuffer());
  Value elements = metadata.getOffset();
  for (auto [dim, i] : llvm::zip(loops, index)) {
    int64_t stride = x.stride(dim);
    if (stride == 0)
      continue;
    Value step =
        arith::MulIOp::create(b, loc, i, indexConstant(b, loc, stride));
    elements = arith::AddIOp::create(b, loc, elements, step);
  }
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  Value offset =
      arith::MulIOp::create(b, loc, elements, indexConstant(b, loc, bytes));
  Value address = arith::AddIOp::create(b, loc, base, offset);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
}

/// `cblas_sgemm` or `cblas_dgemm`, declared in `module` on first use.
func::FuncOp gemmDeclaration(ModuleOp module, bool f64) {
  StringRef name = f64 ? "cblas_dgemm" : "cblas_sgemm";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Type i32 = b.getI32Type(), ptr = LLVM::LLVMPointerType::get(ctx);
  Type scalar = f64 ? Type(b.getF64Type()) : Type(b.getF32Type());
  // (Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
  auto type = b.getFunctionType({i32, i32, i32, i32, i32, i32, scalar, ptr, i32,
                                 ptr, i32, scalar, ptr, i32},
                                {});
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  return fn;
}

/// Replaces the tagged `op` (on buffers) by its BLAS call; an op whose
/// operands no layout fits even after contiguous copies (a batch dimension
/// innermost in C) loses its tag and becomes scalar loops.
LogicalResult lowerOne(ModuleOp module, linalg::LinalgOp op) {
  std::optional<GemmDims> dims = gemmDims(op);
  if (!dims || !op.hasPureBufferSemantics())
    return op.emitOpError("internal error: marked for BLAS but is not a "
                          "buffer contraction it can compute");
  Location loc = op.getLoc();
  OpBuilder b(op);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  Operand a(op.getDpsInputs()[0], maps[0]);
  Operand bOp(op.getDpsInputs()[1], maps[1]);
  Operand c(op.getDpsInits()[0], maps[2]);
  Value cOriginal;
  SmallVector<Value> deallocs;
  std::optional<GemmPlan> plan = planGemm(*dims, a, bOp, c, ranges);
  if (!plan) {
    // Strided slices and the like: contiguous copies (C copied back).
    for (Operand *x : {&a, &bOp, &c}) {
      if (hasIdentityLayout(x->buffer))
        continue;
      if (x == &c)
        cOriginal = c.buffer;
      *x = Operand(contiguousCopy(b, loc, x->buffer), x->map);
      deallocs.push_back(x->buffer);
    }
    plan = planGemm(*dims, a, bOp, c, ranges);
  }
  bool f64 = cast<MemRefType>(c.buffer.getType()).getElementType().isF64();
  bool overwrite = op->hasAttr(kOverwriteAttr);
  auto zeroFill = [&](Value buffer) {
    Type elem = cast<MemRefType>(buffer.getType()).getElementType();
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elem));
    linalg::FillOp::create(b, loc, zero, buffer);
  };
  if (!plan) {
    for (Value buffer : deallocs) {
      for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
        user->erase();
      buffer.getDefiningOp()->erase();
    }
    if (overwrite)
      zeroFill(op.getDpsInits()[0]);
    op->removeAttr(kBlasAttr);
    op->removeAttr(kOverwriteAttr);
    return success();
  }
  // K loops left around the call accumulate through beta = 1, so an
  // overwriting call starts from zeros there.
  if (overwrite && llvm::any_of(plan->loops, [&](unsigned d) {
        return llvm::is_contained(dims->k, d);
      })) {
    zeroFill(c.buffer);
    overwrite = false;
  }

  func::FuncOp callee = gemmDeclaration(module, f64);
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  };
  auto scalar = [&](double v) -> Value {
    Type type = f64 ? Type(b.getF64Type()) : Type(b.getF32Type());
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  };
  Value one = scalar(1.0);
  SmallVector<Value> args = {
      i32(kRowMajor), i32(plan->lhsLayout.transposed ? kTrans : kNoTrans),
      i32(plan->rhsLayout.transposed ? kTrans : kNoTrans), i32(plan->m.size),
      i32(plan->n.size), i32(plan->k.size), one, Value(),
      i32(plan->lhsLayout.ld), Value(), i32(plan->rhsLayout.ld),
      // beta: linalg accumulates into its destination, unless that was
      // zeros (then the call overwrites it)
      scalar(overwrite ? 0.0 : 1.0), Value(), i32(plan->outLayout.ld)};

  // One call per index of the loops not merged into M, N or K (batch
  // dimensions, and K loops accumulate through beta = 1).
  SmallVector<Value> index;
  {
    OpBuilder::InsertionGuard guard(b);
    for (unsigned dim : plan->loops) {
      auto loop = scf::ForOp::create(b, loc, indexConstant(b, loc, 0),
                                     indexConstant(b, loc, ranges[dim]),
                                     indexConstant(b, loc, 1));
      b.setInsertionPointToStart(loop.getBody());
      index.push_back(loop.getInductionVar());
    }
    args[7] = elementAddress(b, loc, *plan->lhs, plan->loops, index);
    args[9] = elementAddress(b, loc, *plan->rhs, plan->loops, index);
    args[12] = elementAddress(b, loc, *plan->out, plan->loops, index);
    func::CallOp::create(b, loc, callee, args);
  }
  b.setInsertionPointAfter(op);
  if (cOriginal)
    linalg::CopyOp::create(b, loc, c.buffer, cOriginal);
  for (Value buffer : deallocs)
    memref::DeallocOp::create(b, loc, buffer);
  op->erase();
  return success();
}

} // namespace

bool blasAvailable() {
#ifdef MONARCH_OPENBLAS_LIBRARY
  return true;
#else
  return false;
#endif
}

const char *blasLibraryPath() {
#ifdef MONARCH_OPENBLAS_LIBRARY
  return MONARCH_OPENBLAS_LIBRARY;
#else
  return nullptr;
#endif
}

/// A generic that only moves data: one input, one output, all loops
/// parallel, the body yields the input element, the output map a
/// permutation and the input map a projected permutation (a transpose, or
/// a broadcast).
bool movesDataOnly(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != op.getNumParallelLoops())
    return false;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != op.getBlock()->getArgument(0) ||
      &op.getBlock()->front() != yield.getOperation())
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  return maps[1].isPermutation() &&
         maps[0].isProjectedPermutation(/*allowZeroInResults=*/false);
}

bool willCallBlas(linalg::LinalgOp op) {
  return blasAvailable() &&
         knobs::getString(knobs::Id::CpuGemm).value != "generated" &&
         op.hasPureTensorSemantics() && hasBlasElementTypes(op) &&
         gemmDims(op) && llvm::none_of(op.getStaticLoopRanges(), [](int64_t r) {
           return r > INT32_MAX;
         });
}

namespace {

/// Reads the sources of transposes and broadcasts that feed the
/// contraction `op` directly, through its indexing maps: `g @ w.T` becomes
/// one call with CblasTrans instead of a materialised transpose (the
/// backward's `x.T @ d` and `d @ w2.T` of a 1024-wide MLP spent 8.5 ms of
/// 51 in three transposes). A named contraction becomes a generic for that.
/// Returns the op to continue with.
linalg::LinalgOp foldDataMovementOperands(linalg::LinalgOp op) {
  auto producerOf = [&](unsigned i) -> linalg::GenericOp {
    auto producer = op.getDpsInputs()[i].getDefiningOp<linalg::GenericOp>();
    return producer && movesDataOnly(producer) ? producer : linalg::GenericOp();
  };
  if (!producerOf(0) && !producerOf(1))
    return op;
  // The maps after the fold; folded only when BLAS still sees one M, N and
  // K role each in them (a broadcast from a 0-d tensor would leave none).
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (unsigned i = 0; i < 2; ++i)
    if (linalg::GenericOp producer = producerOf(i)) {
      SmallVector<AffineMap> inner = producer.getIndexingMapsArray();
      // Consumer loops -> producer result -> producer loops -> its input.
      maps[i] = inner[0].compose(inversePermutation(inner[1])).compose(maps[i]);
    }
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(maps);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty() ||
      llvm::any_of(maps, [](AffineMap map) {
        return !map.isProjectedPermutation(/*allowZeroInResults=*/false);
      }))
    return op;
  IRRewriter rewriter(op.getContext());
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return op;
    generic = *generalized;
    op = cast<linalg::LinalgOp>(generic.getOperation());
  }
  for (unsigned i = 0; i < 2; ++i) {
    linalg::GenericOp producer = producerOf(i);
    if (!producer)
      continue;
    generic->setOperand(i, producer.getDpsInputs()[0]);
    if (producer->use_empty())
      producer->erase();
  }
  generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  return op;
}

} // namespace

void markBlasContractions(ModuleOp scratch) {
  MLIRContext *ctx = scratch.getContext();
  SmallVector<linalg::LinalgOp> contractions;
  scratch.walk([&](linalg::LinalgOp op) {
    if (willCallBlas(op))
      contractions.push_back(op);
  });
  for (linalg::LinalgOp op : contractions)
    (void)foldDataMovementOperands(op);
  scratch.walk([&](linalg::LinalgOp op) {
    if (!willCallBlas(op))
      return;
    op->setAttr(kBlasAttr, UnitAttr::get(ctx));
    // C = 0 + A B: the call writes C (beta = 0), so this op no longer reads
    // the zero fill (which goes when nothing else uses it; CSE merges the
    // fills of equal shapes) and its destination becomes an empty tensor,
    // which bufferization places in the kernel's output buffer.
    OpOperand &init = op.getDpsInitsMutable()[0];
    auto fill = init.get().getDefiningOp<linalg::FillOp>();
    if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
      return;
    auto type = cast<RankedTensorType>(init.get().getType());
    OpBuilder b(op);
    init.set(tensor::EmptyOp::create(b, fill.getLoc(), type.getShape(),
                                     type.getElementType()));
    if (fill->use_empty())
      fill->erase();
    op->setAttr(kOverwriteAttr, UnitAttr::get(ctx));
  });
}

bool isMarkedForBlas(Operation *op) { return op->hasAttr(kBlasAttr); }

LogicalResult lowerBlasContractions(ModuleOp scratch) {
  SmallVector<linalg::LinalgOp> marked;
  scratch.walk([&](linalg::LinalgOp op) {
    if (isMarkedForBlas(op))
      marked.push_back(op);
  });
  for (linalg::LinalgOp op : marked)
    if (failed(lowerOne(scratch, op)))
      return failure();
  return success();
}

} // namespace monarch::codegen::detail
