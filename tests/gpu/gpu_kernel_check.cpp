//===- gpu_kernel_check.cpp - CUDA kernels against the CPU ---- -*- C++ -*-===//
//
// For a machine with a GPU (tests/gpu/run.sh). Compiles the kernels of the
// three example programs and a few larger kernels twice, for the CPU and
// for CUDA (PTX, KernelTarget::Cuda), runs the CPU library through
// MonarchKernelRuntime and the PTX through the CUDA driver API following
// the launch manifest and the cuBLAS table (MonarchCudaRuntime), and
// compares every output.
// Prints one line per kernel group and a summary; exits 0 when all match,
// 1 on a mismatch or error, 77 when there is no CUDA device (skip).
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Executor/CudaRuntime.h"
#include "monarch/Executor/KernelRuntime.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <memory>

#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace pm = monarch::plan;

using namespace monarch;

namespace {

/// --compile-only: compile both targets and check the manifests, without a
/// driver (what ctest runs on machines without a GPU).
bool compileOnly = false;

/// The device, when there is one (not in --compile-only).
std::unique_ptr<executor::CudaDevice> device;

/// Runs one kernel on the GPU through MonarchCudaRuntime: arguments are
/// copied in, the manifest's launches and cuBLAS calls run, outputs are
/// copied back.
bool runOnGpu(executor::LoadedCudaLibrary &lib, const std::string &symbol,
              std::vector<std::vector<uint8_t>> &args, unsigned numInputs,
              double &seconds) {
  std::vector<uint64_t> ptrs;
  auto release = [&] {
    for (uint64_t p : ptrs)
      device->free(p);
  };
  auto fail = [&](const executor::Status &s) {
    llvm::errs() << s.toString() << "\n";
    release();
    return false;
  };
  for (auto &arg : args) {
    auto p = device->alloc(arg.size());
    if (!p.isOk())
      return fail(p.status());
    ptrs.push_back(*p);
    if (auto s = device->copyToDevice(*p, arg.data(), arg.size()); !s)
      return fail(s);
  }
  auto start = std::chrono::steady_clock::now();
  if (auto s = lib.run(symbol, ptrs); !s)
    return fail(s);
  seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (size_t i = numInputs; i < args.size(); ++i)
    if (auto s = device->copyToHost(args[i].data(), ptrs[i], args[i].size());
        !s)
      return fail(s);
  release();
  return true;
}

/// The cuBLAS tables of a compiled CUDA library, by symbol.
std::map<std::string, std::vector<pm::GemmCall>>
gemmTables(const codegen::KernelLibrary &lib) {
  std::map<std::string, std::vector<pm::GemmCall>> out;
  for (const codegen::CompiledKernel &k : lib.kernels)
    if (!k.gemms.empty())
      out[k.symbol] = k.gemms;
  return out;
}

struct Totals {
  int kernels = 0, failed = 0, gemms = 0, launches = 0;
};

/// Compiles `kernels` of `module` for both targets and compares them.
void checkGroup(const std::string &name, mlir::ModuleOp module,
                llvm::ArrayRef<mlir::func::FuncOp> kernels, Totals &totals) {
  codegen::KernelCompileOptions cpuOptions, cudaOptions;
  cudaOptions.target = codegen::KernelTarget::Cuda;
  // Kernel by kernel against CUDA, which takes no parameters.
  cpuOptions.parameters = false;
  auto cpu = codegen::compileKernels(module, kernels, cpuOptions);
  auto cuda = codegen::compileKernels(module, kernels, cudaOptions);
  auto cpuLib = mlir::succeeded(cpu)
                    ? executor::LoadedKernelLibrary::load(cpu->binary, name)
                    : executor::LoadedKernelLibrary::load("", name);
  std::map<std::string, executor::CudaKernelProgram> parsed;
  std::unique_ptr<executor::LoadedCudaLibrary> gpuLib;
  std::string why;
  if (mlir::succeeded(cuda)) {
    auto p = executor::parseCudaLibrary(cuda->binary, gemmTables(*cuda));
    if (p.isOk())
      parsed = std::move(*p);
    else
      why = p.status().toString();
    if (p.isOk() && !compileOnly) {
      auto l = executor::LoadedCudaLibrary::load(*device, cuda->binary,
                                                 gemmTables(*cuda));
      if (l.isOk())
        gpuLib = std::move(*l);
      else
        why = l.status().toString();
    }
  }
  if (mlir::failed(cpu) || mlir::failed(cuda) || !cpuLib || !why.empty()) {
    llvm::outs() << "FAIL " << name << ": compiling or loading failed " << why
                 << "\n";
    totals.failed += kernels.size();
    totals.kernels += kernels.size();
    return;
  }
  int gemms = 0, launches = 0;
  for (const codegen::CompiledKernel &k : cuda->kernels) {
    auto it = parsed.find(k.symbol);
    if (it == parsed.end())
      continue;
    gemms += it->second.gemms.size();
    launches += it->second.numLaunches();
  }
  totals.gemms += gemms;
  totals.launches += launches;
  if (compileOnly) {
    int bad = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      auto it = parsed.find(cuda->kernels[k].symbol);
      bool ok = it != parsed.end() && !it->second.steps.empty() &&
                it->second.numArgs ==
                    mlir::func::FuncOp(kernels[k]).getNumArguments();
      bad += !ok;
    }
    totals.kernels += kernels.size();
    totals.failed += bad;
    llvm::outs() << (bad ? "FAIL " : "ok   ") << name << ": " << kernels.size()
                 << " kernels compiled for CPU and CUDA (" << gemms
                 << " cuBLAS calls, " << launches
                 << " PTX launches), manifests checked\n";
    return;
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  double worst = 0, gpuSeconds = 0;
  int failed = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    mlir::func::FuncOp fn = kernels[k];
    const codegen::CompiledKernel &ck = cpu->kernels[k];
    const codegen::CompiledKernel &gk = cuda->kernels[k];
    std::vector<std::vector<uint8_t>> cpuArgs, gpuArgs;
    for (mlir::Type type : fn.getArgumentTypes()) {
      auto shaped = mlir::cast<mlir::ShapedType>(type);
      size_t bytes =
          shaped.getNumElements() * ((shaped.getElementTypeBitWidth() + 7) / 8);
      std::vector<uint8_t> buffer(bytes, 0);
      if (shaped.getElementType().isF32())
        for (size_t i = 0; i < bytes / 4; ++i) {
          float v = dist(rng);
          std::memcpy(buffer.data() + 4 * i, &v, 4);
        }
      cpuArgs.push_back(buffer);
    }
    gpuArgs = cpuArgs;
    std::vector<void *> pointers;
    for (auto &a : cpuArgs)
      pointers.push_back(a.data());
    bool ok = (*cpuLib)->call(ck.symbol, pointers.data()).isOk();
    double seconds = 0;
    ok = ok && runOnGpu(*gpuLib, gk.symbol, gpuArgs, ck.numInputs, seconds);
    gpuSeconds += seconds;
    for (size_t i = ck.numInputs; ok && i < cpuArgs.size(); ++i) {
      auto shaped = mlir::cast<mlir::ShapedType>(fn.getArgumentTypes()[i]);
      if (!shaped.getElementType().isF32())
        continue;
      for (size_t e = 0; e < cpuArgs[i].size() / 4; ++e) {
        float a, b;
        std::memcpy(&a, cpuArgs[i].data() + 4 * e, 4);
        std::memcpy(&b, gpuArgs[i].data() + 4 * e, 4);
        double err = std::fabs(a - b) / (1e-3 + std::fabs(a));
        worst = std::max(worst, err);
        if (!(err <= 1e-3))
          ok = false;
      }
    }
    if (!ok) {
      ++failed;
      llvm::outs() << "  mismatch or error in " << ck.name << "\n";
    }
  }
  totals.kernels += kernels.size();
  totals.failed += failed;
  llvm::outs() << llvm::format("%-4s %-22s %3zu kernels  %2d cuBLAS  %3d PTX  "
                               "max rel err %.2e  gpu %.3f ms\n",
                               failed ? "FAIL" : "ok", name.c_str(),
                               kernels.size(), gemms, launches, worst,
                               gpuSeconds * 1e3);
}

