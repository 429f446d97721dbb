//===- CompileSession.cpp - One compile of a monarch program --------------===//
//
// The cache key is (compiler fingerprint, options, compile-input knobs,
// the input module printed with its locations); one key for every caller,
// so a program compiled by monarch-compile and the same program from
// Python share an entry. The printed input doubles as the reproducer's
// input when the module did not come from a file.
//
//===----------------------------------------------------------------------===//
#include "monarch/Driver/CompileSession.h"

#include "monarch/Codegen/PlanBuilder.h"
#include "monarch/Codegen/PlanCache.h"
#include "monarch/Driver/DumpAfterEachPass.h"
#include "monarch/IR/SourceLocation.h"
#include "monarch/Plan/PlanFile.h"
#include "monarch/Support/Knobs.h"
#include "monarch/Support/Progress.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <mutex>
#include <optional>

#ifndef MONARCH_VERSION
#define MONARCH_VERSION "unknown"
#endif

using namespace mlir;
using namespace monarch::codegen;
using namespace monarch::plan;

namespace monarch::driver {

namespace {
/// An address inside this library, for the compiler fingerprint.
void fingerprintAnchor() {}
} // namespace

struct CompileSession::Impl {
  MLIRContext &context;
  CompileOptions options;
  bool cacheHit = false;
  std::string cacheNote, diagnostics, failureText, reproducer;
  /// Where the time went: per pass, then the kernel libraries' reports.
  std::string timings;
  /// Seconds per pass argument, in first-run order; the time of a pass is
  /// from its start to the next pass's start (or the end of the stages).
  std::vector<std::pair<std::string, double>> passSeconds;
  /// The input printed with locations (cache key, reproducer input).
  std::string inputText;

  Impl(MLIRContext &context, CompileOptions options)
      : context(context), options(std::move(options)) {}

  bool fromFile() const {
    return !options.inputFile.empty() && options.inputFile != "-";
  }

  void printInput(ModuleOp module) {
    if (!inputText.empty())
      return;
    llvm::raw_string_ostream os(inputText);
    module->print(os, OpPrintingFlags().enableDebugInfo(true, false));
  }

