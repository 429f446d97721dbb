//===- PassUtils.h - Helpers shared by the monarch passes -------*- C++ -*-===//
//
// Small IR queries used by more than one pass (internal to passes/lib).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_PASSES_LIB_PASSUTILS_H
#define MONARCH_PASSES_LIB_PASSUTILS_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace monarch {

/// A mesh collective (all_reduce, all_gather, reduce_scatter,
/// broadcast_from, all_to_all): in the per-rank form it carries its group of
/// ranks (`plan.group`).
inline bool isMeshCollective(mlir::Operation *op) {
  return mlir::isa<AllReduceOp, AllGatherOp, ReduceScatterOp, BroadcastFromOp,
                   AllToAllOp>(op);
}

/// Program-level ops of the monarch dialect; everything else is compute.
inline bool isMonarchProgramOp(mlir::Operation *op) {
  return mlir::isa<FeedOp, FetchOp, CallOp, BroadcastOp, TransferOp>(op);
}

/// Pure scalar arithmetic (an arith or math op without regions on scalars,
/// such as `lr * 0.5`): the split pass sinks it from the controller into the
/// worker programs, which compute it in their kernels.
inline bool isScalarArithmetic(mlir::Operation *op) {
  if (!op || op->getNumRegions() != 0 || op->getNumResults() != 1 ||
      !mlir::isPure(op))
    return false;
  llvm::StringRef dialect = op->getName().getDialectNamespace();
  if (dialect != "arith" && dialect != "math")
    return false;
  auto scalar = [](mlir::Type t) { return t.isIntOrIndexOrFloat(); };
  return llvm::all_of(op->getOperandTypes(), scalar) &&
         llvm::all_of(op->getResultTypes(), scalar);
}

/// Values an op uses, including those its regions capture from above.
inline llvm::SmallVector<mlir::Value> usedValues(mlir::Operation *op) {
  llvm::SmallVector<mlir::Value> values(op->getOperands());
  llvm::SetVector<mlir::Value> captured;
  for (mlir::Region &region : op->getRegions())
    mlir::getUsedValuesDefinedAbove(region, captured);
  values.append(captured.begin(), captured.end());
  return values;
}

/// Side-effect-free ops computed only from other such ops (constants,
/// `tensor.empty`, fills of constants): passes clone them next to every use
/// instead of moving their values around.
inline bool isCloneable(mlir::Operation *op,
                        llvm::DenseMap<mlir::Operation *, bool> &memo) {
  if (!op)
    return false;
  auto it = memo.find(op);
  if (it != memo.end())
    return it->second;
  memo[op] = false; // Guards against cycles through graph regions.
  bool ok = !isMonarchProgramOp(op) && op->getDialect() &&
            op->getDialect()->getNamespace() != "monarch" &&
            mlir::isMemoryEffectFree(op) &&
            !mlir::isa<mlir::shard::ShardOp>(op) &&
            llvm::all_of(usedValues(op), [&](mlir::Value v) {
              return isCloneable(v.getDefiningOp(), memo);
            });
  memo[op] = ok;
  return ok;
}

/// Splits what the ops of `ops` (one block, program order) use from
/// outside the set into `inputs` (values to pass in) and `clones` (cloneable
/// ops to copy along, transitively, sorted in block order).
inline void
collectOutlineInputs(llvm::ArrayRef<mlir::Operation *> ops,
                     llvm::SetVector<mlir::Value> &inputs,
                     llvm::SmallVectorImpl<mlir::Operation *> &clones,
                     llvm::DenseMap<mlir::Operation *, bool> &memo) {
  llvm::SmallPtrSet<mlir::Operation *, 16> inside(ops.begin(), ops.end());
  llvm::SetVector<mlir::Operation *> found;
  llvm::SmallVector<mlir::Operation *> worklist;
  for (mlir::Operation *op : ops)
    for (mlir::Value v : usedValues(op)) {
      mlir::Operation *def = v.getDefiningOp();
      if (def && inside.contains(def))
        continue;
      if (isCloneable(def, memo))
        worklist.push_back(def);
      else
        inputs.insert(v);
    }
  while (!worklist.empty()) {
    mlir::Operation *def = worklist.pop_back_val();
    if (def && found.insert(def))
      for (mlir::Value v : usedValues(def))
        worklist.push_back(v.getDefiningOp());
  }
  clones.assign(found.begin(), found.end());
  llvm::sort(clones, [](mlir::Operation *a, mlir::Operation *b) {
    return a->isBeforeInBlock(b);
  });
}

} // namespace monarch

#endif // MONARCH_PASSES_LIB_PASSUTILS_H
