//===- PlanPrinter.h - Readable dump of an ExecutionPlan --------*- C++ -*-===//
//
// What `monarch-compile --print-plan X.mcplan` shows: the meshes, topology,
// communicators, kernels and libraries, then per plan a table per class of
// ranks (instruction, buffers, stream, group, source location: the ranks
// that run another rank's stream show only the instructions where they
// differ) and the controller programs. No MLIR involved.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_PLANPRINTER_H
#define MONARCH_PLAN_PLANPRINTER_H

#include "monarch/Plan/Plan.h"

#include <optional>
#include <ostream>
#include <string>

namespace monarch::plan {

struct PrintOptions {
  /// Print only this rank's program of each plan, in full.
  std::optional<int64_t> rank;
};

void printPlan(const ExecutionPlan &plan, std::ostream &os,
               const PrintOptions &options = {});
std::string planToString(const ExecutionPlan &plan,
                         const PrintOptions &options = {});

} // namespace monarch::plan

#endif // MONARCH_PLAN_PLANPRINTER_H
