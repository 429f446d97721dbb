//===- PartitionPrep.cpp - Shaping a segment for upstream partitioning ---===//
//
// See PartitionPrep.h. Every rewrite keeps the values computed and changes
// only where they live (which annotations they carry).
//
//===----------------------------------------------------------------------===//

#include "PartitionPrep.h"

#include "monarch/IR/DeadWork.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace monarch::partition {
namespace {

bool isShardable(Operation *op) {
  return isa<shard::ShardingInterface>(op) && op->getDialect() &&
         op->getDialect()->getNamespace() != "shard";
}

/// The `shard.shard` (not for users) that annotates `v` where it is
/// defined, if exactly one does.
shard::ShardOp soleAnnotation(Value v) {
  shard::ShardOp found;
  for (Operation *user : v.getUsers())
    if (auto s = dyn_cast<shard::ShardOp>(user);
        s && !s.getAnnotateForUsers()) {
      if (found)
        return {};
      found = s;
    }
  return found;
}

bool isReplicated(shard::ShardingOp sharding) {
  return llvm::all_of(sharding.getSplitAxes().getAxes(),
                      [](shard::GridAxesAttr a) { return a.empty(); }) &&
         sharding.getStaticHaloSizes().empty() &&
         sharding.getStaticShardedDimsOffsets().empty();
}

bool sameSharding(shard::ShardingOp a, shard::ShardingOp b) {
  return a.getGrid() == b.getGrid() && a.getSplitAxes() == b.getSplitAxes() &&
         a.getStaticHaloSizes() == b.getStaticHaloSizes() &&
         a.getStaticShardedDimsOffsets() == b.getStaticShardedDimsOffsets();
}

/// `shard.shard %v` written after other ops already used %v: propagation
/// (forward-backward) would annotate those uses with a shard.shard placed
/// before %v's definition. Annotating %v where it is defined means the same.
void hoistLateAnnotations(Block &block) {
  SmallVector<shard::ShardOp> late;
  for (auto s : block.getOps<shard::ShardOp>()) {
    if (s.getAnnotateForUsers() || soleAnnotation(s.getSrc()) != s)
      continue;
    auto sharding = s.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!sharding || sharding->getNumOperands() != 0)
      continue;
    bool usedBefore = llvm::any_of(s.getSrc().getUsers(), [&](Operation *u) {
      Operation *top = block.findAncestorOpInBlock(*u);
      return top && top != s && top->isBeforeInBlock(s);
    });
    if (usedBefore)
      late.push_back(s);
  }
  for (shard::ShardOp s : late) {
    Value src = s.getSrc();
    auto sharding = s.getSharding().getDefiningOp<shard::ShardingOp>();
    if (Operation *def = src.getDefiningOp()) {
      sharding->moveAfter(def);
    } else {
      sharding->moveBefore(&block.front());
    }
    s->moveAfter(sharding);
    src.replaceAllUsesExcept(s.getResult(), s);
  }
}

/// A contraction using one value twice (x @ x): upstream partitioning infers
/// the wrong per-rank shape for the second use, and upstream propagation
/// gives both uses one layout. Each repeat gets its own value.
void separateRepeatedOperands(Block &block) {
  for (Operation &op : block) {
    // Elementwise ops handle repeats; contractions (x @ x) do not.
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    if (!isShardable(&op) || !linalgOp || linalgOp.getNumReductionLoops() == 0)
      continue;
    OpBuilder b(&op);
    llvm::SmallDenseSet<Value> seen;
    for (OpOperand &use : op.getOpOperands()) {
      Value v = use.get();
      if (!isa<RankedTensorType>(v.getType()) || seen.insert(v).second)
        continue;
      shard::ShardingOp sharding;
      if (auto def = v.getDefiningOp<shard::ShardOp>())
        sharding = def.getSharding().getDefiningOp<shard::ShardingOp>();
      else if (auto s = soleAnnotation(v))
        sharding = s.getSharding().getDefiningOp<shard::ShardingOp>();
      if (sharding) {
        auto copy = shard::ShardOp::create(b, op.getLoc(), v, sharding,
                                           /*annotate_for_users=*/true);
        use.set(copy);
        continue;
      }
      // Not annotated yet: upstream propagation would annotate both uses
      // with the first one's layout (x.T @ x.T on a 2-D mesh computed a
      // wrong product). An elementwise copy propagates on its own.
      auto type = cast<RankedTensorType>(v.getType());
      Value init = tensor::EmptyOp::create(b, op.getLoc(), type.getShape(),
                                           type.getElementType());
      AffineMap id =
          AffineMap::getMultiDimIdentityMap(type.getRank(), op.getContext());
      auto copy = linalg::GenericOp::create(
          b, op.getLoc(), TypeRange{type}, ValueRange{v}, ValueRange{init},
          ArrayRef<AffineMap>{id, id},
          SmallVector<utils::IteratorType>(type.getRank(),
                                           utils::IteratorType::parallel),
          [](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(nb, l, args[0]);
          });
      use.set(copy.getResult(0));
    }
  }
}

