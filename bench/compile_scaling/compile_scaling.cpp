//===- compile_scaling.cpp - Compile time versus program size ---*- C++ -*-===//
//
// Builds synthetic traced programs of 10^2 to 10^5 tensor ops with the C++
// API and runs them through the compiler one pass at a time, in pipeline
// order (monarch-partition, monarch-split-control-data,
// monarch-plan-transfers, monarch-schedule, monarch-verify-plan). Prints
// microseconds per op for every pass and for the IR verifier, the log-log
// slope of time versus size (1 = linear; a quadratic pass tends to 2), and
// the two targets of the issue: slope <= 1.1 and < 50 us/op end to end.
// A report, never an assertion: a pass that fails prints its diagnostics and
// that size is skipped; the exit status is 0 (2 on a usage error).
//
// The program (a two-stage pipeline over a 1x4 mesh, as traced):
//
//   shard.grid @mesh_grid(shape = 1x4)
//   shard.grid @half_grid(shape = 1x2)
//   monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
//   monarch.mesh_slice @s0_mesh / @s1_mesh of @mesh (gpus 0-1 / 2-3)
//   func.func @step(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
//     %x = monarch.feed %arg0 to @s0_mesh
//     // blocks of three elementwise linalg.generic ops (add, mul, max), each
//     // with its tensor.empty; a monarch.transfer to the other slice every
//     // ~K ops; every third segment between transfers starts with a block
//     // that splits its input rows over "gpus" and annotates its result
//     // replicated (partitioning inserts an all_gather)
//     %r = monarch.fetch %x from @s<i>_mesh
//   }
//
// "Ops" are the operations of the traced function with a tensor result
// (feed, tensor.empty, linalg.generic, shard.shard, transfer, fetch).
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/MonarchDialect.h"
#include "monarch/Support/Knobs.h"
#include "monarch/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;

namespace {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  std::vector<int64_t> sizes = {100, 300, 1000, 3000, 10000, 30000, 100000};
  int64_t transferEvery = 48;
  int reps = 0; // 0: by size (5 up to 1000 ops, 3 up to 10000, then 1).
  bool printIR = false;
  bool verbose = false;
  bool singleThread = false;
  bool verifyEachPass = false;
};

void usage(llvm::raw_ostream &os) {
  os << "usage: compile_scaling [--quick] [--max=N] [--sizes=a,b,...]\n"
        "                       [--transfer-every=K] [--reps=R] [--verbose]\n"
        "                       [--single-thread] [--verify-each-pass]\n"
        "                       [--print-ir]\n"
        "  --quick             sizes 100, 1000, 10000\n"
        "  --max=N             stop after the sizes <= N\n"
        "  --sizes=a,b,...     explicit sizes (ops per program)\n"
        "  --transfer-every=K  a monarch.transfer every ~K ops (default 48)\n"
        "  --reps=R            repetitions per size, best taken (default:\n"
        "                      5 up to 1000 ops, 3 up to 10000, then 1)\n"
        "  --verbose           op counts of the IR after each pass\n"
        "  --single-thread     no MLIR thread pool (the verifier uses it)\n"
        "  --verify-each-pass  the IR verifier after every pass, not once\n"
        "                      on the result\n"
        "  --print-ir          print the traced program of the first size\n"
        "                      and exit\n";
}

std::optional<int64_t> parseInt(llvm::StringRef text) {
  int64_t value;
  if (text.getAsInteger(10, value) || value <= 0)
    return std::nullopt;
  return value;
}

std::optional<Options> parseOptions(int argc, char **argv) {
  Options options;
  std::optional<int64_t> max;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--quick") {
      options.sizes = {100, 1000, 10000};
    } else if (arg.consume_front("--max=")) {
      if (!(max = parseInt(arg)))
        return std::nullopt;
    } else if (arg.consume_front("--sizes=")) {
      options.sizes.clear();
      llvm::SmallVector<llvm::StringRef> parts;
      arg.split(parts, ',', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef part : parts) {
        std::optional<int64_t> size = parseInt(part);
        if (!size)
          return std::nullopt;
        options.sizes.push_back(*size);
      }
    } else if (arg.consume_front("--transfer-every=")) {
      std::optional<int64_t> k = parseInt(arg);
      if (!k)
        return std::nullopt;
      options.transferEvery = *k;
    } else if (arg.consume_front("--reps=")) {
      std::optional<int64_t> r = parseInt(arg);
      if (!r)
        return std::nullopt;
      options.reps = static_cast<int>(*r);
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--single-thread") {
      options.singleThread = true;
    } else if (arg == "--verify-each-pass") {
      options.verifyEachPass = true;
    } else if (arg == "--print-ir") {
      options.printIR = true;
    } else {
      return std::nullopt;
    }
  }
  if (max)
    llvm::erase_if(options.sizes, [&](int64_t n) { return n > *max; });
  llvm::sort(options.sizes);
  if (options.sizes.empty())
    return std::nullopt;
  return options;
}

