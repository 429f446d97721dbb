//===- KernelCompiler.cpp - Planned kernels ------------------- -*- C++ -*-===//
//
// compileKernels() checks every kernel against the ABI of KernelCompiler.h,
// clones it into a scratch module of its own, canonicalizes it and hashes the
// printed body: kernels with the same hash share one symbol and are compiled
// once. Each unique kernel then runs the target's pipeline (KernelPipelines.h)
// and the results are linked into one library (an ELF shared object for the
// CPU, one PTX module for CUDA). The caller's module is never modified.
//
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"
#include "monarch/Codegen/KernelInspect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

#include <chrono>

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
  return result;
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
LogicalResult lowerScratchKernel(ScratchKernel &scratch, func::FuncOp origin,
                                 unsigned numArgs,
                                 const KernelCompileOptions &options,
                                 llvm::LLVMContext &llvmCtx,
                                 std::unique_ptr<llvm::Module> &llvmModule,
                                 std::string &ptx, std::vector<GemmCall> &gemms,
                                 std::optional<KernelStage> stopAt = {},
                                 std::string *stageText = nullptr) {
  auto fail = [&](const llvm::Twine &stage) {
    origin.emitError("failed to compile kernel '")
        << origin.getSymName() << "' (" << stage << ")";
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

} // namespace

FailureOr<KernelLibrary> compileKernels(ModuleOp module,
                                        llvm::ArrayRef<func::FuncOp> kernels,
                                        const KernelCompileOptions &options) {
  using Clock = std::chrono::steady_clock;
  MLIRContext *ctx = module.getContext();
  detail::loadKernelDialects(*ctx);

  KernelLibrary library;
  library.target = options.target;
  llvm::LLVMContext llvmCtx;
  auto linked = std::make_unique<llvm::Module>("monarch_kernels", llvmCtx);
  std::string ptx;
  llvm::StringMap<unsigned> symbolIndex; // symbol -> first kernel using it

  for (func::FuncOp kernel : kernels) {
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
    FailureOr<ScratchKernel> scratch = cloneAndHash(kernel);
    if (failed(scratch))
      return kernel.emitError("failed to prepare kernel '")
             << kernel.getSymName() << "'";
    compiled.symbol = scratch->symbol;
    auto [it, inserted] =
        symbolIndex.try_emplace(compiled.symbol, library.kernels.size());
    if (inserted) {
      std::unique_ptr<llvm::Module> llvmModule;
      if (failed(lowerScratchKernel(
              *scratch, kernel, compiled.numInputs + compiled.numOutputs,
              options, llvmCtx, llvmModule, ptx, compiled.gemms)))
        return failure();
      if (llvmModule &&
          llvm::Linker::linkModules(*linked, std::move(llvmModule)))
        return kernel.emitError("failed to link the LLVM IR of kernel '")
               << kernel.getSymName() << "'";
    } else {
      compiled.gemms = library.kernels[it->second].gemms;
    }
    compiled.compileSeconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    library.kernels.push_back(std::move(compiled));
  }

  if (options.target == KernelTarget::Cuda) {
    library.binary = std::move(ptx);
    return library;
  }
  Clock::time_point emitStart = Clock::now();
  llvm::Expected<std::string> object =
      detail::emitSharedObject(*linked, options);
  library.emitSeconds =
      std::chrono::duration<double>(Clock::now() - emitStart).count();
  if (!object) {
    module.emitError("failed to emit the kernel library: ")
        << llvm::toString(object.takeError());
    return failure();
  }
  library.binary = std::move(*object);
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
  if (failed(lowerScratchKernel(*scratch, kernel, numInputs + numOutputs,
                                options, llvmCtx, llvmModule, ptx, gemms, stage,
                                &text)))
    return failure();
  return text;
}

} // namespace monarch::codegen
