//===- TraceCompile.h - A TraceBuilder's module through the driver -*- C++
//-*-===//
//
// What the tracer's users (the Python extension, C++ programs) ask of the
// compiler, on the module a `frontend::TraceBuilder` holds: a stage's IR as
// text (`fn.ir(stage)`), the plan summary (`fn.plan_summary()`), the
// serialized ExecutionPlan (`compile_plan`, through the compile cache) and
// a dump of every pass and stage (MONARCH_DUMP_DIR). Each works on a copy of
// the traced module in the builder's context, handed over in memory, and
// runs the same CompileSession as monarch-compile, so a failure carries the
// same diagnostics and reproducer. The frontend knows nothing of this: the
// driver sits above it.
//
// Standard C++ only (the Python extension, built with exceptions, includes
// it); the MLIR side is in TraceCompile.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_DRIVER_TRACECOMPILE_H
#define MONARCH_DRIVER_TRACECOMPILE_H

#include "monarch/Codegen/PlanSummary.h"
#include "monarch/Frontend/TraceBuilder.h"

#include <string>
#include <vector>

namespace monarch::driver {

/// The stages a module goes through, in order: traced, partitioned, split,
/// planned (passes/Pipelines.h spells them; everything else asks here).
std::vector<std::string> stageNames();

/// Options of `lowerTrace`.
struct LowerOptions {
  /// One of stageNames().
  std::string stage = "traced";
  /// Print locations (`loc(...)`), as `--mlir-print-debuginfo` does.
  bool debugInfo = false;
  /// Data plane for `planned`: `gloo` or `nccl`.
  std::string backend = "gloo";
};

/// The module traced by `builder` lowered (a copy) to `options.stage`, as
/// text: what `monarch-compile --compile-to=STAGE` prints for it.
frontend::Result<std::string> lowerTrace(const frontend::TraceBuilder &builder,
                                         const LowerOptions &options);

/// Lowers a copy to `planned` and summarizes it (codegen::summarizePlan),
/// with `globalWork` from the traced module.
frontend::Result<codegen::PlanSummary>
summarizeTrace(const frontend::TraceBuilder &builder,
               const std::string &backend = "gloo");

/// Lowers a copy to `planned` with a dump directory: `dir` receives the
/// input and the IR after every pass (`NN-<pass>.mlir`) and each stage
/// (`<stage>.mlir`), the layout `monarch-compile --dump-dir` writes. On a
/// failure the files up to the failing pass stay, and the error says where.
frontend::Status dumpTrace(const frontend::TraceBuilder &builder,
                           const std::string &dir,
                           const std::string &backend = "gloo");

struct PlanCompileResult {
  bool ok = false;
  /// The serialized `.mcplan` when ok.
  std::string bytes;
  /// The driver's report (diagnostics `file:line:col: error: ...` and the
  /// reproducer) when not ok.
  std::string error;
  bool cacheHit = false;
  /// Where the compile time went (CompileSession::timings); empty on a hit.
  std::string timings;
};

/// Compiles the module traced by `builder` (tracing must be over), its
/// controller function renamed to `program` (unless empty), to a serialized
/// plan, as `monarch-compile IN.mlir -o OUT.mcplan` does; `backend` is
/// `gloo` or `nccl` (nccl compiles the kernels for CUDA); `source` is
/// recorded in the plan.
PlanCompileResult compileTrace(const frontend::TraceBuilder &builder,
                               const std::string &program,
                               const std::string &backend,
                               const std::string &source);

} // namespace monarch::driver

#endif // MONARCH_DRIVER_TRACECOMPILE_H
