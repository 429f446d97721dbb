//===- CompileSessionTest.cpp - The compile driver ------------------------===//
//
// One driver for the CLI, Python and the TraceBuilder: modules from memory
// lower and compile, share one cache key, and a failure in the passes names
// a reproducer whose input (a saved copy) parses back to the same module.
//
//===----------------------------------------------------------------------===//
#include "monarch/Driver/CompileSession.h"

#include "monarch/Transforms/Registration.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace mlir;
using namespace monarch;

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Two meshes mixed in one op: monarch-partition rejects it.
const char *kMixed = R"mlir(
shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.proc_mesh @b(gpus = 2) grid @g
func.func @mixed(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %yb = monarch.feed %y to @b : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add ins(%xa, %yb : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %s from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir";

class CompileSessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registerMonarchDialects(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("driver-test", dir));
    tmp = std::string(dir);
    ::setenv("MONARCH_CACHE_DIR", (tmp + "/cache").c_str(), 1);
    ::unsetenv("MONARCH_DISABLE_CACHE");
  }
  void TearDown() override {
    ::unsetenv("MONARCH_CACHE_DIR");
    llvm::sys::fs::remove_directories(tmp);
  }
  OwningOpRef<ModuleOp> parse(const std::string &text) {
    return parseSourceString<ModuleOp>(text, ParserConfig(context.get()));
  }
  OwningOpRef<ModuleOp> example(const char *name) {
    return parse(
        readText(std::string(MONARCH_SOURCE_DIR) + "/examples/ir/" + name));
  }
  std::unique_ptr<MLIRContext> context;
  std::string tmp;
};

} // namespace

TEST_F(CompileSessionTest, CompilesFromMemoryThroughTheCache) {
  driver::CompileOptions options;
  options.source = "data_parallel.mlir";
  {
    OwningOpRef<ModuleOp> module = example("data_parallel.mlir");
    ASSERT_TRUE(module);
    driver::CompileSession session(*context, options);
    FailureOr<std::string> bytes = session.compilePlan(*module);
    ASSERT_TRUE(succeeded(bytes)) << session.report();
    EXPECT_FALSE(session.cacheHit());
    EXPECT_NE(session.cacheNote().find("cache miss"), std::string::npos);
    EXPECT_GT(bytes->size(), 100u);
  }
  OwningOpRef<ModuleOp> again = example("data_parallel.mlir");
  driver::CompileSession session(*context, options);
  FailureOr<std::string> bytes = session.compilePlan(*again);
  ASSERT_TRUE(succeeded(bytes));
  EXPECT_TRUE(session.cacheHit()) << session.cacheNote();
  // Another option is another entry.
  options.backend = "nccl";
  options.kernels.target = codegen::KernelTarget::Cuda;
  OwningOpRef<ModuleOp> third = example("data_parallel.mlir");
  driver::CompileSession nccl(*context, options);
  ASSERT_TRUE(succeeded(nccl.compilePlan(*third))) << nccl.report();
  EXPECT_FALSE(nccl.cacheHit());
}

TEST_F(CompileSessionTest, AFailureFromMemorySavesItsInputForTheReproducer) {
  OwningOpRef<ModuleOp> module = parse(kMixed);
  ASSERT_TRUE(module);
  std::string original;
  {
    llvm::raw_string_ostream os(original);
    module->print(os);
  }
  driver::CompileOptions options;
  options.captureDiagnostics = true;
  options.dumpDir = tmp + "/dumps";
  driver::CompileSession session(*context, options);
  EXPECT_TRUE(failed(session.lower(*module, Stage::Planned)));
  EXPECT_EQ(session.error(), "compiling to 'planned' failed");
  EXPECT_NE(session.diagnostics().find(
                "error: 'linalg.add' op uses values on meshes @a and @b"),
            std::string::npos)
      << session.diagnostics();
  const std::string &repro = session.reproducer();
  ASSERT_EQ(repro.rfind("monarch-opt ", 0), 0u) << repro;
  EXPECT_NE(repro.find("--pass-pipeline='builtin.module(monarch-partition"),
            std::string::npos);
  std::string path = repro.substr(12, repro.find(' ', 12) - 12);
  EXPECT_EQ(path.rfind(tmp + "/dumps/monarch-repro-", 0), 0u) << path;
  OwningOpRef<ModuleOp> saved = parse(readText(path));
  ASSERT_TRUE(saved) << "the saved input does not parse";
  std::string reparsed;
  {
    llvm::raw_string_ostream os(reparsed);
    saved->print(os);
  }
  EXPECT_EQ(reparsed, original);
  EXPECT_NE(session.report().find("reproduce with:\n  monarch-opt "),
            std::string::npos);
  EXPECT_TRUE(llvm::sys::fs::exists(tmp + "/dumps/00-input.mlir"));
}

