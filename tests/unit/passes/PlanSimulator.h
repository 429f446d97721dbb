//===- PlanSimulator.h - Discrete-event simulation of plans -----*- C++ -*-===//
//
// Runs a `monarch.plan` under the execution rules of docs/plan-semantics.md
// with random durations, as an independent oracle for monarch-verify-plan:
// a host thread per rank issuing in program order, a FIFO per stream,
// rendezvous of matched sends and receives, collectives that complete once
// every member has started them. Matching is discovered while running
// (sequence numbers per channel), not computed up front as the verifier
// does.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TESTS_UNIT_PLANSIMULATOR_H
#define MONARCH_TESTS_UNIT_PLANSIMULATOR_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace monarch::test {

enum class SimOutcome {
  /// Every instruction of every rank completed.
  Completed,
  /// Some instruction never completes although every partner exists.
  Deadlocked,
  /// A matched pair or collective disagrees, or a send, receive or
  /// collective has no partner.
  Mismatched,
};

llvm::StringRef stringifySimOutcome(SimOutcome outcome);

struct SimResult {
  SimOutcome outcome = SimOutcome::Completed;
  /// What went wrong (the first mismatch, or where each rank is stuck).
  std::string detail;
  /// Time at which the last instruction completed.
  double makespan = 0;
  /// Instructions that completed, out of all instructions.
  size_t completed = 0, total = 0;
};

/// Simulates `plan` (which must pass the op verifiers) with durations of
/// launches, transfers, collectives and host issue drawn from a generator
/// seeded with `seed`. Its `monarch.rank_member`s are first written out as
/// the rank programs they stand for (PlanOp::expandMembers), in `plan`
/// itself: the simulator runs one program per rank.
SimResult simulatePlan(PlanOp plan, mlir::SymbolTableCollection &tables,
                       uint64_t seed);

} // namespace monarch::test

#endif // MONARCH_TESTS_UNIT_PLANSIMULATOR_H
