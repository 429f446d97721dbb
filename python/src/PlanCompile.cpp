//===- PlanCompile.cpp - A traced module to plan bytes ----------*- C++ -*-===//
//
// What `monarch-compile IN.mlir -o OUT.mcplan` does, on the traced module
// itself: copy it (renaming the controller function) and hand it to the
// compile driver (CompileSession), which consults the cache, lowers, builds
// and serializes the plan. The module never goes through text. On failure
// the error is the driver's report: diagnostics and a reproducer command
// over a saved copy of the traced module.
//
//===----------------------------------------------------------------------===//
#include "PlanCompile.h"

#include "monarch/Driver/CompileSession.h"
#include "monarch/Frontend/TraceBuilderMLIR.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;
using namespace monarch::codegen;

namespace monarch::python {

PlanCompileResult compileTrace(const frontend::TraceBuilder &builder,
                               const std::string &program,
                               const std::string &backend,
                               const std::string &source) {
  PlanCompileResult result;
  frontend::Result<OwningOpRef<ModuleOp>> copy =
      frontend::cloneTracedModule(builder, program);
  if (!copy) {
    result.error = copy.status().str();
    return result;
  }
  OwningOpRef<ModuleOp> module = std::move(*copy);
  driver::CompileOptions options;
  options.backend = backend;
  // NCCL plans are device plans: their kernels are compiled for CUDA
  // (as `monarch-compile --backend=nccl --target=cuda`).
  if (backend == "nccl")
    options.kernels.target = KernelTarget::Cuda;
  options.source = source;
  options.captureDiagnostics = true;
  driver::CompileSession session(*module->getContext(), options);
  FailureOr<std::string> bytes = session.compilePlan(*module);
  if (failed(bytes)) {
    result.error = session.report();
    return result;
  }
  result.ok = true;
  result.cacheHit = session.cacheHit();
  result.timings = session.timings();
  result.bytes = std::move(*bytes);
  return result;
}

} // namespace monarch::python
