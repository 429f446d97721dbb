//===- monarch-compile.cpp - The phase-ladder compiler driver ---*- C++ -*-===//
//
// `monarch-compile INPUT.mlir --compile-to=STAGE [-o OUT] [--dump-dir=DIR]`
// parses a traced program, runs the registered stage pipelines up to STAGE
// and prints (or writes) the result. With a dump directory (or
// MONARCH_DUMP_DIR) the IR after every pass is written as NN-<pass>.mlir.
// Failures print `file:line:col: error:` diagnostics plus a monarch-opt
// command line that reproduces them, and exit non-zero.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

/// Writes the IR after every pass to `dir/NN-<pass-argument>.mlir`.
class DumpAfterEachPass : public PassInstrumentation {
public:
  explicit DumpAfterEachPass(std::string dir) : dir(std::move(dir)) {}

  void runAfterPass(Pass *pass, Operation *op) override { dump(pass, op); }
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    dump(pass, op, ".failed");
  }

  /// Writes `op` as file `name` in the dump directory.
  void write(Operation *op, llvm::StringRef name) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      llvm::errs() << "monarch-compile: cannot write " << path << ": "
                   << ec.message() << "\n";
      return;
    }
    op->print(os, OpPrintingFlags().enableDebugInfo(true, /*pretty=*/true));
  }

private:
  void dump(Pass *pass, Operation *op, llvm::StringRef suffix = "") {
    // Passes nested under the module (kernel cleanups) are not stages.
    if (!isa<ModuleOp>(op))
      return;
    std::string name = llvm::formatv("{0:02}-{1}{2}.mlir", ++index,
                                     pass->getArgument(), suffix)
                           .str();
    write(op, name);
  }

  std::string dir;
  unsigned index = 0;
};

int fail(llvm::StringRef message) {
  llvm::errs() << "monarch-compile: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"monarch-compile: compile a traced monarch program through the "
               "stages traced -> partitioned -> split -> planned"};
  std::string input, output = "-", stageName = "planned", dumpDir, backend;
  int64_t groupBytes = 65536;
  app.add_option("input", input, "Traced program (.mlir), or - for stdin")
      ->required();
  app.add_option("-o,--output", output,
                 "Where to write the result (default: stdout)");
  app.add_option("--compile-to", stageName,
                 "Stop after this stage: traced, partitioned, split, planned")
      ->check(CLI::IsMember({"traced", "partitioned", "split", "planned"}));
  app.add_option("--dump-dir", dumpDir,
                 "Write the IR after every pass here as NN-<pass>.mlir "
                 "(default: $MONARCH_DUMP_DIR, if set)");
  app.add_option("--backend", backend,
                 "Data plane of the planned communicators: gloo or nccl")
      ->check(CLI::IsMember({"gloo", "nccl"}))
      ->default_val("gloo");
  app.add_option("--group-bytes", groupBytes,
                 "Transfers up to this many bytes issued back to back share "
                 "a group")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  if (dumpDir.empty())
    if (const char *env = std::getenv("MONARCH_DUMP_DIR"))
      dumpDir = env;

  DialectRegistry registry;
  monarch::registerMonarchDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  auto file = openInputFile(input, &error);
  if (!file)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return 1; // The parser reported file:line:col.

  monarch::Stage to = *monarch::parseStage(stageName);
  monarch::PipelineOptions options;
  options.backend = backend;
  options.groupBytes = groupBytes;
  PassManager pm(&context, ModuleOp::getOperationName());
  monarch::populateStagePipelines(pm, monarch::Stage::Traced, to, options);

  if (!dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir))
      return fail("cannot create dump directory " + dumpDir + ": " +
                  ec.message());
    auto dumper = std::make_unique<DumpAfterEachPass>(dumpDir);
    dumper->write(*module, "00-input.mlir");
    pm.addInstrumentation(std::move(dumper));
  }

  if (failed(pm.run(*module))) {
    std::string pipeline;
    llvm::raw_string_ostream os(pipeline);
    pm.printAsTextualPipeline(os);
    llvm::errs() << "monarch-compile: compiling to '" << stageName
                 << "' failed; reproduce with:\n  monarch-opt "
                 << (input == "-" ? "<stdin>" : input) << " --pass-pipeline='"
                 << pipeline << "'\n";
    if (!dumpDir.empty())
      llvm::errs() << "monarch-compile: IR after each pass is in " << dumpDir
                   << "\n";
    return 1;
  }

  auto out = openOutputFile(output, &error);
  if (!out)
    return fail(error);
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return 0;
}
