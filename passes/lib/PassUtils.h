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

/// Program-level ops of the monarch dialect; everything else is compute.
inline bool isMonarchProgramOp(mlir::Operation *op) {
  return mlir::isa<FeedOp, FetchOp, CallOp, BroadcastOp, TransferOp>(op);
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
            llvm::all_of(op->getOperands(), [&](mlir::Value v) {
              return isCloneable(v.getDefiningOp(), memo);
            });
  memo[op] = ok;
  return ok;
}

} // namespace monarch

#endif // MONARCH_PASSES_LIB_PASSUTILS_H
