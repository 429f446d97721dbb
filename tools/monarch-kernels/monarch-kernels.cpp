//===- monarch-kernels.cpp - Inspect and compile -------------- -*- C++ -*-===//
//
// Reads a module (planned IR, or plain functions in the kernel ABI), picks
// its kernels (the functions named by `monarch.launch`, otherwise every
// function with a body, or those given with --kernel) and either prints one
// lowering stage per kernel (--emit=prepared|scheduled|bufferized|
// llvm-dialect|llvm|asm|ptx) or compiles them all into one library
// (--emit=summary prints the kernel table after loading the library through
// MonarchKernelRuntime; -o writes the library).
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Codegen/KernelInspect.h"
#include "monarch/Executor/KernelRuntime.h"
#include "monarch/IR/MonarchDialect.h"
#include "monarch/Support/ParserHazards.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

using namespace mlir;
using namespace monarch::codegen;
using namespace monarch::plan;
using namespace monarch::executor;

namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<std::string>
    emit("emit",
         cl::desc("What to produce: summary (default), library, check "
                  "(optimized kernels against the reference lowering on "
                  "random inputs), prepared, scheduled, bufferized, "
                  "llvm-dialect, llvm, asm, ptx"),
         cl::init("summary"));
static cl::opt<std::string> target("target", cl::desc("cpu (default) or cuda"),
                                   cl::init("cpu"));
static cl::opt<std::string> cudaArch("cuda-arch", cl::desc("SM architecture"),
                                     cl::init("sm_90"));
static cl::list<std::string> kernelNames("kernel",
                                         cl::desc("Compile only this kernel"));
static cl::opt<bool>
    showTimes("times",
              cl::desc("Print compile times (with "
                       "--emit=check: each kernel's run time)"),
              cl::init(false));
static cl::opt<unsigned> seed("seed", cl::desc("Random inputs of --emit=check"),
                              cl::init(1));
static cl::opt<bool>
    profile("profile",
            cl::desc("Compile the kernels with a timer around every loop "
                     "nest, run each on random inputs and print where the "
                     "time goes: op, shapes, the user's line, time, "
                     "GFLOP/s and GB/s"),
            cl::init(false));
static cl::opt<unsigned>
    profileRuns("runs", cl::desc("Calls of each kernel timed by --profile"),
                cl::init(20));

/// Random bytes for one kernel argument of `type` (a tensor input or a
/// memref output): floats uniform in [low, high), integers in [low, high),
/// booleans (bytes) 0 or 1. Nothing for an element type it does not know.
static std::optional<std::vector<uint8_t>>
randomArgument(Type type, std::mt19937 &rng, double low, double high) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return std::nullopt;
  Type elem = shaped.getElementType();
  int64_t n = shaped.getNumElements();
  std::uniform_real_distribution<double> real(low, high);
  std::vector<uint8_t> bytes;
  auto put = [&](const void *p, size_t size) {
    const auto *b = static_cast<const uint8_t *>(p);
    bytes.insert(bytes.end(), b, b + size);
  };
  for (int64_t i = 0; i < n; ++i) {
    double v = real(rng);
    if (elem.isF32()) {
      float f = static_cast<float>(v);
      put(&f, 4);
    } else if (elem.isF64()) {
      put(&v, 8);
    } else if (elem.isF16() || elem.isBF16()) {
      APFloat f(v);
      bool lost;
      f.convert(elem.isF16() ? APFloat::IEEEhalf() : APFloat::BFloat(),
                APFloat::rmNearestTiesToEven, &lost);
      uint16_t h = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
      put(&h, 2);
    } else if (elem.isInteger(32)) {
      int32_t x = static_cast<int32_t>(std::floor(v));
      put(&x, 4);
    } else if (elem.isInteger(64)) {
      int64_t x = static_cast<int64_t>(std::floor(v));
      put(&x, 8);
    } else if (elem.isInteger(8) || elem.isInteger(1)) {
      uint8_t x = v - std::floor(v) < 0.5 ? 0 : 1;
      put(&x, 1);
    } else {
      return std::nullopt;
    }
  }
  return bytes;
}

/// Element `i` of `bytes` (of element type `elem`) as a double.
static double element(Type elem, const std::vector<uint8_t> &bytes, int64_t i) {
  const uint8_t *p = bytes.data();
  if (elem.isF32()) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  if (elem.isF64()) {
    double d;
    std::memcpy(&d, p + 8 * i, 8);
    return d;
  }
  if (elem.isF16() || elem.isBF16()) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    APFloat f(elem.isF16() ? APFloat::IEEEhalf() : APFloat::BFloat(),
              APInt(16, h));
    return f.convertToDouble();
  }
  if (elem.isInteger(32)) {
    int32_t x;
    std::memcpy(&x, p + 4 * i, 4);
    return x;
  }
  if (elem.isInteger(64)) {
    int64_t x;
    std::memcpy(&x, p + 8 * i, 8);
    return static_cast<double>(x);
  }
  return p[i] != 0;
}