//===----------------------------------------------------------------------===//
// The synthetic traced program
//===----------------------------------------------------------------------===//

void registerDialects(DialectRegistry &registry) {
  registry.insert<monarch::MonarchDialect, func::FuncDialect,
                  arith::ArithDialect, tensor::TensorDialect,
                  linalg::LinalgDialect, shard::ShardDialect, scf::SCFDialect,
                  memref::MemRefDialect, bufferization::BufferizationDialect>();
  // monarch-partition runs upstream sharding propagation, which needs the
  // sharding interfaces of the ops it meets.
  linalg::registerShardingInterfaceExternalModels(registry);
  arith::registerShardingInterfaceExternalModels(registry);
  tensor::registerShardingInterfaceExternalModels(registry);
}

class ProgramBuilder {
public:
  ProgramBuilder(MLIRContext &ctx, int64_t transferEvery)
      : ctx(ctx), b(&ctx), transferEvery(transferEvery),
        type(RankedTensorType::get({8, 16}, b.getF32Type())) {}

  /// A traced module whose program has about `target` ops (at least).
  OwningOpRef<ModuleOp> build(int64_t target) {
    numOps = 0;
    line = 1;
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc());
    b.setInsertionPointToEnd(module->getBody());
    auto dims = b.getStrArrayAttr({"hosts", "gpus"});
    shard::GridOp::create(b, loc(), "mesh_grid", ArrayRef<int64_t>{1, 4});
    shard::GridOp::create(b, loc(), "half_grid", ArrayRef<int64_t>{1, 2});
    monarch::ProcMeshOp::create(b, loc(), "mesh", dims, ArrayRef<int64_t>{1, 4},
                                "mesh_grid");
    monarch::MeshSliceOp::create(b, loc(), "s0_mesh", "mesh", dims,
                                 ArrayRef<int64_t>{0, 0},
                                 ArrayRef<int64_t>{1, 2}, "half_grid");
    monarch::MeshSliceOp::create(b, loc(), "s1_mesh", "mesh", dims,
                                 ArrayRef<int64_t>{0, 2},
                                 ArrayRef<int64_t>{1, 4}, "half_grid");

