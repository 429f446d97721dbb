//===- CpuPipeline.cpp - Kernel preparation ------------------- -*- C++ -*-===//
//
// The target-independent tensor stages and the CPU lowering to the LLVM
// dialect. Upstream passes do the work; this file only orders them:
//   prepare    canonicalize, generalize named non-contraction ops so that
//              elementwise chains fuse, linalg-fuse-elementwise-ops;
//   schedule   the matmul transform scripts (MatmulSchedule.cpp), then every
//              remaining linalg op is tiled (innermost loop by 16, others by
//              1) and vectorized, masked where 16 does not divide the loop;
//   bufferize  one-shot, function boundaries with identity layouts; copies
//              are linalg.copy (no runtime library call) and temporaries are
//              freed by the ownership-based deallocation pipeline;
//   lower      vector transfers unrolled to 1-D, math approximated by
//              polynomials (no libm calls), bf16/f16 arithmetic computed in
//              f32, everything to LLVM with bare-pointer memrefs.
//
//===----------------------------------------------------------------------===//
#include "BlasCalls.h"
#include "KernelPipelines.h"
#include "MatmulSchedule.h"
#include "ScatterLoops.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

/// Runs a textual pass pipeline (no `builtin.module(...)` wrapper) on
/// `module`.
LogicalResult runPipeline(ModuleOp module, llvm::StringRef pipeline) {
  PassManager pm(module.getContext());
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(parsePassPipeline(pipeline, pm, errorStream))) {
    module.emitError("internal error: bad kernel pipeline '")
        << pipeline << "': " << error;
    return failure();
  }
  return pm.run(module);
}

/// Tile sizes for the generic CPU schedule: 16 on the innermost loop, 1 on
/// the others (tiles of 16-64 stream well; 256 halves throughput).
SmallVector<int64_t> genericTileSizes(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> sizes(ranges.size(), 1);
  if (!ranges.empty())
    sizes.back() = std::min<int64_t>(ranges.back(), kVectorTile);
  return sizes;
}

/// Whether `op`'s body reads (a gather: `tensor.extract` at computed
/// indices) a strided slice: its vectorized form, a `vector.gather` of a
/// buffer with a non-unit stride, does not lower to LLVM (an unrealized
/// cast is left), so such ops stay scalar loops.
bool gathersFromStridedSlice(linalg::LinalgOp op) {
  bool strided = false;
  op->walk([&](tensor::ExtractOp extract) {
    for (Value v = extract.getTensor(); Operation *def = v.getDefiningOp();) {
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
        strided |= llvm::any_of(slice.getStaticStrides(),
                                [](int64_t s) { return s != 1; });
        break;
      }
      if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
        break;
      v = def->getOperand(0);
    }
  });
  return strided;
}

/// Tiles `op` with `genericTileSizes` and vectorizes the tile. A loop that
/// 16 does not divide is split first, so that every vector is static and
/// unmasked: the main part in tiles of 16, the remainder as one tile.
LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitOpError("has dynamic loop bounds; kernels need static "
                          "shapes");
  if (gathersFromStridedSlice(op))
    return success(); // Scalar loops (convert-linalg-to-loops).
  rewriter.setInsertionPoint(op);
  if (!ranges.empty() && ranges.back() > kVectorTile &&
      ranges.back() % kVectorTile != 0) {
    int64_t splitPoint = ranges.back() / kVectorTile * kVectorTile;
    auto [main, rest] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                        ranges.size() - 1, rewriter.getIndexAttr(splitPoint));
    if (!main || !rest)
      return op.emitOpError("could not be split for vectorization");
    if (failed(tileAndVectorize(rewriter, cast<linalg::LinalgOp>(*main))))
      return failure();
    return tileAndVectorize(rewriter, cast<linalg::LinalgOp>(*rest));
  }

  SmallVector<int64_t> sizes = genericTileSizes(op);
  Operation *tiled = op;
  if (sizes != ranges) {
    scf::SCFTilingOptions tiling;
    tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
    FailureOr<scf::SCFTilingResult> result = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(op.getOperation()), tiling);
    if (failed(result))
      return op.emitOpError("could not be tiled for vectorization");
    rewriter.replaceOp(op, result->replacements);
    tiled = result->tiledOps.front();
  }
  rewriter.setInsertionPoint(tiled);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, tiled);
  if (failed(vectorized)) {
    // Correct scalar code is better than none: convert-linalg-to-loops
    // lowers what the vectorizer declines.
    return success();
  }
  if (!vectorized->replacements.empty())
    rewriter.replaceOp(tiled, vectorized->replacements);
  else
    rewriter.eraseOp(tiled);
  return success();
}