/// `shard.shard %v to <replicated>` at the builder's position (with
/// `forUsers`, a request that %v's users read it whole).
shard::ShardOp annotateReplicated(OpBuilder &b, Location loc, Value v,
                                  FlatSymbolRefAttr grid,
                                  bool forUsers = false) {
  // Upstream propagation wants `[]` on a 0-d value (`[[]]` names a
  // dimension it does not have) and `[[]]` elsewhere.
  shard::GridAxesAttr none = shard::GridAxesAttr::get(b.getContext(), {});
  auto type = dyn_cast<RankedTensorType>(v.getType());
  auto sharding = shard::ShardingOp::create(
      b, loc, grid,
      type && type.getRank() == 0 ? ArrayRef<shard::GridAxesAttr>{}
                                  : ArrayRef(none));
  return shard::ShardOp::create(b, loc, v, sharding, forUsers);
}

/// `shard.shard (shard.shard %v to A) to B` with A and B different splits:
/// upstream resharding between grid axes builds ops from null values. Going
/// through the replicated layout (gather, then a local slice) is correct for
/// every pair.
void replicateBetweenSplits(Block &block) {
  SmallVector<shard::ShardOp> reshards;
  for (auto s : block.getOps<shard::ShardOp>()) {
    auto prev = s.getSrc().getDefiningOp<shard::ShardOp>();
    if (s.getAnnotateForUsers() || !prev || prev.getAnnotateForUsers())
      continue;
    auto a = prev.getSharding().getDefiningOp<shard::ShardingOp>();
    auto b = s.getSharding().getDefiningOp<shard::ShardingOp>();
    if (a && b && !isReplicated(a) && !isReplicated(b) && !sameSharding(a, b))
      reshards.push_back(s);
  }
  for (shard::ShardOp s : reshards) {
    OpBuilder b(s);
    auto current = s.getSharding().getDefiningOp<shard::ShardingOp>();
    s.getSrcMutable().set(
        annotateReplicated(b, s.getLoc(), s.getSrc(), current.getGridAttr()));
  }
}

bool hasSharding(Value v) {
  if (v.getDefiningOp<shard::ShardOp>())
    return true;
  return llvm::any_of(v.getUsers(),
                      [](Operation *u) { return isa<shard::ShardOp>(u); });
}

/// `mc.replicate(y)` of structured work: a replicated for-users request
/// on the result of a linalg op. Left as a request, propagation lays the
/// result out from the op's operands (owner computes) and partitioning
/// gathers it after the op.
static bool gathersAfterWork(shard::ShardOp s) {
  auto sharding = s.getSharding().getDefiningOp<shard::ShardingOp>();
  return sharding && isReplicated(sharding) &&
         isa_and_nonnull<linalg::LinalgOp>(s.getSrc().getDefiningOp());
}

/// `shard.shard %v to S annotate_for_users` where nothing says how %v
/// itself is laid out: upstream partitioning then keeps %v in layout S for
/// its user whatever the user's own layout, and builds ill-typed ops when
/// they differ. Saying that %v is in layout S (a plain annotation) lets
/// propagation reshard it for the user instead. Only when that annotation
/// is %v's one use: with others (a replicated result besides a split one),
/// upstream propagation built annotations before the values they annotate.
void annotateSourcesOfForUsers(Block &block) {
  for (auto s : block.getOps<shard::ShardOp>())
    if (s.getAnnotateForUsers() && s.getSrc().hasOneUse() &&
        !gathersAfterWork(s) && !s.getSrc().getDefiningOp<shard::ShardOp>() &&
        !soleAnnotation(s.getSrc()) &&
        llvm::none_of(s.getSrc().getUsers(), [&](Operation *u) {
          auto other = dyn_cast<shard::ShardOp>(u);
          return other && other != s && !other.getAnnotateForUsers();
        }))
      s.setAnnotateForUsers(false);
}

