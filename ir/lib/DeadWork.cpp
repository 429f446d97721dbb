//===- DeadWork.cpp - Work a traced program computes for nothing ----------===//

#include "monarch/IR/DeadWork.h"

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace monarch {

void eraseDeadWork(func::FuncOp fn) {
  if (fn.getBody().empty())
    return;
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> ops;
    for (Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() &&
          (isa<FeedOp, TransferOp>(op) || isOpTriviallyDead(op))) {
        op->erase();
        changed = true;
      }
  }
}

} // namespace monarch