/// --emit=check: every kernel compiled with the optimized pipeline and with
/// the reference lowering (upstream scalar loops: no fusion, schedules or
/// vectorization), run on the same random inputs through the kernel ABI,
/// outputs compared (outputs poisoned differently, so an element one side
/// does not write shows). One line per kernel; exit 1 on a mismatch.
static int checkKernels(ModuleOp module, ArrayRef<func::FuncOp> kernels,
                        llvm::raw_ostream &os, unsigned seed) {
  KernelCompileOptions optimized, reference;
  reference.referenceLowering = true;
  FailureOr<KernelLibrary> fast = compileKernels(module, kernels, optimized);
  FailureOr<KernelLibrary> slow = compileKernels(module, kernels, reference);
  if (failed(fast) || failed(slow))
    return 1;
  auto fastLib = LoadedKernelLibrary::load(fast->binary, "optimized kernels");
  auto slowLib = LoadedKernelLibrary::load(slow->binary, "reference kernels");
  if (!fastLib || !slowLib) {
    llvm::errs() << "monarch-kernels: cannot load the kernels\n";
    return 1;
  }
  std::mt19937 rng(seed);
  int bad = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    func::FuncOp fn = kernels[k];
    std::vector<std::vector<uint8_t>> inputs, outA, outB;
    SmallVector<Type> outTypes;
    bool known = true;
    for (Type type : fn.getArgumentTypes()) {
      bool isInput = isa<RankedTensorType>(type);
      auto a = randomArgument(type, rng, isInput ? -2.0 : 100.0,
                              isInput ? 2.0 : 200.0);
      auto b = randomArgument(type, rng, -200.0, -100.0);
      if (!a || !b) {
        known = false;
        break;
      }
      if (isInput) {
        inputs.push_back(*a);
      } else {
        outA.push_back(*a);
        outB.push_back(*b);
        outTypes.push_back(type);
      }
    }
    if (!known) {
      os << fn.getSymName() << ": skipped (an argument type the check "
         << "cannot fill)\n";
      continue;
    }
    std::vector<void *> ins, outsA, outsB;
    for (auto &in : inputs)
      ins.push_back(in.data());
    for (auto &out : outA)
      outsA.push_back(out.data());
    for (auto &out : outB)
      outsB.push_back(out.data());
    const CompiledKernel &kf = fast->kernels[k], &ks = slow->kernels[k];
    std::vector<void *> a = kernelCallArguments(kf, ins, outsA),
                        b = kernelCallArguments(ks, ins, outsB);
    auto sa = (*fastLib)->call(kf.symbol, a.data());
    auto sb = (*slowLib)->call(ks.symbol, b.data());
    if (!sa.isOk() || !sb.isOk()) {
      os << fn.getSymName()
         << ": FAILED to run: " << (sa.isOk() ? sb.toString() : sa.toString())
         << "\n";
      ++bad;
      continue;
    }
    // A kernel computing anything in float16/bfloat16 rounds differently
    // between the pipelines (fused temporaries stay in float32, the
    // reference rounds each op): its tolerance is that of its least precise
    // type.
    bool f16 = false, bf16 = false;
    fn.walk([&](Operation *op) {
      for (Type t : op->getResultTypes()) {
        Type e = getElementTypeOrSelf(t);
        f16 |= e.isF16();
        bf16 |= e.isBF16();
      }
    });
    for (Type t : fn.getArgumentTypes()) {
      Type e = getElementTypeOrSelf(t);
      f16 |= e.isF16();
      bf16 |= e.isBF16();
    }
    double rtol = bf16 ? 1e-1 : f16 ? 2e-2 : 1e-4;
    std::string verdict = "ok";
    for (size_t o = 0; o < outA.size() && verdict == "ok"; ++o) {
      auto shaped = cast<ShapedType>(outTypes[o]);
      Type elem = shaped.getElementType();
      for (int64_t i = 0; i < shaped.getNumElements(); ++i) {
        double x = element(elem, outA[o], i), y = element(elem, outB[o], i);
        bool same = (std::isnan(x) && std::isnan(y)) || x == y ||
                    std::fabs(x - y) <= rtol * (1 + std::fabs(y));
        if (!same) {
          std::string type;
          llvm::raw_string_ostream ts(type);
          elem.print(ts);
          verdict = llvm::formatv("MISMATCH in output {0} ({1}) at element "
                                  "{2}: optimized {3}, reference {4}",
                                  o, type, i, llvm::format("%.9g", x),
                                  llvm::format("%.9g", y))
                        .str();
          break;
        }
      }
    }
    if (verdict != "ok") {
      ++bad;
      // At the kernel's line too (stderr), like every other refusal; an
      // output the kernel never writes shows here (outputs are poisoned
      // differently on the two sides).
      fn.emitError("optimized and reference lowerings disagree: ") << verdict;
    }
    os << fn.getSymName() << ": " << verdict;
    // --times: the optimized kernel's run time on these inputs, the median
    // of 21 calls after a warm-up (which kernel of a step is slow).
    if (showTimes) {
      std::vector<double> runs;
      for (int r = 0; r < 22; ++r) {
        auto start = std::chrono::steady_clock::now();
        (void)(*fastLib)->call(kf.symbol, a.data());
        runs.push_back(std::chrono::duration<double, std::micro>(
                           std::chrono::steady_clock::now() - start)
                           .count());
      }
      runs.erase(runs.begin());
      std::nth_element(runs.begin(), runs.begin() + runs.size() / 2,
                       runs.end());
      os << llvm::format(" (%.1f us)", runs[runs.size() / 2]);
    }
    os << "\n";
  }
  os << kernels.size() << " kernels checked against the reference lowering, "
     << bad << " mismatched\n";
  return bad ? 1 : 0;
}

