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

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"

#include <memory>

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
/// Output j of a worker program is returned by one of the ranks holding it
/// (of one shard's replicas, for a split output): the (j mod min(holders,
/// kFetchSpread))-th. Spread, the fetches and the compute only they need
/// fall on several ranks instead of the lowest; bounded, a mesh of
/// thousands of replicas still has a handful of distinct programs, where
/// the plan file stores one stream per class of identical ranks (issue
/// 15). Eight balance a step's replicated outputs (a GPT's ~60
/// parameters) as well as more would.
constexpr int64_t kFetchSpread = 8;
} // namespace rankform

/// A mesh (proc mesh or slice) resolved to ranks of its proc mesh.
struct MeshRanks {
  MeshOpInterface mesh;
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> dims;
  llvm::SmallVector<int64_t> roots; // Proc-mesh rank of each mesh rank.

  int64_t localRank(int64_t root) const {
    auto it = llvm::find(roots, root);
    return it == roots.end() ? -1 : it - roots.begin();
  }
  llvm::SmallVector<int64_t> coords(int64_t rank) const {
    llvm::SmallVector<int64_t> c(shape.size());
    for (int64_t i = shape.size() - 1; i >= 0; --i) {
      c[i] = rank % shape[i];
      rank /= shape[i];
    }
    return c;
  }

  /// Proc-mesh ranks that share `local`'s coordinates outside `dims`.
  llvm::SmallVector<int64_t> groupOf(int64_t local,
                                     mlir::ArrayAttr dimNames) const {
    llvm::SmallVector<int64_t> c = coords(local);
    llvm::SmallBitVector in(shape.size());
    for (mlir::Attribute d : dimNames)
      in.set(llvm::find(dims, mlir::cast<mlir::StringAttr>(d).getValue()) -
             dims.begin());
    llvm::SmallVector<int64_t> group;
    for (int64_t r = 0, n = roots.size(); r < n; ++r) {
      llvm::SmallVector<int64_t> rc = coords(r);
      bool same = true;
      for (size_t i = 0; i < rc.size(); ++i)
        same &= in.test(i) || rc[i] == c[i];
      if (same)
        group.push_back(roots[r]);
    }
    return group;
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

/// Resolves mesh symbols to MeshRanks, once per mesh.
class MeshResolver {
public:
  explicit MeshResolver(mlir::SymbolTableCollection &tables) : tables(tables) {}

  /// The mesh `ref` names, seen from `from`; null when it names none. The
  /// result lives as long as the resolver.
  const MeshRanks *resolve(mlir::Operation *from, mlir::FlatSymbolRefAttr ref) {
    MeshOpInterface mesh = lookupMesh(from, ref, &tables);
    if (!mesh)
      return nullptr;
    std::unique_ptr<MeshRanks> &info = cache[mesh.getOperation()];
    if (info)
      return info.get();
    auto roots = getRootRanks(mesh, &tables);
    if (mlir::failed(roots))
      return nullptr;
    info = std::make_unique<MeshRanks>(MeshRanks{
        mesh, mesh.getMeshShape(), mesh.getDimNames(), std::move(*roots)});
    return info.get();
  }

  /// The proc mesh at the root of a mesh's slice chain.
  mlir::Operation *rootOf(const MeshRanks &m) {
    return getRootMesh(m.mesh, &tables).getOperation();
  }

private:
  mlir::SymbolTableCollection &tables;
  llvm::DenseMap<mlir::Operation *, std::unique_ptr<MeshRanks>> cache;
};

} // namespace monarch

#endif // MONARCH_PASSES_LIB_MESHRANKS_H