/// Whether `v` has no defined contents: a `tensor.empty`, or slices of one.
bool isUndefinedTensor(mlir::Value v) {
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>())
    v = slice.getSource();
  return v.getDefiningOp<tensor::EmptyOp>() != nullptr;
}

/// Gives every destructive use of a tensor but the first its own copy.
///
/// CSE merges equal destinations (two matmuls of one shape share one
/// zero-filled init, and after tiling one fill loop; two ops of one result
/// shape share one tensor.empty), so one tensor may be the destination of
/// several in-place writers. One-shot bufferization alone would copy where
/// needed, but `eliminate-empty-tensors` then roots the shared tensor in one
/// writer's `restrict` output buffer: the other writer runs in place in that
/// buffer too, and the `restrict` promise (nothing else aliases the output)
/// hides the conflict from the analysis, so one result overwrites the other
/// (`return x @ w1, x @ w2`; `return v, v - v` of int32, where `v - v`
/// reuses the zero fill that v accumulates into, which the reduction then
/// overwrote). So each further writer of a tensor.empty gets a fresh one,
/// and the writers of a tensor with contents that is also used otherwise
/// get copies taken right after its definition, before any writer runs
/// (all of them when the tensor is read too, else all but the first). Slices of
/// an empty stay shared: recreating them would only break the pairing of a
/// slice with the insertion of its result.
void privatizeDestinations(ModuleOp scratch,
                           const bufferization::BufferizationOptions &options) {
  bufferization::AnalysisState state(options);
  auto isWrite = [&](OpOperand &use) {
    return isa<TensorType>(use.get().getType()) &&
           options.dynCastBufferizableOp(use.getOwner()) &&
           state.bufferizesToMemoryWrite(use);
  };
  // One writer whose every other use reads the tensor earlier in the same
  // block without aliasing it (a vectorized tile's `transfer_read` of its
  // accumulator before the `transfer_write` of the new value): nothing can
  // read what the writer overwrote, so it stays in place. A copy there
  // cost every 16-element tile of an accumulating op a heap allocation and
  // two scalar copies (an elementwise op over 32K floats: 99 us, not 3).
  auto readsOnlyBeforeItsWriter = [&](mlir::Value v) {
    OpOperand *writer = nullptr;
    for (OpOperand &use : v.getUses()) {
      if (!isWrite(use))
        continue;
      if (writer)
        return false;
      writer = &use;
    }
    if (!writer)
      return false;
    Operation *w = writer->getOwner();
    for (OpOperand &use : v.getUses()) {
      if (&use == writer)
        continue;
      Operation *reader = use.getOwner();
      auto bufferizable = options.dynCastBufferizableOp(reader);
      if (!bufferizable || reader->getBlock() != w->getBlock() ||
          !reader->isBeforeInBlock(w) ||
          !bufferizable.getAliasingValues(use, state).getAliases().empty())
        return false;
    }
    return true;
  };
  SmallVector<mlir::Value> shared;
  scratch.walk([&](Operation *op) {
    for (mlir::Value result : op->getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      int64_t writes = llvm::count_if(result.getUses(), isWrite);
      int64_t uses =
          std::distance(result.getUses().begin(), result.getUses().end());
      bool empty = isa<tensor::EmptyOp>(op);
      if ((empty && writes > 1) ||
          (!isUndefinedTensor(result) && writes >= 1 && uses > 1 &&
           !readsOnlyBeforeItsWriter(result)))
        shared.push_back(result);
    }
  });
  OpBuilder b(scratch.getContext());
  for (mlir::Value v : shared) {
    SmallVector<OpOperand *> writers;
    for (OpOperand &use : v.getUses())
      if (isWrite(use))
        writers.push_back(&use);
    Operation *def = v.getDefiningOp();
    b.setInsertionPointAfter(def);
    // With readers besides the writers, every writer works on a copy (the
    // readers keep the original); otherwise the first works in place.
    bool readers =
        static_cast<size_t>(std::distance(v.getUses().begin(),
                                          v.getUses().end())) > writers.size();
    auto copied = readers && !isa<tensor::EmptyOp>(def)
                      ? ArrayRef<OpOperand *>(writers)
                      : ArrayRef<OpOperand *>(writers).drop_front();
    for (OpOperand *use : copied) {
      if (isa<tensor::EmptyOp>(def)) {
        use->set(b.clone(*def)->getResult(0));
        continue;
      }
      auto type = cast<RankedTensorType>(v.getType());
      use->set(bufferization::AllocTensorOp::create(b, def->getLoc(), type,
                                                    ValueRange{}, v));
    }
  }
}