/// The grid the segment's annotations name (a scratch module holds one).
FlatSymbolRefAttr findGrid(Block &block) {
  auto module = block.getParentOp()->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  for (auto grid : module.getOps<shard::GridOp>())
    return FlatSymbolRefAttr::get(grid.getSymNameAttr());
  return {};
}

} // namespace

/// `axes` (per tensor dimension, its grid axes) as a sharding's split axes:
/// trailing empty entries dropped, but one kept (`[[]]` is replicated; an
/// empty list stays `[]`, the 0-d form).
SmallVector<shard::GridAxesAttr>
splitAxesAttrs(MLIRContext *ctx, ArrayRef<SmallVector<int16_t>> axes) {
  size_t used = axes.size();
  while (used > 1 && axes[used - 1].empty())
    --used;
  SmallVector<shard::GridAxesAttr> attrs;
  for (const SmallVector<int16_t> &a : axes.take_front(used))
    attrs.push_back(shard::GridAxesAttr::get(ctx, a));
  return attrs;
}

/// A 0-d value annotated `split_axes = [[]]` (what the tracer builds, as
/// `[]` does not parse back) gets `[]`: upstream propagation reads `[[]]`
/// as naming dimension 0 and builds a sharding without a grid from it.
static void normalizeZeroRankShardings(Block &block) {
  for (auto s : llvm::to_vector(block.getOps<shard::ShardOp>())) {
    auto type = dyn_cast<RankedTensorType>(s.getSrc().getType());
    auto sharding = s.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!type || type.getRank() != 0 || !sharding ||
        sharding.getSplitAxes().getAxes().empty() || !isReplicated(sharding))
      continue;
    OpBuilder b(s);
    auto flat =
        shard::ShardingOp::create(b, sharding.getLoc(), sharding.getGridAttr(),
                                  ArrayRef<shard::GridAxesAttr>{});
    s.getShardingMutable().assign(flat);
  }
}

/// Splits over grid axes of extent 1 are no splits; dropping them keeps
/// upstream resharding off its size-1 paths (it crashed building an
/// all_slice over such an axis).
static void dropUnitAxisSplits(Block &block) {
  auto module = block.getParentOp()->getParentOfType<ModuleOp>();
  if (!module)
    return;
  for (auto sharding : llvm::to_vector(block.getOps<shard::ShardingOp>())) {
    auto grid = module.lookupSymbol<shard::GridOp>(sharding.getGridAttr());
    if (!grid)
      continue;
    ArrayRef<int64_t> extents = grid.getShape();
    bool unit = false;
    SmallVector<SmallVector<int16_t>> axes;
    for (shard::GridAxesAttr a : sharding.getSplitAxes().getAxes()) {
      axes.emplace_back();
      for (int16_t axis : a.asArrayRef()) {
        if (axis >= 0 && axis < static_cast<int16_t>(extents.size()) &&
            extents[axis] == 1) {
          unit = true;
          continue;
        }
        axes.back().push_back(axis);
      }
    }
    if (!unit)
      continue;
    SmallVector<shard::GridAxesAttr> attrs =
        splitAxesAttrs(sharding.getContext(), axes);
    OpBuilder b(sharding);
    auto replacement = shard::ShardingOp::create(
        b, sharding.getLoc(), sharding.getGridAttr(), attrs,
        sharding.getStaticHaloSizes(), sharding.getStaticShardedDimsOffsets());
    sharding.getResult().replaceAllUsesWith(replacement.getResult());
    sharding.erase();
  }
}

/// A gather (`linalg.generic` whose body reads a captured tensor at
/// computed indices) partitions over its own loops; every rank needs the
/// whole table, so the body reads a replicated copy of it (a for-users
/// annotation, which upstream partitioning turns into the gather of a split
/// table and maps the capture to).
static void replicateCapturedTensors(Block &block, FlatSymbolRefAttr grid) {
  if (!grid)
    return;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isa<linalg::LinalgOp>(op))
      continue;
    llvm::SetVector<Value> captured;
    for (Region &region : op.getRegions())
      getUsedValuesDefinedAbove(region, captured);
    for (Value v : captured) {
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      OpBuilder b(&op);
      auto whole = annotateReplicated(b, op.getLoc(), v, grid,
                                      /*forUsers=*/true);
      for (Region &region : op.getRegions())
        replaceAllUsesInRegionWith(v, whole, region);
    }
  }
}