    auto fn = func::FuncOp::create(b, loc(), "step",
                                   b.getFunctionType({type}, {type}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    // Rows split over grid axis 1 ("gpus"), and replicated.
    shard::GridAxesAttr gpus = b.getDenseI16ArrayAttr({1});
    shard::GridAxesAttr none = b.getDenseI16ArrayAttr({});
    split = shard::ShardingOp::create(b, loc(), "half_grid",
                                      ArrayRef<shard::GridAxesAttr>{gpus});
    replicated = shard::ShardingOp::create(b, loc(), "half_grid",
                                           ArrayRef<shard::GridAxesAttr>{none});

    const char *slices[] = {"s0_mesh", "s1_mesh"};
    int current = 0;
    Value x = count(monarch::FeedOp::create(b, loc(), entry->getArgument(0),
                                            slices[current]));
    int64_t sinceTransfer = 0, segment = 0;
    while (numOps + 1 < target) {
      int64_t before = numOps;
      // Every third segment starts with a sharded block (see buildBlock).
      x = buildBlock(x, /*sharded=*/sinceTransfer == 0 && segment % 3 == 0);
      sinceTransfer += numOps - before;
      if (sinceTransfer >= transferEvery && numOps + 2 < target) {
        int next = 1 - current;
        x = count(monarch::TransferOp::create(
            b, loc(), type, x, b.getAttr<FlatSymbolRefAttr>(slices[current]),
            b.getAttr<FlatSymbolRefAttr>(slices[next])));
        current = next;
        sinceTransfer = 0;
        ++segment;
      }
    }
    Value r = count(monarch::FetchOp::create(b, loc(), x, slices[current]));
    func::ReturnOp::create(b, loc(), r);
    return module;
  }

  int64_t numOps = 0;

private:
  /// Three elementwise ops on `x`. A sharded block splits its input rows over
  /// "gpus" and hands its result on replicated (an all_gather). It only
  /// starts a segment, annotating the fed or transferred value itself: a
  /// replicated -> split resharding inside a segment (shard.all_slice) and
  /// a split that sharding propagation pushes back onto a segment argument
  /// are not supported by monarch-partition yet.
  Value buildBlock(Value x, bool sharded) {
    if (sharded)
      x = count(shard::ShardOp::create(b, loc(), x, split,
                                       /*annotate_for_users=*/false));
    Value a = elementwise(Kind::Add, x, x);
    Value m = elementwise(Kind::Mul, a, x);
    Value y = elementwise(Kind::Max, m, a);
    if (sharded)
      y = count(shard::ShardOp::create(b, loc(), y, replicated,
                                       /*annotate_for_users=*/true));
    return y;
  }

  enum class Kind { Add, Mul, Max };

  Value elementwise(Kind kind, Value lhs, Value rhs) {
    Value init = count(
        tensor::EmptyOp::create(b, loc(), type.getShape(), b.getF32Type()));
    AffineMap id = b.getMultiDimIdentityMap(2);
    SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        b, loc(), TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
        ArrayRef<AffineMap>{id, id, id}, parallel,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value v;
          switch (kind) {
          case Kind::Add:
            v = arith::AddFOp::create(nb, l, args[0], args[1]);
            break;
          case Kind::Mul:
            v = arith::MulFOp::create(nb, l, args[0], args[1]);
            break;
          case Kind::Max:
            v = arith::MaximumFOp::create(nb, l, args[0], args[1]);
            break;
          }
          linalg::YieldOp::create(nb, l, v);
        });
    return count(generic);
  }

  Value count(Operation *op) {
    ++numOps;
    return op->getResult(0);
  }

  /// Every traced op gets its own source line, as the tracer records them.
  Location loc() {
    return FileLineColLoc::get(&ctx, "synthetic_step.py", line++, 5);
  }

  MLIRContext &ctx;
  OpBuilder b;
  int64_t transferEvery;
  RankedTensorType type;
  Value split, replicated;
  unsigned line = 1;
};

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

struct PipelinePass {
  const char *name;   // flag
  const char *column; // table header
  std::function<std::unique_ptr<Pass>()> create;
};

