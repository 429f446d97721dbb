//===- CudaRuntime.h - Run a CUDA kernel library -------------- -*- C++ -*-===//
//
// The device side of the CUDA target (docs/kernels.md), free of MLIR and
// LLVM: a CUDA `KernelLibrary` (per kernel a launch manifest and PTX) plus
// its cuBLAS table (GemmCall per matmul) is parsed, its PTX modules are
// loaded with the CUDA driver API, and a kernel runs on device buffers as
// its manifest says: temporaries allocated, PTX launches and cuBLAS calls in
// order on the default stream.
//
// The driver is opened at run time (libcuda.so.1), so programs linking this
// library start, and report Unavailable, on machines without a GPU driver;
// cuBLAS is linked when the build has CUDA (MONARCH_ENABLE_CUDA), otherwise
// CudaDevice::open reports "built without CUDA". Parsing needs neither.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CUDARUNTIME_H
#define MONARCH_EXECUTOR_CUDARUNTIME_H

#include "monarch/Plan/Plan.h"
#include "monarch/Support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace monarch::executor {

/// A buffer a step uses: kernel argument (`argument` true) or temporary
/// `index`, plus a byte offset.
struct CudaOperand {
  bool argument = true;
  unsigned index = 0;
  int64_t offset = 0;
};

/// One step of a kernel: a PTX launch or a cuBLAS call (`gemm` >= 0, an
/// index into CudaKernelProgram::gemms).
struct CudaStep {
  std::string entry;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  int gemm = -1;
  std::vector<CudaOperand> operands;
};

/// One kernel of a CUDA library, as its manifest describes it.
struct CudaKernelProgram {
  std::string symbol;
  unsigned numArgs = 0;
  std::vector<int64_t> scratchBytes;
  std::vector<CudaStep> steps;
  std::vector<plan::GemmCall> gemms;
  /// The kernel's PTX module text (its manifest lines included).
  std::string module;
  size_t numLaunches() const;
};

/// Parses the PTX modules and manifests of `code` and attaches to each
/// kernel its cuBLAS calls from `gemms` (by symbol). InvalidArgument on a
/// malformed manifest, an operand out of range, or a `monarch.gemm` line
/// without its table entry (or the reverse).
executor::StatusOr<std::map<std::string, CudaKernelProgram>> parseCudaLibrary(
    std::string_view code,
    const std::map<std::string, std::vector<plan::GemmCall>> &gemms);

/// The gemm tables of a plan's CUDA library, by symbol.
std::map<std::string, std::vector<plan::GemmCall>>
gemmsBySymbol(const plan::KernelLibraryBlob &library);

/// The first CUDA device: driver, primary context and a cuBLAS handle.
class CudaDevice {
public:
  /// Unavailable without a driver, a device, or CUDA in this build.
  static executor::StatusOr<std::unique_ptr<CudaDevice>> open(int ordinal = 0);
  ~CudaDevice();
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  const std::string &name() const { return name_; }
  /// Makes the device's context current on the calling thread. Every call
  /// below (and LoadedCudaLibrary::run) does this first, so a device opened
  /// on one thread can be used from others (a worker's streams).
  executor::Status makeCurrent();
  executor::StatusOr<uint64_t> alloc(size_t bytes);
  void free(uint64_t pointer);
  executor::Status copyToDevice(uint64_t dst, const void *src, size_t bytes);
  executor::Status copyToHost(void *dst, uint64_t src, size_t bytes);
  executor::Status synchronize();

  struct Impl;
  Impl &impl() { return *impl_; }

private:
  explicit CudaDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string name_;
};

/// A parsed library with its PTX modules loaded on a device.
class LoadedCudaLibrary {
public:
  static executor::StatusOr<std::unique_ptr<LoadedCudaLibrary>>
  load(CudaDevice &device, std::string_view code,
       const std::map<std::string, std::vector<plan::GemmCall>> &gemms);
  ~LoadedCudaLibrary();
  LoadedCudaLibrary(const LoadedCudaLibrary &) = delete;
  LoadedCudaLibrary &operator=(const LoadedCudaLibrary &) = delete;

  /// Runs kernel `symbol` on device buffers `args` (one per kernel
  /// argument, inputs then outputs) and waits for it.
  executor::Status run(const std::string &symbol,
                       const std::vector<uint64_t> &args);
  const std::map<std::string, CudaKernelProgram> &kernels() const {
    return kernels_;
  }

private:
  LoadedCudaLibrary(CudaDevice &device,
                    std::map<std::string, CudaKernelProgram> kernels)
      : device_(device), kernels_(std::move(kernels)) {}
  CudaDevice &device_;
  std::map<std::string, CudaKernelProgram> kernels_;
  std::map<std::string, void *> modules_; // symbol -> CUmodule
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CUDARUNTIME_H