void prepareForPropagation(func::FuncOp fn, bool replicateInputs,
                           unsigned replicatedTail) {
  Block &block = fn.getBody().front();
  replicateCapturedTensors(block, findGrid(block));
  eraseDeadWork(fn);
  dropUnitAxisSplits(block);
  normalizeZeroRankShardings(block);
  // Segment inputs are global values, so replicated is what they are; the
  // users that want them split get a local slice. Left to propagation, an
  // input between differently split users can end up with layouts
  // shard-partition builds ill-typed ops from. An unused input crashes it
  // whatever the attempt.
  OpBuilder b(fn.getContext());
  b.setInsertionPointToStart(&block);
  if (FlatSymbolRefAttr grid = findGrid(block))
    for (BlockArgument arg : block.getArguments()) {
      // An input used both raw and through annotations: upstream crashed
      // partitioning an op with one of each (x @ mc.shard(x, ...)).
      bool mixed =
          llvm::any_of(arg.getUsers(),
                       [](Operation *u) { return isa<shard::ShardOp>(u); }) &&
          llvm::any_of(arg.getUsers(),
                       [](Operation *u) { return !isa<shard::ShardOp>(u); });
      bool lifted =
          arg.getArgNumber() + replicatedTail >= block.getNumArguments();
      if (!isa<RankedTensorType>(arg.getType()) ||
          (!lifted && hasSharding(arg) && !mixed) ||
          (!replicateInputs && !lifted && !arg.use_empty() && !mixed))
        continue;
      auto annotated = annotateReplicated(b, fn.getLoc(), arg, grid);
      arg.replaceAllUsesExcept(annotated, annotated);
    }
  annotateSourcesOfForUsers(block);
  hoistLateAnnotations(block);
  replicateBetweenSplits(block);
  separateRepeatedOperands(block);
}

bool annotateRemainingAsReplicated(func::FuncOp fn) {
  Block &block = fn.getBody().front();
  FlatSymbolRefAttr grid = findGrid(block);
  if (!grid)
    return false;
  OpBuilder b(fn.getContext());
  bool changed = false;
  auto replicate = [&](Value v, Location loc) {
    auto annotated = annotateReplicated(b, loc, v, grid);
    v.replaceAllUsesExcept(annotated, annotated);
    changed = true;
  };
  // Unannotated `outs` operands (tensor.empty) are left alone:
  // shard-partition sizes them from their tied results.
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isShardable(&op))
      continue;
    b.setInsertionPointAfter(&op);
    for (Value r : op.getResults())
      if (isa<RankedTensorType>(r.getType()) && !hasSharding(r))
        replicate(r, op.getLoc());
  }
  return changed;
}

static void splitMultiStepReshards(Block &block) {
  SmallVector<shard::ShardOp> reshards;
  for (auto s : block.getOps<shard::ShardOp>())
    if (auto prev = s.getSrc().getDefiningOp<shard::ShardOp>())
      if (!prev.getAnnotateForUsers())
        reshards.push_back(s);
  for (shard::ShardOp s : reshards) {
    auto prev = s.getSrc().getDefiningOp<shard::ShardOp>();
    auto from = prev.getSharding().getDefiningOp<shard::ShardingOp>();
    auto to = s.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!from || !to || sameSharding(from, to) ||
        !from.getStaticHaloSizes().empty() ||
        !to.getStaticHaloSizes().empty() ||
        !from.getStaticShardedDimsOffsets().empty() ||
        !to.getStaticShardedDimsOffsets().empty())
      continue;
    auto axesOf = [](shard::ShardingOp sh) {
      SmallVector<SmallVector<int16_t>> out;
      for (shard::GridAxesAttr a : sh.getSplitAxes().getAxes())
        out.emplace_back(a.asArrayRef());
      return out;
    };
    SmallVector<SmallVector<int16_t>> cur = axesOf(from), want = axesOf(to);
    size_t rank = std::max(cur.size(), want.size());
    cur.resize(rank);
    want.resize(rank);
    // Per tensor dimension, the grid axes both agree on (a common prefix)
    // stay; the others are removed last-first, then the wanted ones added.
    SmallVector<size_t> keep(rank);
    int64_t steps = 0;
    for (size_t d = 0; d < rank; ++d) {
      while (keep[d] < cur[d].size() && keep[d] < want[d].size() &&
             cur[d][keep[d]] == want[d][keep[d]])
        ++keep[d];
      steps += (cur[d].size() - keep[d]) + (want[d].size() - keep[d]);
    }
    // One axis moving from one tensor dimension to another is one step
    // too (upstream's all_to_all).
    SmallVector<int16_t> removed, added;
    for (size_t d = 0; d < rank; ++d) {
      removed.append(cur[d].begin() + keep[d], cur[d].end());
      added.append(want[d].begin() + keep[d], want[d].end());
    }
    if (steps <= 1 || (steps == 2 && removed == added))
      continue;
    OpBuilder b(s);
    FlatSymbolRefAttr grid = from.getGridAttr();
    Value v = s.getSrc();
    auto annotate = [&] {
      auto sharding = shard::ShardingOp::create(
          b, s.getLoc(), grid, splitAxesAttrs(b.getContext(), cur));
      v = shard::ShardOp::create(b, s.getLoc(), v, sharding,
                                 /*annotate_for_users=*/false);
    };
    // The last step is `s` itself.
    for (size_t d = rank; d-- > 0;)
      while (cur[d].size() > keep[d] && --steps > 0) {
        cur[d].pop_back();
        annotate();
      }
    for (size_t d = 0; d < rank && steps > 1; ++d)
      while (cur[d].size() < want[d].size() && steps > 1) {
        cur[d].push_back(want[d][cur[d].size()]);
        --steps;
        annotate();
      }
    s.getSrcMutable().set(v);
  }
}

