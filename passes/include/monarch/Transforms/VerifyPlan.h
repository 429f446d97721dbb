//===- VerifyPlan.h - Static safety check of monarch plans ------*- C++ -*-===//
//
// The check behind `monarch-verify-plan`, exposed as a function so that tests
// and other passes can run it on one `monarch.plan`. It implements the
// contract of docs/plan-semantics.md: matching of sends and receives,
// agreement of collectives, adjacency of groups, absence of deadlocks (an
// acyclic happens-before graph) and absence of data races between streams.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TRANSFORMS_VERIFYPLAN_H
#define MONARCH_TRANSFORMS_VERIFYPLAN_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/LLVM.h"

namespace monarch {

/// What `verifyPlan` checks besides matching and deadlock freedom.
struct VerifyPlanOptions {
  /// Report reads and writes of overlapping buffers that are not ordered by
  /// a stream or a `wait` (docs/plan-semantics.md, "Data hazards").
  bool checkDataHazards = true;
};

/// Verifies `plan` (which must already pass the op verifiers) against
/// docs/plan-semantics.md. Every problem is reported as an error diagnostic
/// at the offending instruction, naming the ranks involved; the result is
/// failure when any was emitted. `tables` caches symbol lookups.
mlir::LogicalResult verifyPlan(PlanOp plan, mlir::SymbolTableCollection &tables,
                               const VerifyPlanOptions &options);
mlir::LogicalResult verifyPlan(PlanOp plan,
                               mlir::SymbolTableCollection &tables);

} // namespace monarch

#endif // MONARCH_TRANSFORMS_VERIFYPLAN_H
