//===- CudaDevice.cpp - Driver, cuBLAS ------------------------ -*- C++ -*-===//
//
// The CUDA driver is opened at run time (libcuda.so.1) so that a process
// linking this library starts on machines without a GPU driver; cuBLAS is
// linked (CUDA::cublas) when the build has CUDA. The cuBLAS handle works in
// the device's primary context, which the driver API makes current, and
// both the PTX launches and the cuBLAS calls go to the legacy default
// stream, so they run in manifest order. Without CUDA in the build, every
// device entry point reports Unavailable.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/CudaRuntime.h"

#ifdef MONARCH_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>

#include <type_traits>
#endif

namespace monarch::executor {

using executor::Status;
using executor::StatusCode;
using executor::StatusOr;

#ifdef MONARCH_HAVE_CUDA

namespace {

/// The driver entry points this file uses, resolved with dlsym.
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
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;

  /// Empty on success, else why not.
  std::string open() {
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return "no CUDA driver (libcuda.so.1): " + std::string(::dlerror());
    std::string missing;
    auto load = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          ::dlsym(lib, name));
      if (!fn)
        missing += std::string(missing.empty() ? "" : ", ") + name;
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
    load(ModuleUnload, "cuModuleUnload");
    load(ModuleGetFunction, "cuModuleGetFunction");
    load(MemAlloc, "cuMemAlloc_v2");
    load(MemFree, "cuMemFree_v2");
    load(MemcpyHtoD, "cuMemcpyHtoD_v2");
    load(MemcpyDtoH, "cuMemcpyDtoH_v2");
    load(LaunchKernel, "cuLaunchKernel");
    return missing.empty() ? "" : "the CUDA driver lacks " + missing;
  }
};

Driver &driver() {
  static Driver d;
  return d;
}

Status cuError(CUresult r, const std::string &what) {
  if (r == CUDA_SUCCESS)
    return Status::ok();
  const char *s = nullptr;
  if (driver().GetErrorString)
    driver().GetErrorString(r, &s);
  return Status(StatusCode::Internal,
                what + ": " + (s ? s : "CUDA error " + std::to_string(r)));
}

cudaDataType_t cudaType(plan::DType t) {
  switch (t) {
  case plan::DType::F16:
    return CUDA_R_16F;
  case plan::DType::BF16:
    return CUDA_R_16BF;
  case plan::DType::F64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

} // namespace

struct CudaDevice::Impl {
  CUdevice device = 0;
  CUcontext context = nullptr;
  cublasHandle_t blas = nullptr;
};

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  Driver &cu = driver();
  static std::string why = cu.open();
  if (!why.empty())
    return Status(StatusCode::Unavailable, why);
  int count = 0;
  if (cu.Init(0) != CUDA_SUCCESS || cu.DeviceGetCount(&count) != CUDA_SUCCESS ||
      count <= ordinal)
    return Status(StatusCode::Unavailable,
                  "no CUDA device " + std::to_string(ordinal) + " (" +
                      std::to_string(count) + " visible)");
  auto impl = std::make_unique<Impl>();
  char name[256] = {0};
  if (Status s = cuError(cu.DeviceGet(&impl->device, ordinal), "cuDeviceGet");
      !s)
    return s;
  cu.DeviceGetName(name, sizeof(name), impl->device);
  if (Status s =
          cuError(cu.DevicePrimaryCtxRetain(&impl->context, impl->device),
                  "cuDevicePrimaryCtxRetain");
      !s)
    return s;
  if (Status s = cuError(cu.CtxSetCurrent(impl->context), "cuCtxSetCurrent");
      !s) {
    cu.DevicePrimaryCtxRelease(impl->device);
    return s;
  }
  cublasStatus_t b = cublasCreate(&impl->blas);
  if (b != CUBLAS_STATUS_SUCCESS) {
    cu.DevicePrimaryCtxRelease(impl->device);
    return Status(StatusCode::Unavailable,
                  std::string("cublasCreate: ") + cublasGetStatusString(b));
  }
  std::unique_ptr<CudaDevice> device(new CudaDevice(std::move(impl)));
  device->name_ = name;
  return device;
}

