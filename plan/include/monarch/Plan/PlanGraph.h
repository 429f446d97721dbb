//===- PlanGraph.h - Pictures of a plan (SVG) -------------------*- C++ -*-===//
//
// `monarch-compile --plan-graph=plan.svg`, `--memory-plot=mem.svg` and
// `fn.plan_graph(path)` in Python draw a compiled plan from the plan alone
// (no MLIR, no run):
//
// - The plan graph: one lane per rank of each step plan, its instructions
//   left to right in issue order (kernels, sends and receives, collectives,
//   waits, feeds, fetches, prints; coloured by kind, stream and group in the
//   label), data edges between the ranks (a send to its receive, the
//   members of one collective), and the controller's lane above them with
//   its control edges (the feeds it sends, the fetches it receives) dashed.
//   Every box's tooltip names the instruction and the user's source line.
// - The memory plot: per rank, its arena over the step (instruction index
//   across, byte offset up) from the static memory plan: each buffer a
//   rectangle from its first to its last use, and the rank's peak marked.
//
// SVG written directly (well-formed XML, no Graphviz needed: the layout is
// lanes, not a general graph).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_PLANGRAPH_H
#define MONARCH_PLAN_PLANGRAPH_H

#include "monarch/Plan/Plan.h"

#include <string>

namespace monarch::plan {

/// The plan graph of every step plan of `plan`, stacked.
std::string planGraphSvg(const ExecutionPlan &plan);

/// The memory plot of every rank program of `plan`.
std::string memoryPlotSvg(const ExecutionPlan &plan);

} // namespace monarch::plan

#endif // MONARCH_PLAN_PLANGRAPH_H