/// Random inputs and outputs for `fn` in the kernel ABI (inputs first);
/// false for an argument type the generator cannot fill.
static bool randomBuffers(func::FuncOp fn, std::mt19937 &rng,
                          std::vector<std::vector<uint8_t>> &buffers) {
  for (Type type : fn.getArgumentTypes()) {
    auto bytes = randomArgument(type, rng, -2.0, 2.0);
    if (!bytes)
      return false;
    buffers.push_back(std::move(*bytes));
  }
  return true;
}

/// --profile: the kernels compiled with a timer around each loop nest
/// (KernelCompileOptions::profile), each called once to warm up and then
/// --runs times on random inputs; prints the profile table, per call.
static int profileKernels(ModuleOp module, ArrayRef<func::FuncOp> kernels,
                          llvm::raw_ostream &os, unsigned seed) {
  KernelCompileOptions options;
  options.profile = true;
  FailureOr<KernelLibrary> library = compileKernels(module, kernels, options);
  if (failed(library))
    return 1;
  auto loaded = LoadedKernelLibrary::load(library->binary, "the kernels");
  if (!loaded.isOk()) {
    llvm::errs() << "monarch-kernels: " << loaded.status().toString() << "\n";
    return 1;
  }
  std::vector<std::string> symbols;
  for (const CompiledKernel &k : library->kernels)
    if (llvm::find(symbols, k.symbol) == symbols.end())
      symbols.push_back(k.symbol);
  std::mt19937 rng(seed);
  unsigned runs = std::max(1u, static_cast<unsigned>(profileRuns));
  double wall = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (library->kernels[k].duplicate)
      continue;
    func::FuncOp fn = kernels[k];
    std::vector<std::vector<uint8_t>> buffers;
    if (!randomBuffers(fn, rng, buffers)) {
      os << fn.getSymName() << ": skipped (an argument type the "
         << "profile cannot fill)\n";
      continue;
    }
    std::vector<void *> ins, outs;
    for (auto [i, b] : llvm::enumerate(buffers))
      (isa<RankedTensorType>(fn.getArgumentTypes()[i]) ? ins : outs)
          .push_back(b.data());
    std::vector<void *> args =
        kernelCallArguments(library->kernels[k], ins, outs);
    const std::string &symbol = library->kernels[k].symbol;
    if (auto st = (*loaded)->call(symbol, args.data()); !st.isOk()) {
      os << fn.getSymName() << ": FAILED to run: " << st.toString() << "\n";
      return 1;
    }
    (*loaded)->resetProfile({symbol});
    auto start = std::chrono::steady_clock::now();
    for (unsigned r = 0; r < runs; ++r)
      (void)(*loaded)->call(symbol, args.data());
    wall +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  std::vector<KernelOpProfile> rows = (*loaded)->profile(symbols);
  if (rows.empty()) {
    os << "no loop nests to profile (kernels without linalg ops)\n";
    return 0;
  }
  // Per call of each kernel: divide the accumulated times by the runs.
  for (KernelOpProfile &row : rows) {
    row.nanoseconds /= runs;
    row.calls /= runs;
  }
  os << formatKernelProfile(std::move(rows));
  os << llvm::format("%.3f ms per call of all %zu kernels, hooks included "
                     "(%u timed calls each after one warm-up)\n",
                     wall / runs * 1e3, symbols.size(), runs);
  return 0;
}

