//===- NativeEmitter.cpp - LLVM IR to an ELF shared object ---- -*- C++ -*-===//
//
// Translates a lowered kernel to LLVM IR, adds the exported
// `void symbol(void **buffers)` entry, optimizes it at -O3 for the host CPU
// (name and features from llvm::sys) and emits its object code with
// llvm::TargetMachine: one object per kernel, so that kernels compile on
// threads of their own and are cached one by one (KernelCache.h). The
// objects and one small object defining the heap hooks are linked with
// ld.lld-22 (or the system `ld`) found at run time. Temporary files live in
// a private directory removed at once.
//
//===----------------------------------------------------------------------===//
#include "BlasCalls.h"
#include "KernelPipelines.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <chrono>
#include <mutex>

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The linker: ld.lld-22 first (same toolchain as the code generator), then
/// any ld.lld, then the system ld.
llvm::ErrorOr<std::string> findLinker() {
  for (const char *name : {"ld.lld-22", "ld.lld"}) {
    if (auto path = llvm::sys::findProgramByName(name))
      return path;
    if (auto path =
            llvm::sys::findProgramByName(name, {"/usr/lib/llvm-22/bin"}))
      return path;
  }
  return llvm::sys::findProgramByName("ld");
}

/// Removes a directory and its files when it goes out of scope.
struct TempDir {
  llvm::SmallString<128> path;
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

} // namespace

std::unique_ptr<llvm::Module> translateCpuKernel(ModuleOp scratch,
                                                 llvm::LLVMContext &llvmCtx,
                                                 llvm::StringRef symbol,
                                                 unsigned numArgs) {
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(scratch, llvmCtx, symbol);
  if (!module)
    return nullptr;
  llvm::Function *impl = module->getFunction(kImplName);
  if (!impl || impl->arg_size() != numArgs) {
    scratch.emitError("internal error: lowered kernel has ")
        << (impl ? impl->arg_size() : 0) << " pointer arguments, expected "
        << numArgs;
    return nullptr;
  }
  impl->setName((symbol + "_impl").str());
  impl->setLinkage(llvm::GlobalValue::InternalLinkage);

  // void symbol(void **buffers) { impl(buffers[0], ..., buffers[n-1]); }
  llvm::Type *ptrTy = llvm::PointerType::getUnqual(llvmCtx);
  auto *entryTy =
      llvm::FunctionType::get(llvm::Type::getVoidTy(llvmCtx), {ptrTy}, false);
  auto *entry = llvm::Function::Create(
      entryTy, llvm::GlobalValue::ExternalLinkage, symbol, module.get());
  entry->setVisibility(llvm::GlobalValue::DefaultVisibility);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(llvmCtx, "entry", entry));
  llvm::SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < numArgs; ++i) {
    llvm::Value *slot =
        b.CreateConstInBoundsGEP1_64(ptrTy, entry->getArg(0), i);
    args.push_back(b.CreateLoad(ptrTy, slot));
  }
  b.CreateCall(impl, args);
  b.CreateRetVoid();
  return module;
}

/// Routes the kernels' heap temporaries through two exported function
/// pointers, `monarch_kernel_alloc_fn` and `monarch_kernel_free_fn`, that
/// start as malloc and free. MonarchKernelRuntime points them at its
/// per-thread caching allocator when it loads the library: fresh large
/// mallocs are mmapped and page-faulted on every call, which cost a packed
/// 512^3 matmul about a quarter of its time. A kernel's module only declares
/// the pointers; the hook object (hookModule) defines them once per
/// library.
struct Hook {
  const char *mlirName, *hookName, *libcName;
  bool returnsPointer;
};
constexpr Hook kHooks[] = {
    {"_mlir_memref_to_llvm_alloc", "monarch_kernel_alloc_fn", "malloc", true},
    {"_mlir_memref_to_llvm_free", "monarch_kernel_free_fn", "free", false},
};

static llvm::FunctionType *hookType(llvm::LLVMContext &ctx, const Hook &hook) {
  llvm::Type *ptrTy = llvm::PointerType::getUnqual(ctx);
  if (hook.returnsPointer)
    return llvm::FunctionType::get(ptrTy, {llvm::Type::getInt64Ty(ctx)}, false);
  return llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false);
}

