//===- PlanCompile.cpp - Traced module text to plan bytes -------*- C++ -*-===//
//
// What `monarch-compile IN.mlir -o OUT.mcplan` does, as a function, on the
// traced module itself: copy it (renaming the controller function), consult
// the compile cache, run the stage pipelines to `planned`, build and
// serialize the plan, store it in the cache. The module never goes through
// text (the printer/parser round trip is tested in lit, not relied on
// here). Diagnostics are collected as text and returned.
//
//===----------------------------------------------------------------------===//
#include "PlanCompile.h"

#include "monarch/Codegen/PlanBuilder.h"
#include "monarch/Codegen/PlanCache.h"
#include "monarch/Codegen/PlanFile.h"
#include "monarch/Frontend/TraceBuilderMLIR.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace monarch::codegen;

namespace monarch::python {
namespace {

const char *severityName(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

std::string optionsKey(const std::string &backend,
                       const KernelCompileOptions &k) {
  std::string key = "backend=" + backend + ";group-bytes=default;target=cpu" +
                    ";opt=" + std::to_string(k.optLevel) +
                    ";kernels=" + (kernelCompilerAvailable() ? "1" : "0") +
                    ";cpu=" + hostCpuDescription() + ";python";
  return key;
}

} // namespace

PlanCompileResult compileTrace(const frontend::TraceBuilder &builder,
                               const std::string &program,
                               const std::string &backend,
                               const std::string &source) {
  PlanCompileResult result;
  frontend::Result<OwningOpRef<ModuleOp>> copy =
      frontend::cloneTracedModule(builder, program);
  if (!copy) {
    result.error = copy.error().str();
    return result;
  }
  OwningOpRef<ModuleOp> module = std::move(*copy);
  MLIRContext &context = *module->getContext();
  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diag.getLocation().print(diagOs);
    diagOs << ": " << severityName(diag.getSeverity()) << ": " << diag << "\n";
    for (Diagnostic &note : diag.getNotes()) {
      note.getLocation().print(diagOs);
      diagOs << ": note: " << note << "\n";
    }
    return success();
  });

  PlanBuildOptions buildOptions;
  buildOptions.compilerVersion = MONARCH_VERSION;
  buildOptions.source = source;

  PlanCache cache(planCacheConfigFromEnvironment());
  std::string cacheKey;
  if (cache.enabled()) {
    std::string canonical;
    llvm::raw_string_ostream os(canonical);
    module->print(os, OpPrintingFlags().enableDebugInfo(true, false));
    const void *anchors[] = {
        reinterpret_cast<const void *>(&monarch::populateStagePipelines),
        reinterpret_cast<const void *>(&monarch::registerMonarchDialects),
        reinterpret_cast<const void *>(&buildExecutionPlan),
        reinterpret_cast<const void *>(&compileTrace)};
    cacheKey = planCacheKey(canonical, compilerFingerprint(anchors),
                            optionsKey(backend, buildOptions.kernels));
    if (std::optional<std::string> hit = cache.lookup(cacheKey)) {
      result.ok = true;
      result.cacheHit = true;
      result.bytes = std::move(*hit);
      return result;
    }
  }

  monarch::PipelineOptions options;
  options.backend = backend;
  if (failed(monarch::runStagePipelines(*module, monarch::Stage::Traced,
                                        monarch::Stage::Planned, options))) {
    result.error = "compiling to 'planned' failed:\n" + diagnostics;
    return result;
  }
  FailureOr<ExecutionPlan> plan = buildExecutionPlan(*module, buildOptions);
  if (failed(plan)) {
    result.error = "cannot build the ExecutionPlan:\n" + diagnostics;
    return result;
  }
  monarch::executor::StatusOr<std::string> bytes = serializePlan(*plan);
  if (!bytes) {
    result.error = bytes.status().toString();
    return result;
  }
  if (!cacheKey.empty())
    (void)cache.store(cacheKey, *bytes); // A cache that cannot store is a miss.
  result.ok = true;
  result.bytes = std::move(*bytes);
  return result;
}

} // namespace monarch::python
