//===- Pipelines.cpp - The stage pipelines ----------------------*- C++ -*-===//
//
// One place that lists the passes of each stage; monarch-opt, the
// monarch-compile CLI and Python all run these.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Pipelines.h"
#include "monarch/Support/Knobs.h"
#include "monarch/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstdlib>
#include <string>

using namespace mlir;

namespace monarch {

llvm::StringRef stageName(Stage stage) {
  switch (stage) {
  case Stage::Traced:
    return "traced";
  case Stage::Partitioned:
    return "partitioned";
  case Stage::Split:
    return "split";
  case Stage::Planned:
    return "planned";
  }
  return "unknown";
}

llvm::ArrayRef<Stage> allStages() {
  static constexpr Stage kStages[] = {Stage::Traced, Stage::Partitioned,
                                      Stage::Split, Stage::Planned};
  return kStages;
}

std::optional<Stage> parseStage(llvm::StringRef name) {
  for (Stage stage : allStages())
    if (stageName(stage) == name)
      return stage;
  return std::nullopt;
}

std::string stageNameList() {
  std::string out;
  for (Stage stage : allStages())
    out += (out.empty() ? "" : ", ") + stageName(stage).str();
  return out;
}

void populatePartitionPipeline(OpPassManager &pm, const PipelineOptions &) {
  MonarchPartitionOptions partition;
  partition.remarks = knobs::getBool(knobs::Id::PartitionRemarks).value;
  partition.engine = knobs::getString(knobs::Id::PartitionEngine).value;
  pm.addPass(createMonarchPartition(partition));
}

void populateSplitPipeline(OpPassManager &pm, const PipelineOptions &) {
  pm.addPass(createMonarchSplitControlData());
}

void populatePlanPipeline(OpPassManager &pm, const PipelineOptions &options) {
  MonarchPlanTransfersOptions plan;
  plan.backend = options.backend;
  plan.groupBytes = options.groupBytes;
  plan.rankClasses = knobs::getBool(knobs::Id::RankClasses).value;
  plan.classPrograms = knobs::getBool(knobs::Id::ClassPrograms).value;
  // The fusion policy (docs/pipeline.md, "Kernel boundaries"): one kernel
  // per contraction with its epilogue, and no kernel over 512 ops.
  if (knobs::getString(knobs::Id::KernelCut).value == "contraction") {
    plan.cutAtContractions = true;
    plan.maxKernelOps = 512;
  }
  // Data parallelism's weight update on each rank's rows (before the
  // ranks are specialised: one rewrite of the SPMD code).
  if (knobs::getBool(knobs::Id::ShardUpdate).value)
    pm.addPass(createMonarchShardWeightUpdate());
  MonarchSpecializeRanksOptions specialize;
  specialize.classes = knobs::getBool(knobs::Id::SpecializeClasses).value;
  pm.addPass(createMonarchSpecializeRanks(specialize));
  if (int64_t bucket = knobs::getInt(knobs::Id::BucketBytes).value;
      bucket > 0) {
    MonarchBucketCollectivesOptions buckets;
    buckets.bucketBytes = bucket;
    pm.addPass(createMonarchBucketCollectives(buckets));
  }
  // Each collective issued as soon as its input is ready (after bucketing,
  // which places a bucket at its last member).
  pm.addPass(createMonarchHoistCollectives());
  pm.addPass(createMonarchPlanTransfers(plan));
  pm.addPass(createMonarchSchedule());
  pm.addPass(createMonarchVerifyPlan());
}

void populateStagePipelines(OpPassManager &pm, Stage from, Stage to,
                            const PipelineOptions &options) {
  if (from < Stage::Partitioned && to >= Stage::Partitioned)
    populatePartitionPipeline(pm, options);
  if (from < Stage::Split && to >= Stage::Split)
    populateSplitPipeline(pm, options);
  if (from < Stage::Planned && to >= Stage::Planned)
    populatePlanPipeline(pm, options);
}

namespace {
/// With the verifier after every pass: names the pass after which the IR
/// stopped verifying (MLIR reports the invalid op, not the pass).
class InvalidIRCulprit : public PassInstrumentation {
public:
  explicit InvalidIRCulprit(std::string &culprit) : culprit(culprit) {}
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    if (!culprit.empty())
      return;
    // A pass that failed on its own left valid IR; one the verifier failed
    // did not.
    ScopedDiagnosticHandler quiet(op->getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(verify(op)))
      culprit = pass->getArgument().empty() ? pass->getName().str()
                                            : pass->getArgument().str();
  }

private:
  std::string &culprit;
};
} // namespace

