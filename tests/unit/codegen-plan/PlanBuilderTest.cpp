//===- PlanBuilderTest.cpp - Planned IR -> ExecutionPlan --------*- C++ -*-===//
//
// The three example programs compiled through the registered pipelines to a
// plan, checked against the planned IR they came from (counts of ranks,
// instructions and collectives, buffers, locations), and round-tripped
// through the file format. Plus the location recovery through every kind of
// MLIR location.
//
//===----------------------------------------------------------------------===//

#include "monarch/Codegen/PlanBuilder.h"
#include "monarch/IR/MonarchDialect.h"
#include "monarch/Plan/PlanFile.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace mlir;
using namespace monarch::codegen;
using namespace monarch::plan;

namespace {

class PlanBuilderTest : public ::testing::TestWithParam<const char *> {
protected:
  PlanBuilderTest() : context(registry()) {
    context.loadAllAvailableDialects();
  }

  static DialectRegistry registry() {
    DialectRegistry r;
    monarch::registerMonarchDialects(r);
    return r;
  }

  OwningOpRef<ModuleOp> planned(const std::string &example) {
    std::string path =
        std::string(MONARCH_SOURCE_DIR) + "/examples/ir/" + example + ".mlir";
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(path, ParserConfig(&context));
    EXPECT_TRUE(module) << path;
    if (!module)
      return module;
    PassManager pm(&context, ModuleOp::getOperationName());
    monarch::populateStagePipelines(pm, monarch::Stage::Traced,
                                    monarch::Stage::Planned,
                                    monarch::PipelineOptions());
    EXPECT_TRUE(succeeded(pm.run(*module)));
    return module;
  }

  MLIRContext context;
};

TEST_P(PlanBuilderTest, PlanMirrorsThePlannedModule) {
  OwningOpRef<ModuleOp> module = planned(GetParam());
  ASSERT_TRUE(module);
  PlanBuildOptions options;
  options.source = GetParam();
  FailureOr<ExecutionPlan> plan = buildExecutionPlan(*module, options);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_TRUE(validatePlan(*plan).isOk());
  // The builder instantiates each monarch.rank_member from its program's
  // C++ form; the IR expansion of the members must give the same programs.
  for (auto planOp : module->getOps<monarch::PlanOp>())
    planOp.expandMembers();

  // One StepPlan per monarch.plan, one RankProgram per rank_program, one
  // Instruction per op, in order, with the same kinds and buffers.
  auto planOps = llvm::to_vector(module->getOps<monarch::PlanOp>());
  ASSERT_EQ(plan->plans.size(), planOps.size());
  size_t collectives = 0, withLocation = 0, total = 0, merged = 0;
  std::map<int32_t, std::set<int64_t>> launchedBy;
  for (auto [step, op] : llvm::zip(plan->plans, planOps)) {
    EXPECT_EQ(step.symbol, op.getSymName());
    auto programs =
        llvm::to_vector(op.getBody().getOps<monarch::RankProgramOp>());
    ASSERT_EQ(step.programs.size(), programs.size());
    for (auto [rp, programOp] : llvm::zip(step.programs, programs)) {
      EXPECT_EQ(rp.rank, static_cast<int64_t>(programOp.getRank()));
      EXPECT_EQ(rp.arenaBytes, static_cast<int64_t>(programOp.getArena()));
      Block &body = programOp.getBody().front();
      ASSERT_EQ(rp.instructions.size(), body.getOperations().size());
      for (auto [in, instrOp] : llvm::zip(rp.instructions, body)) {
        ++total;
        EXPECT_EQ(std::string("monarch.") + instrKindName(in.kind),
                  instrOp.getName().getStringRef().str());
        EXPECT_EQ(in.loc.opName, instrOp.getName().getStringRef().str());
        if (!in.loc.file.empty()) {
          ++withLocation;
          auto file = dyn_cast<FileLineColLoc>(instrOp.getLoc());
          if (file) {
            EXPECT_EQ(in.loc.line, static_cast<int32_t>(file.getLine()));
          }
        }
        if (auto coll = dyn_cast<monarch::CollectiveOp>(instrOp)) {
          ++collectives;
          EXPECT_EQ(in.collective.input.offset, coll.getInput().getOffset());
          EXPECT_EQ(in.collective.output.sizeInBytes(),
                    coll.getOutput().getSizeInBytes());
          EXPECT_EQ(plan->communicators[in.collective.communicator].name,
                    coll.getComm().str());
        }
        if (auto launch = dyn_cast<monarch::LaunchOp>(instrOp)) {
          // Its kernel, or (compiled) an earlier one that compiled to the
          // same symbol: the table holds equal kernels once, each named.
          const std::string &name = plan->kernels[in.launch.kernel].name;
          EXPECT_FALSE(name.empty());
          if (name != launch.getKernel().str()) {
            EXPECT_TRUE(kernelCompilerAvailable()) << name;
            ++merged;
          }
          launchedBy[in.launch.kernel].insert(rp.rank);
          EXPECT_EQ(plan->kernels[in.launch.kernel].numInputs,
                    static_cast<int32_t>(launch.getIns().size()));
        }
      }
    }
  }
  EXPECT_GT(collectives, 0u);
  // Every example has ranks running equal kernels: one entry of the table
  // (one func.func since monarch-plan-transfers keeps equal kernels once)
  // serves several ranks. Merging at build time is left to kernels that
  // compiled to one symbol though their IR differed.
  EXPECT_TRUE(llvm::any_of(launchedBy,
                           [](const auto &k) { return k.second.size() > 1; }));
  if (!kernelCompilerAvailable()) {
    EXPECT_EQ(merged, 0u);
  }
  EXPECT_EQ(withLocation, total) << "every instruction has a file location";
  // With the kernel compiler built in, every launched kernel has code.
  if (kernelCompilerAvailable()) {
    ASSERT_EQ(plan->libraries.size(), 1u);
    const KernelLibraryBlob &lib = plan->libraries[0];
    EXPECT_EQ(lib.target, PlanTarget::Cpu);
    EXPECT_EQ(lib.code.substr(0, 4), "\x7f"
                                     "ELF");
    std::vector<bool> covered(plan->kernels.size(), false);
    for (const CompiledKernelRef &k : lib.kernels) {
      EXPECT_FALSE(k.symbol.empty());
      covered[k.kernel] = true;
    }
    EXPECT_EQ(std::count(covered.begin(), covered.end(), true),
              static_cast<long>(plan->kernels.size()));
  } else {
    EXPECT_TRUE(plan->libraries.empty());
  }

  // The file format keeps it all.
  StatusOr<std::string> bytes = serializePlan(*plan);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  StatusOr<ExecutionPlan> back = deserializePlan(*bytes);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == *plan);
}

