//===- gpu_kernel_check.cpp - CUDA kernels against the CPU kernels -*- C++
//-*-===//
//
// For a machine with a GPU (tests/gpu/run.sh). Compiles the kernels of the
// three example programs and a few larger kernels twice, for the CPU and
// for CUDA (PTX, KernelTarget::Cuda), runs the CPU library through
// MonarchKernelRuntime and the PTX through the CUDA driver API following
// the launch manifest (CudaPipeline.cpp), and compares every output.
// Prints one line per kernel group and a summary; exits 0 when all match,
// 1 on a mismatch or error, 77 when there is no CUDA device (skip).
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Codegen/KernelRuntime.h"
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

#include <cuda.h>
#include <dlfcn.h>

#include <cstring>
#include <type_traits>

#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace monarch;

namespace {

/// --compile-only: compile both targets and check the manifests, without a
/// driver (what ctest runs on machines without a GPU).
bool compileOnly = false;

struct Launch {
  std::string entry;
  unsigned grid[3], block[3];
  std::vector<std::string> operands; // aN or sN
};

struct GpuKernel {
  CUmodule module = nullptr;
  std::vector<int64_t> scratchBytes;
  std::vector<Launch> launches;
};

/// The CUDA driver, opened at run time (libcuda.so.1) so that this binary
/// also starts, and skips, on machines without a GPU driver.
struct Driver {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;

  bool open() {
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return false;
    bool ok = true;
    auto load = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          ::dlsym(lib, name));
      ok = ok && fn;
    };
    load(Init, "cuInit");
    load(GetErrorString, "cuGetErrorString");
    load(DeviceGetCount, "cuDeviceGetCount");
    load(DeviceGet, "cuDeviceGet");
    load(DeviceGetName, "cuDeviceGetName");
    load(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    load(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    load(CtxSetCurrent, "cuCtxSetCurrent");
    load(CtxSynchronize, "cuCtxSynchronize");
    load(ModuleLoadData, "cuModuleLoadData");
    load(ModuleGetFunction, "cuModuleGetFunction");
    load(MemAlloc, "cuMemAlloc_v2");
    load(MemFree, "cuMemFree_v2");
    load(MemcpyHtoD, "cuMemcpyHtoD_v2");
    load(MemcpyDtoH, "cuMemcpyDtoH_v2");
    load(LaunchKernel, "cuLaunchKernel");
    return ok;
  }
} cu;

#define CU_CHECK(expr)                                                         \
  do {                                                                         \
    CUresult _r = (expr);                                                      \
    if (_r != CUDA_SUCCESS) {                                                  \
      const char *_s = nullptr;                                                \
      cu.GetErrorString(_r, &_s);                                              \
      llvm::errs() << #expr << ": " << (_s ? _s : "unknown") << "\n";          \
      return false;                                                            \
    }                                                                          \
  } while (0)

/// Splits a CUDA KernelLibrary into per-kernel PTX modules and manifests.
bool loadGpuLibrary(const std::string &binary,
                    std::map<std::string, GpuKernel> &kernels) {
  const std::string marker = "// monarch.ptx-module ";
  size_t pos = binary.find(marker);
  while (pos != std::string::npos) {
    size_t next = binary.find(marker, pos + marker.size());
    std::string section = binary.substr(
        pos, next == std::string::npos ? std::string::npos : next - pos);
    std::istringstream lines(section);
    std::string line, symbol;
    GpuKernel kernel;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string slashes, tag;
      words >> slashes >> tag;
      if (tag == "monarch.ptx-module") {
        words >> symbol;
      } else if (tag == "monarch.scratch") {
        std::string sym;
        size_t index;
        int64_t bytes;
        words >> sym >> index >> bytes;
        kernel.scratchBytes.resize(
            std::max(kernel.scratchBytes.size(), index + 1));
        kernel.scratchBytes[index] = bytes;
      } else if (tag == "monarch.launch") {
        Launch launch;
        std::string sym, grid, block, operands;
        words >> sym >> launch.entry >> grid >> block >> operands;
        if (std::sscanf(grid.c_str(), "grid=%u,%u,%u", &launch.grid[0],
                        &launch.grid[1], &launch.grid[2]) != 3 ||
            std::sscanf(block.c_str(), "block=%u,%u,%u", &launch.block[0],
                        &launch.block[1], &launch.block[2]) != 3) {
          llvm::errs() << "bad manifest line: " << line << "\n";
          return false;
        }
        std::istringstream ops(operands.substr(operands.find('=') + 1));
        std::string op;
        while (std::getline(ops, op, ','))
          if (!op.empty())
            launch.operands.push_back(op);
        kernel.launches.push_back(launch);
      }
    }
    if (!compileOnly)
      CU_CHECK(cu.ModuleLoadData(&kernel.module, section.c_str()));
    kernels[symbol] = kernel;
    pos = next;
  }
  return true;
}

