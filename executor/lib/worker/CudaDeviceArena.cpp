//===- CudaDeviceArena.cpp - DeviceArena on the CUDA runtime --------------===//
//
// Built as libMonarchWorkerCuda.so (see DeviceArena.h), loaded by the
// worker only for device plans.
//
//===----------------------------------------------------------------------===//
#include "DeviceArena.h"

#include "monarch/Executor/CudaRuntime.h"
#include "monarch/Plan/Plan.h"

#include <algorithm>

using namespace monarch::executor;

namespace monarch::worker {
namespace {

class CudaDeviceArena final : public DeviceArena {
public:
  static StatusOr<std::unique_ptr<DeviceArena>> create(const RankProgram &p,
                                                       int ordinal);
  ~CudaDeviceArena() override;
  char *at(int64_t offset) const override;
  Status copyIn(int64_t offset, const void *src, size_t bytes) override;
  Status copyOut(void *dst, int64_t offset, size_t bytes) override;
  Status launch(const std::string &symbol,
                const std::vector<int64_t> &offsets) override;

private:
  std::unique_ptr<executor::CudaDevice> device_;
  std::unique_ptr<executor::LoadedCudaLibrary> library_;
  uint64_t base_ = 0;
  int64_t bytes_ = 0;
};

StatusOr<std::unique_ptr<DeviceArena>>
CudaDeviceArena::create(const RankProgram &p, int ordinal) {
  std::unique_ptr<CudaDeviceArena> arena(new CudaDeviceArena());
  auto device = executor::CudaDevice::open(ordinal);
  if (!device.isOk())
    // Not a failure of the job: this worker cannot run such plans at all.
    return Status(StatusCode::Unimplemented,
                  "plan @" + p.planName +
                      " keeps its buffers on a CUDA device (its "
                      "communicators use nccl), and this worker has none: " +
                      device.status().message());
  arena->device_ = std::move(device).value();
  arena->bytes_ = std::max<int64_t>(p.arenaBytes, 1);
  auto base = arena->device_->alloc(static_cast<size_t>(arena->bytes_));
  if (!base.isOk())
    return base.status().withContext("device arena of plan @" + p.planName);
  arena->base_ = *base;
  // Zeroed like the host arena (receive buffers start at 0).
  std::vector<char> zeros(static_cast<size_t>(arena->bytes_), 0);
  if (Status st = arena->copyIn(0, zeros.data(), zeros.size()); !st)
    return st;
  bool launches = false;
  for (const Instruction &instr : p.instructions)
    launches |= instr.kind == OpKind::Launch;
  if (launches) {
    if (!p.cudaLibrary)
      return Status(StatusCode::InvalidArgument,
                    "plan @" + p.planName +
                        " launches kernels on the device but has no CUDA "
                        "library (compile with --target=cuda)");
    auto library = executor::LoadedCudaLibrary::load(
        *arena->device_, p.cudaLibrary->code,
        executor::gemmsBySymbol(*p.cudaLibrary));
    if (!library.isOk())
      return library.status().withContext("CUDA kernels of plan @" +
                                          p.planName);
    arena->library_ = std::move(library).value();
  }
  return std::unique_ptr<DeviceArena>(std::move(arena));
}

CudaDeviceArena::~CudaDeviceArena() {
  library_.reset();
  if (device_ && base_)
    device_->free(base_);
}

char *CudaDeviceArena::at(int64_t offset) const {
  return reinterpret_cast<char *>(static_cast<uintptr_t>(base_ + offset));
}

Status CudaDeviceArena::copyIn(int64_t offset, const void *src, size_t bytes) {
  if (offset < 0 || offset + static_cast<int64_t>(bytes) > bytes_)
    return Status(StatusCode::InvalidArgument, "copy outside the arena");
  return bytes ? device_->copyToDevice(base_ + offset, src, bytes)
               : Status::ok();
}

Status CudaDeviceArena::copyOut(void *dst, int64_t offset, size_t bytes) {
  if (offset < 0 || offset + static_cast<int64_t>(bytes) > bytes_)
    return Status(StatusCode::InvalidArgument, "copy outside the arena");
  return bytes ? device_->copyToHost(dst, base_ + offset, bytes) : Status::ok();
}

Status CudaDeviceArena::launch(const std::string &symbol,
                               const std::vector<int64_t> &offsets) {
  if (!library_)
    return Status(StatusCode::Internal, "no CUDA library loaded");
  std::vector<uint64_t> args;
  args.reserve(offsets.size());
  for (int64_t offset : offsets)
    args.push_back(base_ + static_cast<uint64_t>(offset));
  return library_->run(symbol, args);
}

} // namespace
} // namespace monarch::worker

extern "C" __attribute__((visibility("default"))) void
monarch_worker_create_device_arena(
    const monarch::worker::RankProgram *p, int ordinal,
    monarch::executor::StatusOr<std::unique_ptr<monarch::worker::DeviceArena>>
        *out) {
  *out = monarch::worker::CudaDeviceArena::create(*p, ordinal);
}
