//===- DeadWork.h - Work a traced program computes for nothing --*- C++ -*-===//
//
// Shared by the tracer, which leaves it out of the IR it shows the user,
// and monarch-partition, which meets IR from any source (upstream's
// shard-partition crashes on dead tensor ops, and a feed nothing reads would
// keep a controller input no worker reads) and erases it again from each
// segment it outlines before propagation.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_IR_DEADWORK_H
#define MONARCH_IR_DEADWORK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace monarch {

/// Erases, until none is left, the ops of `fn`'s body that have no effect
/// and whose results (if any) nothing uses, and the feeds and transfers of
/// values nothing reads.
void eraseDeadWork(mlir::func::FuncOp fn);

} // namespace monarch

#endif // MONARCH_IR_DEADWORK_H