/// Upstream's `linalg-fuse-elementwise-ops` (the same patterns, canonical
/// forms and top-down greedy driver), with one more rule in its control
/// function: an elementwise producer does not fuse into a contraction that
/// will call BLAS (willCallBlas), unless it only moves data. Fused, the
/// contraction's body is no longer a multiply-add and it falls to the
/// generic tile path: the gradient of an embedding (a one-hot compare
/// fused into its product with the output gradient) ran at 16 GFLOP/s
/// there instead of one BLAS call on the materialised one-hot.
void fuseElementwiseOps(ModuleOp scratch) {
  MLIRContext *ctx = scratch.getContext();
  // Upstream's control: the producer has no other use.
  linalg::ControlFusionFn singleUse = [](OpOperand *fused) {
    Operation *producer = fused->get().getDefiningOp();
    return producer && producer->hasOneUse();
  };
  linalg::ControlFusionFn control = [singleUse](OpOperand *fused) {
    if (!singleUse(fused))
      return false;
    auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
    auto generic = fused->get().getDefiningOp<linalg::GenericOp>();
    // A producer whose payload reads its init (`out = init + a * b`, an
    // einsum step with nothing to sum) fused into a consumer that reads
    // each of its elements more than once (a broadcast) computed some
    // elements twice into one buffer: the fuzzer's triu of such a vector
    // doubled one element. It stays a loop nest of its own there.
    if (generic && consumer &&
        !consumer.getMatchingIndexingMap(fused).isPermutation() &&
        llvm::any_of(generic.getDpsInitsMutable(), [&](OpOperand &init) {
          return generic.payloadUsesValueFromOperand(&init);
        }))
      return false;
    return !consumer || !willCallBlas(consumer) ||
           (generic && movesDataOnly(generic));
  };
  RewritePatternSet patterns(ctx);
  linalg::populateElementwiseOpsFusionPatterns(patterns, control);
  linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, singleUse);
  tensor::populateBubbleUpExpandShapePatterns(patterns);
  affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
  linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
  ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
      patterns);
  linalg::populateConstantFoldLinalgOperations(patterns, singleUse);
  FrozenRewritePatternSet frozen(std::move(patterns));
  GreedyRewriteConfig config;
  config.setUseTopDownTraversal(true);
  for (auto fn : scratch.getOps<func::FuncOp>())
    (void)applyPatternsGreedily(fn, frozen, config);
}

} // namespace

void loadKernelDialects(MLIRContext &ctx) {
  // The pipelines are textual; the passes they name are registered once per
  // process (registration is global and not thread-safe).
  // A host tool may have registered them already (monarch-opt does), and
  // registering a pass pipeline twice is a fatal error.
  static std::once_flag passesRegistered;
  std::call_once(passesRegistered, [] {
    if (!PassPipelineInfo::lookup("buffer-deallocation-pipeline"))
      registerAllPasses();
  });
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadDialect<func::FuncDialect, arith::ArithDialect, tensor::TensorDialect,
                  linalg::LinalgDialect, bufferization::BufferizationDialect,
                  memref::MemRefDialect, scf::SCFDialect, vector::VectorDialect,
                  math::MathDialect, LLVM::LLVMDialect>();
}

LogicalResult prepareKernel(ModuleOp scratch) {
  if (failed(runPipeline(scratch, "func.func(canonicalize,cse)")))
    return failure();
  // Named elementwise ops (linalg.sub, linalg.mul, ...), transposes and
  // reductions become linalg.generic so that producers fuse into consumers;
  // contractions keep their names for the matmul schedule.
  IRRewriter rewriter(scratch.getContext());
  SmallVector<linalg::LinalgOp> named;
  scratch.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::FillOp>(op) &&
        !linalg::isaContractionOpInterface(op))
      named.push_back(op);
  });
  for (linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::generalizeNamedOp(rewriter, op)))
      return op.emitOpError("could not be generalized for fusion");
  }
  fuseElementwiseOps(scratch);
  return runPipeline(scratch, "func.func(canonicalize,cse)");
}

