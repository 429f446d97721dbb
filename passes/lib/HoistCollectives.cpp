//===- HoistCollectives.cpp - monarch-hoist-collectives ---------*- C++ -*-===//
//
// Issues each collective of a rank function (the per-rank form) as soon as
// its input is computed, so that it runs on the communication stream while
// the rest of the step computes: an actor's data-parallel step that
// all-reduces its gradients in the order of its parameters
// (`[mc.all_reduce(g) for g in grads]`) waited for the last gradient of the
// backward before reducing any, the first parameter's being produced last.
//
// A collective moves up past pure ops and past earlier collectives of its
// own group, never past its inputs, any other communication (a channel
// end, a collective of another group) or an op with effects. The groups a
// rank takes part in are then entered in the same order as before, and
// within a group the collectives are permuted; every member must permute
// them alike (their k-th collectives must still match), which holds when
// the members run the same code and is checked: a worker program where
// two members of a group would disagree is left as it is. Collectives of
// one group ready at the same point keep their order.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "MeshRanks.h"
#include "PassUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#define DEBUG_TYPE "monarch-hoist-collectives"

namespace monarch {
#define GEN_PASS_DEF_MONARCHHOISTCOLLECTIVES
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {

/// The group of a mesh collective of the per-rank form, or null for any
/// other op. In a class function (monarch-specialize-ranks classes=1) the
/// group of its first rank with the mesh and dims that give every member
/// its own (two collectives of the first rank's group are of one group on
/// every member only with those equal too).
Attribute groupOf(Operation *op) {
  // (Most ops are tensor compute: one pointer comparison turns them away.)
  if (!isa_and_nonnull<MonarchDialect>(op->getDialect()) ||
      !isMeshCollective(op))
    return {};
  Attribute group = op->getAttr(rankform::kGroupAttr);
  Attribute mesh = op->getAttr(rankform::kGroupMeshAttr);
  if (!group || !mesh)
    return group;
  return ArrayAttr::get(op->getContext(), {group, mesh, op->getAttr("dims")});
}

/// memberGroup's lists per mesh, dims and group (its leader): a group's
/// members ask for the same list, built and uniqued once instead of once
/// per member (at 4,096 ranks, 8,000 lists of 256 ranks).
using GroupCache =
    llvm::DenseMap<std::tuple<const MeshRanks *, Attribute, int64_t>,
                   Attribute>;

/// The group a member `rank` of a class function has where its first rank
/// has `group` (groupOf's answer); null when it cannot be told.
Attribute memberGroup(Attribute group, int64_t rank, bool first, Operation *at,
                      MeshResolver &meshes, GroupCache &cache) {
  auto parts = dyn_cast<ArrayAttr>(group);
  if (!parts)
    return first ? group : Attribute();
  if (first)
    return parts[0];
  auto ref = dyn_cast<FlatSymbolRefAttr>(parts[1]);
  auto dims = dyn_cast_or_null<ArrayAttr>(parts[2]);
  const MeshRanks *mesh = ref ? meshes.resolve(at, ref) : nullptr;
  int64_t local = mesh ? mesh->localRank(rank) : -1;
  if (!dims || local < 0)
    return {};
  auto [it, fresh] =
      cache.try_emplace({mesh, dims, mesh->groupLeader(local, dims)});
  if (fresh)
    it->second =
        DenseI64ArrayAttr::get(at->getContext(), mesh->groupOf(local, dims));
  return it->second;
}

/// Whether `op` may be issued after `other`, which comes right before it:
/// `other` is pure compute that `op` does not read, or a collective of
/// `op`'s group that `op` does not read. `pure` caches isMemoryEffectFree
/// per op (each collective walks back over the ops before it, and a
/// linalg.generic's answer walks its body).
bool canPass(Operation *op, Attribute group, Operation *other,
             llvm::DenseMap<Operation *, bool> &pure) {
  for (Value v : op->getOperands())
    if (v.getDefiningOp() == other)
      return false;
  if (!isa_and_nonnull<MonarchDialect>(other->getDialect())) {
    auto [it, fresh] = pure.try_emplace(other, false);
    if (fresh)
      it->second = isMemoryEffectFree(other);
    return it->second;
  }
  Attribute g = groupOf(other);
  return g && g == group;
}

/// Per group, the indices (in the original order) of the group's
/// collectives in the function's current order.
using Permutations = llvm::DenseMap<Attribute, SmallVector<unsigned>>;

Permutations permutations(func::FuncOp fn,
                          const llvm::DenseMap<Operation *, unsigned> &index) {
  Permutations out;
  for (Operation &op : fn.getBody().front())
    if (Attribute g = groupOf(&op))
      out[g].push_back(index.lookup(&op));
  return out;
}

struct MonarchHoistCollectivesPass
    : monarch::impl::MonarchHoistCollectivesBase<MonarchHoistCollectivesPass> {
  using Base::Base;

  /// Hoists the collectives of `fn`; the number moved.
  int64_t hoist(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    SmallVector<Operation *> collectives;
    for (Operation &op : body)
      if (groupOf(&op))
        collectives.push_back(&op);
    int64_t moved = 0;
    llvm::DenseMap<Operation *, bool> pure;
    // Last first: a collective then lands right after what it waits for,
    // ahead of later ones that landed there too, so that collectives ready
    // at the same point keep their order.
    for (Operation *op : llvm::reverse(collectives)) {
      Attribute group = groupOf(op);
      Operation *after = op->getPrevNode();
      while (after && canPass(op, group, after, pure))
        after = after->getPrevNode();
      if (after == op->getPrevNode())
        continue;
      if (after)
        op->moveAfter(after);
      else
        op->moveBefore(&body, body.begin());
      ++moved;
    }
    return moved;
  }

  void runOnOperation() override {
    SymbolTableCollection tables;
    MeshResolver meshes(tables);
    rankform::forEachRankForm(getOperation(), [&](ArrayRef<func::FuncOp> fns) {
      hoistAll(fns, meshes);
    });
  }

  /// Hoists the collectives of a worker program's rank functions `fns`,
  /// unless two members of a group would then disagree.
  void hoistAll(ArrayRef<func::FuncOp> fns, MeshResolver &meshes) {
    // Each collective's index within its group, and every op's place, in
    // the original order (to put a disagreeing program back).
    llvm::DenseMap<Operation *, unsigned> index;
    SmallVector<SmallVector<Operation *>> original;
    for (func::FuncOp fn : fns) {
      llvm::DenseMap<Attribute, unsigned> next;
      SmallVector<Operation *> &order = original.emplace_back();
      for (Operation &op : fn.getBody().front()) {
        order.push_back(&op);
        if (Attribute g = groupOf(&op))
          index[&op] = next[g]++;
      }
    }
    int64_t moved = 0;
    for (func::FuncOp fn : fns)
      moved += hoist(fn);
    if (moved == 0)
      return;
    // Every member of a group must have permuted its collectives alike;
    // every member of a class function has permuted them as it did.
    llvm::DenseMap<Attribute, SmallVector<unsigned>> agreed;
    GroupCache groups;
    bool agree = true;
    for (func::FuncOp fn : fns) {
      auto own =
          fn->getAttrOfType<IntegerAttr>(MonarchDialect::getRankAttrName());
      auto members =
          fn->getAttrOfType<DenseI64ArrayAttr>(rankform::kMembersAttr);
      SmallVector<int64_t> ranks;
      if (members)
        ranks.assign(members.asArrayRef().begin(), members.asArrayRef().end());
      else
        ranks.push_back(own ? own.getInt() : 0);
      Permutations perms = permutations(fn, index);
      for (int64_t rank : ranks)
        for (auto &[group, perm] : perms) {
          Attribute key = memberGroup(group, rank, !own || own.getInt() == rank,
                                      fn, meshes, groups);
          if (!key) {
            agree = false;
            continue;
          }
          auto [it, fresh] = agreed.try_emplace(key, perm);
          agree &= fresh || it->second == perm;
        }
    }
    if (agree) {
      numHoisted += moved;
      return;
    }
    ++numLeft;
    for (auto [i, order] : llvm::enumerate(original)) {
      func::FuncOp fn = fns[i];
      Block &body = fn.getBody().front();
      for (Operation *op : order)
        op->moveBefore(&body, body.end());
    }
  }
};

} // namespace
