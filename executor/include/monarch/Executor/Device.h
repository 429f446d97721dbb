//===- Device.h - Which accelerators this process can use ------*- C++ -*-===//
//
// The executor picks its data plane (NCCL on GPUs, Gloo on CPUs) from what
// this probe reports. It never fails: a machine without a driver or device
// reports zero devices and the driver's reason.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_EXECUTOR_DEVICE_H
#define MONARCH_EXECUTOR_DEVICE_H

#include <string>

namespace monarch::executor {

struct DeviceInfo {
  /// True when this build has the CUDA/NCCL paths compiled in.
  bool cudaCompiled = false;
  /// Number of CUDA devices visible to this process (0 when none).
  int cudaDevices = 0;
  /// NCCL version as `major*10000 + minor*100 + patch` (0 when not built).
  int ncclVersion = 0;
  /// Why no device is usable, in the driver's words; empty when one is.
  std::string reason;
};

/// Probes the CUDA runtime and NCCL library linked into this build.
DeviceInfo probeDevices();

/// Round-trips `bytes` bytes through device 0 memory (cudaMemcpy both ways)
/// and returns an empty string on success, or the error.
std::string checkDeviceRoundTrip(int bytes);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_DEVICE_H
