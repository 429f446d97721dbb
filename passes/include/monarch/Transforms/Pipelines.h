//===- Pipelines.h - The stage pipelines of monarch-compile -----*- C++ -*-===//
//
// The stages of docs/passes.md as pass pipelines. The CLI, Python and
// monarch-opt run these and never list passes themselves.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TRANSFORMS_PIPELINES_H
#define MONARCH_TRANSFORMS_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace monarch {

/// Options shared by the stage pipelines.
struct PipelineOptions : mlir::PassPipelineOptions<PipelineOptions> {
  Option<std::string> backend{*this, "backend",
                              llvm::cl::desc("Data plane: gloo or nccl"),
                              llvm::cl::init("gloo")};
  Option<int64_t> groupBytes{
      *this, "group-bytes",
      llvm::cl::desc("Transfers up to this size may share a group"),
      llvm::cl::init(65536)};
};

/// The stages, in order.
enum class Stage { Traced, Partitioned, Split, Planned };

/// Parses a stage name (`traced`, `partitioned`, `split`, `planned`).
std::optional<Stage> parseStage(llvm::StringRef name);
llvm::StringRef stageName(Stage stage);
/// Every stage, in order: the one list the CLI, the driver and Python's
/// `mc.STAGES` read.
llvm::ArrayRef<Stage> allStages();
/// "traced, partitioned, split, planned": the names for a message.
std::string stageNameList();

/// traced -> partitioned.
void populatePartitionPipeline(mlir::OpPassManager &pm,
                               const PipelineOptions &options);
/// partitioned -> split.
void populateSplitPipeline(mlir::OpPassManager &pm,
                           const PipelineOptions &options);
/// split -> planned (plan, schedule, verify).
void populatePlanPipeline(mlir::OpPassManager &pm,
                          const PipelineOptions &options);
/// Every pipeline from `from` (exclusive) up to `to` (inclusive).
void populateStagePipelines(mlir::OpPassManager &pm, Stage from, Stage to,
                            const PipelineOptions &options);

/// How runStagePipelines checks the IR.
struct StageRunOptions {
  /// Run the IR verifier after every pass (the PassManager default) instead
  /// of once on the result. For finding the pass at fault; the tests run
  /// the pipelines this way.
  bool verifyEachPass = false;
  /// Observes every pass (e.g. `--dump-dir`).
  std::unique_ptr<mlir::PassInstrumentation> observer;
  /// Told the argument of every pass before it runs ("monarch-partition"):
  /// progress for long compiles.
  std::function<void(llvm::StringRef)> onPass;
  /// Told each stage once its pipeline ran and the module verified (a
  /// dump writes `<stage>.mlir`).
  std::function<void(Stage, mlir::ModuleOp)> onStage;
};

/// Runs the stage pipelines from `from` (exclusive) up to `to` (inclusive)
/// on `module` and runs the IR verifier after each stage (three times at
/// most), so no pass of a later stage sees an invalid op. The input was
/// verified when it was parsed or built; verifying after every pass (the
/// PassManager default, `run.verifyEachPass`) cost a third of compile time
/// (docs/passes.md, "Compile time"). On failure, `reproducer` (when given)
/// receives the textual pipeline, from `from` to the failing stage, for
/// `monarch-opt --pass-pipeline=...`.
mlir::LogicalResult runStagePipelines(mlir::ModuleOp module, Stage from,
                                      Stage to, const PipelineOptions &options,
                                      StageRunOptions run = {},
                                      std::string *reproducer = nullptr);

/// Registers the pipelines with the pass registry (for monarch-opt):
/// monarch-to-partitioned, monarch-to-split, monarch-to-planned (each from
/// the previous stage) and monarch-compile-to-planned (from traced).
void registerMonarchPipelines();

} // namespace monarch

#endif // MONARCH_TRANSFORMS_PIPELINES_H
