//===- DeviceProbe.cpp - CUDA/NCCL availability probe -----------*- C++ -*-===//
//
// Compiled against the CUDA runtime and NCCL whenever the toolkit is present
// (MONARCH_HAVE_CUDA), so those paths always build and link; on machines
// without a GPU the runtime calls fail cleanly and we report why.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Device.h"

#ifdef MONARCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <vector>
#endif

namespace monarch::executor {

DeviceInfo probeDevices() {
  DeviceInfo info;
#ifdef MONARCH_HAVE_CUDA
  info.cudaCompiled = true;
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess)
    info.ncclVersion = version;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    info.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    return info;
  }
  info.cudaDevices = count;
  if (count == 0)
    info.reason = "no CUDA device visible";
#else
  info.reason = "built without CUDA";
#endif
  return info;
}

std::string checkDeviceRoundTrip(int bytes) {
#ifdef MONARCH_HAVE_CUDA
  std::vector<unsigned char> in(bytes), out(bytes, 0);
  for (int i = 0; i < bytes; ++i)
    in[i] = static_cast<unsigned char>(i * 31 + 7);
  void *dev = nullptr;
  cudaError_t err = cudaMalloc(&dev, bytes);
  if (err != cudaSuccess)
    return std::string("cudaMalloc: ") + cudaGetErrorString(err);
  err = cudaMemcpy(dev, in.data(), bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess)
    err = cudaMemcpy(out.data(), dev, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dev);
  if (err != cudaSuccess)
    return std::string("cudaMemcpy: ") + cudaGetErrorString(err);
  return in == out ? "" : "device round trip corrupted the data";
#else
  (void)bytes;
  return "built without CUDA";
#endif
}

} // namespace monarch::executor
