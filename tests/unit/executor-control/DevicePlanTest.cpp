//===- DevicePlanTest.cpp - Plans whose buffers live on the GPU -----------===//
//
// A plan whose communicators use NCCL keeps its arena on the CUDA device
// (executor/lib/worker/DeviceArena.h). Without a GPU (this machine, CI)
// loading one is refused with Unimplemented, naming the reason, and the job
// carries on; with one (tests/gpu/run.sh on an H200: one GPU, so one rank)
// the all-reduce and a send to self run on the device and their results
// equal the same plans over Gloo.
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/Controller.h"

#include <gtest/gtest.h>

using namespace monarch::executor;
using namespace monarch::testing;
namespace pm = monarch::plan;

namespace {

pm::ExecutionPlan onNccl(pm::ExecutionPlan plan) {
  for (pm::Communicator &c : plan.communicators)
    c.backend = pm::Backend::Nccl;
  return plan;
}

TEST(NcclPlans, RunOnTheDeviceOrAreRefused) {
  auto c = Controller::start(localOptions(1));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto loaded = (*c)->loadPlan(serialize(onNccl(allReducePlan(1))));
  if (!loaded.isOk()) {
    EXPECT_EQ(loaded.status().code(), StatusCode::Unimplemented)
        << loaded.status().toString();
    EXPECT_NE(loaded.status().message().find("communicators use nccl"),
              std::string::npos)
        << loaded.status().message();
    EXPECT_NE(loaded.status().message().find("has none"), std::string::npos)
        << loaded.status().message();
    // Refused, not failed: the job still runs host plans.
    EXPECT_TRUE((*c)->health().isOk());
    auto gloo = pm::ExecutionPlan(allReducePlan(1));
    gloo.plans[0].symbol = "host";
    ASSERT_TRUE((*c)->loadPlan(serialize(gloo)).isOk());
    auto out = (*c)->runStep("host", {floats({1, 2, 3, 4})});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    EXPECT_TRUE((*c)->stop().isOk());
    GTEST_SKIP() << "no CUDA device: " << loaded.status().message();
  }
  // On the device: the all-reduce over one rank, and a ring of one rank
  // (a send to self), each against the values fed.
  std::vector<float> x = {1.5f, -2.0f, 3.25f, 100.0f};
  for (int s = 0; s < 3; ++s) {
    x[0] += s;
    auto out = (*c)->runStep("step", {floats(x)});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    EXPECT_EQ(toFloats((*out)[0]), x) << "step " << s;
  }
  auto ring = onNccl(ringPlan(1));
  ASSERT_TRUE((*c)->loadPlan(serialize(ring)).isOk());
  auto echoed = (*c)->runStep("ring", {floats({4, 3, 2, 1})});
  ASSERT_TRUE(echoed.isOk()) << echoed.status().toString();
  EXPECT_EQ(toFloats((*echoed)[0]), (std::vector<float>{4, 3, 2, 1}));
  EXPECT_TRUE((*c)->stop().isOk());
}

} // namespace
