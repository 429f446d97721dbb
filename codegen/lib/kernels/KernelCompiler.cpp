//===- KernelCompiler.cpp - Planned kernels ------------------- -*- C++ -*-===//
//
// compileKernels() checks every kernel against the ABI of KernelCompiler.h,
// clones it into a scratch module of its own, canonicalizes it and hashes the
// printed body: kernels with the same hash share one symbol and are compiled
// once. Each distinct kernel then runs the target's pipeline
// (KernelPipelines.h) and the results are linked into one library (an ELF
// shared object for the CPU, one PTX module for CUDA). The caller's module is
// never modified.
//
// For the CPU, a distinct kernel's object code is first looked up in the
// kernel cache (KernelCache.h); the misses compile on worker threads, each
// with an MLIRContext and LLVMContext of its own (the scratch module crosses
// over as bytecode), so a 2-core machine compiles two kernels at once and a
// kernel compiled by any earlier program is not compiled again. A kernel
// that fails on a worker thread is compiled again on the caller's thread,
// where its diagnostics reach the caller's handler as before.
//
//===----------------------------------------------------------------------===//
#include "KernelCache.h"
#include "KernelPipelines.h"
#include "KernelTemplates.h"
#include "monarch/Codegen/KernelInspect.h"
#include "monarch/Support/Knobs.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Parser/Parser.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

using namespace mlir;