static void routeHeapThroughHooks(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptrTy = llvm::PointerType::getUnqual(ctx);
  for (const Hook &hook : kHooks) {
    llvm::Function *fn = module.getFunction(hook.mlirName);
    if (!fn || !fn->isDeclaration())
      continue;
    llvm::FunctionType *type = hookType(ctx, hook);
    auto *pointer = new llvm::GlobalVariable(
        module, ptrTy, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
        /*Initializer=*/nullptr, hook.hookName);
    pointer->setVisibility(llvm::GlobalValue::DefaultVisibility);
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    llvm::Value *target = b.CreateLoad(ptrTy, pointer);
    llvm::SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : fn->args())
      args.push_back(&arg);
    llvm::CallInst *call = b.CreateCall(type, target, args);
    if (fn->getReturnType()->isVoidTy())
      b.CreateRetVoid();
    else
      b.CreateRet(call);
  }
}

/// The profile hooks that kernels compiled with KernelCompileOptions::profile
/// call (KernelProfile.cpp), hidden in the library:
///   i64 monarch_prof_now()  CLOCK_MONOTONIC in nanoseconds;
///   void monarch_prof_add(ptr counts, i64 slot, i64 start)
///     counts[2 slot] += now - start; counts[2 slot + 1] += 1 (atomically),
///     then, when the exported pointer `monarch_prof_event_fn` is set (the
///     runtime sets it when it loads the library), calls it with
///     (counts, slot, start, now): one loop nest's run, for the trace.
static void addProfileHooks(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type *ptrTy = llvm::PointerType::getUnqual(ctx);
  llvm::FunctionCallee clockGettime = module.getOrInsertFunction(
      "clock_gettime", llvm::FunctionType::get(i32, {i32, ptrTy}, false));
  auto *now = llvm::Function::Create(llvm::FunctionType::get(i64, {}, false),
                                     llvm::GlobalValue::ExternalLinkage,
                                     "monarch_prof_now", module);
  now->setVisibility(llvm::GlobalValue::HiddenVisibility);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", now));
    llvm::Type *timespec = llvm::ArrayType::get(i64, 2);
    llvm::Value *ts = b.CreateAlloca(timespec);
    b.CreateCall(clockGettime, {b.getInt32(1 /*CLOCK_MONOTONIC*/), ts});
    llvm::Value *sec =
        b.CreateLoad(i64, b.CreateConstGEP2_32(timespec, ts, 0, 0));
    llvm::Value *nsec =
        b.CreateLoad(i64, b.CreateConstGEP2_32(timespec, ts, 0, 1));
    b.CreateRet(b.CreateAdd(b.CreateMul(sec, b.getInt64(1000000000)), nsec));
  }
  auto *eventFn = new llvm::GlobalVariable(
      module, ptrTy, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx)),
      "monarch_prof_event_fn");
  eventFn->setVisibility(llvm::GlobalValue::DefaultVisibility);
  auto *add = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy, i64, i64},
                              false),
      llvm::GlobalValue::ExternalLinkage, "monarch_prof_add", module);
  add->setVisibility(llvm::GlobalValue::HiddenVisibility);
  {
    llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx, "entry", add);
    llvm::BasicBlock *report = llvm::BasicBlock::Create(ctx, "report", add);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx, "done", add);
    llvm::IRBuilder<> b(entry);
    llvm::Value *counts = add->getArg(0), *slot = add->getArg(1);
    llvm::Value *start = add->getArg(2);
    llvm::Value *end = b.CreateCall(now);
    llvm::Value *time =
        b.CreateGEP(i64, counts, b.CreateMul(slot, b.getInt64(2)));
    llvm::Value *calls = b.CreateGEP(i64, time, b.getInt64(1));
    b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, time, b.CreateSub(end, start),
                      llvm::Align(8), llvm::AtomicOrdering::Monotonic);
    b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, calls, b.getInt64(1),
                      llvm::Align(8), llvm::AtomicOrdering::Monotonic);
    llvm::Value *target = b.CreateLoad(ptrTy, eventFn);
    b.CreateCondBr(b.CreateIsNotNull(target), report, done);
    b.SetInsertPoint(report);
    b.CreateCall(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                         {ptrTy, i64, i64, i64}, false),
                 target, {counts, slot, start, end});
    b.CreateBr(done);
    b.SetInsertPoint(done);
    b.CreateRetVoid();
  }
}