/// Runs one kernel on the GPU: arguments are copied in, scratch allocated,
/// the launches run in order, outputs copied back.
bool runOnGpu(GpuKernel &kernel, std::vector<std::vector<uint8_t>> &args,
              unsigned numInputs, double &seconds) {
  std::vector<CUdeviceptr> argPtrs(args.size()), scratch;
  for (size_t i = 0; i < args.size(); ++i) {
    CU_CHECK(cu.MemAlloc(&argPtrs[i], std::max<size_t>(args[i].size(), 4)));
    CU_CHECK(cu.MemcpyHtoD(argPtrs[i], args[i].data(), args[i].size()));
  }
  for (int64_t bytes : kernel.scratchBytes) {
    CUdeviceptr p;
    CU_CHECK(cu.MemAlloc(&p, std::max<int64_t>(bytes, 4)));
    scratch.push_back(p);
  }
  CU_CHECK(cu.CtxSynchronize());
  auto start = std::chrono::steady_clock::now();
  for (Launch &launch : kernel.launches) {
    CUfunction fn;
    CU_CHECK(cu.ModuleGetFunction(&fn, kernel.module, launch.entry.c_str()));
    std::vector<CUdeviceptr> values;
    for (const std::string &op : launch.operands) {
      size_t index = std::stoul(op.substr(1));
      values.push_back(op[0] == 'a' ? argPtrs.at(index) : scratch.at(index));
    }
    std::vector<void *> params;
    for (CUdeviceptr &v : values)
      params.push_back(&v);
    CU_CHECK(cu.LaunchKernel(fn, launch.grid[0], launch.grid[1], launch.grid[2],
                             launch.block[0], launch.block[1], launch.block[2],
                             0, nullptr, params.data(), nullptr));
  }
  CU_CHECK(cu.CtxSynchronize());
  seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (size_t i = numInputs; i < args.size(); ++i)
    CU_CHECK(cu.MemcpyDtoH(args[i].data(), argPtrs[i], args[i].size()));
  for (CUdeviceptr p : argPtrs)
    cu.MemFree(p);
  for (CUdeviceptr p : scratch)
    cu.MemFree(p);
  return true;
}

struct Totals {
  int kernels = 0, failed = 0;
};

/// Compiles `kernels` of `module` for both targets and compares them.
void checkGroup(const std::string &name, mlir::ModuleOp module,
                llvm::ArrayRef<mlir::func::FuncOp> kernels, Totals &totals) {
  codegen::KernelCompileOptions cpuOptions, cudaOptions;
  cudaOptions.target = codegen::KernelTarget::Cuda;
  auto cpu = codegen::compileKernels(module, kernels, cpuOptions);
  auto cuda = codegen::compileKernels(module, kernels, cudaOptions);
  std::map<std::string, GpuKernel> gpu;
  auto cpuLib = mlir::succeeded(cpu)
                    ? codegen::LoadedKernelLibrary::load(cpu->binary, name)
                    : codegen::LoadedKernelLibrary::load("", name);
  if (mlir::failed(cpu) || mlir::failed(cuda) || !cpuLib ||
      !loadGpuLibrary(cuda->binary, gpu)) {
    llvm::outs() << "FAIL " << name << ": compiling or loading failed\n";
    totals.failed += kernels.size();
    totals.kernels += kernels.size();
    return;
  }
  if (compileOnly) {
    int bad = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
      auto it = gpu.find(cuda->kernels[k].symbol);
      bool ok = it != gpu.end() && !it->second.launches.empty();
      for (const Launch &l : ok ? it->second.launches : std::vector<Launch>())
        for (const std::string &op : l.operands) {
          size_t index = std::stoul(op.substr(1));
          ok = ok &&
               (op[0] == 'a'
                    ? index < mlir::func::FuncOp(kernels[k]).getNumArguments()
                    : index < it->second.scratchBytes.size());
        }
      bad += !ok;
    }
    totals.kernels += kernels.size();
    totals.failed += bad;
    llvm::outs() << (bad ? "FAIL " : "ok   ") << name << ": " << kernels.size()
                 << " kernels compiled for CPU and CUDA, manifests checked\n";
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
    ok = ok && gpu.count(gk.symbol) &&
         runOnGpu(gpu[gk.symbol], gpuArgs, ck.numInputs, seconds);
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
  llvm::outs() << llvm::format("%-4s %-22s %3zu kernels  max rel err %.2e  "
                               "gpu %.3f ms\n",
                               failed ? "FAIL" : "ok", name.c_str(),
                               kernels.size(), worst, gpuSeconds * 1e3);
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

/// Opens the driver and the first device's primary context. Returns false
/// (skip) without a driver or device; sets `name` empty on a real error.
bool openDevice(CUdevice &device, std::string &name) {
  int devices = 0;
  if (!cu.open() || cu.Init(0) != CUDA_SUCCESS ||
      cu.DeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
    llvm::outs() << "SKIP: no CUDA driver or device\n";
    return false;
  }
  CUcontext context;
  char buffer[256] = {0};
  if (cu.DeviceGet(&device, 0) != CUDA_SUCCESS ||
      cu.DeviceGetName(buffer, sizeof(buffer), device) != CUDA_SUCCESS ||
      cu.DevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      cu.CtxSetCurrent(context) != CUDA_SUCCESS) {
    llvm::outs() << "FAIL: cannot create a CUDA context\n";
    name.clear();
    return true;
  }
  name = buffer;
  return true;
}

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
  CUdevice device = 0;
  if (!compileOnly && !openDevice(device, deviceName))
    return 77;
  if (!compileOnly && deviceName.empty())
    return 1;
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
                 << totals.kernels
                 << " kernels compiled for both targets (nothing executed)\n";
  else
    llvm::outs() << "summary: " << totals.kernels - totals.failed << " of "
                 << totals.kernels << " kernels match the CPU on " << deviceName
                 << "\n";
  if (!compileOnly)
    cu.DevicePrimaryCtxRelease(device);
  return totals.failed ? 1 : 0;
}
