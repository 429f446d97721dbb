//===- DeviceProbeTest.cpp - CUDA/NCCL probe --------------------*- C++ -*-===//
//
// Runs everywhere: checks that the NCCL library linked into the build
// answers, and exercises a device only where one exists (skips otherwise).
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Device.h"

#include <gtest/gtest.h>

using monarch::executor::probeDevices;

TEST(DeviceProbe, ReportsWithoutFailing) {
  auto info = probeDevices();
  if (info.cudaDevices == 0)
    EXPECT_FALSE(info.reason.empty());
  else
    EXPECT_TRUE(info.reason.empty());
}

TEST(DeviceProbe, NcclLinkedWhenCudaCompiled) {
  auto info = probeDevices();
  if (!info.cudaCompiled)
    GTEST_SKIP() << "built without CUDA: " << info.reason;
  // ncclGetVersion needs no device: a linked NCCL 2.x must answer.
  EXPECT_GE(info.ncclVersion, 20000);
}

TEST(DeviceProbe, DeviceMemoryRoundTrip) {
  auto info = probeDevices();
  if (info.cudaDevices == 0)
    GTEST_SKIP() << "no GPU: " << info.reason;
  EXPECT_EQ(monarch::executor::checkDeviceRoundTrip(1 << 20), "");
}
