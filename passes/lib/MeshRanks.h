//===- MeshRanks.h - Meshes as ranks, the per-rank form ---------*- C++ -*-===//
//
// What monarch-specialize-ranks and monarch-plan-transfers share (internal
// to passes/lib): meshes and slices resolved to ranks of their proc mesh,
// and the attributes of the per-rank form the first hands to the second
// (described in Passes.td, MonarchSpecializeRanks).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_PASSES_LIB_MESHRANKS_H
#define MONARCH_PASSES_LIB_MESHRANKS_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"

#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace monarch {

/// Attributes of the per-rank form.
namespace rankform {
/// On a worker program turned declaration: its rank functions, in rank
/// order (an array of flat symbol references).
constexpr llvm::StringLiteral kRanksAttr = "plan.ranks";
/// On a rank function: the worker result of each leading result (a dense
/// i64 array); outputs the rank does not hold are absent.
constexpr llvm::StringLiteral kOutputsAttr = "plan.outputs";
/// Per returned output: where this rank's shard starts in it (one offset
/// per dimension), or an empty array for the whole value.
constexpr llvm::StringLiteral kOutputOffsetsAttr = "plan.output_offsets";
/// Per worker input: where the shard this rank is fed starts (one offset
/// per dimension), or an empty array for the whole value.
constexpr llvm::StringLiteral kInputOffsetsAttr = "plan.input_offsets";
/// On a rank function: the actor state (`@actor_mesh::@state`) of each
/// trailing argument (its value at the start of the step) and of each
/// trailing result (its value at the end).
constexpr llvm::StringLiteral kStatesAttr = "plan.states";
/// On a mesh collective of a rank function: the proc-mesh ranks of its
/// group, in group order.
constexpr llvm::StringLiteral kGroupAttr = "plan.group";
/// On a rank function that stands for a class of ranks
/// (monarch-specialize-ranks classes=1): every rank of the class, its own
/// (`monarch.rank`, the first) included, in rank order. The others run the
/// same function but for their collectives' groups (kGroupMeshAttr) and
/// their offsets (kMemberInputOffsetsAttr, kMemberOutputOffsetsAttr).
constexpr llvm::StringLiteral kMembersAttr = "plan.members";
/// Per member (as kInputOffsetsAttr / kOutputOffsetsAttr are per rank).
constexpr llvm::StringLiteral kMemberInputOffsetsAttr =
    "plan.member_input_offsets";
constexpr llvm::StringLiteral kMemberOutputOffsetsAttr =
    "plan.member_output_offsets";
/// On a collective of a class function: the mesh whose `groupOf(member's
/// local rank, dims)` is each member's group.
constexpr llvm::StringLiteral kGroupMeshAttr = "plan.group_mesh";
/// On a rank function's channel_send / channel_recv: the value crosses as
/// shards of this #monarch.dist, each rank of the destination receiving its
/// own shard (ShardRoute) instead of the whole value.
constexpr llvm::StringLiteral kShardAttr = MonarchDialect::getShardAttrName();
/// Output j of a worker program is returned by one of the ranks holding it
/// (of one shard's replicas, for a split output): the (j mod min(holders,
/// kFetchSpread))-th. Spread, the fetches and the compute only they need
/// fall on several ranks instead of the lowest; bounded, a mesh of
/// thousands of replicas still has a handful of distinct programs, where
/// the plan file stores one stream per class of identical ranks (issue
/// 15). Eight balance a step's replicated outputs (a GPT's ~60
/// parameters) as well as more would.
constexpr int64_t kFetchSpread = 8;

/// The rank functions of `program` (a worker program of the per-rank form),
/// in rank order; empty when it is not one or one of them is missing (the
/// passes that rewrite rank functions then leave it alone;
/// monarch-plan-transfers reports it).
inline llvm::SmallVector<mlir::func::FuncOp>
rankFunctions(mlir::func::FuncOp program, mlir::SymbolTable &symbols) {
  llvm::SmallVector<mlir::func::FuncOp> fns;
  auto ranks = program->getAttrOfType<mlir::ArrayAttr>(kRanksAttr);
  if (!ranks)
    return fns;
  for (mlir::Attribute r : ranks)
    if (auto ref = llvm::dyn_cast<mlir::FlatSymbolRefAttr>(r))
      if (auto fn = symbols.lookup<mlir::func::FuncOp>(ref.getValue()))
        fns.push_back(fn);
  if (fns.size() != ranks.size())
    fns.clear();
  return fns;
}

/// Calls `f(fns)` with the rank functions of each worker program of
/// `module` in the per-rank form (the passes that rewrite rank functions in
/// place: bucket-collectives, hoist-collectives).
template <typename F> void forEachRankForm(mlir::ModuleOp module, F f) {
  mlir::SymbolTable symbols(module);
  for (auto program : module.getOps<mlir::func::FuncOp>())
    if (llvm::SmallVector<mlir::func::FuncOp> fns =
            rankFunctions(program, symbols);
        !fns.empty())
      f(fns);
}
} // namespace rankform

