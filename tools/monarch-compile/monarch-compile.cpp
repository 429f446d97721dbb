//===- monarch-compile.cpp - The phase-ladder compiler driver ---*- C++ -*-===//
//
// `monarch-compile INPUT.mlir --compile-to=STAGE [--compile-from=STAGE]
// [-o OUT] [--dump-dir=DIR]` parses a program (traced, or at the stage
// --compile-from names), runs the stage pipelines after it up to STAGE and
// prints (or writes) the result. The last stage, `plan`, turns the
// planned module into an ExecutionPlan: `-o OUT.mcplan` writes the binary
// file (through the compile cache), otherwise the plan is printed readably.
// `--print-plan X.mcplan` prints an existing plan file without any MLIR.
// With a dump directory (or MONARCH_DUMP_DIR) the IR after every pass is
// written as NN-<pass>.mlir and each stage as <stage>.mlir. Failures print
// `file:line:col: error:` diagnostics plus a monarch-opt command line that
// reproduces them, and exit non-zero.
//
//===----------------------------------------------------------------------===//

#include "monarch/Driver/CompileSession.h"
#include "monarch/Driver/TraceCompile.h"
#include "monarch/Plan/PlanFile.h"
#include "monarch/Plan/PlanGraph.h"
#include "monarch/Plan/PlanPrinter.h"
#include "monarch/Plan/PlanSimulate.h"
#include "monarch/Support/Knobs.h"
#include "monarch/Support/ParserHazards.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

using namespace mlir;
using namespace monarch::codegen;
using namespace monarch::plan;
namespace knobs = monarch::knobs;