INSTANTIATE_TEST_SUITE_P(Examples, PlanBuilderTest,
                         ::testing::Values("tensor_parallel", "data_parallel",
                                           "pipeline"));

TEST(SourceLocation, FoundThroughEveryLocationKind) {
  MLIRContext context;
  Location file = FileLineColLoc::get(&context, "model.py", 12, 5);
  Location other = FileLineColLoc::get(&context, "lib.py", 3, 1);
  Location unknown = UnknownLoc::get(&context);
  StringAttr name = StringAttr::get(&context, "matmul");

  SourceLoc direct = toSourceLoc(file, "monarch.launch");
  EXPECT_EQ(direct.file, "model.py");
  EXPECT_EQ(direct.line, 12);
  EXPECT_EQ(direct.col, 5);
  EXPECT_EQ(direct.opName, "monarch.launch");
  EXPECT_EQ(toSourceLoc(NameLoc::get(name, file)).line, 12);
  // The callee is where the op was written; an unknown callee falls back to
  // the caller.
  EXPECT_EQ(toSourceLoc(CallSiteLoc::get(file, other)).file, "model.py");
  EXPECT_EQ(toSourceLoc(CallSiteLoc::get(unknown, other)).file, "lib.py");
  EXPECT_EQ(toSourceLoc(FusedLoc::get(&context, {unknown, other, file})).file,
            "lib.py");
  EXPECT_EQ(
      toSourceLoc(
          NameLoc::get(
              name, FusedLoc::get(&context,
                                  {unknown, CallSiteLoc::get(unknown, file)})))
          .line,
      12);
  SourceLoc none = toSourceLoc(unknown, "monarch.wait");
  EXPECT_TRUE(none.file.empty());
  EXPECT_EQ(none.line, 0);
  EXPECT_EQ(none.str(), "<unknown>");
}

} // namespace