namespace monarch::codegen {
using plan::GemmCall;
namespace {

bool isSupportedElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() || type.isF64() ||
         type.isInteger(1) || type.isInteger(8) || type.isInteger(32) ||
         type.isInteger(64);
}

/// Checks the kernel ABI; counts inputs and outputs.
LogicalResult verifyKernelSignature(func::FuncOp kernel, unsigned &numInputs,
                                    unsigned &numOutputs) {
  if (kernel.isExternal())
    return kernel.emitError("kernel '")
           << kernel.getSymName() << "' has no body to compile";
  if (kernel.getNumResults() != 0)
    return kernel.emitError("kernel '")
           << kernel.getSymName()
           << "' returns values; kernels write their results into memref "
              "output arguments";
  numInputs = numOutputs = 0;
  for (auto [index, type] : llvm::enumerate(kernel.getArgumentTypes())) {
    auto shaped = dyn_cast<ShapedType>(type);
    bool isTensor = isa<RankedTensorType>(type);
    bool isMemRef = isa<MemRefType>(type);
    if (!shaped || (!isTensor && !isMemRef))
      return kernel.emitError("kernel '")
             << kernel.getSymName() << "' argument #" << index << " has type "
             << type << "; expected a ranked tensor (input) or memref (output)";
    if (!shaped.hasStaticShape())
      return kernel.emitError("kernel '")
             << kernel.getSymName() << "' argument #" << index << " (" << type
             << ") has a dynamic shape; kernels need static shapes";
    if (!isSupportedElementType(shaped.getElementType()))
      return kernel.emitError("kernel '")
             << kernel.getSymName() << "' argument #" << index
             << " has unsupported element type " << shaped.getElementType();
    if (isMemRef) {
      auto memref = cast<MemRefType>(type);
      if (!memref.getLayout().isIdentity() || memref.getMemorySpace())
        return kernel.emitError("kernel '")
               << kernel.getSymName() << "' output #" << index << " (" << type
               << ") must have the identity layout and default memory space";
      ++numOutputs;
      continue;
    }
    if (numOutputs != 0)
      return kernel.emitError("kernel '")
             << kernel.getSymName() << "' has tensor argument #" << index
             << " after a memref output; inputs come first";
    ++numInputs;
  }
  if (numOutputs == 0)
    return kernel.emitError("kernel '")
           << kernel.getSymName() << "' has no memref output argument";
  // A kernel is compiled alone: it may not reference other symbols.
  WalkResult walk = kernel.walk([&](Operation *op) {
    for (NamedAttribute attr : op->getAttrs())
      if (isa<SymbolRefAttr>(attr.getValue())) {
        op->emitError("kernel '")
            << kernel.getSymName() << "' references symbol " << attr.getValue()
            << "; kernels must be self-contained";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// A kernel alone in a module, canonicalized, with its content hash.
struct ScratchKernel {
  OwningOpRef<ModuleOp> module;
  std::string symbol;
  /// The canonical, location-free body the hash is of.
  std::string body;
};

FailureOr<ScratchKernel> cloneAndHash(func::FuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  ScratchKernel result;
  result.module = ModuleOp::create(kernel.getLoc());
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(result.module->getBody());
  auto clone = cast<func::FuncOp>(builder.clone(*kernel));
  clone.setSymName(detail::kImplName);
  clone.setPublic();
  // Arguments keep no attributes: they would only differ between copies.
  for (unsigned i = 0, e = clone.getNumArguments(); i < e; ++i)
    clone.setArgAttrs(i, DictionaryAttr::get(ctx));
  if (failed(detail::widenBooleanArguments(clone, kernel.getSymName())))
    return failure();

  PassManager pm(ctx);
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  if (failed(pm.run(*result.module)))
    return failure();

  std::string printed;
  llvm::raw_string_ostream os(printed);
  clone->print(os,
               OpPrintingFlags().printGenericOpForm().elideLargeElementsAttrs(
                   /*largeElementLimit=*/1 << 30));
  uint64_t hash = llvm::xxh3_64bits(llvm::StringRef(printed));
  result.symbol = "monarch_kernel_" + llvm::utohexstr(hash, /*LowerCase=*/true,
                                                      /*Width=*/16);
  result.body = std::move(printed);
  return result;
}

/// A kernel's type and body as written: generic form, no locations, no
/// name, no argument attributes. Kernels with equal texts canonicalize to
/// equal bodies, so the text finds duplicates before cloneAndHash's work.
std::string rawBody(func::FuncOp kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << kernel.getFunctionType() << "\n";
  AsmState state(kernel,
                 OpPrintingFlags().printGenericOpForm().elideLargeElementsAttrs(
                     /*largeElementLimit=*/1 << 30));
  for (Operation &op : kernel.getBody().front()) {
    op.print(os, state);
    os << "\n";
  }
  return text;
}

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Runs the target pipeline on one scratch kernel up to LLVM IR (CPU) or PTX
/// (CUDA, appended to `ptx`). With `stopAt`, stops after that stage and
/// prints it into `stageText`.
LogicalResult lowerScratchKernel(
    ScratchKernel &scratch,
    llvm::function_ref<void(const llvm::Twine &)> report, unsigned numArgs,
    const KernelCompileOptions &options, llvm::LLVMContext &llvmCtx,
    std::unique_ptr<llvm::Module> &llvmModule, std::string &ptx,
    std::vector<GemmCall> &gemms, std::optional<KernelStage> stopAt = {},
    std::string *stageText = nullptr) {
  auto fail = [&](const llvm::Twine &stage) {
    report(stage);
    return failure();
  };
  ModuleOp module = *scratch.module;
  // True when the pipeline stops after `stage` (its text is then printed).
  auto stopsAt = [&](KernelStage stage) {
    if (stopAt != stage)
      return false;
    *stageText = printModule(module);
    return true;
  };
  bool cuda = options.target == KernelTarget::Cuda;
  bool reference = options.referenceLowering && !cuda;
  if (!reference && failed(detail::prepareKernel(module)))
    return fail("tensor preparation");
  for (auto fn : module.getOps<func::FuncOp>())
    if (failed(detail::widenBooleanTensors(fn)))
      return fail("boolean tensors");
  if (stopsAt(KernelStage::Prepared))
    return success();
  if (!cuda && !reference) {
    if (options.profile &&
        failed(detail::instrumentForProfile(module, scratch.symbol)))
      return fail("profile instrumentation");
    if (failed(detail::scheduleCpuKernel(module, options)))
      return fail("tiling and vectorization");
    if (stopsAt(KernelStage::Scheduled))
      return success();
  }
  if (failed(detail::bufferizeKernel(module)))
    return fail("bufferization");
  if (stopsAt(KernelStage::Bufferized))
    return success();
  if (cuda) {
    std::string message;
    FailureOr<std::string> kernelPtx = detail::lowerKernelToPtx(
        module, scratch.symbol, options, gemms, message);
    if (failed(kernelPtx))
      return fail("PTX generation: " + message);
    if (stopsAt(KernelStage::LLVMDialect))
      return success();
    if (stopAt == KernelStage::Ptx) {
      *stageText = *kernelPtx;
      return success();
    }
    ptx += *kernelPtx;
    return success();
  }
  if (failed(detail::lowerCpuKernelToLLVM(module)))
    return fail("lowering to LLVM");
  if (stopsAt(KernelStage::LLVMDialect))
    return success();
  llvmModule =
      detail::translateCpuKernel(module, llvmCtx, scratch.symbol, numArgs);
  if (!llvmModule)
    return fail("translation to LLVM IR");
  if (stopAt == KernelStage::LLVMIR) {
    llvm::raw_string_ostream os(*stageText);
    llvmModule->print(os, nullptr);
    return success();
  }
  if (stopAt == KernelStage::Assembly) {
    llvm::Expected<std::string> text =
        detail::emitAssembly(*llvmModule, options);
    if (!text)
      return fail(llvm::toString(text.takeError()));
    *stageText = std::move(*text);
  }
  return success();
}

/// Emits "failed to compile kernel 'NAME' (STAGE)" at `origin`.
std::function<void(const llvm::Twine &)> reportAt(func::FuncOp origin) {
  return [origin](const llvm::Twine &stage) mutable {
    origin.emitError("failed to compile kernel '")
        << origin.getSymName() << "' (" << stage << ")";
  };
}

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A distinct kernel body of a CPU library and what became of it.
struct Distinct {
  ScratchKernel scratch;
  func::FuncOp origin;
  unsigned numArgs = 0;
  /// Index in KernelLibrary::kernels of its first kernel.
  size_t first = 0;
  std::string cacheKey, bytecode, object;
  bool cacheHit = false, failed = false;
  double lowerSeconds = 0, optimizeSeconds = 0, codegenSeconds = 0;
};

/// Lowers `scratch` (the kernel of `d`, in the context of the calling
/// thread) to object code in `d.object`, with the time of each stage;
/// failures go to `report` with their stage.
LogicalResult
lowerToObject(Distinct &d, ScratchKernel &scratch,
              llvm::function_ref<void(const llvm::Twine &)> report,
              const KernelCompileOptions &options) {
  Clock::time_point start = Clock::now();
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule;
  std::string ptx;
  std::vector<GemmCall> gemms;
  if (failed(lowerScratchKernel(scratch, report, d.numArgs, options, llvmCtx,
                                llvmModule, ptx, gemms)))
    return failure();
  d.lowerSeconds = secondsSince(start);
  llvm::Expected<std::string> object = detail::emitObject(
      *llvmModule, options, &d.optimizeSeconds, &d.codegenSeconds);
  if (!object) {
    report("object code: " + llvm::toString(object.takeError()));
    return failure();
  }
  d.object = std::move(*object);
  return success();
}

/// Compiles `d` from its bytecode in `ctx`, a context of a worker thread.
/// Sets `d.failed` on any failure; diagnostics are left to the caller's
/// retry (compileOnCaller).
void compileOnThread(Distinct &d, MLIRContext &ctx,
                     const KernelCompileOptions &options) {
  ScratchKernel local;
  local.module = parseSourceString<ModuleOp>(d.bytecode, ParserConfig(&ctx));
  local.symbol = d.scratch.symbol;
  d.failed =
      !local.module ||
      failed(lowerToObject(d, local, [](const llvm::Twine &) {}, options));
}

/// Compiles `d` on the caller's thread and context, diagnostics at its
/// kernel: the retry of a kernel that failed on a worker thread.
LogicalResult compileOnCaller(Distinct &d,
                              const KernelCompileOptions &options) {
  d.failed = failed(lowerToObject(d, d.scratch, reportAt(d.origin), options));
  return failure(d.failed);
}

unsigned compileThreads(const KernelCompileOptions &options, size_t work) {
  unsigned threads = options.threads;
  if (threads == 0)
    threads = static_cast<unsigned>(
        std::max<int64_t>(0, knobs::getInt(knobs::Id::CompileThreads).value));
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min<size_t>(threads, work)));
}

/// Compiles every distinct kernel of `misses` on `threads` threads.
void compileInParallel(llvm::ArrayRef<Distinct *> misses, unsigned threads,
                       const KernelCompileOptions &options) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    MLIRContext ctx(MLIRContext::Threading::DISABLED);
    detail::loadKernelDialects(ctx);
    // Failures are compiled again on the caller's thread, for diagnostics.
    ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
    for (size_t i = next++; i < misses.size(); i = next++)
      compileOnThread(*misses[i], ctx, options);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

/// The CUDA library: every distinct kernel lowered to PTX in turn.
LogicalResult compileCudaKernels(llvm::MutableArrayRef<Distinct> distinct,
                                 KernelLibrary &library,
                                 const KernelCompileOptions &options) {
  std::string ptx;
  for (Distinct &d : distinct) {
    Clock::time_point start = Clock::now();
    llvm::LLVMContext llvmCtx;
    std::unique_ptr<llvm::Module> unused;
    CompiledKernel &compiled = library.kernels[d.first];
    if (failed(lowerScratchKernel(d.scratch, reportAt(d.origin), d.numArgs,
                                  options, llvmCtx, unused, ptx,
                                  compiled.gemms)))
      return failure();
    compiled.lowerSeconds = secondsSince(start);
  }
  library.binary = std::move(ptx);
  return success();
}

/// A kernel whose body is a group's parameterized one (KernelTemplates.h),
/// and the values of its parameters.
struct Templated {
  func::FuncOp body;
  std::vector<int64_t> params;
};

/// At most this many integers differ between the kernels of a group; more
/// and they are compiled apart (a table that large is rather data).
constexpr size_t kMaxParams = 64;

/// Groups the kernels (by their texts `raws`) equal but for their holes,
/// makes each group's parameterized body in `into`, and maps every raw text
/// of a group to it and its values.
void templateKernels(llvm::ArrayRef<func::FuncOp> kernels,
                     llvm::ArrayRef<std::string> raws, ModuleOp into,
                     llvm::StringMap<Templated> &byRaw) {
  struct Entry {
    func::FuncOp fn;
    size_t raw;
    SmallVector<detail::Hole> holes;
    unsigned numInputs;
  };
  std::vector<Entry> entries;
  llvm::StringSet<> seen;
  llvm::StringMap<SmallVector<size_t>> groups; // template -> entries
  for (size_t i = 0; i < kernels.size(); ++i) {
    func::FuncOp kernel = kernels[i];
    if (!kernel || kernel.isExternal() || !seen.insert(raws[i]).second)
      continue;
    unsigned numInputs = 0, numOutputs = 0;
    if (failed(verifyKernelSignature(kernel, numInputs, numOutputs)))
      continue; // Reported by the caller's checks.
    SmallVector<detail::Hole> holes = detail::holesOf(kernel);
    if (holes.empty())
      continue;
    groups[detail::templateText(kernel, holes, rawBody)].push_back(
        entries.size());
    entries.push_back({kernel, i, std::move(holes), numInputs});
  }
  for (auto &group : groups) {
    const SmallVector<size_t> &members = group.second;
    if (members.size() < 2)
      continue;
    Entry &first = entries[members.front()];
    SmallVector<unsigned> varying;
    for (unsigned h = 0; h < first.holes.size(); ++h)
      if (llvm::any_of(members, [&](size_t m) {
            return entries[m].holes[h].value != first.holes[h].value;
          }))
        varying.push_back(h);
    if (varying.empty() || varying.size() > kMaxParams)
      continue;
    func::FuncOp body =
        detail::parameterize(first.fn, varying, first.numInputs, into,
                             (first.fn.getSymName() + ".params").str());
    for (size_t m : members) {
      Templated t{body, {}};
      for (unsigned h : varying)
        t.params.push_back(entries[m].holes[h].value);
      byRaw[raws[entries[m].raw]] = std::move(t);
    }
  }
}

} // namespace

std::vector<void *> kernelCallArguments(const CompiledKernel &kernel,
                                        llvm::ArrayRef<void *> inputs,
                                        llvm::ArrayRef<void *> outputs) {
  std::vector<void *> args(inputs.begin(), inputs.end());
  if (!kernel.params.empty())
    args.push_back(const_cast<int64_t *>(kernel.params.data()));
  args.insert(args.end(), outputs.begin(), outputs.end());
  return args;
}

FailureOr<KernelLibrary> compileKernels(ModuleOp module,
                                        llvm::ArrayRef<func::FuncOp> kernels,
                                        const KernelCompileOptions &options) {
  Clock::time_point begin = Clock::now();
  MLIRContext *ctx = module.getContext();
  detail::loadKernelDialects(*ctx);

  KernelLibrary library;
  library.target = options.target;
  // Check, canonicalize and hash every kernel: one Distinct per body.
  std::vector<Distinct> distinct;
  llvm::StringMap<size_t> bySymbol; // symbol -> index in `distinct`
  llvm::StringMap<size_t> byRaw;    // rawBody -> index in `distinct`
  std::vector<size_t> distinctOf;   // kernel index -> index in `distinct`
  // Every kernel's text, and the groups of kernels equal but for their
  // integers, compiled once with those as parameters (CPU).
  std::vector<std::string> raws;
  raws.reserve(kernels.size());
  for (func::FuncOp kernel : kernels)
    raws.push_back(kernel && !kernel.isExternal() ? rawBody(kernel)
                                                  : std::string());
  OwningOpRef<ModuleOp> templates = ModuleOp::create(module.getLoc());
  llvm::StringMap<Templated> templated;
  if (options.target == KernelTarget::Cpu && options.parameters &&
      knobs::getString(knobs::Id::KernelParams).value == "on")
    templateKernels(kernels, raws, *templates, templated);
  llvm::DenseMap<Operation *, size_t> distinctOfBody;
  for (size_t k = 0; k < kernels.size(); ++k) {
    func::FuncOp kernel = kernels[k];
    Clock::time_point start = Clock::now();
    if (!kernel || kernel->getParentOp() != module.getOperation()) {
      module.emitError("compileKernels: a kernel is not a function of this "
                       "module");
      return failure();
    }
    CompiledKernel compiled;
    compiled.name = kernel.getSymName().str();
    if (failed(verifyKernelSignature(kernel, compiled.numInputs,
                                     compiled.numOutputs)))
      return failure();
    kernel.getBody().walk([&](Operation *) { ++compiled.numOps; });
    // The same text as a kernel before it (ranks of a class, repeated
    // layers): a duplicate, without cloning and canonicalizing it again.
    const std::string &raw = raws[k];
    func::FuncOp body = kernel;
    if (auto t = templated.find(raw); t != templated.end()) {
      body = t->second.body;
      compiled.params = t->second.params;
    }
    auto known = byRaw.find(raw);
    if (known == byRaw.end())
      if (auto b = distinctOfBody.find(body.getOperation());
          b != distinctOfBody.end())
        known = byRaw.try_emplace(raw, b->second).first;
    if (known != byRaw.end()) {
      compiled.symbol = distinct[known->second].scratch.symbol;
      compiled.duplicate = true;
      distinctOf.push_back(known->second);
      compiled.compileSeconds = secondsSince(start);
      library.kernels.push_back(std::move(compiled));
      continue;
    }
    FailureOr<ScratchKernel> scratch = cloneAndHash(body);
    if (failed(scratch))
      return kernel.emitError("failed to prepare kernel '")
             << kernel.getSymName() << "'";
    compiled.symbol = scratch->symbol;
    auto [it, inserted] =
        bySymbol.try_emplace(compiled.symbol, distinct.size());
    if (inserted) {
      Distinct d;
      d.scratch = std::move(*scratch);
      d.origin = body;
      d.numArgs = compiled.numInputs + compiled.numOutputs +
                  (compiled.params.empty() ? 0 : 1);
      d.first = library.kernels.size();
      distinct.push_back(std::move(d));
    } else {
      compiled.duplicate = true;
    }
    distinctOf.push_back(it->second);
    byRaw.try_emplace(raw, it->second);
    if (body != kernel)
      distinctOfBody.try_emplace(body.getOperation(), it->second);
    compiled.compileSeconds = secondsSince(start);
    library.kernels.push_back(std::move(compiled));
  }

  auto finish = [&] {
    // Kernels that share a body share its gemms and object size.
    for (auto [i, compiled] : llvm::enumerate(library.kernels)) {
      const CompiledKernel &first =
          library.kernels[distinct[distinctOf[i]].first];
      if (compiled.duplicate) {
        compiled.gemms = first.gemms;
        compiled.objectBytes = first.objectBytes;
      }
    }
    library.wallSeconds = secondsSince(begin);
  };
  if (options.target == KernelTarget::Cuda) {
    if (failed(compileCudaKernels(distinct, library, options)))
      return failure();
    finish();
    return library;
  }

  // The kernel cache, then the misses on worker threads.
  // Profiled kernels carry their user lines, which the location-free key
  // does not: they are never cached.
  detail::KernelCache cache(options.profile ? "" : options.cacheDirectory,
                            options.cacheMaxBytes);
  library.cacheEnabled = cache.enabled();
  std::string target = detail::describeCodeTarget(options) +
                       (options.referenceLowering ? ";reference" : "");
  SmallVector<Distinct *> misses;
  for (Distinct &d : distinct) {
    if (cache.enabled()) {
      d.cacheKey = detail::KernelCache::key(d.scratch.body, target);
      if (std::optional<std::string> hit = cache.lookup(d.cacheKey)) {
        d.object = std::move(*hit);
        d.cacheHit = true;
        continue;
      }
    }
    llvm::raw_string_ostream os(d.bytecode);
    if (failed(writeBytecodeToFile(d.scratch.module->getOperation(), os)))
      d.failed = true; // Compiled on the caller's thread below.
    misses.push_back(&d);
  }
  library.threads = compileThreads(options, misses.size());
  // Largest first, so that the last kernel to start is a small one.
  SmallVector<Distinct *> work = llvm::to_vector(
      llvm::make_filter_range(misses, [](Distinct *d) { return !d->failed; }));
  llvm::stable_sort(work, [&](Distinct *a, Distinct *b) {
    return library.kernels[a->first].numOps > library.kernels[b->first].numOps;
  });
  compileInParallel(work, library.threads, options);
  for (Distinct *d : misses)
    if (d->failed && failed(compileOnCaller(*d, options)))
      return failure();
  for (Distinct *d : misses)
    cache.store(d->cacheKey, d->object);
  if (!misses.empty())
    cache.evict();

  std::vector<std::string> objects;
  for (Distinct &d : distinct) {
    CompiledKernel &compiled = library.kernels[d.first];
    compiled.cacheHit = d.cacheHit;
    compiled.lowerSeconds = d.lowerSeconds;
    compiled.optimizeSeconds = d.optimizeSeconds;
    compiled.codegenSeconds = d.codegenSeconds;
    compiled.compileSeconds +=
        d.lowerSeconds + d.optimizeSeconds + d.codegenSeconds;
    compiled.objectBytes = d.object.size();
    objects.push_back(std::move(d.object));
  }
  finish();

  Clock::time_point linkStart = Clock::now();
  llvm::Expected<std::string> object =
      detail::linkSharedObject(objects, options);
  library.emitSeconds = secondsSince(linkStart);
  if (!object) {
    module.emitError("failed to emit the kernel library: ")
        << llvm::toString(object.takeError());
    return failure();
  }
  library.binary = std::move(*object);
  library.wallSeconds = secondsSince(begin);
  return library;
}

} // namespace monarch::codegen

namespace monarch::codegen {

std::optional<KernelStage> parseKernelStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<KernelStage>>(name)
      .Case("prepared", KernelStage::Prepared)
      .Case("scheduled", KernelStage::Scheduled)
      .Case("bufferized", KernelStage::Bufferized)
      .Case("llvm-dialect", KernelStage::LLVMDialect)
      .Case("llvm", KernelStage::LLVMIR)
      .Case("asm", KernelStage::Assembly)
      .Case("ptx", KernelStage::Ptx)
      .Default(std::nullopt);
}

FailureOr<std::string>
compileKernelToStage(func::FuncOp kernel, KernelStage stage,
                     const KernelCompileOptions &options) {
  bool cuda = options.target == KernelTarget::Cuda;
  bool cpuOnly = stage == KernelStage::Scheduled ||
                 stage == KernelStage::LLVMIR || stage == KernelStage::Assembly;
  if ((cuda && cpuOnly) || (!cuda && stage == KernelStage::Ptx))
    return kernel.emitError("stage not available for the ")
           << (cuda ? "cuda" : "cpu") << " target";
  detail::loadKernelDialects(*kernel.getContext());
  unsigned numInputs, numOutputs;
  if (failed(verifyKernelSignature(kernel, numInputs, numOutputs)))
    return failure();
  FailureOr<ScratchKernel> scratch = cloneAndHash(kernel);
  if (failed(scratch))
    return failure();
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule;
  std::string ptx, text;
  std::vector<GemmCall> gemms;
  if (failed(lowerScratchKernel(*scratch, reportAt(kernel),
                                numInputs + numOutputs, options, llvmCtx,
                                llvmModule, ptx, gemms, stage, &text)))
    return failure();
  return text;
}

} // namespace monarch::codegen