TEST_F(CompileSessionTest, AFileInputIsItsOwnReproducer) {
  OwningOpRef<ModuleOp> module = parse(kMixed);
  driver::CompileOptions options;
  options.inputFile = "prog.mlir";
  options.captureDiagnostics = true;
  driver::CompileSession session(*context, options);
  EXPECT_TRUE(failed(session.lower(*module, Stage::Split)));
  EXPECT_EQ(session.error(), "compiling to 'split' failed");
  EXPECT_EQ(session.reproducer().rfind("monarch-opt prog.mlir ", 0), 0u)
      << session.reproducer();
}

TEST_F(CompileSessionTest, RefusesABadEnvironmentAndBackend) {
  OwningOpRef<ModuleOp> module = example("data_parallel.mlir");
  {
    ::setenv("MONARCH_MATMUL_TILES", "1,2", 1);
    driver::CompileSession session(*context, {});
    EXPECT_TRUE(failed(session.compilePlan(*module)));
    EXPECT_NE(session.error().find("MONARCH_MATMUL_TILES=1,2: expected"),
              std::string::npos)
        << session.error();
    EXPECT_TRUE(session.reproducer().empty());
    ::unsetenv("MONARCH_MATMUL_TILES");
  }
  driver::CompileOptions options;
  options.backend = "mpi";
  driver::CompileSession session(*context, options);
  EXPECT_TRUE(failed(session.lower(*module, Stage::Planned)));
  EXPECT_EQ(session.error(), "unknown backend 'mpi' (gloo or nccl)");
}

namespace {
std::string printed(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}
} // namespace

TEST_F(CompileSessionTest, CompilesOnFromALaterStage) {
  // traced -> planned in one session, and traced -> split, then (the split
  // IR printed and parsed back, as a file would be) split -> planned.
  OwningOpRef<ModuleOp> whole = example("data_parallel.mlir");
  driver::CompileSession all(*context, {});
  ASSERT_TRUE(succeeded(all.lower(*whole, Stage::Planned))) << all.report();

  OwningOpRef<ModuleOp> first = example("data_parallel.mlir");
  driver::CompileSession toSplit(*context, {});
  ASSERT_TRUE(succeeded(toSplit.lower(*first, Stage::Split)));
  OwningOpRef<ModuleOp> split = parse(printed(*first));
  ASSERT_TRUE(split);
  driver::CompileOptions options;
  options.from = Stage::Split;
  options.dumpDir = tmp + "/from-split";
  driver::CompileSession rest(*context, options);
  ASSERT_TRUE(succeeded(rest.lower(*split, Stage::Planned))) << rest.report();
  EXPECT_EQ(printed(*split), printed(*whole));
  // The dump starts at the input's stage: no traced or partitioned file.
  EXPECT_TRUE(llvm::sys::fs::exists(tmp + "/from-split/split.mlir"));
  EXPECT_TRUE(llvm::sys::fs::exists(tmp + "/from-split/planned.mlir"));
  EXPECT_FALSE(llvm::sys::fs::exists(tmp + "/from-split/traced.mlir"));
  EXPECT_FALSE(llvm::sys::fs::exists(tmp + "/from-split/partitioned.mlir"));
  // And it compiles to a plan from there.
  OwningOpRef<ModuleOp> again = parse(printed(*first));
  options.dumpDir.clear();
  driver::CompileSession plan(*context, options);
  EXPECT_TRUE(succeeded(plan.compilePlan(*again))) << plan.report();
  // Backwards is refused, saying so.
  OwningOpRef<ModuleOp> back = parse(printed(*first));
  driver::CompileSession backwards(*context, options);
  EXPECT_TRUE(failed(backwards.lower(*back, Stage::Partitioned)));
  EXPECT_EQ(backwards.error(),
            "cannot compile from 'split' back to 'partitioned'");
}

TEST_F(CompileSessionTest, ADumpHoldsEveryPassAndEveryStage) {
  OwningOpRef<ModuleOp> module = example("data_parallel.mlir");
  driver::CompileOptions options;
  options.dumpDir = tmp + "/dump";
  driver::CompileSession session(*context, options);
  ASSERT_TRUE(succeeded(session.lower(*module, Stage::Planned)));
  for (Stage stage : allStages()) {
    std::string path = tmp + "/dump/" + stageName(stage).str() + ".mlir";
    ASSERT_TRUE(llvm::sys::fs::exists(path)) << path;
    EXPECT_TRUE(parse(readText(path))) << path << " does not parse back";
  }
  EXPECT_TRUE(llvm::sys::fs::exists(tmp + "/dump/00-input.mlir"));
  EXPECT_TRUE(llvm::sys::fs::exists(tmp + "/dump/01-monarch-partition.mlir"));
  // The planned file is the module the session ends with.
  OwningOpRef<ModuleOp> planned = parse(readText(tmp + "/dump/planned.mlir"));
  ASSERT_TRUE(planned);
  EXPECT_EQ(printed(*planned), printed(*module));
}
