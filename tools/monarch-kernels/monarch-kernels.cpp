//===- monarch-kernels.cpp - Inspect and compile planned kernels -*- C++
//-*-===//
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
#include "monarch/Codegen/KernelRuntime.h"
#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace monarch::codegen;

namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<std::string>
    emit("emit",
         cl::desc("What to produce: summary (default), library, prepared, "
                  "scheduled, bufferized, llvm-dialect, llvm, asm, ptx"),
         cl::init("summary"));
static cl::opt<std::string> target("target", cl::desc("cpu (default) or cuda"),
                                   cl::init("cpu"));
static cl::opt<std::string> cudaArch("cuda-arch", cl::desc("SM architecture"),
                                     cl::init("sm_90"));
static cl::list<std::string> kernelNames("kernel",
                                         cl::desc("Compile only this kernel"));
static cl::opt<bool> showTimes("times", cl::desc("Print compile times"),
                               cl::init(false));

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
                                 library->emitSeconds * 1e3);
  output->keep();
  return 0;
}