/// A mesh (proc mesh or slice) resolved to ranks of its proc mesh.
struct MeshRanks {
  MeshOpInterface mesh;
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> dims;
  llvm::SmallVector<int64_t> roots;         // Proc-mesh rank of each mesh rank.
  llvm::DenseMap<int64_t, int64_t> localOf; // Inverse of `roots`.

  int64_t localRank(int64_t root) const {
    auto it = localOf.find(root);
    return it == localOf.end() ? -1 : it->second;
  }
  llvm::SmallVector<int64_t> coords(int64_t rank) const {
    llvm::SmallVector<int64_t> c(shape.size());
    for (int64_t i = shape.size() - 1; i >= 0; --i) {
      c[i] = rank % shape[i];
      rank /= shape[i];
    }
    return c;
  }

  /// The lowest local rank of `local`'s group over `dimNames` (its
  /// coordinates along them 0): one number naming the group, found without
  /// listing its members.
  int64_t groupLeader(int64_t local, mlir::ArrayAttr dimNames) const {
    llvm::SmallVector<int64_t> c = coords(local);
    for (mlir::Attribute d : dimNames) {
      size_t i = llvm::find(dims, mlir::cast<mlir::StringAttr>(d).getValue()) -
                 dims.begin();
      if (i < c.size())
        c[i] = 0;
    }
    int64_t r = 0;
    for (size_t i = 0; i < c.size(); ++i)
      r = r * shape[i] + c[i];
    return r;
  }

  /// Proc-mesh ranks that share `local`'s coordinates outside `dims`.
  llvm::SmallVector<int64_t> groupOf(int64_t local,
                                     mlir::ArrayAttr dimNames) const {
    llvm::SmallVector<int64_t> c = coords(local);
    llvm::SmallBitVector in(shape.size());
    for (mlir::Attribute d : dimNames)
      in.set(llvm::find(dims, mlir::cast<mlir::StringAttr>(d).getValue()) -
             dims.begin());
    // The group's members in rank order: an odometer over the dimensions
    // in `dimNames`, the others held at `local`'s coordinates (the size of
    // the group, not of the mesh).
    for (size_t i = 0; i < c.size(); ++i)
      if (in.test(i))
        c[i] = 0;
    llvm::SmallVector<int64_t> group;
    while (true) {
      int64_t r = 0;
      for (size_t i = 0; i < c.size(); ++i)
        r = r * shape[i] + c[i];
      group.push_back(roots[r]);
      int64_t i = static_cast<int64_t>(c.size()) - 1;
      for (; i >= 0; --i) {
        if (!in.test(i))
          continue;
        if (++c[i] < shape[i])
          break;
        c[i] = 0;
      }
      if (i < 0)
        return group;
    }
  }

  /// `local`'s coordinates along `names` (in that order).
  llvm::SmallVector<int64_t>
  coordsAlong(int64_t local, llvm::ArrayRef<llvm::StringRef> names) const {
    llvm::SmallVector<int64_t> c = coords(local), out;
    for (llvm::StringRef d : names)
      out.push_back(c[llvm::find(dims, d) - dims.begin()]);
    return out;
  }

  /// The size of dimension `name`, or -1 when the mesh has none.
  int64_t sizeOf(llvm::StringRef name) const {
    auto it = llvm::find(dims, name);
    return it == dims.end() ? -1 : shape[it - dims.begin()];
  }

  /// Index of `local` within the group spanned by `dimNames` (row-major).
  int64_t indexAlong(int64_t local,
                     llvm::ArrayRef<llvm::StringRef> dimNames) const {
    llvm::SmallVector<int64_t> c = coords(local);
    int64_t index = 0;
    for (llvm::StringRef d : dimNames) {
      int64_t i = llvm::find(dims, d) - dims.begin();
      index = index * shape[i] + c[i];
    }
    return index;
  }
};

/// The names of the mesh dimensions that split some dimension of a value
/// distributed as `dist`, in the order the tensor dimensions name them.
inline llvm::SmallVector<llvm::StringRef> splittingDims(DistAttr dist,
                                                        int64_t rank) {
  llvm::SmallVector<llvm::StringRef> names;
  for (int64_t d = 0; d < rank; ++d)
    for (llvm::StringRef n : dist.getSplitDims(d))
      names.push_back(n);
  return names;
}

