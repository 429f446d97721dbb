//===- BucketCollectives.cpp - monarch-bucket-collectives -------*- C++ -*-===//
//
// Merges the small independent all_reduces of each rank function (the
// per-rank form of monarch-specialize-ranks) into buckets, as PyTorch DDP
// buckets gradients: each collective costs a latency of its own (hundreds
// of microseconds through shared memory on a loaded host), so a
// data-parallel backward with one small all_reduce per parameter was
// latency-bound.
//
// One scan in program order keeps an open bucket per key (group,
// dimensions, reduction, element type) and the ops that depend on its
// members ("tainted"). A candidate joins the bucket of its key when it
// fits and does not depend on a member; a tainted monarch op
// (communication, a print) closes the bucket before it. A closed bucket is
// reduced where its last member was: the tainted ops before that point move
// after it, in order (they feed no member, so nothing they need moves with
// them).
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "MeshRanks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "monarch-bucket-collectives"

namespace monarch {
#define GEN_PASS_DEF_MONARCHBUCKETCOLLECTIVES
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {

/// All_reduces of at least this many bytes reduce alone: a bucket copies
/// its members into one buffer and back out, which for a large gradient
/// costs more than the latency it saves (an 8 MB bucket of two 4 MB
/// gradients spent 1.7 ms a step on the copies in the MLP-1024 step, the
/// all_reduce itself 1.5 ms; a lone collective through shared memory pays
/// some 10-20 us of latency).
constexpr int64_t kAloneBytes = int64_t(256) << 10;

/// What must agree for two all_reduces to share a bucket.
struct Key {
  /// The group's mesh too, where a class function names it: the members'
  /// groups must agree, not only the first rank's.
  Attribute group, groupMesh, dims;
  ReductionKind kind;
  Type element;
  bool operator==(const Key &o) const {
    return group == o.group && groupMesh == o.groupMesh && dims == o.dims &&
           kind == o.kind && element == o.element;
  }
};

Key keyOf(AllReduceOp op) {
  return {op->getAttr(rankform::kGroupAttr),
          op->getAttr(rankform::kGroupMeshAttr), op.getDimsAttr(),
          op.getReduction(),
          cast<RankedTensorType>(op.getInput().getType()).getElementType()};
}

int64_t bytesOf(AllReduceOp op) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return -1;
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// Whether `op` is, or holds, an op of the monarch dialect (communication,
/// prints): such ops never move past a collective.
bool containsMonarchOp(Operation &op) {
  return op
      .walk([](Operation *inner) {
        return isa_and_nonnull<MonarchDialect>(inner->getDialect())
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `op`, or an op nested in it, uses one of `values`.
bool usesAny(Operation &op, const llvm::DenseSet<Value> &values) {
  return op
      .walk([&](Operation *inner) {
        return llvm::any_of(inner->getOperands(),
                            [&](Value v) { return values.contains(v); })
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The buckets of `fn` (indices into its all_reduces in program order,
/// two or more each), decided without changing it. One bucket is open per
/// key at a time, so gradient reductions over one mesh dimension keep
/// filling their bucket past the collectives of another (a 2x2 step's
/// tensor-parallel all_reduces over "gpus" between its gradient
/// reductions over "hosts", which the partitioner reduces as soon as each
/// gradient is made).
SmallVector<SmallVector<unsigned>> planBuckets(func::FuncOp fn,
                                               int64_t capBytes) {
  struct Open {
    Key key;
    SmallVector<unsigned> members;
    int64_t bytes = 0;
    llvm::DenseSet<Value> tainted;
  };
  SmallVector<SmallVector<unsigned>> buckets;
  SmallVector<Open> open;
  auto close = [&](size_t i) {
    if (open[i].members.size() > 1)
      buckets.push_back(std::move(open[i].members));
    open.erase(open.begin() + i);
  };
  unsigned index = 0;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    auto ar = dyn_cast<AllReduceOp>(op);
    bool communicates = ar || containsMonarchOp(op);
    // A tainted op that communicates (or prints) would move past the
    // bucket's collective: the bucket closes before it instead. Other
    // tainted ops move with the bucket.
    for (size_t i = open.size(); i-- > 0;) {
      if (!usesAny(op, open[i].tainted))
        continue;
      if (communicates)
        close(i);
      else
        for (Value r : op.getResults())
          open[i].tainted.insert(r);
    }
    if (!ar)
      continue;
    unsigned me = index++;
    int64_t bytes = bytesOf(ar);
    if (bytes < 0 || bytes >= kAloneBytes || 4 * bytes > capBytes)
      continue;
    Key key = keyOf(ar);
    auto it = llvm::find_if(open, [&](const Open &o) { return o.key == key; });
    if (it != open.end() && it->bytes + bytes > capBytes) {
      close(it - open.begin());
      it = open.end();
    }
    if (it == open.end()) {
      open.push_back(Open{key, {}, 0, {}});
      it = std::prev(open.end());
    }
    it->members.push_back(me);
    it->bytes += bytes;
    it->tainted.insert(ar.getResult());
  }
  while (!open.empty())
    close(open.size() - 1);
  return buckets;
}

/// `value` (a tensor or a vector) as `type` (the other of the two, with the
/// same elements): one collapse or expand over all dimensions, nothing for
/// a vector already.
Value reshapeTo(OpBuilder &b, Location loc, Value value,
                RankedTensorType type) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from == type)
    return value;
  bool collapse = from.getRank() > type.getRank();
  RankedTensorType wide = collapse ? from : type;
  RankedTensorType narrow = collapse ? type : from;
  // One group per dimension of the narrow side: none for a scalar.
  SmallVector<ReassociationIndices> groups;
  if (narrow.getRank() > 0) {
    groups.emplace_back();
    for (int64_t d = 0; d < wide.getRank(); ++d)
      groups.back().push_back(d);
  }
  if (collapse)
    return tensor::CollapseShapeOp::create(b, loc, type, value, groups);
  return tensor::ExpandShapeOp::create(b, loc, type, value, groups);
}

/// Rewrites bucket `members` (all_reduces of `fn`, in program order) into
/// one all_reduce at the last member.
void applyBucket(func::FuncOp fn, ArrayRef<AllReduceOp> members) {
  Block &block = fn.getBody().front();
  AllReduceOp last = members.back();
  // Ops between the first and the last member that use an earlier
  // member's result (transitively) move after the last member.
  llvm::DenseSet<Value> tainted;
  for (AllReduceOp m : members.drop_back())
    tainted.insert(m.getResult());
  SmallVector<Operation *> moving;
  for (Operation *op = members.front()->getNextNode(); op && op != last;
       op = op->getNextNode()) {
    if (!usesAny(*op, tainted))
      continue;
    moving.push_back(op);
    for (Value r : op->getResults())
      tainted.insert(r);
  }
  OpBuilder b(last);
  Location loc = last.getLoc();
  SmallVector<Value> flat;
  SmallVector<int64_t> sizes;
  for (AllReduceOp m : members) {
    auto type = cast<RankedTensorType>(m.getInput().getType());
    int64_t n = type.getNumElements();
    auto flatType = RankedTensorType::get({n}, type.getElementType());
    flat.push_back(reshapeTo(b, loc, m.getInput(), flatType));
    sizes.push_back(n);
  }
  Value joined = tensor::ConcatOp::create(b, loc, /*dim=*/0, flat);
  auto reduced = AllReduceOp::create(b, loc, joined, last.getDimsAttr(),
                                     last.getReductionAttr());
  reduced->setAttr(rankform::kGroupAttr, last->getAttr(rankform::kGroupAttr));
  if (Attribute mesh = last->getAttr(rankform::kGroupMeshAttr))
    reduced->setAttr(rankform::kGroupMeshAttr, mesh);
  int64_t offset = 0;
  for (auto [member, n] : llvm::zip(members, sizes)) {
    AllReduceOp m = member;
    auto type = cast<RankedTensorType>(m.getInput().getType());
    auto flatType = RankedTensorType::get({n}, type.getElementType());
    Value part = tensor::ExtractSliceOp::create(
        b, loc, flatType, reduced.getResult(),
        ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    offset += n;
    m.getResult().replaceAllUsesWith(reshapeTo(b, loc, part, type));
  }
  // The moved ops go right after the bucket's results, in their order.
  Operation *after = b.getInsertionPoint() == block.end()
                         ? &block.back()
                         : &*std::prev(b.getInsertionPoint());
  for (Operation *op : moving) {
    op->moveAfter(after);
    after = op;
  }
  for (AllReduceOp m : members)
    m.erase();
}

struct MonarchBucketCollectivesPass
    : monarch::impl::MonarchBucketCollectivesBase<
          MonarchBucketCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    rankform::forEachRankForm(getOperation(), [&](ArrayRef<func::FuncOp> fns) {
      // Every rank must bucket the same collectives the same way.
      SmallVector<SmallVector<SmallVector<unsigned>>> plans;
      for (func::FuncOp fn : fns)
        plans.push_back(planBuckets(fn, bucketBytes));
      if (llvm::any_of(plans, [&](const auto &p) { return p != plans[0]; }))
        return;
      for (func::FuncOp fn : fns) {
        SmallVector<AllReduceOp> all;
        fn.walk([&](AllReduceOp op) {
          if (op->getParentOp() == fn)
            all.push_back(op);
        });
        for (const SmallVector<unsigned> &bucket : plans[0]) {
          SmallVector<AllReduceOp> members;
          for (unsigned i : bucket)
            members.push_back(all[i]);
          applyBucket(fn, members);
          numMerged += members.size();
          ++numBuckets;
        }
      }
    });
  }
};

} // namespace