CudaDevice::CudaDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudaDevice::~CudaDevice() {
  if (impl_->blas)
    cublasDestroy(impl_->blas);
  driver().DevicePrimaryCtxRelease(impl_->device);
}

Status CudaDevice::makeCurrent() {
  return cuError(driver().CtxSetCurrent(impl_->context), "cuCtxSetCurrent");
}

StatusOr<uint64_t> CudaDevice::alloc(size_t bytes) {
  if (Status s = makeCurrent(); !s)
    return s;
  CUdeviceptr p = 0;
  if (Status s = cuError(driver().MemAlloc(&p, std::max<size_t>(bytes, 4)),
                         "cuMemAlloc of " + std::to_string(bytes) + " bytes");
      !s)
    return s;
  return static_cast<uint64_t>(p);
}

void CudaDevice::free(uint64_t pointer) {
  if (pointer && makeCurrent())
    driver().MemFree(static_cast<CUdeviceptr>(pointer));
}

Status CudaDevice::copyToDevice(uint64_t dst, const void *src, size_t bytes) {
  if (Status s = makeCurrent(); !s)
    return s;
  return cuError(driver().MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

Status CudaDevice::copyToHost(void *dst, uint64_t src, size_t bytes) {
  if (Status s = makeCurrent(); !s)
    return s;
  return cuError(driver().MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

Status CudaDevice::synchronize() {
  if (Status s = makeCurrent(); !s)
    return s;
  return cuError(driver().CtxSynchronize(), "cuCtxSynchronize");
}

StatusOr<std::unique_ptr<LoadedCudaLibrary>> LoadedCudaLibrary::load(
    CudaDevice &device, std::string_view code,
    const std::map<std::string, std::vector<plan::GemmCall>> &gemms) {
  StatusOr<std::map<std::string, CudaKernelProgram>> parsed =
      parseCudaLibrary(code, gemms);
  if (!parsed.isOk())
    return parsed.status();
  std::unique_ptr<LoadedCudaLibrary> lib(
      new LoadedCudaLibrary(device, std::move(*parsed)));
  for (auto &[symbol, kernel] : lib->kernels_) {
    if (kernel.numLaunches() == 0)
      continue; // Only cuBLAS calls: no PTX to load.
    CUmodule module = nullptr;
    if (Status s =
            cuError(driver().ModuleLoadData(&module, kernel.module.c_str()),
                    "cuModuleLoadData of " + symbol);
        !s)
      return s;
    lib->modules_[symbol] = module;
  }
  return lib;
}

LoadedCudaLibrary::~LoadedCudaLibrary() {
  for (auto &[symbol, module] : modules_)
    driver().ModuleUnload(static_cast<CUmodule>(module));
}

namespace {

Status runGemm(cublasHandle_t blas, const plan::GemmCall &g,
               const std::vector<CUdeviceptr> &ptrs) {
  cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  bool f64 = g.typeC == plan::DType::F64;
  cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  float alpha32 = static_cast<float>(g.alpha),
        beta32 = static_cast<float>(g.beta);
  const void *alpha = f64 ? static_cast<const void *>(&g.alpha) : &alpha32;
  const void *beta = f64 ? static_cast<const void *>(&g.beta) : &beta32;
  auto ptr = [&](int i) { return reinterpret_cast<void *>(ptrs[i]); };
  cublasStatus_t r;
  if (g.batch == 1)
    r = cublasGemmEx(blas, ta, tb, g.m, g.n, g.k, alpha, ptr(0),
                     cudaType(g.typeA), g.lda, ptr(1), cudaType(g.typeB), g.ldb,
                     beta, ptr(2), cudaType(g.typeC), g.ldc, compute,
                     CUBLAS_GEMM_DEFAULT);
  else
    r = cublasGemmStridedBatchedEx(blas, ta, tb, g.m, g.n, g.k, alpha, ptr(0),
                                   cudaType(g.typeA), g.lda, g.strideA, ptr(1),
                                   cudaType(g.typeB), g.ldb, g.strideB, beta,
                                   ptr(2), cudaType(g.typeC), g.ldc, g.strideC,
                                   g.batch, compute, CUBLAS_GEMM_DEFAULT);
  if (r != CUBLAS_STATUS_SUCCESS)
    return Status(StatusCode::Internal,
                  std::string("cuBLAS gemm: ") + cublasGetStatusString(r));
  return Status::ok();
}

} // namespace

Status LoadedCudaLibrary::run(const std::string &symbol,
                              const std::vector<uint64_t> &args) {
  auto it = kernels_.find(symbol);
  if (it == kernels_.end())
    return Status(StatusCode::NotFound, "no CUDA kernel " + symbol);
  const CudaKernelProgram &kernel = it->second;
  if (args.size() != kernel.numArgs)
    return Status(StatusCode::InvalidArgument,
                  symbol + " takes " + std::to_string(kernel.numArgs) +
                      " buffers, got " + std::to_string(args.size()));
  if (Status s = device_.makeCurrent(); !s)
    return s;
  std::vector<uint64_t> scratch;
  auto release = [&] {
    for (uint64_t p : scratch)
      device_.free(p);
  };
  for (int64_t bytes : kernel.scratchBytes) {
    StatusOr<uint64_t> p = device_.alloc(bytes);
    if (!p.isOk()) {
      release();
      return p.status();
    }
    scratch.push_back(*p);
  }
  Status status = Status::ok();
  for (const CudaStep &step : kernel.steps) {
    std::vector<CUdeviceptr> ptrs;
    for (const CudaOperand &op : step.operands)
      ptrs.push_back((op.argument ? args[op.index] : scratch[op.index]) +
                     op.offset);
    if (step.gemm >= 0) {
      status = runGemm(device_.impl().blas, kernel.gemms[step.gemm], ptrs);
    } else {
      CUfunction fn = nullptr;
      status = cuError(driver().ModuleGetFunction(
                           &fn, static_cast<CUmodule>(modules_.at(symbol)),
                           step.entry.c_str()),
                       "cuModuleGetFunction " + step.entry);
      if (status) {
        std::vector<void *> params;
        for (CUdeviceptr &p : ptrs)
          params.push_back(&p);
        status = cuError(driver().LaunchKernel(fn, step.grid[0], step.grid[1],
                                               step.grid[2], step.block[0],
                                               step.block[1], step.block[2], 0,
                                               nullptr, params.data(), nullptr),
                         "cuLaunchKernel " + step.entry);
      }
    }
    if (!status)
      break;
  }
  Status synced = device_.synchronize();
  release();
  if (!status)
    return status.withContext("CUDA kernel " + symbol);
  return synced;
}

#else // !MONARCH_HAVE_CUDA

struct CudaDevice::Impl {};

namespace {
Status noCuda() {
  return Status(StatusCode::Unavailable, "built without CUDA");
}
} // namespace

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::open(int) { return noCuda(); }
CudaDevice::CudaDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaDevice::~CudaDevice() = default;
Status CudaDevice::makeCurrent() { return noCuda(); }
StatusOr<uint64_t> CudaDevice::alloc(size_t) { return noCuda(); }
void CudaDevice::free(uint64_t) {}
Status CudaDevice::copyToDevice(uint64_t, const void *, size_t) {
  return noCuda();
}
Status CudaDevice::copyToHost(void *, uint64_t, size_t) { return noCuda(); }
Status CudaDevice::synchronize() { return noCuda(); }
StatusOr<std::unique_ptr<LoadedCudaLibrary>> LoadedCudaLibrary::load(
    CudaDevice &, std::string_view,
    const std::map<std::string, std::vector<plan::GemmCall>> &) {
  return noCuda();
}
LoadedCudaLibrary::~LoadedCudaLibrary() = default;
Status LoadedCudaLibrary::run(const std::string &,
                              const std::vector<uint64_t> &) {
  return noCuda();
}

#endif

} // namespace monarch::executor