std::vector<PipelinePass> pipelinePasses() {
  return {
      {"monarch-partition", "partition",
       [] {
         // MONARCH_PARTITION_ENGINE=own times the own partitioner.
         monarch::MonarchPartitionOptions options;
         options.engine =
             monarch::knobs::getString(monarch::knobs::Id::PartitionEngine)
                 .value;
         return monarch::createMonarchPartition(options);
       }},
      {"monarch-split-control-data", "split",
       [] { return monarch::createMonarchSplitControlData(); }},
      {"monarch-specialize-ranks", "specialize",
       [] { return monarch::createMonarchSpecializeRanks(); }},
      {"monarch-plan-transfers", "plan",
       [] { return monarch::createMonarchPlanTransfers(); }},
      {"monarch-schedule", "schedule",
       [] { return monarch::createMonarchSchedule(); }},
      {"monarch-verify-plan", "verify-plan",
       [] { return monarch::createMonarchVerifyPlan(); }},
  };
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Seconds per pass (then the IR verifier, run after every pass) for one
/// size, best of the repetitions; or the failure.
struct Measurement {
  int64_t size = 0; // requested
  int64_t ops = 0;  // generated
  int reps = 0;
  std::vector<double> seconds; // one per pass, then the IR verifier
  double total = 0;
  double cpu = 0; // process CPU seconds of the best repetition
  std::string failure;
};

/// Counts of the monarch ops, functions and linalg.generic ops (--verbose).
void printOpCounts(ModuleOp module, llvm::StringRef after) {
  std::map<std::string, int64_t> counts;
  module.walk([&](Operation *op) {
    llvm::StringRef name = op->getName().getStringRef();
    if (name.starts_with("monarch.") || name == "linalg.generic" ||
        name == "func.func")
      ++counts[name.str()];
  });
  llvm::outs() << "    after " << after << ":";
  for (auto &[name, n] : counts)
    llvm::outs() << " " << name << "=" << n;
  llvm::outs() << "\n";
}

Measurement measure(int64_t size, const Options &options,
                    const std::vector<PipelinePass> &passes) {
  Measurement m;
  m.size = size;
  m.reps = options.reps    ? options.reps
           : size <= 1000  ? 5
           : size <= 10000 ? 3
                           : 1;
  m.seconds.assign(passes.size() + 1, std::numeric_limits<double>::infinity());
  m.total = std::numeric_limits<double>::infinity();

  // One context per size: repetitions share it (uniqued attributes and
  // types are created once), sizes do not accumulate each other's.
  DialectRegistry registry;
  registerDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // Threads as in monarch-opt (only the verifier uses them: the passes are
  // module passes), unless --single-thread.
  if (options.singleThread)
    ctx.disableMultithreading();
  // Diagnostics are reported one line each; the op they name can be huge.
  ctx.printOpOnDiagnostic(false);
  std::vector<std::string> diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << diag.getLocation() << ": " << diag.str();
    for (Diagnostic &note : diag.getNotes())
      os << "\n      note: " << note.str();
    if (text.size() > 600)
      text = text.substr(0, 600) + " ...";
    diagnostics.push_back(text);
    return success();
  });
  auto failWith = [&](std::string what) {
    m.failure = what;
    for (const std::string &d : llvm::ArrayRef(diagnostics).take_front(5))
      m.failure += "\n    " + d;
    if (diagnostics.size() > 5)
      m.failure +=
          "\n    (" + std::to_string(diagnostics.size() - 5) + " more)";
    return m;
  };

  ProgramBuilder builder(ctx, options.transferEvery);
  for (int rep = 0; rep < m.reps; ++rep) {
    OwningOpRef<ModuleOp> module = builder.build(size);
    m.ops = builder.numOps;
    if (failed(verify(*module)))
      return failWith("the synthetic program does not verify");
    bool verbose = options.verbose && rep == 0;
    if (verbose)
      printOpCounts(*module, "build");

    std::vector<double> seconds(passes.size() + 1, 0.0);
    std::clock_t cpuStart = std::clock();
    for (auto [i, info] : llvm::enumerate(passes)) {
      // The verifier is timed on its own below, not inside the pass.
      PassManager pm(&ctx);
      pm.enableVerifier(false);
      pm.addPass(info.create());
      Clock::time_point start = Clock::now();
      LogicalResult result = pm.run(*module);
      seconds[i] = secondsSince(start);
      if (failed(result))
        return failWith(std::string(info.name) + " failed");
      // Verified where monarch-compile verifies: at the end of each stage
      // (partitioned, split, planned; runStagePipelines), or with
      // --verify-each-pass after every pass (the PassManager default).
      llvm::StringRef name = info.name;
      bool stageEnd = name == "monarch-partition" ||
                      name == "monarch-split-control-data" ||
                      i + 1 == passes.size();
      if (!stageEnd && !options.verifyEachPass) {
        if (verbose)
          printOpCounts(*module, info.name);
        continue;
      }
      start = Clock::now();
      result = verify(*module);
      seconds.back() += secondsSince(start);
      if (failed(result))
        return failWith(std::string("IR after ") + info.name +
                        " does not verify");
      if (verbose)
        printOpCounts(*module, info.name);
    }
    double cpu = static_cast<double>(std::clock() - cpuStart) / CLOCKS_PER_SEC;
    double total = 0;
    for (double s : seconds)
      total += s;
    // Best of the repetitions, per pass and end to end.
    for (auto [best, s] : llvm::zip(m.seconds, seconds))
      best = std::min(best, s);
    if (total < m.total) {
      m.total = total;
      m.cpu = cpu;
    }
  }
  return m;
}

/// Least-squares slope of log(y) against log(x).
double logLogSlope(llvm::ArrayRef<double> x, llvm::ArrayRef<double> y) {
  double n = x.size(), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [xi, yi] : llvm::zip(x, y)) {
    double lx = std::log(xi), ly = std::log(std::max(yi, 1e-9));
    sx += lx;
    sy += ly;
    sxx += lx * lx;
    sxy += lx * ly;
  }
  double denom = n * sxx - sx * sx;
  return denom == 0 ? 0 : (n * sxy - sx * sy) / denom;
}

} // namespace

