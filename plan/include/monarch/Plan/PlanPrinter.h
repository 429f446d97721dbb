//===- PlanPrinter.h - Readable dump of an ExecutionPlan --------*- C++ -*-===//
//
// What `monarch-compile --print-plan X.mcplan` shows: the meshes, topology,
// communicators, kernels and libraries, then a table per rank of every plan
// (instruction, buffers, stream, group, source location) and the controller
// programs. No MLIR involved.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_PLANPRINTER_H
#define MONARCH_PLAN_PLANPRINTER_H

#include "monarch/Plan/Plan.h"

#include <ostream>
#include <string>

namespace monarch::plan {

void printPlan(const ExecutionPlan &plan, std::ostream &os);
std::string planToString(const ExecutionPlan &plan);

} // namespace monarch::plan

#endif // MONARCH_PLAN_PLANPRINTER_H
