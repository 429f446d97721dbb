//===- CompileSession.h - One compile of a monarch program ------*- C++ -*-===//
//
// The compile driver: everything between a module at some stage (traced,
// or the stage `CompileOptions::from` names; parsed from a file by
// monarch-compile, or a TraceBuilder's handed over in memory through
// TraceCompile.h) and a later stage's IR or a serialized plan. It runs the
// stage ladder (passes/, runStagePipelines), checks the environment
// (knobs::validate), keys and fills the compile cache (PlanCache.h), dumps
// the IR after every pass and each stage, and on a failure writes a
// reproducer: the `monarch-opt --pass-pipeline=...` command, with a copy of
// the input when it came from memory. The CLI and TraceCompile.h (the
// Python extension, C++ tracers) are thin over it.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_DRIVER_COMPILESESSION_H
#define MONARCH_DRIVER_COMPILESESSION_H

#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Transforms/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace monarch::driver {

struct CompileOptions {
  /// The stage of the input (`--compile-from`): the passes start after it.
  Stage from = Stage::Traced;
  /// Data plane of the planned communicators: gloo or nccl.
  std::string backend = "gloo";
  /// Transfers up to this many bytes issued back to back share a group.
  int64_t groupBytes = 65536;
  /// Kernel target and tuning of the plan's kernel libraries.
  codegen::KernelCompileOptions kernels;
  /// Run the IR verifier after every pass instead of once on the result.
  bool verifyEach = false;
  /// Write the IR after every pass here as NN-<pass>.mlir (the input as
  /// 00-input.mlir) and each stage as <stage>.mlir (the input's too);
  /// implies verifyEach and bypasses the cache.
  std::string dumpDir;
  /// Use the compile cache when the environment enables it.
  bool useCache = true;
  /// The input as a file monarch-opt can read; empty or "-" when there is
  /// none (a trace, stdin): a failure then saves a copy for the reproducer.
  std::string inputFile;
  /// Recorded in the plan as its source (the user's file or function).
  std::string source;
  /// Collect diagnostics as text (diagnostics()) instead of leaving them to
  /// the context's handler.
  bool captureDiagnostics = false;
  /// Leave the built ExecutionPlan to the process's exit instead of freeing
  /// it (monarch-compile, as clang's -disable-free: a 4,096-rank plan is
  /// ~100,000 instructions, tens of milliseconds to free). Not for a
  /// long-lived caller: the memory is never returned.
  bool disableFree = false;
};

class CompileSession {
public:
  CompileSession(mlir::MLIRContext &context, CompileOptions options);
  ~CompileSession();
  CompileSession(const CompileSession &) = delete;
  CompileSession &operator=(const CompileSession &) = delete;

  /// Lowers `module`, at stage `from` (traced by default), in place to
  /// `to`.
  mlir::LogicalResult lower(mlir::ModuleOp module, Stage to);
  /// The serialized ExecutionPlan of `module` (at stage `from`), from
  /// the cache or compiled (then `module` is lowered in place).
  mlir::FailureOr<std::string> compilePlan(mlir::ModuleOp module);

  /// After compilePlan: whether the plan came from the cache.
  bool cacheHit() const;
  /// What the cache did, for a verbose caller ("cache hit PATH", "cache
  /// miss KEY"); empty when the cache was not used.
  const std::string &cacheNote() const;
  /// Where the time of the last lower or compilePlan went, for a verbose
  /// caller: one line for the passes (the slowest named), then each kernel
  /// library's table (formatKernelReport). Empty on a plan cache hit.
  const std::string &timings() const;
  /// The captured diagnostics, `file:line:col: error: ...` lines.
  const std::string &diagnostics() const;
  /// After a failure: what failed, one line ("compiling to 'split' failed",
  /// "cannot build the ExecutionPlan", or a bad environment variable).
  const std::string &error() const;
  /// After a failure in the passes, the command that reproduces it:
  /// "monarch-opt F.mlir --pass-pipeline='...'" (F a copy of the input when
  /// it did not come from a file). Empty otherwise.
  const std::string &reproducer() const;
  /// error(), the diagnostics when captured, and the reproducer: the whole
  /// message to show a user.
  std::string report() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace monarch::driver

#endif // MONARCH_DRIVER_COMPILESESSION_H
