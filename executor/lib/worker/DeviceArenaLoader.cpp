//===- DeviceArenaLoader.cpp - Loads libMonarchWorkerCuda.so on demand ----===//
//
// See DeviceArena.h: the worker links no CUDA library of its own for device
// plans; the first one loads the module (found through the worker's
// RUNPATH, beside the project's other libraries), which stays loaded.
//
//===----------------------------------------------------------------------===//
#include "DeviceArena.h"

#include <dlfcn.h>
#include <mutex>

using namespace monarch::executor;

namespace monarch::worker {

StatusOr<std::unique_ptr<DeviceArena>> DeviceArena::create(const RankProgram &p,
                                                           int ordinal) {
  static std::once_flag once;
  static CreateDeviceArenaFn createFn = nullptr;
  static std::string why;
  std::call_once(once, [] {
    void *module = ::dlopen(kDeviceArenaModule, RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      const char *error = ::dlerror();
      why = error ? error : "dlopen failed";
      return;
    }
    createFn = reinterpret_cast<CreateDeviceArenaFn>(
        ::dlsym(module, kCreateDeviceArenaSymbol));
    if (!createFn)
      why = std::string(kDeviceArenaModule) + " has no " +
            kCreateDeviceArenaSymbol;
  });
  if (!createFn)
    return Status(StatusCode::Unimplemented,
                  "plan @" + p.planName +
                      " keeps its buffers on a CUDA device (its "
                      "communicators use nccl), and this worker cannot load "
                      "its device support: " +
                      why);
  StatusOr<std::unique_ptr<DeviceArena>> out =
      Status(StatusCode::Internal, "device arena not created");
  createFn(&p, ordinal, &out);
  return out;
}

} // namespace monarch::worker