namespace {

int fail(llvm::StringRef message) {
  llvm::errs() << "monarch-compile: error: " << message << "\n";
  return 1;
}

struct Flags {
  std::string input, output, stageName, fromStage = "traced", dumpDir,
                                        backend = "gloo", target = "cpu";
  int64_t groupBytes = 65536;
  bool printPlan = false, verbose = false, verifyEach = false;
  /// --print-plan --rank R: that rank's program of each plan, in full.
  std::optional<int64_t> rank;
  /// SVG pictures of the plan (PlanGraph.h).
  std::string planGraph, memoryPlot;
  /// --simulate[=PRESET|TOPOLOGY.json] and its --trace (PlanSimulate.h).
  std::string simulate, simTrace;
  bool pictures() const {
    return !planGraph.empty() || !memoryPlot.empty() || !simulate.empty();
  }
};

/// The topology --simulate names: a preset, or a JSON file of overrides of
/// one ("base", default this-machine).
StatusOr<SimTopology> loadTopology(const std::string &spec) {
  if (!llvm::StringRef(spec).ends_with(".json"))
    return topologyPreset(spec);
  auto buffer = llvm::MemoryBuffer::getFile(spec);
  if (!buffer)
    return Status(StatusCode::NotFound,
                  "cannot read topology file '" + spec + "'");
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return Status(StatusCode::InvalidArgument,
                  spec + ": " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o)
    return Status(StatusCode::InvalidArgument,
                  spec + ": a topology is a JSON object");
  StatusOr<SimTopology> t =
      topologyPreset(o->getString("base").value_or("this-machine").str());
  if (!t)
    return t.status();
  t->name = spec;
  for (const auto &[key, value] : *o) {
    if (key == "base")
      continue;
    std::optional<double> v = value.getAsNumber();
    if (!v)
      return Status(StatusCode::InvalidArgument,
                    spec + ": '" + key.str() + "' must be a number");
    if (Status s = setTopologyField(*t, key.str(), *v); !s)
      return Status(StatusCode::InvalidArgument, spec + ": " + s.message());
  }
  return t;
}

/// Writes the pictures --plan-graph and --memory-plot ask for, and the
/// prediction of --simulate.
int drawPictures(const Flags &flags, const ExecutionPlan &plan) {
  if (!flags.simulate.empty()) {
    StatusOr<SimTopology> topology = loadTopology(flags.simulate);
    if (!topology)
      return fail(topology.status().message());
    StatusOr<SimResult> sim = simulatePlan(plan, *topology);
    if (!sim)
      return fail(sim.status().message());
    std::cout << simulationReport(*sim, *topology);
    if (!flags.simTrace.empty())
      if (Status s = writeFileAtomically(flags.simTrace, sim->chromeTrace); !s)
        return fail(s.message());
  }
  if (!flags.planGraph.empty())
    if (Status s = writeFileAtomically(flags.planGraph, planGraphSvg(plan)); !s)
      return fail(s.message());
  if (!flags.memoryPlot.empty())
    if (Status s = writeFileAtomically(flags.memoryPlot, memoryPlotSvg(plan));
        !s)
      return fail(s.message());
  return 0;
}

PrintOptions printOptions(const Flags &flags) {
  PrintOptions options;
  options.rank = flags.rank;
  return options;
}

/// Prints a `.mcplan` file readably: no MLIR context is ever created.
int printPlanFile(const Flags &flags) {
  StatusOr<ExecutionPlan> plan = readPlanFile(flags.input);
  if (!plan)
    return fail(plan.status().message());
  if (flags.pictures()) {
    if (int rc = drawPictures(flags, *plan))
      return rc;
    if (!flags.printPlan)
      return 0;
  }
  if (flags.output.empty() || flags.output == "-") {
    printPlan(*plan, std::cout, printOptions(flags));
    return std::cout.good() ? 0 : fail("cannot write the plan to stdout");
  }
  std::string error;
  auto out = openOutputFile(flags.output, &error);
  if (!out)
    return fail(error);
  out->os() << planToString(*plan, printOptions(flags));
  out->keep();
  return 0;
}

/// Writes a finished plan: binary to -o, or readably to stdout (not when
/// only pictures were asked for).
int emitPlan(const Flags &flags, const std::string &bytes) {
  if (flags.pictures()) {
    StatusOr<ExecutionPlan> plan = deserializePlan(bytes);
    if (!plan)
      return fail("internal error: " + plan.status().message());
    if (int rc = drawPictures(flags, *plan))
      return rc;
    if (flags.output.empty() && !flags.printPlan)
      return 0;
  }
  if (!flags.output.empty() && !flags.printPlan) {
    if (flags.output == "-") {
      std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      return std::cout.good() ? 0 : fail("cannot write the plan to stdout");
    }
    if (Status s = writeFileAtomically(flags.output, bytes); !s)
      return fail(s.message());
    return 0;
  }
  StatusOr<ExecutionPlan> plan = deserializePlan(bytes);
  if (!plan)
    return fail("internal error: " + plan.status().message());
  printPlan(*plan, std::cout, printOptions(flags));
  return 0;
}

/// True when the file starts with (a prefix of) the plan magic bytes. Reads
/// only the first bytes: the input may be a large MLIR file.
bool looksLikePlanFile(const std::string &path) {
  if (path == "-")
    return false;
  std::ifstream in(path, std::ios::binary);
  char head[sizeof(kPlanMagic)] = {};
  in.read(head, sizeof(head));
  std::streamsize n = in.gcount();
  return n > 0 && std::memcmp(head, kPlanMagic, static_cast<size_t>(n)) == 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"monarch-compile: compile a traced monarch program through the "
               "stages traced -> partitioned -> split -> planned -> plan"};
  Flags flags;
  app.add_option("input", flags.input,
                 "Traced program (.mlir; - for stdin), or with --print-plan "
                 "a compiled plan (.mcplan)")
      ->required();
  app.add_option("-o,--output", flags.output,
                 "Where to write the result (default: stdout). For the plan "
                 "stage: the binary .mcplan file; without -o the plan is "
                 "printed readably");
  // The stages as the compiler lists them; `plan` is the file.
  std::vector<std::string> stages = monarch::driver::stageNames();
  std::vector<std::string> targets = stages;
  targets.push_back("plan");
  app.add_option("--compile-to", flags.stageName,
                 "Stop after this stage: " + monarch::stageNameList() +
                     ", plan (default: plan when -o ends in .mcplan or with "
                     "--print-plan, planned otherwise)")
      ->check(CLI::IsMember(targets));
  app.add_option("--compile-from", flags.fromStage,
                 "The stage of the input (default: traced): the passes start "
                 "after it, so the IR a dump or an earlier --compile-to "
                 "wrote can be compiled on")
      ->check(CLI::IsMember(stages));
  app.add_flag("--print-plan", flags.printPlan,
               "Print a plan readably (a table per class of ranks; a rank "
               "that runs another's stream shows where it differs): the "
               "input .mcplan file, or the plan compiled from an .mlir input");
  app.add_option("--rank", flags.rank,
                 "With --print-plan: print only this rank's program of each "
                 "plan, in full")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--target", flags.target,
                 "Kernel target of the plan: cpu (native code for this host) "
                 "or cuda (PTX)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_val("cpu");
  app.add_option("--dump-dir", flags.dumpDir,
                 "Write the IR after every pass here as NN-<pass>.mlir and "
                 "each stage as <stage>.mlir (default: $MONARCH_DUMP_DIR, if "
                 "set; bypasses the cache)");
  app.add_option("--backend", flags.backend,
                 "Data plane of the planned communicators: gloo or nccl "
                 "(default: $MONARCH_BACKEND, else gloo)")
      ->check(CLI::IsMember({"gloo", "nccl"}))
      ->default_val(knobs::getString(knobs::Id::Backend).value);
  app.add_option("--group-bytes", flags.groupBytes,
                 "Transfers up to this many bytes issued back to back share "
                 "a group")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--plan-graph", flags.planGraph,
                 "Draw the plan as SVG here: a lane per rank, kernels, "
                 "transfers and collectives, the controller's feeds and "
                 "fetches, each box with the user's source line (input: "
                 ".mlir, compiled to a plan, or a .mcplan)");
  app.add_option("--memory-plot", flags.memoryPlot,
                 "Draw each rank's arena over the step as SVG here (the "
                 "static memory plan: buffers by first and last use, the peak "
                 "marked)");
  app.add_flag("--simulate{this-machine}", flags.simulate,
               "Predict the plan's step without running it: replay its "
               "instruction streams in a discrete-event model on a topology "
               "(a preset: this-machine, dgx-h100, dgx-h200, "
               "cpu-cluster-25g; or TOPOLOGY.json) and print the predicted "
               "step time, the critical path and each rank's compute, "
               "communication and waiting");
  app.add_option("--trace", flags.simTrace,
                 "With --simulate: write the predicted timeline here as a "
                 "Chrome/Perfetto trace (the format of MONARCH_TRACE)");
  app.add_flag("--verify-each", flags.verifyEach,
               "Run the IR verifier after every pass (default: once, on the "
               "result; always on with --dump-dir)");
  app.add_flag("-v,--verbose", flags.verbose,
               "Report compile-cache hits and misses and timings on stderr");
  app.footer(
      "Environment: MONARCH_DUMP_DIR (as --dump-dir), MONARCH_BACKEND (as "
      "--backend), MONARCH_CACHE_DIR (compile cache directory; default "
      "$XDG_CACHE_HOME/monarch-compile or ~/.cache/monarch-compile), "
      "MONARCH_DISABLE_CACHE=1 (bypass the cache), MONARCH_MATMUL_TILES, "
      "MONARCH_PARTITION_REMARKS; the README lists them all.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  auto start = std::chrono::steady_clock::now();
  auto elapsedMs = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };

  bool wantsPlanOutput = llvm::StringRef(flags.output).ends_with(".mcplan");
  if (flags.stageName.empty())
    flags.stageName = wantsPlanOutput || flags.printPlan || flags.pictures()
                          ? "plan"
                          : "planned";
  bool toPlan = flags.stageName == "plan";

  if (flags.rank && !flags.printPlan)
    return fail("--rank selects the rank --print-plan prints: add "
                "--print-plan");
  bool inputIsPlan = looksLikePlanFile(flags.input);
  if ((flags.printPlan || flags.pictures()) &&
      (inputIsPlan || llvm::StringRef(flags.input).ends_with(".mcplan")))
    return printPlanFile(flags);
  if (flags.pictures() && !toPlan)
    return fail("--plan-graph and --memory-plot draw a plan: they need "
                "--compile-to=plan, not '" +
                flags.stageName + "'");
  if (inputIsPlan)
    return fail("'" + flags.input +
                "' is a compiled plan, not MLIR; print it with --print-plan");
  if (flags.printPlan && !toPlan)
    return fail(
        "--print-plan prints a plan: it needs --compile-to=plan, not '" +
        flags.stageName + "'");
  monarch::Stage from = *monarch::parseStage(flags.fromStage);
  if (!toPlan && *monarch::parseStage(flags.stageName) < from)
    return fail("--compile-to=" + flags.stageName +
                " comes before --compile-from=" + flags.fromStage);
  if (wantsPlanOutput && !toPlan)
    return fail("-o " + flags.output + " names a plan file but --compile-to=" +
                flags.stageName + " produces MLIR");

  if (flags.dumpDir.empty())
    flags.dumpDir = knobs::getString(knobs::Id::DumpDir).value;

  DialectRegistry registry;
  monarch::registerMonarchDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the user's source line; the generic form of the
  // whole operation would only bury it.
  context.printOpOnDiagnostic(false);

  std::string error;
  auto file = openInputFile(flags.input, &error);
  if (!file)
    return fail(error);
  if (auto hazard = monarch::findParserHazard(file->getBuffer())) {
    llvm::errs() << hazard->diagnostic(flags.input) << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return 1; // The parser reported file:line:col.

  monarch::driver::CompileOptions options;
  options.from = from;
  options.backend = flags.backend;
  options.groupBytes = flags.groupBytes;
  options.kernels.target =
      flags.target == "cuda" ? KernelTarget::Cuda : KernelTarget::Cpu;
  options.verifyEach = flags.verifyEach;
  options.dumpDir = flags.dumpDir;
  options.inputFile = flags.input;
  options.source = flags.input;
  // The process ends after this compile: its plan, and below its module,
  // are left to the exit (as clang's -disable-free).
  options.disableFree = true;
  monarch::driver::CompileSession session(context, options);
  // Diagnostics go to the SourceMgr handler (with the source line); the
  // session adds what failed and how to reproduce it.
  auto failed = [&] {
    if (session.reproducer().empty())
      return fail(session.error());
    llvm::errs() << "monarch-compile: " << session.error()
                 << "; reproduce with:\n  " << session.reproducer() << "\n";
    if (!flags.dumpDir.empty())
      llvm::errs() << "monarch-compile: IR after each pass is in "
                   << flags.dumpDir << "\n";
    return 1;
  };

  if (!toPlan) {
    if (mlir::failed(
            session.lower(*module, *monarch::parseStage(flags.stageName))))
      return failed();
    auto out =
        openOutputFile(flags.output.empty() ? "-" : flags.output, &error);
    if (!out)
      return fail(error);
    module->print(out->os());
    out->os() << "\n";
    out->keep();
    llvm::BuryPointer(module.release().getOperation());
    return 0;
  }

  FailureOr<std::string> bytes = session.compilePlan(*module);
  if (flags.verbose && !session.cacheNote().empty())
    llvm::errs() << "monarch-compile: " << session.cacheNote() << " ("
                 << llvm::format("%.2f", elapsedMs()) << " ms)\n";
  if (mlir::failed(bytes))
    return failed();
  if (flags.verbose && !session.cacheHit()) {
    llvm::StringRef timings = session.timings();
    for (llvm::StringRef line : llvm::split(timings.rtrim('\n'), '\n'))
      llvm::errs() << "monarch-compile: " << line << "\n";
    llvm::errs() << "monarch-compile: compiled in "
                 << llvm::format("%.2f", elapsedMs()) << " ms\n";
  }
  int rc = emitPlan(flags, *bytes);
  // Freeing 100,000 operations of a 4,096-rank plan took tens of ms.
  llvm::BuryPointer(module.release().getOperation());
  return rc;
}