/// `__truncsfbf2` (float to bfloat16, round to nearest even, NaN to the
/// quiet 0x7fc0), hidden in the library. MLIR's lowering expands every
/// bfloat16 rounding it emits into integer operations, but the x86 back end
/// keeps a bfloat16 value that lives across blocks (a reduction's
/// loop-carried <1 x bfloat>) in a float register and rounds it back with
/// this libcall, which libgcc before GCC 13 lacks: the library failed to
/// load with "undefined symbol: __truncsfbf2" (fuzzer seed 485).
static void addBFloat16Builtins(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type *i16 = llvm::Type::getInt16Ty(ctx);
  auto *fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getBFloatTy(ctx),
                              {llvm::Type::getFloatTy(ctx)}, false),
      llvm::GlobalValue::ExternalLinkage, "__truncsfbf2", module);
  fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Value *x = fn->getArg(0);
  llvm::Value *bits = b.CreateBitCast(x, i32);
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  llvm::Value *rounded =
      b.CreateAdd(bits, b.CreateAdd(lsb, llvm::ConstantInt::get(i32, 0x7fff)));
  llvm::Value *high = b.CreateTrunc(b.CreateLShr(rounded, 16), i16);
  llvm::Value *isNan = b.CreateFCmpUNO(x, x);
  llvm::Value *result =
      b.CreateSelect(isNan, llvm::ConstantInt::get(i16, 0x7fc0), high);
  b.CreateRet(b.CreateBitCast(result, llvm::Type::getBFloatTy(ctx)));
}

/// The object defining the hooks' pointers, initialised to malloc and free,
/// the profile hooks and the bfloat16 builtins.
static std::unique_ptr<llvm::Module> hookModule(llvm::LLVMContext &ctx) {
  auto module = std::make_unique<llvm::Module>("monarch_kernel_hooks", ctx);
  llvm::Type *ptrTy = llvm::PointerType::getUnqual(ctx);
  for (const Hook &hook : kHooks) {
    llvm::FunctionCallee libc =
        module->getOrInsertFunction(hook.libcName, hookType(ctx, hook));
    auto *pointer = new llvm::GlobalVariable(
        *module, ptrTy, /*isConstant=*/false,
        llvm::GlobalValue::ExternalLinkage,
        llvm::cast<llvm::Constant>(libc.getCallee()), hook.hookName);
    pointer->setVisibility(llvm::GlobalValue::DefaultVisibility);
  }
  addProfileHooks(*module);
  addBFloat16Builtins(*module);
  return module;
}

/// Turns off LLVM's machine instruction schedulers (pre-RA, post-RA and
/// the post-RA list scheduler) in this process. Kernels are long
/// straight-line blocks of unrolled vector code, on which building the
/// schedulers' dependence graphs is superlinear: on the GPT example's kernels
/// it was half of machine-code time (perf: SUnit::addPred, ComputeHeight,
/// mayAlias), while the out-of-order cores we target gained nothing
/// measurable from it (docs/kernels.md, "Kernel cache and threads"). The
/// options are LLVM's process-wide flags; only kernel code generation uses
/// LLVM's back end in our processes.
///
/// Each is set as if given on a command line, at position 1: the post-RA
/// list scheduler only honours `post-RA-scheduler` with a position > 0 and
/// otherwise asks the subtarget, which enables it for the Zen cores of
/// this project. At position 0 it kept running: 29% of the 4-block GPT
/// kernel's compile (SUnit::ComputeHeight, addPred, LatencyPriorityQueue);
/// off, that compile takes 17.2 s instead of 25.9.
static void disableInstructionSchedulers() {
  auto &options = llvm::cl::getRegisteredOptions();
  for (const char *name :
       {"enable-misched", "enable-post-misched", "post-RA-scheduler"})
    if (llvm::cl::Option *option = options.lookup(name))
      if (option->getNumOccurrences() == 0)
        (void)option->addOccurrence(/*pos=*/1, name, "false");
}