/// A value split as `dist` on mesh `from` crossing to mesh `to` where every
/// splitting dimension has the same size on both (a shard channel): each
/// rank of `to` receives its shard (the one at its coordinates along the
/// splitting dimensions) from a rank of `from` holding that shard. The
/// k-th receiver of a shard (in rank order) takes it from the (k mod
/// holders)-th holder, so replicas share the sending.
struct ShardRoute {
  ShardRoute(const MeshRanks &from, const MeshRanks &to, DistAttr dist) {
    llvm::SmallVector<llvm::StringRef> names =
        splittingDims(dist, dist.getSplit().size());
    std::map<llvm::SmallVector<int64_t>, llvm::SmallVector<int64_t>> holders;
    for (int64_t i = 0, n = from.roots.size(); i < n; ++i)
      holders[from.coordsAlong(i, names)].push_back(i);
    receiversOf.resize(from.roots.size());
    senderOf.resize(to.roots.size(), -1);
    std::map<llvm::SmallVector<int64_t>, int64_t> seen;
    for (int64_t j = 0, n = to.roots.size(); j < n; ++j) {
      llvm::SmallVector<int64_t> key = to.coordsAlong(j, names);
      auto it = holders.find(key);
      if (it == holders.end())
        continue;
      int64_t k = seen[key]++;
      int64_t i = it->second[k % it->second.size()];
      senderOf[j] = from.roots[i];
      receiversOf[i].push_back(to.roots[j]);
    }
  }
  /// Per rank of `to`: the proc-mesh rank it receives its shard from.
  llvm::SmallVector<int64_t> senderOf;
  /// Per rank of `from`: the proc-mesh ranks it sends its shard to.
  std::vector<llvm::SmallVector<int64_t>> receiversOf;
};

/// Resolves mesh symbols to MeshRanks, once per mesh.
class MeshResolver {
public:
  explicit MeshResolver(mlir::SymbolTableCollection &tables) : tables(tables) {}

  /// The mesh `ref` names, seen from `from`; null when it names none. The
  /// result lives as long as the resolver.
  const MeshRanks *resolve(mlir::Operation *from, mlir::FlatSymbolRefAttr ref) {
    // Ops of one block see the same symbols: the lookup (a walk to the
    // nearest symbol table, then a table) is done once per block and name,
    // not once per op (at 4,096 ranks, 80,000 lookups).
    mlir::Operation *scope =
        from->hasTrait<mlir::OpTrait::SymbolTable>() || !from->getParentOp()
            ? from
            : from->getParentOp();
    auto [seen, fresh] =
        byScope.try_emplace({scope, mlir::Attribute(ref)}, nullptr);
    if (!fresh)
      return seen->second;
    MeshOpInterface mesh = lookupMesh(from, ref, &tables);
    if (!mesh)
      return nullptr;
    std::unique_ptr<MeshRanks> &info = cache[mesh.getOperation()];
    if (info)
      return seen->second = info.get();
    auto roots = getRootRanks(mesh, &tables);
    if (mlir::failed(roots))
      return nullptr;
    info = std::make_unique<MeshRanks>();
    info->mesh = mesh;
    info->shape = mesh.getMeshShape();
    info->dims = mesh.getDimNames();
    info->roots = std::move(*roots);
    for (auto [local, root] : llvm::enumerate(info->roots))
      info->localOf[root] = static_cast<int64_t>(local);
    return byScope[{scope, mlir::Attribute(ref)}] = info.get();
  }

  /// Who sends whom each shard of a value split as `dist` on `from` that
  /// crosses to `to` (a shard channel, rankform::kShardAttr), computed once
  /// per (from, to, dist).
  const ShardRoute &shardRoute(const MeshRanks &from, const MeshRanks &to,
                               DistAttr dist) {
    std::unique_ptr<ShardRoute> &route =
        routes[std::make_tuple(&from, &to, dist.getAsOpaquePointer())];
    if (!route)
      route = std::make_unique<ShardRoute>(from, to, dist);
    return *route;
  }

  /// The proc mesh at the root of a mesh's slice chain.
  mlir::Operation *rootOf(const MeshRanks &m) {
    return getRootMesh(m.mesh, &tables).getOperation();
  }

private:
  mlir::SymbolTableCollection &tables;
  llvm::DenseMap<mlir::Operation *, std::unique_ptr<MeshRanks>> cache;
  /// resolve's answer per (the block's op, name).
  llvm::DenseMap<std::pair<mlir::Operation *, mlir::Attribute>,
                 const MeshRanks *>
      byScope;
  std::map<std::tuple<const MeshRanks *, const MeshRanks *, const void *>,
           std::unique_ptr<ShardRoute>>
      routes;
};

} // namespace monarch

#endif // MONARCH_PASSES_LIB_MESHRANKS_H