  /// Runs `fn` with diagnostics captured when asked.
  template <typename Fn> auto withDiagnostics(Fn fn) {
    if (!options.captureDiagnostics)
      return fn();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      // Remarks are asked for (MONARCH_PARTITION_REMARKS): shown now, on
      // stderr at the user's line, not kept for an error message.
      if (diag.getSeverity() == DiagnosticSeverity::Remark) {
        printRemark(diag);
        return success();
      }
      llvm::raw_string_ostream os(diagnostics);
      printDiagnostic(diag, os);
      return success();
    });
    return fn();
  }

  /// The file the reproducer names: the input file, else a copy of the
  /// input in the dump directory or the temporary directory.
  std::string reproducerInput() {
    if (fromFile())
      return options.inputFile;
    if (inputText.empty())
      return "<the input>";
    llvm::SmallString<256> path;
    std::array<uint8_t, 32> digest = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(inputText.data()), inputText.size()));
    std::string name =
        "monarch-repro-" + llvm::toHex(digest, true).substr(0, 12) + ".mlir";
    if (!options.dumpDir.empty())
      path = options.dumpDir;
    else
      llvm::sys::path::system_temp_directory(/*erasedOnReboot=*/true, path);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return "<the input: cannot write " + std::string(path) + ": " +
             ec.message() + ">";
    os << inputText;
    return std::string(path);
  }

  /// The environment and the options, checked once per entry point.
  LogicalResult checkSettings() {
    if (std::string bad = knobs::validate(knobs::Compiler); !bad.empty()) {
      failureText = bad;
      return mlir::failure();
    }
    if (options.backend != "gloo" && options.backend != "nccl") {
      failureText = "unknown backend '" + options.backend + "' (gloo or nccl)";
      return mlir::failure();
    }
    return success();
  }

  /// Shown after 2 s of compiling (Progress.h).
  ProgressLine *progress = nullptr;

  std::string progressLabel() const {
    return options.source.empty() ? std::string("compiling")
                                  : "compiling " + options.source;
  }

  LogicalResult lower(ModuleOp module, Stage to) {
    if (failed(checkSettings()))
      return mlir::failure();
    ProgressLine line(progressLabel(), std::chrono::seconds(2));
    progress = &line;
    LogicalResult ok = runStages(module, to);
    progress = nullptr;
    return ok;
  }

  /// Appends "passes: T s (pass t s, ...)" to `timings`, slowest first.
  void describePasses(double total) {
    auto sorted = passSeconds;
    llvm::stable_sort(sorted, [](const auto &a, const auto &b) {
      return a.second > b.second;
    });
    llvm::raw_string_ostream os(timings);
    os << "passes: " << llvm::format("%.2f", total) << " s (";
    for (auto [i, entry] : llvm::enumerate(sorted)) {
      if (i == 6) {
        os << ", ...";
        break;
      }
      os << (i ? ", " : "") << entry.first << " "
         << llvm::format("%.2f", entry.second) << " s";
    }
    os << ")\n";
  }

  /// The stage ladder up to `to`, after checkSettings.
  LogicalResult runStages(ModuleOp module, Stage to) {
    if (to < options.from) {
      failureText = "cannot compile from '" +
                    std::string(stageName(options.from)) + "' back to '" +
                    std::string(stageName(to)) + "'";
      return mlir::failure();
    }
    if (to == options.from)
      return success();
    if (!fromFile())
      printInput(module);
    PipelineOptions pipelineOptions;
    pipelineOptions.backend = options.backend;
    pipelineOptions.groupBytes = options.groupBytes;
    StageRunOptions run;
    run.verifyEachPass = options.verifyEach;
    using Clock = std::chrono::steady_clock;
    std::mutex passMutex;
    std::string currentPass;
    Clock::time_point passStart = Clock::now(), stagesStart = passStart;
    // Nested passes may start on several threads at once: their time goes
    // to whichever pass started last.
    auto closePass = [&](Clock::time_point now) {
      if (currentPass.empty())
        return;
      double seconds = std::chrono::duration<double>(now - passStart).count();
      auto it = llvm::find_if(passSeconds, [&](const auto &entry) {
        return entry.first == currentPass;
      });
      if (it == passSeconds.end())
        passSeconds.emplace_back(currentPass, seconds);
      else
        it->second += seconds;
    };
    ProgressLine *line = progress;
    run.onPass = [&, line](llvm::StringRef pass) {
      if (line)
        line->update(pass.str());
      std::lock_guard<std::mutex> lock(passMutex);
      Clock::time_point now = Clock::now();
      closePass(now);
      currentPass = pass.str();
      passStart = now;
    };
    llvm::scope_exit recordTimings([&] {
      std::lock_guard<std::mutex> lock(passMutex);
      Clock::time_point now = Clock::now();
      closePass(now);
      currentPass.clear();
      describePasses(std::chrono::duration<double>(now - stagesStart).count());
    });
    if (!options.dumpDir.empty()) {
      if (std::error_code ec =
              llvm::sys::fs::create_directories(options.dumpDir)) {
        failureText = "cannot create dump directory " + options.dumpDir + ": " +
                      ec.message();
        return mlir::failure();
      }
      auto dumper = std::make_unique<DumpAfterEachPass>(options.dumpDir);
      dumper->write(module, "00-input.mlir");
      dumper->write(module, stageName(options.from).str() + ".mlir");
      // Each stage as `<stage>.mlir` too: the files a reader opens first.
      DumpAfterEachPass *stages = dumper.get();
      run.onStage = [stages](Stage stage, ModuleOp m) {
        stages->write(m, stageName(stage).str() + ".mlir");
      };
      run.observer = std::move(dumper);
      // Dumps are for finding the pass at fault: check after every pass.
      run.verifyEachPass = true;
    }
    std::string pipeline;
    LogicalResult ok = withDiagnostics([&] {
      return runStagePipelines(module, options.from, to, pipelineOptions,
                               std::move(run), &pipeline);
    });
    if (succeeded(ok))
      return success();
    failureText = "compiling to '" + std::string(stageName(to)) + "' failed";
    reproducer = "monarch-opt " + reproducerInput() + " --pass-pipeline='" +
                 pipeline + "'";
    return mlir::failure();
  }

  std::string optionsKey() const {
    const KernelCompileOptions &k = options.kernels;
    bool cuda = k.target == KernelTarget::Cuda;
    std::string key = "backend=" + options.backend +
                      ";group-bytes=" + std::to_string(options.groupBytes) +
                      ";target=" + (cuda ? "cuda" : "cpu") +
                      ";opt=" + std::to_string(k.optLevel) +
                      ";cuda-arch=" + k.cudaArch +
                      ";kernels=" + (kernelCompilerAvailable() ? "1" : "0");
    if (!cuda)
      key += ";cpu=" + (k.cpu == "host" ? hostCpuDescription() : k.cpu);
    if (options.from != Stage::Traced)
      key += ";from=" + stageName(options.from).str();
    return key;
  }

  FailureOr<std::string> compilePlan(ModuleOp module) {
    if (failed(checkSettings()))
      return mlir::failure();
    // The cache: not when the passes must run to be dumped or to say how
    // they partitioned (MONARCH_PARTITION_REMARKS).
    PlanCache cache(planCacheConfigFromEnvironment());
    std::string cacheKey;
    if (options.useCache && cache.enabled() && options.dumpDir.empty() &&
        !knobs::getBool(knobs::Id::PartitionRemarks).value) {
      printInput(module);
      const void *anchors[] = {
          reinterpret_cast<const void *>(&monarch::populateStagePipelines),
          reinterpret_cast<const void *>(&monarch::registerMonarchDialects),
          reinterpret_cast<const void *>(&buildExecutionPlan),
          reinterpret_cast<const void *>(&fingerprintAnchor)};
      cacheKey =
          planCacheKey(inputText, compilerFingerprint(anchors), optionsKey());
      std::string corruption;
      if (std::optional<std::string> hit =
              cache.lookup(cacheKey, &corruption)) {
        cacheHit = true;
        cacheNote = "cache hit " + cache.entryPath(cacheKey);
        return std::move(*hit);
      }
      cacheNote = "cache miss " + cacheKey +
                  (corruption.empty()
                       ? std::string()
                       : " (removed a corrupt entry: " + corruption + ")");
    }
    ProgressLine line(progressLabel(), std::chrono::seconds(2));
    progress = &line;
    LogicalResult staged = runStages(module, Stage::Planned);
    progress = nullptr;
    if (failed(staged))
      return mlir::failure();
    line.update("building the plan and compiling its kernels");
    PlanBuildOptions build;
    // runStages ends with the IR verifier (after every pass, or at the end
    // of the last stage).
    build.moduleVerified = true;
    build.kernels = options.kernels;
    build.kernels.profile |=
        !knobs::getString(knobs::Id::KernelProfile).value.empty();
    // The kernel cache sits beside the plans, whenever the cache is on.
    if (options.useCache && cache.enabled() &&
        build.kernels.cacheDirectory.empty()) {
      llvm::SmallString<256> dir(cache.directory());
      llvm::sys::path::append(dir, "kernels");
      build.kernels.cacheDirectory = std::string(dir);
      build.kernels.cacheMaxBytes =
          static_cast<uint64_t>(knobs::getInt(knobs::Id::KernelCacheMb).value) *
          (uint64_t(1) << 20);
    }
    build.onKernelsCompiled = [this](const KernelLibrary &library) {
      timings += formatKernelReport(library);
    };
    build.compilerVersion = MONARCH_VERSION;
    build.source = options.source;
    // Validated below, beside serializing it.
    build.validate = false;
    FailureOr<ExecutionPlan> plan =
        withDiagnostics([&] { return buildExecutionPlan(module, build); });
    if (failed(plan)) {
      failureText =
          "cannot build the ExecutionPlan of '" + options.source + "'";
      return mlir::failure();
    }
    // validatePlan and the encoding each read the whole plan (at 4,096
    // ranks a tenth of the compile each): the check runs on the context's
    // thread pool while this thread encodes, and the bytes are kept only if
    // it passes.
    executor::Status valid = executor::Status::ok();
    std::optional<llvm::ThreadPoolTaskGroup> checking;
    if (context.isMultithreadingEnabled()) {
      checking.emplace(context.getThreadPool());
      checking->async([&] { valid = validatePlan(*plan); });
    } else {
      valid = validatePlan(*plan);
    }
    executor::StatusOr<std::string> bytes =
        serializePlan(*plan, PlanChecked::Validated);
    if (checking)
      checking->wait();
    if (!valid) {
      // The IR verifiers should make this unreachable; say so if not.
      failureText = "internal error: the ExecutionPlan built from '" +
                    options.source + "' is inconsistent: " + valid.message();
      return mlir::failure();
    }
    if (!bytes) {
      failureText = bytes.status().message();
      return mlir::failure();
    }
    if (options.disableFree)
      llvm::BuryPointer(std::make_unique<ExecutionPlan>(std::move(*plan)));
    if (!cacheKey.empty())
      if (executor::Status s = cache.store(cacheKey, *bytes); !s)
        cacheNote += " (not cached: " + s.message() + ")";
    return std::move(*bytes);
  }
};