LogicalResult scheduleCpuKernel(ModuleOp scratch,
                                const KernelCompileOptions &options) {
  markBlasContractions(scratch);
  markScatterAdds(scratch);
  if (failed(applyMatmulSchedules(scratch, options)))
    return failure();
  IRRewriter rewriter(scratch.getContext());
  // On tensors a full copy is its input (the unpack of a packed matmul
  // result ends in one); folding it lets bufferization write the result in
  // place instead of copying it.
  scratch.walk([&](linalg::CopyOp copy) {
    if (copy.hasPureTensorSemantics() &&
        copy.getInputs()[0].getType() == copy.getResult(0).getType())
      rewriter.replaceOp(copy, copy.getInputs()[0]);
  });
  SmallVector<linalg::LinalgOp> ops;
  scratch.walk([&](linalg::LinalgOp op) {
    if (!isMarkedForBlas(op) && !isMarkedScatterAdd(op))
      ops.push_back(op);
  });
  for (linalg::LinalgOp op : ops)
    if (failed(tileAndVectorize(rewriter, op)))
      return failure();
  // Hoist loop-invariant accumulators on tensors, before bufferization
  // (on memrefs, subviews block the hoisting).
  return runPipeline(scratch, "func.func(canonicalize,cse,"
                              "loop-invariant-code-motion,"
                              "loop-invariant-subset-hoisting,canonicalize)");
}

LogicalResult bufferizeKernel(ModuleOp scratch) {
  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  options.unknownTypeConverterFn =
      [](TensorType tensorType, Attribute memorySpace,
         const bufferization::BufferizationOptions &) -> BaseMemRefType {
    return bufferization::getMemRefTypeWithStaticIdentityLayout(tensorType,
                                                                memorySpace);
  };
  // linalg.copy lowers to loops; memref.copy of a strided view would become
  // a call into the MLIR C runner library, which workers do not load.
  options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                        Value to) -> LogicalResult {
    linalg::CopyOp::create(b, loc, from, to);
    return success();
  };
  privatizeDestinations(scratch, options);
  if (failed(runPipeline(scratch, "eliminate-empty-tensors,"
                                  "empty-tensor-to-alloc-tensor")))
    return failure();
  bufferization::BufferizationState state;
  if (failed(bufferization::runOneShotModuleBufferize(scratch, options, state)))
    return failure();
  return runPipeline(scratch, "canonicalize,buffer-deallocation-pipeline,"
                              "convert-bufferization-to-memref,canonicalize");
}

LogicalResult lowerCpuKernelToLLVM(ModuleOp scratch) {
  if (failed(lowerBlasContractions(scratch)) ||
      failed(lowerScatterAdds(scratch)))
    return failure();
  // Copies inserted by bufferization and any op the vectorizer declined
  // become scalar loops; LLVM's loop vectorizer takes it from there.
  if (failed(runPipeline(
          scratch, "func.func(convert-linalg-to-loops,canonicalize),"
                   "fold-memref-alias-ops,"
                   "func.func(lower-vector-multi-reduction{lowering-strategy="
                   "inner-reduction},lower-vector-mask,"
                   "convert-vector-to-scf{full-unroll=true target-rank=1}),"
                   "math-extend-to-supported-types{extra-types=f16,bf16 "
                   "target-type=f32},"
                   "arith-emulate-unsupported-floats{source-types=bf16,f16 "
                   "target-type=f32},"
                   "arith-expand{include-bf16=true}")))
    return failure();
  {
    RewritePatternSet patterns(scratch.getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(scratch, std::move(patterns))))
      return failure();
  }
  return runPipeline(
      scratch,
      "lower-affine,convert-scf-to-cf,expand-strided-metadata,lower-affine,"
      "convert-vector-to-llvm{vector-contract-lowering=outerproduct "
      "reassociate-fp-reductions=true},"
      "finalize-memref-to-llvm{use-generic-functions=true},convert-math-to-"
      "llvm,convert-arith-to-llvm,"
      "convert-index-to-llvm,convert-cf-to-llvm,"
      "convert-func-to-llvm{use-bare-ptr-memref-call-conv=true},"
      "convert-ub-to-llvm,reconcile-unrealized-casts,canonicalize,cse");
}

} // namespace monarch::codegen::detail
