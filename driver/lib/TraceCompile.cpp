//===- TraceCompile.cpp - A TraceBuilder's module through the driver ------===//
//
// Every entry point copies the traced module (cloneTracedModule), makes
// sure the builder's context knows every dialect and interface the passes
// use (the tracer loads only the dialects it builds), and hands the copy to
// a CompileSession with diagnostics captured: the same stages, checks,
// cache and reproducer as monarch-compile.
//
//===----------------------------------------------------------------------===//
#include "monarch/Driver/TraceCompile.h"

#include "monarch/Driver/CompileSession.h"
#include "monarch/Frontend/TraceBuilderMLIR.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace monarch::driver {

using frontend::Result;
using frontend::TraceBuilder;

std::vector<std::string> stageNames() {
  std::vector<std::string> names;
  for (Stage stage : allStages())
    names.push_back(stageName(stage).str());
  return names;
}

namespace {

/// A copy of the traced module (controller function renamed to `program`
/// unless empty), in a context that knows what the passes need.
Result<OwningOpRef<ModuleOp>> copyForCompile(const TraceBuilder &builder,
                                             llvm::StringRef program = {}) {
  Result<OwningOpRef<ModuleOp>> copy =
      frontend::cloneTracedModule(builder, program);
  if (!copy)
    return copy.status();
  // A no-op after the first time (the registry is then a subset).
  DialectRegistry registry;
  registerMonarchDialects(registry);
  (*copy)->getContext()->appendDialectRegistry(registry);
  return copy;
}

Status sessionError(const CompileSession &session) {
  return Status(StatusCode::InvalidArgument, session.report());
}

/// Lowers a copy to stage `name` with `options` (diagnostics captured).
Result<OwningOpRef<ModuleOp>> lowerCopy(const TraceBuilder &builder,
                                        const std::string &name,
                                        CompileOptions options) {
  std::optional<Stage> stage = parseStage(name);
  if (!stage)
    return Status(StatusCode::InvalidArgument,
                  "unknown stage '" + name + "' (stages: " + stageNameList() +
                      ")");
  auto copy = copyForCompile(builder);
  if (!copy)
    return copy.status();
  options.captureDiagnostics = true;
  CompileSession session(*(*copy)->getContext(), std::move(options));
  if (failed(session.lower(**copy, *stage)))
    return sessionError(session);
  return copy;
}

} // namespace

Result<std::string> lowerTrace(const TraceBuilder &builder,
                               const LowerOptions &options) {
  CompileOptions compile;
  compile.backend = options.backend;
  auto copy = lowerCopy(builder, options.stage, compile);
  if (!copy)
    return copy.status();
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (options.debugInfo) {
    // Locations inline on each op (no #loc aliases): readable, greppable.
    flags.enableDebugInfo(true, /*prettyForm=*/false);
    flags.useLocalScope();
  }
  (*copy)->print(os, flags);
  return text;
}

Result<codegen::PlanSummary> summarizeTrace(const TraceBuilder &builder,
                                            const std::string &backend) {
  CompileOptions compile;
  compile.backend = backend;
  auto copy = lowerCopy(builder, "planned", compile);
  if (!copy)
    return copy.status();
  codegen::PlanSummary summary = codegen::summarizePlan(**copy);
  summary.globalWork = codegen::tracedWork(frontend::tracedModule(builder));
  return summary;
}

Status dumpTrace(const TraceBuilder &builder, const std::string &dir,
                 const std::string &backend) {
  CompileOptions compile;
  compile.backend = backend;
  compile.dumpDir = dir;
  auto copy = lowerCopy(builder, "planned", compile);
  return copy ? Status() : copy.status();
}

PlanCompileResult compileTrace(const TraceBuilder &builder,
                               const std::string &program,
                               const std::string &backend,
                               const std::string &source) {
  PlanCompileResult result;
  auto copy = copyForCompile(builder, program);
  if (!copy) {
    result.error = copy.status().str();
    return result;
  }
  CompileOptions options;
  options.backend = backend;
  // NCCL plans are device plans: their kernels are compiled for CUDA
  // (as `monarch-compile --backend=nccl --target=cuda`).
  if (backend == "nccl")
    options.kernels.target = codegen::KernelTarget::Cuda;
  options.source = source;
  options.captureDiagnostics = true;
  CompileSession session(*(*copy)->getContext(), options);
  FailureOr<std::string> bytes = session.compilePlan(**copy);
  if (mlir::failed(bytes)) {
    result.error = session.report();
    return result;
  }
  result.ok = true;
  result.cacheHit = session.cacheHit();
  result.timings = session.timings();
  result.bytes = std::move(*bytes);
  return result;
}

} // namespace monarch::driver