CompileSession::CompileSession(MLIRContext &context, CompileOptions options)
    : impl_(std::make_unique<Impl>(context, std::move(options))) {}
CompileSession::~CompileSession() = default;

LogicalResult CompileSession::lower(ModuleOp module, Stage to) {
  return impl_->lower(module, to);
}
FailureOr<std::string> CompileSession::compilePlan(ModuleOp module) {
  return impl_->compilePlan(module);
}
bool CompileSession::cacheHit() const { return impl_->cacheHit; }
const std::string &CompileSession::cacheNote() const {
  return impl_->cacheNote;
}
const std::string &CompileSession::timings() const { return impl_->timings; }
const std::string &CompileSession::diagnostics() const {
  return impl_->diagnostics;
}
const std::string &CompileSession::error() const { return impl_->failureText; }
const std::string &CompileSession::reproducer() const {
  return impl_->reproducer;
}
std::string CompileSession::report() const {
  std::string out = impl_->failureText;
  if (!impl_->diagnostics.empty())
    out += ":\n" + impl_->diagnostics;
  else if (!out.empty())
    out += "\n";
  if (!impl_->reproducer.empty()) {
    out += "reproduce with:\n  " + impl_->reproducer + "\n";
    if (!impl_->options.dumpDir.empty())
      out += "IR after each pass is in " + impl_->options.dumpDir + "\n";
  }
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

} // namespace monarch::driver