/// The kernels named by monarch.launch ops, in order of first use.
static llvm::SetVector<StringRef> launchedKernels(ModuleOp module) {
  llvm::SetVector<StringRef> names;
  module.walk([&](Operation *op) {
    if (op->getName().getStringRef() != "monarch.launch")
      return;
    if (auto sym = op->getAttrOfType<FlatSymbolRefAttr>("kernel"))
      names.insert(sym.getValue());
  });
  return names;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "monarch kernel compiler driver\n");

  DialectRegistry registry;
  registry.insert<monarch::MonarchDialect>();
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.printOpOnDiagnostic(false);
  ctx.loadAllAvailableDialects();

  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "monarch-kernels: " << error << "\n";
    return 1;
  }
  if (auto hazard = monarch::findParserHazard(input->getBuffer())) {
    llvm::errs() << hazard->diagnostic(inputFile) << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return 1;

  KernelCompileOptions options;
  if (target == "cuda")
    options.target = KernelTarget::Cuda;
  else if (target != "cpu") {
    llvm::errs() << "monarch-kernels: unknown --target '" << target
                 << "' (expected cpu or cuda)\n";
    return 1;
  }
  options.cudaArch = cudaArch;

  SmallVector<func::FuncOp> kernels;
  llvm::SetVector<StringRef> names;
  if (!kernelNames.empty())
    for (const std::string &name : kernelNames)
      names.insert(name);
  else
    names = launchedKernels(*module);
  if (names.empty() && emit == "check" && !profile) {
    // A plan without kernels (it only moves data): nothing to check.
    llvm::outs() << "0 kernels checked against the reference lowering, 0 "
                    "mismatched\n";
    return 0;
  }
  if (names.empty()) {
    for (auto fn : module->getOps<func::FuncOp>())
      if (!fn.isExternal())
        kernels.push_back(fn);
  } else {
    for (StringRef name : names) {
      auto fn = module->lookupSymbol<func::FuncOp>(name);
      if (!fn) {
        module->emitError("no kernel function named '") << name << "'";
        return 1;
      }
      kernels.push_back(fn);
    }
  }
  if (kernels.empty()) {
    module->emitError("no kernels to compile");
    return 1;
  }

  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "monarch-kernels: " << error << "\n";
    return 1;
  }

  if (profile) {
    if (options.target != KernelTarget::Cpu) {
      llvm::errs() << "monarch-kernels: --profile runs the kernels here: it "
                      "needs --target=cpu\n";
      return 1;
    }
    int rc = profileKernels(*module, kernels, output->os(), seed);
    output->keep();
    return rc;
  }
  if (emit == "check") {
    int rc = checkKernels(*module, kernels, output->os(), seed);
    output->keep();
    return rc;
  }
  if (emit != "summary" && emit != "library") {
    std::optional<KernelStage> stage = parseKernelStage(emit);
    if (!stage) {
      llvm::errs() << "monarch-kernels: unknown --emit '" << emit << "'\n";
      return 1;
    }
    for (func::FuncOp kernel : kernels) {
      FailureOr<std::string> text =
          compileKernelToStage(kernel, *stage, options);
      if (failed(text))
        return 1;
      output->os() << "// ----- kernel " << kernel.getSymName() << "\n"
                   << *text << "\n";
    }
    output->keep();
    return 0;
  }

  FailureOr<KernelLibrary> library = compileKernels(*module, kernels, options);
  if (failed(library))
    return 1;
  if (emit == "library") {
    output->os() << library->binary;
    output->keep();
    return 0;
  }
  // Summary: the kernel table, checked by loading the library (CPU).
  std::unique_ptr<LoadedKernelLibrary> loaded;
  if (options.target == KernelTarget::Cpu) {
    auto lib = LoadedKernelLibrary::load(library->binary, "the kernels");
    if (!lib) {
      llvm::errs() << "monarch-kernels: " << lib.status().toString() << "\n";
      return 1;
    }
    loaded = std::move(lib.value());
  }
  llvm::StringSet<> unique;
  double total = 0;
  for (const CompiledKernel &k : library->kernels) {
    unique.insert(k.symbol);
    total += k.compileSeconds;
    output->os() << k.name << " -> " << k.symbol << " (" << k.numInputs
                 << " in, " << k.numOutputs << " out)";
    if (loaded) {
      auto fn = loaded->lookup(k.symbol);
      output->os() << (fn ? " loaded" : " MISSING");
    }
    if (showTimes)
      output->os() << llvm::format(" %.1f ms", k.compileSeconds * 1e3);
    output->os() << "\n";
  }
  output->os() << library->kernels.size() << " kernels, " << unique.size()
               << " unique, " << library->binary.size() << " bytes of "
               << (options.target == KernelTarget::Cpu ? "ELF" : "PTX") << "\n";
  if (showTimes)
    output->os() << llvm::format("compile %.1f ms, emit %.1f ms\n", total * 1e3,
                                 library->emitSeconds * 1e3)
                 << formatKernelReport(*library);
  output->keep();
  return 0;
}