/// The machine kernels are generated for: the triple, the CPU and its
/// features (the host's unless options name a CPU).
struct CodeTarget {
  llvm::Triple triple;
  std::string cpu, features;
  bool avx512 = false;
};

static CodeTarget codeTarget(const KernelCompileOptions &opts) {
  CodeTarget t;
  t.triple = llvm::Triple(llvm::sys::getDefaultTargetTriple());
  t.cpu = opts.cpu == "host" ? llvm::sys::getHostCPUName().str() : opts.cpu;
  llvm::SubtargetFeatures features;
  if (opts.cpu == "host") {
    llvm::StringMap<bool, llvm::MallocAllocator> host =
        llvm::sys::getHostCPUFeatures();
    // Sorted, so that the description is stable.
    std::vector<std::pair<std::string, bool>> sorted;
    for (const auto &feature : host)
      sorted.emplace_back(feature.first().str(), feature.second);
    llvm::sort(sorted);
    for (const auto &[name, enabled] : sorted) {
      features.AddFeature(name, enabled);
      if (name == "avx512f" && enabled)
        t.avx512 = true;
    }
  }
  t.features = features.getString();
  return t;
}

std::string describeCodeTarget(const KernelCompileOptions &opts) {
  CodeTarget t = codeTarget(opts);
  return t.triple.str() + ";" + t.cpu + ";" + t.features +
         ";opt=" + std::to_string(opts.optLevel) +
         ";schedulers=off;indvars=off";
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
optimizeForTarget(llvm::Module &module, const KernelCompileOptions &opts,
                  bool optimize = true) {
  // The target registry is global: filled once, before any thread uses it.
  static std::once_flag targetInitialized;
  std::call_once(targetInitialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    disableInstructionSchedulers();
  });

  CodeTarget host = codeTarget(opts);
  const llvm::Triple &triple = host.triple;
  const std::string &cpu = host.cpu;
  bool avx512 = host.avx512;
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return makeError("no LLVM target for " + triple.str() + ": " + error);
  llvm::CodeGenOptLevel level =
      opts.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : opts.optLevel == 2 ? llvm::CodeGenOptLevel::Default
      : opts.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                           : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, host.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      llvm::CodeModel::Small, level));
  if (!tm)
    return makeError("cannot create a target machine for " + cpu);

  if (optimize)
    routeHeapThroughHooks(module);
  module.setTargetTriple(triple);
  module.setDataLayout(tm->createDataLayout());
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", cpu);
    fn.addFnAttr("target-features", host.features);
    // The kernels' vectors are chosen by the schedule; let the backend use
    // 512-bit registers where the CPU has them (some tunings prefer 256).
    if (avx512) {
      fn.addFnAttr("min-legal-vector-width", "512");
      fn.addFnAttr("prefer-vector-width", "512");
    }
  }
  if (llvm::verifyModule(module, &llvm::errs()))
    return makeError("internal error: the kernels' LLVM IR does not verify");

  if (!optimize)
    return tm;
  // -O3 module pipeline.
  llvm::OptimizationLevel optLevel =
      opts.optLevel >= 3   ? llvm::OptimizationLevel::O3
      : opts.optLevel == 2 ? llvm::OptimizationLevel::O2
      : opts.optLevel == 1 ? llvm::OptimizationLevel::O1
                           : llvm::OptimizationLevel::O0;
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    // IndVarSimplify is skipped: MLIR's loops arrive with canonical index
    // induction variables, and on a long kernel the pass is quadratic in its
    // loops (73 of 88 s of `opt -O2` on a 1-rank 4-block GPT step, walking
    // dominators in ScalarEvolution::isBasicBlockEntryGuardedByCond).
    llvm::PassInstrumentationCallbacks callbacks;
    callbacks.registerShouldRunOptionalPassCallback(
        [](llvm::StringRef pass, llvm::Any) {
          return pass != "IndVarSimplifyPass";
        });
    llvm::PassBuilder pb(tm.get(), llvm::PipelineTuningOptions(), std::nullopt,
                         &callbacks);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(optLevel);
    mpm.run(module, mam);
  }
  return tm;
}

