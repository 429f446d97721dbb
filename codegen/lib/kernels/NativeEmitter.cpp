//===- NativeEmitter.cpp - LLVM IR to an ELF shared object ---- -*- C++ -*-===//
//
// Translates a lowered kernel to LLVM IR, adds the exported
// `void symbol(void **buffers)` entry, optimizes the library at -O3 for the
// host CPU (name and features from llvm::sys), emits an object file with
// llvm::TargetMachine and links it with ld.lld-22 (or the system `ld`) found
// at run time. Temporary files live in a private directory removed at once.
//
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

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
/// 512^3 matmul about a quarter of its time.
static void routeHeapThroughHooks(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptrTy = llvm::PointerType::getUnqual(ctx);
  llvm::Type *i64Ty = llvm::Type::getInt64Ty(ctx);
  struct Hook {
    const char *mlirName, *hookName, *libcName;
    llvm::FunctionType *type;
  } hooks[] = {
      {"_mlir_memref_to_llvm_alloc", "monarch_kernel_alloc_fn", "malloc",
       llvm::FunctionType::get(ptrTy, {i64Ty}, false)},
      {"_mlir_memref_to_llvm_free", "monarch_kernel_free_fn", "free",
       llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false)},
  };
  for (const Hook &hook : hooks) {
    llvm::Function *fn = module.getFunction(hook.mlirName);
    if (!fn || !fn->isDeclaration())
      continue;
    llvm::FunctionCallee libc =
        module.getOrInsertFunction(hook.libcName, hook.type);
    auto *pointer = new llvm::GlobalVariable(
        module, ptrTy, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
        llvm::cast<llvm::Constant>(libc.getCallee()), hook.hookName);
    pointer->setVisibility(llvm::GlobalValue::DefaultVisibility);
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    llvm::Value *target = b.CreateLoad(ptrTy, pointer);
    llvm::SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : fn->args())
      args.push_back(&arg);
    llvm::CallInst *call = b.CreateCall(hook.type, target, args);
    if (fn->getReturnType()->isVoidTy())
      b.CreateRetVoid();
    else
      b.CreateRet(call);
  }
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
optimizeForTarget(llvm::Module &module, const KernelCompileOptions &opts) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return makeError("no LLVM target for " + triple.str() + ": " + error);
  std::string cpu =
      opts.cpu == "host" ? llvm::sys::getHostCPUName().str() : opts.cpu;
  llvm::SubtargetFeatures features;
  bool avx512 = false;
  if (opts.cpu == "host") {
    for (const auto &feature : llvm::sys::getHostCPUFeatures()) {
      features.AddFeature(feature.first(), feature.second);
      if (feature.first() == "avx512f" && feature.second)
        avx512 = true;
    }
  }
  llvm::CodeGenOptLevel level =
      opts.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : opts.optLevel == 2 ? llvm::CodeGenOptLevel::Default
      : opts.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                           : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features.getString(), llvm::TargetOptions(),
      llvm::Reloc::PIC_, llvm::CodeModel::Small, level));
  if (!tm)
    return makeError("cannot create a target machine for " + cpu);

  routeHeapThroughHooks(module);
  module.setTargetTriple(triple);
  module.setDataLayout(tm->createDataLayout());
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", cpu);
    fn.addFnAttr("target-features", features.getString());
    // The kernels' vectors are chosen by the schedule; let the backend use
    // 512-bit registers where the CPU has them (some tunings prefer 256).
    if (avx512) {
      fn.addFnAttr("min-legal-vector-width", "512");
      fn.addFnAttr("prefer-vector-width", "512");
    }
  }
  if (llvm::verifyModule(module, &llvm::errs()))
    return makeError("internal error: the kernels' LLVM IR does not verify");

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
    llvm::PassBuilder pb(tm.get());
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

llvm::Expected<std::string> emitSharedObject(llvm::Module &module,
                                             const KernelCompileOptions &opts) {
  auto tm = optimizeForTarget(module, opts);
  if (!tm)
    return tm.takeError();
  TempDir dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("monarch-kernels", dir.path))
    return makeError("cannot create a temporary directory: " + ec.message());
  llvm::SmallString<128> objectPath(dir.path), libraryPath(dir.path);
  llvm::sys::path::append(objectPath, "kernels.o");
  llvm::sys::path::append(libraryPath, "kernels.so");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return makeError("cannot write " + objectPath + ": " + ec.message());
    llvm::legacy::PassManager codegen;
    if ((*tm)->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
      return makeError("the target cannot emit object files");
    codegen.run(module);
  }

  llvm::ErrorOr<std::string> linker = findLinker();
  if (!linker)
    return makeError("no linker found (looked for ld.lld-22, ld.lld, ld on "
                     "PATH); install lld-22 or binutils");
  llvm::SmallString<128> logPath(dir.path);
  llvm::sys::path::append(logPath, "link.log");
  std::string objectArg = objectPath.str().str();
  std::string libraryArg = libraryPath.str().str();
  llvm::SmallVector<llvm::StringRef> args = {
      *linker,       "-shared", "--as-needed", "-z",
      "noexecstack", "-o",      libraryArg,    objectArg};
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