const char *kLargeKernels = R"mlir(
#id = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @chain_1m(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>, %c: tensor<1048576xf32>, %out: memref<1048576xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<1048576xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b, %c : tensor<1048576xf32>, tensor<1048576xf32>, tensor<1048576xf32>) outs(%e : tensor<1048576xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %z : f32
    %p = arith.maximumf %s, %zero : f32
    %h = arith.mulf %p, %half : f32
    linalg.yield %h : f32
  } -> tensor<1048576xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<1048576xf32>, memref<1048576xf32>) -> ()
  return
}
func.func private @matmul_512(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>, %out: memref<512x512xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %c = linalg.matmul ins(%a, %b : tensor<512x512xf32>, tensor<512x512xf32>) outs(%z : tensor<512x512xf32>) -> tensor<512x512xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<512x512xf32>, memref<512x512xf32>) -> ()
  return
}
func.func private @softmax(%a: tensor<256x1000xf32>, %out: memref<256x1000xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<256xf32>
  %e = tensor.empty() : tensor<256x1000xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<256xf32>) -> tensor<256xf32>
  %max = linalg.reduce ins(%a : tensor<256x1000xf32>) outs(%m0 : tensor<256xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %ex = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %max : tensor<256x1000xf32>, tensor<256xf32>) outs(%e : tensor<256x1000xf32>) {
  ^bb0(%x: f32, %mx: f32, %o: f32):
    %d = arith.subf %x, %mx : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<256x1000xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%er : tensor<256xf32>) -> tensor<256xf32>
  %sum = linalg.reduce ins(%ex : tensor<256x1000xf32>) outs(%s0 : tensor<256xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %sm = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<256x1000xf32>, tensor<256xf32>) outs(%e : tensor<256x1000xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %v = arith.divf %x, %s : f32
    linalg.yield %v : f32
  } -> tensor<256x1000xf32>
  bufferization.materialize_in_destination %sm in restrict writable %out : (tensor<256x1000xf32>, memref<256x1000xf32>) -> ()
  return
}
)mlir";

} // namespace

