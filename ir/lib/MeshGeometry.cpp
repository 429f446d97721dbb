//===- MeshGeometry.cpp - Where meshes and their slices lie ------*- C++
//-*-===//
//
// The mesh helpers of MonarchDialect.h: resolving a mesh symbol, walking a
// slice chain up to its proc mesh (and a slice's ranks down to the root's),
// whether one mesh is another or a slice of it, and a tensor's per-rank
// shape under a #monarch.dist. Used by the ops' verifiers and by passes.
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/SymbolTable.h"

#include <string>

using namespace mlir;
using namespace monarch;

MeshOpInterface monarch::lookupMesh(Operation *from, FlatSymbolRefAttr ref,
                                    SymbolTableCollection *tables) {
  Operation *sym = tables ? tables->lookupNearestSymbolFrom(from, ref)
                          : SymbolTable::lookupNearestSymbolFrom(from, ref);
  return dyn_cast_or_null<MeshOpInterface>(sym);
}

// The one walk up a slice chain: calls `level(slice, parent)` for each
// slice from `mesh` to its proc mesh, and returns that proc mesh.
template <typename Fn>
static ProcMeshOp walkToRoot(MeshOpInterface mesh,
                             SymbolTableCollection *tables,
                             MeshSliceOp *unresolved, Fn level) {
  for (int depth = 0; mesh && depth < 64; ++depth) {
    if (auto proc = dyn_cast<ProcMeshOp>(mesh.getOperation()))
      return proc;
    auto slice = dyn_cast<MeshSliceOp>(mesh.getOperation());
    if (!slice)
      return {};
    MeshOpInterface parent = lookupMesh(slice, slice.getParentAttr(), tables);
    if (!parent) {
      if (unresolved)
        *unresolved = slice;
      return {};
    }
    level(slice, parent);
    mesh = parent;
  }
  return {};
}

ProcMeshOp monarch::getRootMesh(MeshOpInterface mesh,
                                SymbolTableCollection *tables,
                                MeshSliceOp *unresolved) {
  return walkToRoot(mesh, tables, unresolved,
                    [](MeshSliceOp, MeshOpInterface) {});
}

FailureOr<SmallVector<int64_t>>
monarch::getRootRanks(MeshOpInterface mesh, SymbolTableCollection *tables,
                      MeshSliceOp *unresolved) {
  SmallVector<int64_t> ranks(mesh.getNumRanks());
  for (int64_t r = 0, n = ranks.size(); r < n; ++r)
    ranks[r] = r;
  ProcMeshOp root = walkToRoot(
      mesh, tables, unresolved, [&](MeshSliceOp slice, MeshOpInterface parent) {
        SmallVector<int64_t> parentShape = parent.getMeshShape();
        for (int64_t &r : ranks)
          r = slice.getParentRank(parentShape, r);
      });
  if (!root)
    return failure();
  return ranks;
}

bool monarch::isSameOrSliceOf(MeshOpInterface inner, MeshOpInterface outer,
                              SymbolTableCollection &tables) {
  // Slices form a chain to their proc mesh; the depth is tiny in practice,
  // the bound only guards against cycles in malformed IR.
  for (int depth = 0; inner && depth < 64; ++depth) {
    if (inner.getOperation() == outer.getOperation())
      return true;
    auto slice = dyn_cast<MeshSliceOp>(inner.getOperation());
    if (!slice)
      return false;
    inner = lookupMesh(slice, slice.getParentAttr(), &tables);
  }
  return false;
}

FailureOr<SmallVector<int64_t>> monarch::getLocalShape(ArrayRef<int64_t> shape,
                                                       DistAttr dist,
                                                       MeshOpInterface mesh,
                                                       std::string &error) {
  SmallVector<int64_t> local(shape);
  if (!dist)
    return local;
  SmallVector<int64_t> meshShape = mesh.getMeshShape();
  for (unsigned i = 0, e = dist.getSplit().size(); i < e && i < shape.size();
       ++i) {
    int64_t factor = 1;
    for (StringRef name : dist.getSplitDims(i)) {
      int64_t idx = mesh.getDimIndex(name);
      if (idx < 0) {
        error = ("mesh has no dimension \"" + name + "\"").str();
        return failure();
      }
      factor *= meshShape[idx];
    }
    if (factor == 1)
      continue;
    if (ShapedType::isDynamic(shape[i])) {
      error = "tensor dimension " + std::to_string(i) +
              " is split over the mesh and must have a static size";
      return failure();
    }
    if (shape[i] % factor != 0) {
      error = "tensor dimension " + std::to_string(i) + " of size " +
              std::to_string(shape[i]) + " is not divisible by " +
              std::to_string(factor) + " ranks";
      return failure();
    }
    local[i] = shape[i] / factor;
  }
  return local;
}
