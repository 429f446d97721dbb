//===- PlanCompile.h - Traced module text to plan bytes ---------*- C++ -*-===//
//
// The compiler half of running a compiled Python function: takes the traced
// module from its TraceBuilder (in memory), runs the stage pipelines up to
// `planned`, builds and serializes the ExecutionPlan, through the
// content-addressed compile cache of monarch-compile (PlanCache.h). Library
// MonarchPyPlan is built like the rest of the compiler (no exceptions, MLIR);
// this header holds only standard types so the nanobind extension never sees
// MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PYTHON_PLANCOMPILE_H
#define MONARCH_PYTHON_PLANCOMPILE_H

#include "monarch/Frontend/TraceBuilder.h"

#include <string>

namespace monarch::python {

struct PlanCompileResult {
  bool ok = false;
  /// The serialized `.mcplan` when ok.
  std::string bytes;
  /// Diagnostics (`file:line:col: error: ...`) when not ok.
  std::string error;
  bool cacheHit = false;
  /// Where the compile time went (CompileSession::timings); empty on a hit.
  std::string timings;
};

/// Compiles the module traced by `builder` (tracing must be over), its
/// controller function renamed to `program` (unless empty); `backend` is
/// `gloo` or `nccl`; `source` is recorded in the plan.
PlanCompileResult compileTrace(const frontend::TraceBuilder &builder,
                               const std::string &program,
                               const std::string &backend,
                               const std::string &source);

} // namespace monarch::python

#endif // MONARCH_PYTHON_PLANCOMPILE_H
