//===- Partition.cpp - monarch-partition ------------------------*- C++ -*-===//
//
// Turns the tensor work a program does on each mesh into per-rank code.
//
// A program (`func.func`) places values on meshes with `monarch.feed`,
// `monarch.call` and `monarch.transfer`; the tensor ops that consume them run
// on that mesh. We cut those ops into segments (findSegments: a segment ends
// where a monarch op consumes one of its values, since later work may depend
// on that op) and outline each (outline): cut out as a scratch function
// (cutOut), partitioned by the own engine (PartitionEngine.h), else by the
// upstream `sharding-propagation` and `shard-partition` passes
// (PartitionUpstream.h, which also rewrites upstream's `shard` collectives
// and process-index queries into `monarch` ops over named mesh dimensions,
// because endpoint bodies are mesh-independent per-rank code), else on whole
// values (partitionSegment). The partitioned body becomes the endpoint
// `@run` of a synthesized actor class spawned on the mesh, with
// `monarch.dist` recording how each global argument and result is split;
// the segment is replaced by a `monarch.call` of that endpoint with the
// global values (replaceWithEndpointCall).
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "LocalCanonicalizer.h"
#include "PartitionEngine.h"
#include "PartitionPrep.h"
#include "PartitionUpstream.h"
#include "PassUtils.h"

#include "monarch/IR/DeadWork.h"
#include "monarch/IR/SourceLocation.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/FoldUtils.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "monarch-partition"

namespace monarch {
#define GEN_PASS_DEF_MONARCHPARTITION
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {

/// A run of tensor ops that execute on one mesh.
struct Segment {
  StringAttr mesh;
  SmallVector<Operation *> ops;
  /// Ops upstream partitioning cannot shard (reshapes that split or merge
  /// dimensions, slices): they run on whole values, every rank computing all
  /// of it.
  bool whole = false;
};

/// Ops without an upstream sharding rule, run on whole (replicated) values.
/// The own engine (`ownEngine`) has rules for all of them: only a debug
/// print, which prints whole values, is a segment of its own then, so that
/// partial sums stay partial across reshapes and slices.
bool needsWholeValues(Operation *op, bool ownEngine) {
  // A debug print in global code prints the whole values on every rank of
  // its mesh.
  if (isa<DebugPrintOp>(op))
    return true;
  if (ownEngine)
    return false;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::ExtractSliceOp, tensor::ConcatOp>(op))
    return true;
  // A reduction whose combiner is not one arith op of a known kind
  // (`acc - x`, a body of several ops): upstream's linalg partitioning
  // aborts on it (an empty optional) when the reduced loop is split.
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      linalgOp && linalgOp.getNumReductionLoops() > 0) {
    for (unsigned i = 0, e = linalgOp.getNumDpsInits(); i < e; ++i) {
      SmallVector<Operation *> combiners;
      if (!matchReduction(linalgOp.getRegionOutputArgs(), i, combiners) ||
          combiners.size() != 1 ||
          !isa<arith::AddFOp, arith::AddIOp, arith::MulFOp, arith::MulIOp,
               arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
               arith::MinNumFOp, arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp,
               arith::MinUIOp, arith::OrIOp, arith::AndIOp, arith::XOrIOp>(
              combiners.front()))
        return true;
    }
  }
  // A gather (a structured op whose body reads a tensor it captures) is
  // partitioned over its own loops, with the captured table replicated
  // (PartitionPrep's replicateCapturedTensors).
  return false;
}

/// The product of the extents of mesh dimensions `dims`.
static int64_t splitCount(MeshOpInterface mesh, ArrayRef<StringRef> dims) {
  SmallVector<int64_t> sizes = mesh.getMeshShape();
  int64_t n = 1;
  for (StringRef d : dims)
    if (int64_t i = mesh.getDimIndex(d); i >= 0)
      n *= sizes[i];
  return n;
}

