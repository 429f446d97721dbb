//===- DeviceArena.h - A rank program's buffers on a CUDA device -*- C++
//-*-===//
//
// Plans whose communicators use NCCL keep every buffer on the device: the
// arena is one device allocation, feeds are copied in and fetches out,
// kernels run from the plan's CUDA library (PTX through the driver, cuBLAS
// calls; LoadedCudaLibrary runs each launch to completion), and NCCL is
// handed device addresses. Actor state regions are part of the device
// arena; the interpreter copies them from the worker's host ActorStates
// before each step and back after it, so setState/getState and the
// worker's other plans see the same values. Everything here compiles
// without CUDA; create() then fails with the driver's message.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_WORKER_DEVICEARENA_H
#define MONARCH_WORKER_DEVICEARENA_H

#include "RankProgram.h"

#include "monarch/Executor/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace monarch::codegen {
class CudaDevice;
class LoadedCudaLibrary;
} // namespace monarch::codegen

namespace monarch::worker {

class DeviceArena {
public:
  /// Opens device `ordinal` (the one its NCCL communicators use),
  /// allocates `p.arenaBytes` zeroed and loads `p.cudaLibrary` when the
  /// program launches kernels.
  static executor::StatusOr<std::unique_ptr<DeviceArena>>
  create(const RankProgram &p, int ordinal);
  ~DeviceArena();

  /// The device address of arena byte `offset`, in the pointer type the
  /// data plane takes (never dereferenced on the host).
  char *at(int64_t offset) const;
  executor::Status copyIn(int64_t offset, const void *src, size_t bytes);
  executor::Status copyOut(void *dst, int64_t offset, size_t bytes);
  /// Runs kernel `symbol` on the buffers at `offsets` (inputs, then
  /// outputs) and waits for it.
  executor::Status launch(const std::string &symbol,
                          const std::vector<int64_t> &offsets);

private:
  DeviceArena() = default;
  std::unique_ptr<codegen::CudaDevice> device_;
  std::unique_ptr<codegen::LoadedCudaLibrary> library_;
  uint64_t base_ = 0;
  int64_t bytes_ = 0;
};

} // namespace monarch::worker

#endif // MONARCH_WORKER_DEVICEARENA_H