int main(int argc, char **argv) {
  std::string examples = MONARCH_SOURCE_DIR "/examples";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--compile-only")
      compileOnly = true;
    else
      examples = argv[i];
  }
  std::string deviceName = "no device (compile only)";
  if (!compileOnly) {
    auto opened = executor::CudaDevice::open();
    if (!opened.isOk()) {
      llvm::outs() << "no device, skipped: " << opened.status().message()
                   << "\n";
      return 77;
    }
    device = std::move(*opened);
    deviceName = device->name();
  }
  llvm::outs() << "device: " << deviceName << "\n";

  mlir::DialectRegistry registry;
  registerMonarchDialects(registry);
  mlir::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  Totals totals;

  for (const char *program : {"data_parallel", "tensor_parallel", "pipeline"}) {
    std::string path = examples + "/ir/" + program + ".mlir";
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(path, &ctx);
    mlir::PassManager pm(&ctx);
    populateStagePipelines(pm, Stage::Traced, Stage::Planned,
                           PipelineOptions());
    if (!module || mlir::failed(pm.run(*module))) {
      llvm::outs() << "FAIL " << program << ": cannot plan " << path << "\n";
      ++totals.failed;
      continue;
    }
    llvm::SetVector<mlir::func::FuncOp> kernels;
    module->walk([&](mlir::Operation *op) {
      if (op->getName().getStringRef() != "monarch.launch")
        return;
      auto sym = op->getAttrOfType<mlir::FlatSymbolRefAttr>("kernel");
      if (auto fn = module->lookupSymbol<mlir::func::FuncOp>(sym))
        kernels.insert(fn);
    });
    checkGroup(program, *module, kernels.getArrayRef(), totals);
  }
  auto large = mlir::parseSourceString<mlir::ModuleOp>(kLargeKernels, &ctx);
  if (!large) {
    llvm::outs() << "FAIL: the built-in kernels do not parse\n";
    return 1;
  }
  for (auto fn : large->getOps<mlir::func::FuncOp>())
    checkGroup(fn.getSymName().str(), *large, {fn}, totals);

  if (compileOnly)
    llvm::outs() << "summary: " << totals.kernels - totals.failed << " of "
                 << totals.kernels << " kernels compiled for both targets ("
                 << totals.gemms << " matmuls as cuBLAS calls, "
                 << totals.launches << " PTX launches; nothing executed)\n";
  else
    llvm::outs() << "summary: " << totals.kernels - totals.failed << " of "
                 << totals.kernels << " kernels match the CPU on " << deviceName
                 << " (" << totals.gemms << " cuBLAS calls, " << totals.launches
                 << " PTX launches)\n";
  device.reset();
  return totals.failed ? 1 : 0;
}