/// A whole-value segment of shape ops whose inputs arrive split
/// (`inDists`, from the segments that made them), run on each rank's shard
/// where the split dimensions pass through unchanged:
/// - reshapes (tensor.expand_shape / collapse_shape) when every split
///   dimension maps onto the first dimension of its reassociation run and
///   the mesh divides that dimension (`(B, T, D) -> (B, T, H, D/H)` with D
///   split: H split);
/// - slices (tensor.extract_slice, static) that take every split dimension
///   whole (`q[..., :d]` of a head-split `q`: RoPE's halves);
/// - concatenations (tensor.concat) along an unsplit dimension of operands
///   laid out alike.
/// A partial sum passes through all three (they are linear). `tmp` then
/// works on local types and `argDists`/`resDists` say the layouts; fails
/// (tmp unchanged) otherwise.
static LogicalResult localShapeOps(func::FuncOp tmp, MeshOpInterface mesh,
                                   ArrayRef<DistAttr> inDists,
                                   SmallVectorImpl<DistAttr> &argDists,
                                   SmallVectorImpl<DistAttr> &resDists) {
  Block &body = tmp.getBody().front();
  if (llvm::none_of(inDists, [](DistAttr d) { return d; }))
    return failure();
  for (Operation &op : body)
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp, tensor::ConcatOp, func::ReturnOp>(op))
      return failure();
  MLIRContext *ctx = tmp.getContext();
  using Split = SmallVector<SmallVector<StringRef>>;
  DenseMap<Value, std::pair<Split, std::optional<ReductionKind>>> layout;
  auto splitOf = [&](DistAttr dist, int64_t rank) {
    Split split(rank);
    if (dist)
      for (int64_t d = 0; d < rank; ++d)
        for (StringRef m : dist.getSplitDims(d))
          split[d].push_back(m);
    return split;
  };
  for (auto [arg, dist] : llvm::zip(body.getArguments(), inDists)) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return failure();
    layout[arg] = {splitOf(dist, type.getRank()),
                   dist ? dist.getPartial() : std::nullopt};
  }
  // Layouts of the results, op by op.
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    Value src = op.getOperand(0), res = op.getResult(0);
    auto resType = cast<RankedTensorType>(res.getType());
    auto it = layout.find(src);
    if (it == layout.end())
      return failure();
    const Split &in = it->second.first;
    Split out(resType.getRank());
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // Split dimensions are taken whole; dropped (unit) ones are not split.
      if (!slice.getOffsets().empty() || !slice.getSizes().empty() ||
          !slice.getStrides().empty())
        return failure();
      ArrayRef<int64_t> offsets = slice.getStaticOffsets();
      ArrayRef<int64_t> sizes = slice.getStaticSizes();
      ArrayRef<int64_t> strides = slice.getStaticStrides();
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      RankedTensorType srcType = slice.getSourceType();
      int64_t r = 0;
      for (int64_t d = 0, e = srcType.getRank(); d < e; ++d) {
        if (!in[d].empty() &&
            (dropped.test(d) || offsets[d] != 0 || strides[d] != 1 ||
             sizes[d] != srcType.getDimSize(d)))
          return failure();
        if (!dropped.test(d))
          out[r++] = in[d];
      }
      layout[res] = {out, it->second.second};
      continue;
    }
    if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      // Every operand laid out as the first, the joined dimension unsplit.
      for (Value v : concat.getInputs()) {
        auto o = layout.find(v);
        if (o == layout.end() || o->second != it->second)
          return failure();
      }
      if (!in[concat.getDim()].empty())
        return failure();
      layout[res] = it->second;
      continue;
    }
    SmallVector<ReassociationIndices> groups;
    bool expand = isa<tensor::ExpandShapeOp>(op);
    if (expand)
      groups = cast<tensor::ExpandShapeOp>(op).getReassociationIndices();
    else
      groups = cast<tensor::CollapseShapeOp>(op).getReassociationIndices();
    for (auto [g, run] : llvm::enumerate(groups)) {
      if (expand) {
        // Source dim g -> result dims run: the split goes to run[0].
        if (in[g].empty())
          continue;
        int64_t n = splitCount(mesh, in[g]);
        if (resType.getDimSize(run[0]) % n)
          return failure();
        out[run[0]] = in[g];
      } else {
        // Source dims run -> result dim g: only run[0] may be split.
        for (size_t k = 1; k < run.size(); ++k)
          if (!in[run[k]].empty())
            return failure();
        out[g] = in[run[0]];
      }
    }
    layout[res] = {out, it->second.second};
  }
  // Rewrite with local types.
  auto local = [&](RankedTensorType t, const Split &split) {
    SmallVector<int64_t> shape(t.getShape());
    for (auto [d, dims] : llvm::enumerate(split))
      if (!dims.empty())
        shape[d] /= splitCount(mesh, dims);
    return RankedTensorType::get(shape, t.getElementType());
  };
  auto distOf = [&](const Split &split,
                    std::optional<ReductionKind> partial) -> DistAttr {
    SmallVector<Attribute> dims;
    bool any = partial.has_value();
    for (const auto &d : split) {
      SmallVector<Attribute> names;
      for (StringRef m : d)
        names.push_back(StringAttr::get(ctx, m));
      any |= !d.empty();
      dims.push_back(ArrayAttr::get(ctx, names));
    }
    return any ? DistAttr::get(ctx, ArrayAttr::get(ctx, dims), partial)
               : DistAttr();
  };
  argDists.clear();
  for (BlockArgument arg : body.getArguments()) {
    auto &[split, partial] = layout[arg];
    argDists.push_back(distOf(split, partial));
    arg.setType(local(cast<RankedTensorType>(arg.getType()), split));
  }
  OpBuilder b(ctx);
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (isa<func::ReturnOp>(op))
      continue;
    auto &[split, partial] = layout[op.getResult(0)];
    auto type = local(cast<RankedTensorType>(op.getResult(0).getType()), split);
    b.setInsertionPoint(&op);
    Value made;
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
      made = tensor::ExpandShapeOp::create(b, op.getLoc(), type, e.getSrc(),
                                           e.getReassociationIndices());
    } else if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // Split dimensions (taken whole) shrink to the shard.
      // (The source already has its local type.)
      auto srcType = cast<RankedTensorType>(s.getSource().getType());
      const Split &srcSplit = layout[s.getSource()].first;
      SmallVector<int64_t> sizes(s.getStaticSizes());
      for (int64_t d = 0, e = srcType.getRank(); d < e; ++d)
        if (!srcSplit[d].empty())
          sizes[d] = srcType.getDimSize(d);
      made = tensor::ExtractSliceOp::create(
          b, op.getLoc(), type, s.getSource(),
          getAsIndexOpFoldResult(ctx, s.getStaticOffsets()),
          getAsIndexOpFoldResult(ctx, sizes),
          getAsIndexOpFoldResult(ctx, s.getStaticStrides()));
    } else if (auto cat = dyn_cast<tensor::ConcatOp>(op)) {
      made = tensor::ConcatOp::create(b, op.getLoc(), type, cat.getDim(),
                                      cat.getInputs());
    } else {
      auto c = cast<tensor::CollapseShapeOp>(op);
      made = tensor::CollapseShapeOp::create(b, op.getLoc(), type, c.getSrc(),
                                             c.getReassociationIndices());
    }
    layout[made] = layout[op.getResult(0)];
    op.getResult(0).replaceAllUsesWith(made);
    op.erase();
  }
  resDists.clear();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (Value v : ret.getOperands()) {
    auto &[split, partial] = layout[v];
    resDists.push_back(distOf(split, partial));
  }
  tmp.setType(
      FunctionType::get(ctx, body.getArgumentTypes(), ret.getOperandTypes()));
  return success();
}

/// A tensor constant upstream partitioning cannot handle: any with more
/// than one distinct element (it partitions splats only).
static bool isLiftedConstant(arith::ConstantOp c) {
  auto type = dyn_cast<RankedTensorType>(c.getType());
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return type && type.getRank() > 0 && !(dense && dense.isSplat());
}