int main(int argc, char **argv) {
  std::optional<Options> options = parseOptions(argc, argv);
  if (!options) {
    usage(llvm::errs());
    return 2;
  }
  llvm::raw_ostream &os = llvm::outs();

  if (options->printIR) {
    DialectRegistry registry;
    registerDialects(registry);
    MLIRContext ctx(registry);
    ctx.loadAllAvailableDialects();
    ProgramBuilder builder(ctx, options->transferEvery);
    OwningOpRef<ModuleOp> module = builder.build(options->sizes.front());
    module->print(os);
    return failed(verify(*module)) ? 1 : 0;
  }

  std::vector<PipelinePass> passes = pipelinePasses();
  os << "compile_scaling: synthetic traced programs (1x4 mesh, two slices,\n"
        "elementwise linalg.generic on tensor<8x16xf32>, a transfer every ~"
     << options->transferEvery
     << " ops,\nevery third segment split over \"gpus\") through the "
        "pipeline, one pass at a time.\n"
        "us/op = microseconds per traced tensor op; 'ir-verify' is "
        "mlir::verify "
     << (options->verifyEachPass ? "after every pass"
                                 : "at the end of each stage, as "
                                   "monarch-compile runs it")
     << ".\n\n";

  std::vector<std::string> columns;
  for (const PipelinePass &p : passes)
    columns.push_back(p.column);
  columns.push_back("ir-verify");
  columns.push_back("total");
  os << llvm::format("%8s %5s", "ops", "reps");
  for (const std::string &c : columns)
    os << llvm::format(" %11s", c.c_str());
  os << llvm::format(" %9s %8s\n", "total(s)", "cpu/wall");
  os.flush();

  std::vector<Measurement> done;
  for (int64_t size : options->sizes) {
    Measurement m = measure(size, *options, passes);
    if (!m.failure.empty()) {
      os << llvm::format("%8lld ", static_cast<long long>(m.ops))
         << "FAILED: " << m.failure << "\n";
      os.flush();
      continue;
    }
    os << llvm::format("%8lld %5d", static_cast<long long>(m.ops), m.reps);
    for (double s : m.seconds)
      os << llvm::format(" %11.2f", s * 1e6 / m.ops);
    os << llvm::format(" %11.2f", m.total * 1e6 / m.ops);
    os << llvm::format(" %9.3f %8.2f\n", m.total, m.cpu / m.total);
    os.flush();
    done.push_back(std::move(m));
  }

  if (done.size() < 2) {
    os << "\nfewer than two sizes measured: no slope\n";
    return 0;
  }
  // The fit over all sizes is the target; the fit over the largest decade
  // shows a super-linear term that only the big programs expose.
  std::vector<double> sizes;
  for (const Measurement &m : done)
    sizes.push_back(m.ops);
  size_t top = 0;
  while (top + 2 < done.size() && done[top].ops * 10 < done.back().ops)
    ++top;
  os << "\nlog-log slope of time vs size (1.0 = linear, 2.0 = quadratic):\n"
     << llvm::format("  %-12s %9s %14s\n", "", "all sizes",
                     ("sizes >= " + std::to_string(done[top].ops)).c_str());
  for (auto [i, column] : llvm::enumerate(columns)) {
    std::vector<double> times;
    for (const Measurement &m : done)
      times.push_back(i < m.seconds.size() ? m.seconds[i] : m.total);
    os << llvm::format("  %-12s %9.2f %14.2f\n", column.c_str(),
                       logLogSlope(sizes, times),
                       logLogSlope(llvm::ArrayRef(sizes).drop_front(top),
                                   llvm::ArrayRef(times).drop_front(top)));
  }

  std::vector<double> totals;
  for (const Measurement &m : done)
    totals.push_back(m.total);
  double slope = logLogSlope(sizes, totals);
  const Measurement &largest = done.back();
  // Wall time well above this process's CPU time means other processes took
  // the cores (or it waited on memory): the per-op numbers are inflated.
  if (llvm::any_of(done, [](const Measurement &m) {
        return m.total > 0.05 && m.cpu < 0.8 * m.total;
      }))
    os << "\nnote: cpu/wall < 0.8 at some sizes: the machine was busy, wall "
          "times are inflated there\n";
  double perOp = largest.total * 1e6 / largest.ops;
  os << "\n"
     << llvm::format("slope %.2f (target <= 1.1): %s\n", slope,
                     slope <= 1.1 ? "met" : "NOT met")
     << llvm::format("end-to-end %.2f us/op at %lld (target < 50): %s\n", perOp,
                     static_cast<long long>(largest.ops),
                     perOp < 50 ? "met" : "NOT met");
  return 0;
}
