//===- PlanCompile.h - Traced module text to plan bytes ---------*- C++ -*-===//
//
// The compiler half of running a compiled Python function: parses the traced
// module (printed with locations), runs the stage pipelines up to `planned`,
// builds and serializes the ExecutionPlan, through the content-addressed
// compile cache of monarch-compile (PlanCache.h). Library MonarchPyPlan is
// built like the rest of the compiler (no exceptions, MLIR); this header
// holds only standard types so the nanobind extension never sees MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PYTHON_PLANCOMPILE_H
#define MONARCH_PYTHON_PLANCOMPILE_H

#include <string>

namespace monarch::python {

struct PlanCompileResult {
  bool ok = false;
  /// The serialized `.mcplan` when ok.
  std::string bytes;
  /// Diagnostics (`file:line:col: error: ...`) when not ok.
  std::string error;
  bool cacheHit = false;
};

/// `tracedModule` is the traced module as text, with debug info; `backend`
/// is `gloo` or `nccl`; `source` is recorded in the plan.
PlanCompileResult compileTracedModule(const std::string &tracedModule,
                                      const std::string &backend,
                                      const std::string &source);

} // namespace monarch::python

#endif // MONARCH_PYTHON_PLANCOMPILE_H