namespace {
/// Hands the hooks of one pass manager to an instrumentation owned outside
/// it, so one observer (a dump) sees every stage's passes.
class ForwardInstrumentation : public PassInstrumentation {
public:
  explicit ForwardInstrumentation(PassInstrumentation &to) : to(to) {}
  void runBeforePipeline(std::optional<OperationName> name,
                         const PipelineParentInfo &info) override {
    to.runBeforePipeline(name, info);
  }
  void runAfterPipeline(std::optional<OperationName> name,
                        const PipelineParentInfo &info) override {
    to.runAfterPipeline(name, info);
  }
  void runBeforePass(Pass *pass, Operation *op) override {
    to.runBeforePass(pass, op);
  }
  void runAfterPass(Pass *pass, Operation *op) override {
    to.runAfterPass(pass, op);
  }
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    to.runAfterPassFailed(pass, op);
  }
  void runBeforeAnalysis(StringRef name, TypeID id, Operation *op) override {
    to.runBeforeAnalysis(name, id, op);
  }
  void runAfterAnalysis(StringRef name, TypeID id, Operation *op) override {
    to.runAfterAnalysis(name, id, op);
  }

private:
  PassInstrumentation &to;
};
} // namespace

namespace {
/// Calls StageRunOptions::onPass before each pass.
class PassNotifier : public PassInstrumentation {
public:
  explicit PassNotifier(const std::function<void(StringRef)> &notify)
      : notify(notify) {}
  void runBeforePass(Pass *pass, Operation *) override {
    notify(pass->getArgument().empty() ? pass->getName() : pass->getArgument());
  }

private:
  const std::function<void(StringRef)> &notify;
};
} // namespace

LogicalResult runStagePipelines(ModuleOp module, Stage from, Stage to,
                                const PipelineOptions &options,
                                StageRunOptions run, std::string *reproducer) {
  if (to <= from)
    return success();
  // The reproducer is the whole pipeline from `from` to the failing stage.
  auto describe = [&](Stage upTo) {
    if (!reproducer)
      return;
    PassManager all(module.getContext(), ModuleOp::getOperationName());
    populateStagePipelines(all, from, upTo, options);
    reproducer->clear();
    llvm::raw_string_ostream os(*reproducer);
    all.printAsTextualPipeline(os);
  };
  // One pass manager per stage, the IR verified after each: no pass of a
  // later stage ever sees an invalid op (a pass that built one would crash
  // the next instead of being named).
  for (int s = static_cast<int>(from) + 1; s <= static_cast<int>(to); ++s) {
    Stage stage = static_cast<Stage>(s);
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    pm.enableVerifier(run.verifyEachPass);
    populateStagePipelines(pm, static_cast<Stage>(s - 1), stage, options);
    std::string culprit;
    if (run.verifyEachPass)
      pm.addInstrumentation(std::make_unique<InvalidIRCulprit>(culprit));
    if (run.observer)
      pm.addInstrumentation(
          std::make_unique<ForwardInstrumentation>(*run.observer));
    if (run.onPass)
      pm.addInstrumentation(std::make_unique<PassNotifier>(run.onPass));
    if (failed(pm.run(module))) {
      describe(stage);
      if (!culprit.empty())
        module.emitError() << "internal error: the IR after pass '" << culprit
                           << "' does not verify (the diagnostics above name "
                              "the op)";
      return failure();
    }
    if (!run.verifyEachPass && failed(verify(module))) {
      // A pass built invalid IR: a compiler bug, not the user's.
      describe(stage);
      module.emitError() << "internal error: the IR at the end of stage '"
                         << stageName(stage)
                         << "' does not verify (the diagnostics above name "
                            "the op); rerun with the verifier after every "
                            "pass (monarch-compile --verify-each) to find the "
                            "pass";
      return failure();
    }
    if (run.onStage)
      run.onStage(stage, module);
  }
  return success();
}

void registerMonarchPipelines() {
  PassPipelineRegistration<PipelineOptions>("monarch-to-partitioned",
                                            "Stage traced -> partitioned",
                                            populatePartitionPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "monarch-to-split", "Stage partitioned -> split", populateSplitPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "monarch-to-planned", "Stage split -> planned", populatePlanPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "monarch-compile-to-planned", "All stages: traced -> planned",
      [](OpPassManager &pm, const PipelineOptions &options) {
        populateStagePipelines(pm, Stage::Traced, Stage::Planned, options);
      });
}

} // namespace monarch