/// The trailing arguments of `tmp` that stood for the non-splat constants
/// `lifted` become those constants again, at the start of its body. They
/// were annotated replicated, so each rank's value is the global one; a
/// partitioning that made one of them per-rank is refused, not guessed.
static LogicalResult restoreLiftedConstants(func::FuncOp tmp,
                                            ArrayRef<arith::ConstantOp> lifted,
                                            SmallVectorImpl<DistAttr> &argDists,
                                            Operation *head) {
  if (lifted.empty())
    return success();
  Block &body = tmp.getBody().front();
  unsigned first = body.getNumArguments() - lifted.size();
  OpBuilder b(tmp.getContext());
  b.setInsertionPointToStart(&body);
  for (size_t i = 0; i < lifted.size(); ++i) {
    arith::ConstantOp c = lifted[i];
    BlockArgument arg = body.getArgument(first + i);
    if (arg.getType() != c.getType() || argDists[first + i])
      return head->emitOpError("partitioning split the constant at ")
             << c.getLoc() << " (per-rank " << arg.getType()
             << "); it must stay replicated";
    arg.replaceAllUsesWith(b.clone(*c)->getResult(0));
  }
  llvm::BitVector erase(body.getNumArguments());
  erase.set(first, body.getNumArguments());
  body.eraseArguments(erase);
  argDists.truncate(first);
  tmp.setType(FunctionType::get(tmp.getContext(), body.getArgumentTypes(),
                                tmp.getFunctionType().getResults()));
  return success();
}

