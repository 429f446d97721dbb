//===- StagePipelinesTest.cpp - runStagePipelines' diagnostics --*- C++ -*-===//
//
// With the verifier after every pass, a pass that leaves invalid IR is named
// in the error (MLIR's own diagnostic names only the invalid op). A pass is
// made to "build" invalid IR by an observer that corrupts the module after
// monarch-partition: the verifier then fails after the next pass, which the
// error must name.
//
//===----------------------------------------------------------------------===//
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

constexpr const char *kProgram = R"mlir(
#id = affine_map<(d0) -> (d0)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%xf : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.sqrt %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}
)mlir";

/// After monarch-partition, gives the controller function a result type its
/// return does not have.
class Corrupt : public PassInstrumentation {
  void runAfterPass(Pass *pass, Operation *op) override {
    if (pass->getArgument() != "monarch-partition")
      return;
    auto module = cast<ModuleOp>(op);
    auto fn = module.lookupSymbol<func::FuncOp>("f");
    Builder b(op->getContext());
    fn.setFunctionType(
        b.getFunctionType(fn.getArgumentTypes(), {b.getF32Type()}));
  }
};

TEST(StagePipelines, VerifyEachNamesThePassThatLeftInvalidIR) {
  DialectRegistry registry;
  monarch::registerMonarchDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kProgram, &ctx);
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  monarch::StageRunOptions run;
  run.verifyEachPass = true;
  run.observer = std::make_unique<Corrupt>();
  EXPECT_TRUE(failed(monarch::runStagePipelines(*module, monarch::Stage::Traced,
                                                monarch::Stage::Split, {},
                                                std::move(run))));
  EXPECT_NE(diagnostics.find("internal error: the IR after pass "
                             "'monarch-split-control-data' does not verify"),
            std::string::npos)
      << diagnostics;
}

} // namespace