/// A value with several plain annotations (propagation annotates a result
/// once per use): upstream takes one of them for the source of another and
/// crashes resharding. The first stays; an equal one is merged into it, a
/// different one annotates the first's result instead (a reshard from it).
static void mergeRepeatedAnnotations(Block &block) {
  llvm::MapVector<Value, SmallVector<shard::ShardOp>> plain;
  for (auto s : block.getOps<shard::ShardOp>())
    if (!s.getAnnotateForUsers())
      plain[s.getSrc()].push_back(s);
  for (auto &[v, annotations] : plain) {
    // Block order: the first dominates the others.
    shard::ShardOp first = annotations.front();
    auto a = first.getSharding().getDefiningOp<shard::ShardingOp>();
    for (shard::ShardOp other : llvm::drop_begin(annotations)) {
      auto b = other.getSharding().getDefiningOp<shard::ShardingOp>();
      if (a && b && sameSharding(a, b)) {
        other.getResult().replaceAllUsesWith(first.getResult());
        other.erase();
        continue;
      }
      // A plain annotation of the first: resharded from it (plain to plain
      // pairs reshard, as replicateBetweenSplits relies on).
      other.getSrcMutable().assign(first.getResult());
    }
  }
}

/// `shard.shard (shard.shard %v to A annotate_for_users) to B
/// annotate_for_users` (`mc.shard` of a value `mc.shard` made): upstream
/// reshards plain-to-requested pairs only and crashed cloning this chain.
/// The inner request becomes a plain annotation: %v is resharded to A
/// there, then to B for the users.
///
/// Also a request whose only user is the return: the result leaves in that
/// layout, which upstream only materializes for a plain annotation (it
/// returned the value unsliced).
static void settleChainedRequests(Block &block) {
  for (auto s : block.getOps<shard::ShardOp>()) {
    if (!s.getAnnotateForUsers())
      continue;
    if (auto inner = s.getSrc().getDefiningOp<shard::ShardOp>();
        inner && inner.getAnnotateForUsers())
      inner.setAnnotateForUsers(false);
    if (!s.getResult().use_empty() &&
        llvm::all_of(s.getResult().getUsers(), [](Operation *u) {
          return u->hasTrait<OpTrait::IsTerminator>();
        }))
      s.setAnnotateForUsers(false);
  }
}

void prepareForPartition(func::FuncOp fn) {
  Block &block = fn.getBody().front();
  // Propagation may itself choose a grid axis of extent 1.
  dropUnitAxisSplits(block);
  settleChainedRequests(block);
  mergeRepeatedAnnotations(block);
  splitMultiStepReshards(block);
}

Operation *findUnannotatedOp(func::FuncOp fn) {
  for (Operation &op : fn.getBody().front())
    if (isShardable(&op))
      for (Value r : op.getResults())
        if (isa<RankedTensorType>(r.getType()) && !hasSharding(r))
          return &op;
  return nullptr;
}

} // namespace monarch::partition