llvm::Expected<std::string> emitAssembly(llvm::Module &module,
                                         const KernelCompileOptions &opts) {
  auto tm = optimizeForTarget(module, opts);
  if (!tm)
    return tm.takeError();
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    llvm::buffer_ostream bos(os);
    llvm::legacy::PassManager codegen;
    if ((*tm)->addPassesToEmitFile(codegen, bos, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
      return makeError("the target cannot emit assembly");
    codegen.run(module);
  }
  return text;
}

/// The object code of `module` for `tm`.
static llvm::Expected<std::string> emitObjectCode(llvm::Module &module,
                                                  llvm::TargetMachine &tm) {
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return makeError("the target cannot emit object files");
  codegen.run(module);
  return std::string(object.str());
}

llvm::Expected<std::string> emitObject(llvm::Module &module,
                                       const KernelCompileOptions &opts,
                                       double *optimizeSeconds,
                                       double *codegenSeconds) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  auto tm = optimizeForTarget(module, opts);
  if (!tm)
    return tm.takeError();
  Clock::time_point optimized = Clock::now();
  llvm::Expected<std::string> object = emitObjectCode(module, **tm);
  if (optimizeSeconds)
    *optimizeSeconds = std::chrono::duration<double>(optimized - start).count();
  if (codegenSeconds)
    *codegenSeconds =
        std::chrono::duration<double>(Clock::now() - optimized).count();
  return object;
}

llvm::Expected<std::string>
linkSharedObject(llvm::ArrayRef<std::string> objects,
                 const KernelCompileOptions &opts) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> hooks = hookModule(ctx);
  auto tm = optimizeForTarget(*hooks, opts, /*optimize=*/false);
  if (!tm)
    return tm.takeError();
  llvm::Expected<std::string> hookObject = emitObjectCode(*hooks, **tm);
  if (!hookObject)
    return hookObject.takeError();

  TempDir dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("monarch-kernels", dir.path))
    return makeError("cannot create a temporary directory: " + ec.message());
  llvm::ErrorOr<std::string> linker = findLinker();
  if (!linker)
    return makeError("no linker found (looked for ld.lld-22, ld.lld, ld on "
                     "PATH); install lld-22 or binutils");
  llvm::SmallString<128> libraryPath(dir.path), logPath(dir.path);
  llvm::sys::path::append(libraryPath, "kernels.so");
  llvm::sys::path::append(logPath, "link.log");
  std::vector<std::string> paths;
  auto writeObject = [&](llvm::StringRef bytes) -> llvm::Error {
    llvm::SmallString<128> path(dir.path);
    llvm::sys::path::append(path, "k" + llvm::Twine(paths.size()) + ".o");
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return makeError("cannot write " + path + ": " + ec.message());
    os << bytes;
    paths.push_back(path.str().str());
    return llvm::Error::success();
  };
  if (llvm::Error e = writeObject(*hookObject))
    return e;
  for (const std::string &object : objects)
    if (llvm::Error e = writeObject(object))
      return e;

  std::string libraryArg = libraryPath.str().str();
  llvm::SmallVector<llvm::StringRef> args = {
      *linker, "-shared", "--as-needed", "-z", "noexecstack", "-o", libraryArg};
  for (const std::string &path : paths)
    args.push_back(path);
  // Kernels that call cblas_?gemm (BlasCalls.cpp) need OpenBLAS; with
  // --as-needed the others do not record it.
  if (const char *blas = blasLibraryPath())
    args.push_back(blas);
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(logPath), llvm::StringRef(logPath)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/120, 0, &execError);
  if (rc != 0) {
    std::string log;
    if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
      log = (*buffer)->getBuffer().str();
    return makeError("linking the kernel library with " + *linker +
                     " failed (exit " + llvm::Twine(rc) + ") " + execError +
                     ": " + log);
  }
  auto library = llvm::MemoryBuffer::getFile(libraryPath);
  if (!library)
    return makeError("cannot read the linked library: " +
                     library.getError().message());
  return (*library)->getBuffer().str();
}

} // namespace monarch::codegen::detail
