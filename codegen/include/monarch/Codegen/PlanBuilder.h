//===- PlanBuilder.h - Planned MLIR to an ExecutionPlan ---------*- C++ -*-===//
//
// The compiler side of the plan (MonarchCodegen, MLIR, no exceptions): reads
// a module at the `planned` stage (docs/passes.md) and produces the plain
// ExecutionPlan of Plan.h, with the kernels the plans launch compiled by
// compileKernels (KernelCompiler.h) when the kernel compiler is built in.
// Problems are reported as diagnostics at the offending operation.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_PLANBUILDER_H
#define MONARCH_CODEGEN_PLANBUILDER_H

#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <string>

namespace monarch::codegen {

struct PlanBuildOptions {
  /// Target and tuning of the kernel libraries.
  KernelCompileOptions kernels;
  /// Recorded in the plan.
  std::string compilerVersion;
  std::string source;
  /// Told each kernel library once it is compiled (its kernels' sizes,
  /// stage times and cache hits; formatKernelReport prints them).
  std::function<void(const KernelLibrary &)> onKernelsCompiled;
  /// The module is what the stage pipelines just produced, verified at the
  /// end of their last stage: the IR verifier need not run again (at 4,096
  /// ranks a second pass of it was 6% of the compile). The planned-stage
  /// checks still run.
  bool moduleVerified = false;
  /// Run validatePlan on the built plan (its last step). A caller that
  /// validates it itself, beside serializing it on another thread
  /// (monarch-compile), turns this off.
  bool validate = true;
};

/// True when this build can compile kernels (the kernel compiler library
/// was available when MonarchCodegen was built). Without it, plans carry
/// their kernel table but no kernel library.
bool kernelCompilerAvailable();

/// Checks that `module` verifies (unless `verified`: it did just now) and is
/// at the `planned` stage: no traced or split operations left outside actor
/// classes, every worker program replaced by a `monarch.plan`, every
/// control message invoking plans.
mlir::LogicalResult verifyPlannedModule(mlir::ModuleOp module,
                                        bool verified = false);

/// verifyPlannedModule, then the plan. `module` is not modified.
mlir::FailureOr<plan::ExecutionPlan>
buildExecutionPlan(mlir::ModuleOp module, const PlanBuildOptions &options);

/// The user's source location inside `loc`: the first FileLineColLoc found
/// looking through NameLoc, CallSiteLoc (callee first) and FusedLoc.
plan::SourceLoc toSourceLoc(mlir::Location loc, llvm::StringRef opName = "");

} // namespace monarch::codegen

#endif // MONARCH_CODEGEN_PLANBUILDER_H
