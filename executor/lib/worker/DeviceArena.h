//===- DeviceArena.h - A rank program's buffers --------------- -*- C++ -*-===//
//
// Plans whose communicators use NCCL keep every buffer on the device: the
// arena is one device allocation, feeds are copied in and fetches out,
// kernels run from the plan's CUDA library (PTX through the driver, cuBLAS
// calls; each launch runs to completion), and NCCL is handed device
// addresses. Actor state regions are part of the device arena; the
// interpreter copies them from the worker's host ActorStates before each
// step and back after it, so setState/getState and the worker's other
// plans see the same values.
//
// The implementation (CudaDeviceArena.cpp, with the CUDA runtime and
// cuBLAS) is a module, libMonarchWorkerCuda.so, that create() loads the
// first time a device plan arrives: loading cuBLAS costs every process
// about 60 ms, which host-only jobs should not pay at start-up.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_WORKER_DEVICEARENA_H
#define MONARCH_WORKER_DEVICEARENA_H

#include "monarch/Executor/RankProgram.h"

#include "monarch/Support/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace monarch::worker {

class DeviceArena {
public:
  /// Opens device `ordinal` (the one its NCCL communicators use),
  /// allocates `p.arenaBytes` zeroed and loads `p.cudaLibrary` when the
  /// program launches kernels. Unimplemented when this worker has no
  /// usable device (or no libMonarchWorkerCuda.so).
  static executor::StatusOr<std::unique_ptr<DeviceArena>>
  create(const RankProgram &p, int ordinal);
  virtual ~DeviceArena() = default;

  /// The device address of arena byte `offset`, in the pointer type the
  /// data plane takes (never dereferenced on the host).
  virtual char *at(int64_t offset) const = 0;
  virtual executor::Status copyIn(int64_t offset, const void *src,
                                  size_t bytes) = 0;
  virtual executor::Status copyOut(void *dst, int64_t offset, size_t bytes) = 0;
  /// Runs kernel `symbol` on the buffers at `offsets` (inputs, then
  /// outputs) and waits for it.
  virtual executor::Status launch(const std::string &symbol,
                                  const std::vector<int64_t> &offsets) = 0;
};

/// The module's entry point (extern "C", looked up with dlsym): stores the
/// result of creating an arena for `p` on `ordinal` into `*out`.
using CreateDeviceArenaFn =
    void (*)(const RankProgram *p, int ordinal,
             executor::StatusOr<std::unique_ptr<DeviceArena>> *out);
inline constexpr const char *kDeviceArenaModule = "libMonarchWorkerCuda.so";
inline constexpr const char *kCreateDeviceArenaSymbol =
    "monarch_worker_create_device_arena";

} // namespace monarch::worker

#endif // MONARCH_WORKER_DEVICEARENA_H