struct MonarchPartitionPass
    : monarch::impl::MonarchPartitionBase<MonarchPartitionPass> {
  using Base::Base;

  /// Upstream's passes on a segment (PartitionUpstream.h).
  partition::UpstreamPartitioner upstream;
  LocalCanonicalizer canonicalizer;
  /// Endpoints made this run, canonicalized together at the end.
  SmallVector<Operation *> endpoints;
  /// How the endpoint calls made so far return their results (values of
  /// the programs): later segments start from these layouts.
  DenseMap<Value, DistAttr> known;
  /// Ops of the current program by how they were partitioned, for the
  /// per-function remark.
  struct Counts {
    int64_t split = 0, retried = 0, whole = 0, segments = 0;
  } counts;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    canonicalizer.clear();
    endpoints.clear();
    known.clear();
    SymbolTableCollection tables;
    SmallVector<func::FuncOp> programs;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        programs.push_back(fn);
    for (func::FuncOp fn : programs)
      if (failed(partitionProgram(fn, tables)))
        return signalPassFailure();
    // Grid extents are constants now: fold the slicing arithmetic.
    if (failed(canonicalizer.run(endpoints)))
      return signalPassFailure();
  }

  /// Which mesh each value lives on, and the segments of `fn`.
  LogicalResult findSegments(func::FuncOp fn, SymbolTableCollection &tables,
                             SmallVectorImpl<Segment> &segments) {
    DenseMap<Value, StringAttr> meshOf;
    DenseMap<Operation *, unsigned> segmentOf;
    llvm::MapVector<StringAttr, unsigned> open;

    auto closeSegmentsUsedBy = [&](Operation *op) {
      for (Value v : usedValues(op)) {
        auto it = segmentOf.find(v.getDefiningOp());
        if (it == segmentOf.end())
          continue;
        StringAttr mesh = segments[it->second].mesh;
        auto o = open.find(mesh);
        if (o != open.end() && o->second == it->second)
          open.erase(o);
      }
    };

    for (Operation &op : fn.getBody().front()) {
      if (auto feed = dyn_cast<FeedOp>(op)) {
        meshOf[feed.getResult()] = feed.getMeshAttr().getAttr();
        continue;
      }
      if (isMonarchProgramOp(&op) || op.hasTrait<OpTrait::IsTerminator>()) {
        closeSegmentsUsedBy(&op);
        if (auto call = dyn_cast<CallOp>(op)) {
          auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
              call, FlatSymbolRefAttr::get(call.getActorMeshName()));
          if (actorMesh)
            for (Value r : call.getResults())
              meshOf[r] = actorMesh.getMeshAttr().getAttr();
        } else if (auto transfer = dyn_cast<TransferOp>(op)) {
          meshOf[transfer.getResult()] = transfer.getToAttr().getAttr();
        }
        continue;
      }
      // Compute: it runs where its placed operands live (a debug print of
      // scalars alone where it says).
      StringAttr mesh;
      if (auto print = dyn_cast<DebugPrintOp>(op); print && print.getMeshAttr())
        mesh = print.getMeshAttr().getAttr();
      for (Value v : usedValues(&op)) {
        StringAttr m = meshOf.lookup(v);
        if (!m)
          continue;
        if (mesh && m != mesh)
          return op.emitOpError("uses values on meshes @")
                 << mesh.getValue() << " and @" << m.getValue()
                 << "; move one with monarch.transfer first";
        mesh = m;
      }
      if (!mesh)
        continue; // Controller-side or constant: cloned or passed as needed.
      // A debug print is a segment of its own: the work around it keeps
      // its layouts.
      bool print = isa<DebugPrintOp>(op);
      if (print)
        open.erase(mesh);
      auto it = open.find(mesh);
      unsigned index;
      bool whole = needsWholeValues(&op, engine == "own");
      if (it != open.end() && segments[it->second].whole != whole) {
        // A whole-value segment between two partitioned ones: the values
        // cross as globals (gathered before it, resliced after it).
        open.erase(it);
        it = open.end();
      }
      if (it == open.end()) {
        index = segments.size();
        segments.push_back({mesh, {}, whole});
        open[mesh] = index;
      } else {
        index = it->second;
      }
      segments[index].ops.push_back(&op);
      segmentOf[&op] = index;
      if (print)
        open.erase(mesh);
      for (Value r : op.getResults())
        meshOf[r] = mesh;
    }
    return success();
  }

  /// Whether `op`'s results live on a mesh, given the values `onMesh`
  /// already known to (transfers aside, which each caller decides): a feed,
  /// an actor call or a print on a mesh put them there, and other work
  /// (not a monarch program op) is where one of its operands is.
  static bool places(Operation &op, const DenseSet<Value> &onMesh) {
    if (isa<FeedOp, CallOp>(op))
      return true;
    if (auto print = dyn_cast<DebugPrintOp>(op); print && print.getMeshAttr())
      return true;
    return !isMonarchProgramOp(&op) &&
           llvm::any_of(usedValues(&op),
                        [&](Value v) { return onMesh.contains(v); });
  }

  /// The constant `v` holds, looking through a select of two equal
  /// constants (`where(c, 1.0, 1.0)`: the tracer's `ones_like`).
  static Attribute constantValue(Value v) {
    Attribute a;
    if (matchPattern(v, m_Constant(&a)))
      return a;
    if (auto select = v.getDefiningOp<arith::SelectOp>()) {
      Attribute t = constantValue(select.getTrueValue());
      if (t && t == constantValue(select.getFalseValue()))
        return t;
    }
    return {};
  }

  /// A parallel `linalg.generic` whose body yields constants whatever it
  /// reads (`np.ones_like(x)`, the `where(loss == loss, 1, 1)` seed of
  /// `mc.value_and_grad`) becomes fills: free in any layout, and the
  /// values it read are no longer needed for it (the seed kept a
  /// discarded loss computed and all-reduced, and ordered the backward
  /// after that all-reduce). Not where the fill would leave a value that
  /// a monarch op needs on a mesh (a fetch of `mc.grad(sum)`: ones) with
  /// nothing on one: such a generic stays as it is.
  static void foldConstantGenerics(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    llvm::MapVector<Operation *, SmallVector<TypedAttr>> fold;
    for (auto g : body.getOps<linalg::GenericOp>()) {
      if (!g.hasPureTensorSemantics() || g.getNumReductionLoops() != 0)
        continue;
      SmallVector<TypedAttr> values;
      for (auto [r, v] : llvm::zip(
               g->getResults(), g.getBody()->getTerminator()->getOperands())) {
        auto t = dyn_cast<RankedTensorType>(r.getType());
        auto a = dyn_cast_or_null<TypedAttr>(constantValue(v));
        if (!t || !t.hasStaticShape() || !a ||
            a.getType() != t.getElementType() ||
            !g.getIndexingMapMatchingResult(r).isPermutation())
          break;
        values.push_back(a);
      }
      if (values.size() == g->getNumResults())
        fold[g] = std::move(values);
    }
    // Which values would live on no mesh with `fold` folded; a monarch op
    // reading one keeps the generics it comes from.
    for (bool changed = true; changed && !fold.empty();) {
      changed = false;
      DenseSet<Value> onMesh;
      for (Operation &op : body) {
        if (isa<TransferOp>(op) || (!fold.count(&op) && places(op, onMesh)))
          for (Value r : op.getResults())
            onMesh.insert(r);
      }
      for (Operation &op : body) {
        if (!isa<MonarchDialect>(op.getDialect()))
          continue;
        SmallVector<Value> work;
        for (Value v : op.getOperands())
          if (isa<RankedTensorType>(v.getType()) && !onMesh.contains(v))
            work.push_back(v);
        DenseSet<Operation *> seen;
        while (!work.empty()) {
          Operation *def = work.pop_back_val().getDefiningOp();
          if (!def || !seen.insert(def).second)
            continue;
          if (fold.erase(def)) {
            changed = true;
            continue;
          }
          for (Value v : usedValues(def))
            if (!onMesh.contains(v))
              work.push_back(v);
        }
      }
    }
    for (auto &[op, values] : fold) {
      auto g = cast<linalg::GenericOp>(op);
      OpBuilder b(g);
      SmallVector<Value> fills;
      for (auto [a, init] : llvm::zip(values, g.getDpsInits())) {
        Value c = arith::ConstantOp::create(b, g.getLoc(), a);
        fills.push_back(linalg::FillOp::create(b, g.getLoc(), ValueRange{c},
                                               ValueRange{init})
                            .getResult(0));
      }
      g->replaceAllUsesWith(fills);
      g->erase();
    }
  }

  /// Refuses annotations upstream accepts but nothing can mean: a grid
  /// axis the grid does not have, a split entry past the annotated tensor's
  /// last dimension (upstream's verifiers do not check these; partitioning
  /// them read out of bounds or dropped the split).
  LogicalResult verifyShardings(func::FuncOp fn,
                                SymbolTableCollection &tables) {
    WalkResult bad = fn.walk([&](shard::ShardingOp sharding) {
      shard::GridOp grid =
          shard::getGridOrNull(sharding, sharding.getGridAttr(), tables);
      if (!grid) {
        sharding.emitOpError("names no shard.grid @") << sharding.getGrid();
        return WalkResult::interrupt();
      }
      int64_t gridRank = grid.getRank();
      // Trailing empty entries are replicated dimensions (upstream prints
      // `[[]]` for a 0-d tensor); what counts is the last split one.
      int64_t entries = 0;
      for (auto [d, axes] : llvm::enumerate(sharding.getSplitAxes().getAxes()))
        for (shard::GridAxis axis : axes.asArrayRef()) {
          entries = static_cast<int64_t>(d) + 1;
          if (axis < 0 || axis >= gridRank) {
            sharding.emitOpError("splits tensor dimension ")
                << d << " over grid axis " << axis << ", but @"
                << sharding.getGrid() << " has " << gridRank << " axes";
            return WalkResult::interrupt();
          }
        }
      for (Operation *user : sharding->getUsers()) {
        auto shardOp = dyn_cast<shard::ShardOp>(user);
        if (!shardOp)
          continue;
        auto type = dyn_cast<RankedTensorType>(shardOp.getSrc().getType());
        if (type && entries > type.getRank()) {
          shardOp.emitOpError("annotates a tensor of rank ")
              << type.getRank() << " with " << entries
              << " split_axes entries (one per dimension at most)";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    return failure(bad.wasInterrupted());
  }

  /// A transfer of a value no mesh holds (computed by the controller from
  /// constants alone: the index arithmetic of a sort network, traced on the
  /// function's mesh and moved to an actor's) moves nothing: its users take
  /// the value itself, and the segment that reads it recomputes it from the
  /// constants as every other constant work is (the transfer used to reach
  /// monarch-split-control-data with an operand that lives nowhere;
  /// found by the fuzzer: np.sort of an actor's result on a mesh slice).
  static void foldTransfersOfMeshlessValues(func::FuncOp fn) {
    DenseSet<Value> onMesh;
    DenseMap<Operation *, bool> memo;
    SmallVector<TransferOp> fold;
    for (Operation &op : fn.getBody().front()) {
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        Value in = transfer.getInput();
        if (!onMesh.contains(in) && isCloneable(in.getDefiningOp(), memo) &&
            in.getType() == transfer.getResult().getType())
          fold.push_back(transfer);
        else
          onMesh.insert(transfer.getResult());
        continue;
      }
      if (places(op, onMesh))
        for (Value r : op.getResults())
          onMesh.insert(r);
    }
    for (TransferOp transfer : fold) {
      // The tracer's layout of the moved value on the destination mesh
      // (shard.shard of the result) goes too: annotations are not cloned
      // into segments, and constant work needs none (the segment that
      // reads it lays it out as its users want).
      for (Operation *user :
           llvm::make_early_inc_range(transfer.getResult().getUsers()))
        if (auto shard = dyn_cast<shard::ShardOp>(user)) {
          shard.getResult().replaceAllUsesWith(transfer.getInput());
          shard->erase();
        }
      transfer.getResult().replaceAllUsesWith(transfer.getInput());
      transfer->erase();
    }
  }

  LogicalResult partitionProgram(func::FuncOp fn,
                                 SymbolTableCollection &tables) {
    foldTransfersOfMeshlessValues(fn);
    foldConstantGenerics(fn);
    // (A dead feed would keep a controller input no worker reads, and
    // upstream partitioning crashes on dead tensor ops.)
    eraseDeadWork(fn);
    // Upstream shard-partition crashes on a tensor dimension split over
    // several grid axes (partitionTriviallyShardableOperation); say so.
    // The own engine splits it.
    WalkResult multiAxis = fn.walk([&](shard::ShardingOp sharding) {
      if (engine == "own")
        return WalkResult::advance();
      for (shard::GridAxesAttr axes : sharding.getSplitAxes().getAxes())
        if (axes.size() > 1) {
          sharding.emitOpError("splits one tensor dimension over ")
              << axes.size()
              << " mesh dimensions; monarch-partition supports one mesh "
                 "dimension per tensor dimension with engine=upstream "
                 "(engine=own splits it)";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (multiAxis.wasInterrupted())
      return failure();
    if (failed(verifyShardings(fn, tables)))
      return failure();
    SmallVector<Segment> segments;
    if (failed(findSegments(fn, tables, segments)))
      return failure();
    counts = {};
    for (auto [i, segment] : llvm::enumerate(segments)) {
      // Annotations with no tensor work on them move no data: a value
      // passed to a call arrives as the endpoint's argument says. Outlining
      // them would cost an identity endpoint call per step.
      if (llvm::all_of(segment.ops,
                       [](Operation *op) { return isa<shard::ShardOp>(op); })) {
        for (Operation *op : llvm::reverse(segment.ops)) {
          auto annotation = cast<shard::ShardOp>(op);
          annotation.getResult().replaceAllUsesWith(annotation.getSrc());
          annotation.erase();
        }
        continue;
      }
      if (failed(outline(fn, segment, i, tables)))
        return failure();
    }
    if (remarks && counts.segments)
      fn.emitRemark("monarch-partition: @")
          << fn.getSymName() << ": " << counts.split << " ops split, "
          << counts.retried << " retried with replicated inputs, "
          << counts.whole << " on whole values (" << counts.segments
          << (counts.segments == 1 ? " segment)" : " segments)");
    // Constants and annotations that only the outlined work used are dead.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(fn.getBody().front())))
      if (isOpTriviallyDead(&op))
        op.erase();
    return success();
  }

  /// A segment cut out as a function of its own (`tmp`) in a scratch module
  /// holding only the mesh's grid (so that the upstream passes' symbol
  /// lookups do not scan the whole program): what every way of partitioning
  /// it starts from, rebuilt from the segment (still intact) when one fails.
  struct SegmentFunction {
    explicit SegmentFunction(Segment &segment)
        : segment(segment), loc(segment.ops.front()->getLoc()) {}
    Segment &segment;
    Location loc;
    MeshOpInterface mesh;
    shard::GridOp grid;
    /// `<fn>.<mesh>.<index>`: the actor mesh, its class `<base>.class`.
    std::string base;
    /// Values the segment uses from outside it, in program order (block
    /// arguments first), and its values used after it.
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    /// Constants and pure ops it reads that are cloned in with it.
    SmallVector<Operation *> cloned;
    /// Non-splat constants passed as trailing replicated arguments.
    SmallVector<arith::ConstantOp> lifted;
    SmallVector<Type> inTypes, outTypes;
    /// The layouts earlier segments left the inputs in (none for lifted
    /// constants).
    SmallVector<DistAttr> inDists;
    ModuleOp scratch;
    func::FuncOp tmp;
    /// The distributions of the global arguments and results chosen.
    SmallVector<DistAttr> argDists, resDists;
  };

  /// Outlines one segment: cut out, partitioned (by the own engine,
  /// upstream's passes, or on whole values), then replaced by a call of the
  /// endpoint its per-rank body becomes.
  LogicalResult outline(func::FuncOp fn, Segment &segment, unsigned index,
                        SymbolTableCollection &tables) {
    SegmentFunction sf(segment);
    llvm::scope_exit eraseScratch([&] {
      if (sf.scratch)
        sf.scratch->erase();
    });
    if (failed(cutOut(fn, index, tables, sf)) || failed(partitionSegment(sf)))
      return failure();
    if (failed(restoreLiftedConstants(sf.tmp, sf.lifted, sf.argDists,
                                      segment.ops.front())))
      return failure();
    replaceWithEndpointCall(fn, sf);
    ++numOutlined;
    return success();
  }

  /// Finds the segment's inputs and outputs and builds its scratch function.
  LogicalResult cutOut(func::FuncOp fn, unsigned index,
                       SymbolTableCollection &tables, SegmentFunction &sf) {
    Segment &segment = sf.segment;
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    sf.mesh = lookupMesh(fn, FlatSymbolRefAttr::get(segment.mesh), &tables);
    if (!sf.mesh)
      return fn.emitOpError("segment on unknown mesh @")
             << segment.mesh.getValue();

    llvm::SmallPtrSet<Operation *, 16> inSegment(segment.ops.begin(),
                                                 segment.ops.end());
    llvm::SetVector<Value> inputs;
    DenseMap<Operation *, bool> memo;
    collectOutlineInputs(segment.ops, inputs, sf.cloned, memo);
    // Non-splat constants (the tracer's aranges, one-hot coordinates, causal
    // masks): upstream shard-partition has no rule for them and fails the
    // whole segment without a diagnostic. They enter the scratch function
    // as trailing replicated arguments instead (a user that wants one split
    // gets a local slice at the process index, which keeps an arange's
    // global coordinates), and become constants again in the endpoint.
    llvm::erase_if(sf.cloned, [&](Operation *op) {
      if (auto c = dyn_cast<arith::ConstantOp>(op);
          c && liftConstants && isLiftedConstant(c)) {
        sf.lifted.push_back(c);
        return true;
      }
      return false;
    });
    // Arguments in program order: block arguments first, then by definition.
    SmallVector<Value> ordered(inputs.begin(), inputs.end());
    llvm::stable_sort(ordered, [](Value a, Value b) {
      auto ba = dyn_cast<BlockArgument>(a), bb = dyn_cast<BlockArgument>(b);
      if (ba || bb)
        return ba && (!bb || ba.getArgNumber() < bb.getArgNumber());
      return a.getDefiningOp()->isBeforeInBlock(b.getDefiningOp());
    });
    sf.inputs = llvm::SetVector<Value>(ordered.begin(), ordered.end());
    for (Operation *op : segment.ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              Operation *top =
                  fn.getBody().front().findAncestorOpInBlock(*user);
              return !inSegment.contains(top);
            }))
          sf.outputs.push_back(r);
    for (Value v : sf.inputs)
      if (isa<TensorType>(v.getType()) && isa<BlockArgument>(v))
        return segment.ops.front()->emitOpError("uses tensor argument #")
               << cast<BlockArgument>(v).getArgNumber() << " of @"
               << fn.getSymName() << " on mesh @" << segment.mesh.getValue()
               << " without monarch.feed";

    for (Value v : sf.inputs)
      sf.inTypes.push_back(v.getType());
    for (arith::ConstantOp c : sf.lifted)
      sf.inTypes.push_back(c.getType());
    for (Value v : sf.outputs)
      sf.outTypes.push_back(v.getType());
    for (Value v : sf.inputs)
      sf.inDists.push_back(known.lookup(v));
    sf.inDists.append(sf.lifted.size(), DistAttr());
    sf.base = (fn.getSymName() + "." + segment.mesh.getValue() + "." +
               std::to_string(index))
                  .str();
    b.setInsertionPointToEnd(module.getBody());
    sf.scratch = ModuleOp::create(b, sf.loc);
    b.setInsertionPointToStart(sf.scratch.getBody());
    sf.grid =
        tables.lookupNearestSymbolFrom<shard::GridOp>(fn, sf.mesh.getGridRef());
    if (!sf.grid)
      return fn.emitOpError("mesh @")
             << segment.mesh.getValue() << " has no shard.grid";
    b.clone(*sf.grid);
    rebuild(sf);
    return success();
  }

  /// (Re)builds the scratch function from the segment, erasing the previous
  /// one.
  void rebuild(SegmentFunction &sf) {
    if (sf.tmp)
      sf.tmp.erase();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(sf.scratch.getBody());
    auto made =
        func::FuncOp::create(b, sf.loc, sf.base + ".tmp",
                             b.getFunctionType(sf.inTypes, sf.outTypes));
    Block *body = made.addEntryBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(sf.inputs, body->getArguments()))
      map.map(v, arg);
    for (auto [c, arg] : llvm::zip(
             sf.lifted, body->getArguments().drop_front(sf.inputs.size())))
      map.map(c.getResult(), arg);
    b.setInsertionPointToStart(body);
    for (Operation *c : sf.cloned)
      b.clone(*c, map);
    for (Operation *op : sf.segment.ops)
      b.clone(*op, map);
    SmallVector<Value> returned;
    for (Value v : sf.outputs)
      returned.push_back(map.lookup(v));
    func::ReturnOp::create(b, sf.loc, returned);
    // Scalar arithmetic on constants cloned in (1 - lr * wd): folded, as
    // upstream partitioning has no rule for scalar arith ops.
    OperationFolder folder(ctx);
    SmallVector<Operation *> scalars;
    for (Operation &op : *body)
      if (isScalarArithmetic(&op))
        scalars.push_back(&op);
    for (Operation *op : scalars)
      (void)folder.tryToFold(op);
    sf.tmp = made;
  }

  /// Upstream's propagation and partitioning on the scratch function
  /// (PartitionUpstream.h); `replicateInputs` is the retry on a fresh copy
  /// with every input replicated.
  LogicalResult attemptUpstream(SegmentFunction &sf, bool replicateInputs) {
    int64_t collectives = 0;
    LogicalResult r = upstream.partition(
        {sf.tmp, sf.mesh, sf.grid, sf.inDists, sf.lifted.size(),
         sf.segment.ops.front(), sf.segment.mesh.getValue()},
        replicateInputs, sf.argDists, sf.resDists, collectives,
        [&](OpPassManager &pm, Operation *op) { return runPipeline(pm, op); });
    numCollectives += collectives;
    return r;
  }

  /// Whether a partitioned scratch function is what its distributions say:
  /// every op valid (upstream partitioning can build ill-typed ops without
  /// failing, on layouts it reshards wrongly; our collectives are checked
  /// once they are in their endpoint, which they need), and every per-rank
  /// argument and result type the one its distribution gives (anything else
  /// would be a call the verifier rejects).
  LogicalResult checkConsistent(SegmentFunction &sf) {
    func::FuncOp tmp = sf.tmp;
    Segment &segment = sf.segment;
    auto explained = [&](Type global, Type local, DistAttr dist, StringRef what,
                         unsigned i) -> LogicalResult {
      auto g = dyn_cast<RankedTensorType>(global);
      if (!g)
        return success(global == local);
      std::string error;
      FailureOr<SmallVector<int64_t>> shape =
          getLocalShape(g.getShape(), dist, sf.mesh, error);
      if (succeeded(shape) &&
          cast<RankedTensorType>(local).getShape() == ArrayRef(*shape))
        return success();
      return segment.ops.front()->emitOpError("partitioning made ")
             << what << " #" << i << " of the work on @"
             << segment.mesh.getValue() << " per-rank " << local
             << ", which no sharding annotation explains for the global "
             << global << "; annotate it with shard.shard";
    };
    WalkResult invalid = tmp.walk([&](Operation *op) {
      if (op == tmp.getOperation() || isa<MonarchDialect>(op->getDialect()))
        return WalkResult::advance();
      return failed(mlir::verify(op, /*verifyRecursively=*/false))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (invalid.wasInterrupted())
      return failure();
    FunctionType partitioned = tmp.getFunctionType();
    for (auto [i, pair] :
         llvm::enumerate(llvm::zip(sf.inTypes, partitioned.getInputs())))
      if (failed(explained(std::get<0>(pair), std::get<1>(pair), sf.argDists[i],
                           "argument", i)))
        return failure();
    for (auto [i, pair] :
         llvm::enumerate(llvm::zip(sf.outTypes, partitioned.getResults())))
      if (failed(explained(std::get<0>(pair), std::get<1>(pair), sf.resDists[i],
                           "result", i)))
        return failure();
    return success();
  }

  /// Partitions the scratch function: the own engine first (upstream's
  /// passes where it has no rule), shape ops on each rank's shard, prints
  /// and ops without a rule on whole values, else upstream as annotated,
  /// then upstream with replicated inputs, then whole values: the same
  /// numbers, every rank computing all of it. Fails only on an error the
  /// user must fix.
  LogicalResult partitionSegment(SegmentFunction &sf) {
    Segment &segment = sf.segment;
    // Why an attempt failed (its first error), for the remarks.
    std::string why;
    auto quietly = [&](auto &&run) {
      ScopedDiagnosticHandler quiet(&getContext(), [&](Diagnostic &d) {
        if (why.empty() && d.getSeverity() == DiagnosticSeverity::Error) {
          why = d.str();
          if (std::string at = formatFileLoc(d.getLocation()); !at.empty())
            why += " (at " + at + ")";
        }
        return success();
      });
      return run();
    };
    auto upstream = [&](bool replicateInputs) {
      return quietly([&] {
        LogicalResult r = attemptUpstream(sf, replicateInputs);
        return succeeded(r) ? checkConsistent(sf) : r;
      });
    };
    auto wholeValues = [&] {
      sf.argDists.assign(sf.inTypes.size(), DistAttr());
      sf.resDists.assign(sf.outTypes.size(), DistAttr());
    };
    Operation *head = segment.ops.front();
    int64_t size = static_cast<int64_t>(segment.ops.size());
    ++counts.segments;
    LogicalResult first = failure();
    bool own = false;
    if (engine == "own" &&
        !llvm::all_of(segment.ops, llvm::IsaPred<DebugPrintOp>)) {
      // monarch's own propagation and expansion; upstream's where it has
      // no rule for an op of the segment.
      std::string ownWhy;
      own = succeeded(partition::partitionWithOwnEngine(
                sf.tmp, sf.mesh, sf.inDists, sf.lifted, sf.argDists,
                sf.resDists, ownWhy)) &&
            succeeded(quietly([&] { return checkConsistent(sf); }));
      if (own) {
        first = success();
        counts.split += size;
        if (remarks)
          head->emitRemark("monarch-partition: ")
              << segment.ops.size() << " ops on @" << segment.mesh.getValue()
              << " partitioned by the own engine";
      } else {
        if (ownWhy.empty())
          ownWhy = why.empty() ? "its result did not check" : why;
        why.clear();
        if (remarks)
          head->emitRemark("monarch-partition: the own engine cannot "
                           "partition the work on @")
              << segment.mesh.getValue() << " (" << ownWhy
              << "); upstream partitioning instead";
        rebuild(sf);
      }
    }
    // Upstream crashes on a dimension split over several mesh dimensions
    // (only the own engine accepts them): such a segment the own engine
    // cannot do runs on whole values.
    bool multiAxis =
        !own &&
        (llvm::any_of(sf.inDists,
                      [](DistAttr d) {
                        if (!d)
                          return false;
                        for (Attribute a : d.getSplit())
                          if (cast<ArrayAttr>(a).size() > 1)
                            return true;
                        return false;
                      }) ||
         sf.tmp
             .walk([](shard::ShardingOp s) {
               for (shard::GridAxesAttr axes : s.getSplitAxes().getAxes())
                 if (axes.size() > 1)
                   return WalkResult::interrupt();
               return WalkResult::advance();
             })
             .wasInterrupted());
    if (own) {
      // Done above.
    } else if (segment.whole &&
               succeeded(localShapeOps(sf.tmp, sf.mesh, sf.inDists, sf.argDists,
                                       sf.resDists))) {
      // Shape ops of shards: each rank reshapes, slices or joins its own.
      first = success();
      counts.split += size;
      if (remarks)
        head->emitRemark("monarch-partition: ")
            << segment.ops.size() << " shape ops on @"
            << segment.mesh.getValue() << " run on each rank's shard";
    } else if (segment.whole &&
               llvm::all_of(segment.ops, llvm::IsaPred<DebugPrintOp>)) {
      // Prints of whole values: the values are gathered, no work is done.
      wholeValues();
      first = success();
      if (remarks)
        head->emitRemark("monarch-partition: ")
            << segment.ops.size() << " debug_print on @"
            << segment.mesh.getValue() << " prints whole values";
    } else if (segment.whole) {
      // Every argument and result replicated: nothing to partition.
      wholeValues();
      first = success();
      counts.whole += size;
      if (remarks)
        head->emitRemark("monarch-partition: '")
            << head->getName() << "' on @" << segment.mesh.getValue()
            << " runs on whole values (no sharding rule for it)";
    } else {
      // A first attempt that fails, or whose per-rank types its
      // annotations do not explain, is retried with replicated inputs.
      first = multiAxis ? failure() : upstream(/*replicateInputs=*/false);
      if (succeeded(first))
        counts.split += size;
      if (succeeded(first) && remarks)
        head->emitRemark("monarch-partition: ")
            << segment.ops.size() << " ops on @" << segment.mesh.getValue()
            << " partitioned as annotated";
    }
    if (succeeded(first))
      return success();
    rebuild(sf);
    std::string firstWhy = why.empty() ? "no diagnostic" : why;
    why.clear();
    if (multiAxis)
      firstWhy = "a dimension split over several mesh dimensions";
    LogicalResult second =
        multiAxis ? failure() : upstream(/*replicateInputs=*/true);
    if (succeeded(second)) {
      ++numReplicatedRetries;
      counts.retried += size;
      if (remarks)
        head->emitRemark("monarch-partition: ")
            << segment.ops.size() << " ops on @" << segment.mesh.getValue()
            << " partitioned with replicated inputs (as annotated, "
               "upstream partitioning failed: "
            << firstWhy << ")";
      return success();
    }
    ++numWholeValues;
    counts.whole += size;
    if (remarks)
      head->emitRemark("monarch-partition: ")
          << segment.ops.size() << " ops on @" << segment.mesh.getValue()
          << " run on whole values (upstream partitioning failed: " << firstWhy
          << "; with replicated inputs: "
          << (why.empty() ? "no diagnostic" : why) << ")";
    // Upstream partitioning cannot do this segment's layouts. The
    // annotations only say where data lives, so the work runs on whole
    // values instead: the same numbers, every rank computing all of it.
    rebuild(sf);
    SmallVector<shard::ShardOp> annotations;
    sf.tmp.walk([&](shard::ShardOp s) { annotations.push_back(s); });
    for (shard::ShardOp s : llvm::reverse(annotations)) {
      s.getResult().replaceAllUsesWith(s.getSrc());
      s.erase();
    }
    sf.tmp.walk([&](shard::ShardingOp s) {
      if (s->use_empty())
        s.erase();
    });
    wholeValues();
    return success();
  }

  /// The partitioned body becomes endpoint @run of a class on the mesh (its
  /// arguments and results carrying their distributions), and the segment a
  /// call of it with the global values.
  void replaceWithEndpointCall(func::FuncOp fn, SegmentFunction &sf) {
    MLIRContext *ctx = &getContext();
    Segment &segment = sf.segment;
    OpBuilder b(ctx);
    b.setInsertionPoint(fn);
    auto actorClass = ActorClassOp::create(b, sf.loc, sf.base + ".class");
    b.setInsertionPointToStart(&actorClass.getBody().front());
    auto endpoint =
        EndpointOp::create(b, sf.loc, "run", sf.tmp.getFunctionType());
    endpoint.getBody().takeBody(sf.tmp.getBody());
    for (auto [i, dist] : llvm::enumerate(sf.argDists))
      if (dist)
        endpoint.setArgAttr(i, MonarchDialect::getDistAttrName(), dist);
    for (auto [i, dist] : llvm::enumerate(sf.resDists))
      if (dist)
        endpoint.setResultAttr(i, MonarchDialect::getDistAttrName(), dist);
    Operation *term = endpoint.getBody().front().getTerminator();
    b.setInsertionPoint(term);
    ReturnOp::create(b, term->getLoc(), term->getOperands());
    term->erase();
    sf.tmp.erase();
    sf.tmp = {};
    endpoints.push_back(endpoint);
    b.setInsertionPoint(fn);
    ActorMeshOp::create(b, sf.loc, sf.base, actorClass.getSymName(),
                        segment.mesh.getValue());

    b.setInsertionPointAfter(segment.ops.back());
    auto callee =
        SymbolRefAttr::get(ctx, sf.base, {FlatSymbolRefAttr::get(ctx, "run")});
    SmallVector<Location> locs;
    for (Operation *op : segment.ops)
      locs.push_back(op->getLoc());
    auto call = CallOp::create(b, FusedLoc::get(ctx, locs), sf.outTypes, callee,
                               sf.inputs.getArrayRef());
    for (auto [v, r] : llvm::zip(sf.outputs, call.getResults()))
      v.replaceAllUsesWith(r);
    for (auto [r, dist] : llvm::zip(call.getResults(), sf.resDists))
      if (dist && !dist.isReplicated())
        known[r] = dist;
    for (Operation *op : llvm::reverse(segment.ops))
      op->erase();
  }
};

} // namespace
