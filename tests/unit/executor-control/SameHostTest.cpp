//===- SameHostTest.cpp - The same-host control fast path -----------------===//
//
// Workers on the controller's host are dialed through an abstract Unix
// socket, and their large feeds and fetches go through a shared staging
// area rather than the Thrift messages (docs/executor.md, "Same-host fast
// path"). These tests run real worker processes and check: the socket
// exists exactly when the path is on; staged tensors give the same numbers
// as the message path, beyond the message size limit, while the area grows;
// MONARCH_LOCAL_CONTROL=0 restores the message path and its limit; a request
// naming a bad staging area is refused without harming the worker. Also the
// buffer pool that feeds and fetches draw their bytes from.
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/BufferPool.h"
#include "monarch/Executor/Controller.h"

#include "ThriftGlue.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

using namespace monarch::executor;
using namespace monarch::testing;

namespace {

ControllerOptions options(int ranks) { return localOptions(ranks); }

/// Sets an environment variable for the scope (the controller reads it,
/// and the workers it launches inherit it).
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const char *value) : name(std::move(n)) {
    ::setenv(name.c_str(), value, 1);
  }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

bool listensLocally(int64_t workerPid) {
  std::string table = readFile("/proc/net/unix");
  return table.find("@monarch-worker-" + std::to_string(workerPid) + "-") !=
         std::string::npos;
}

/// Runs `plan` (an allReducePlan(n, elements)) three times with distinct inputs
/// and checks every element is n times the input.
void expectAllReduces(Controller &c, const std::string &plan, int n,
                      int64_t elements) {
  for (int s = 0; s < 3; ++s) {
    std::vector<float> x(static_cast<size_t>(elements));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>((i * 7 + s * 13) % 101) - 50.0f;
    auto out = c.runStep(plan, {floats(x)});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    std::vector<float> got = toFloats((*out)[0]);
    ASSERT_EQ(got.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_FLOAT_EQ(got[i], x[i] * n) << "step " << s << " element " << i;
  }
}

TEST(SameHost, WorkersListenOnALocalSocket) {
  auto c = Controller::start(options(2));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(listensLocally((*c)->workerPid(r))) << "rank " << r;
  EXPECT_TRUE((*c)->stop().isOk());
}

TEST(SameHost, LargeTensorsBypassTheMessageLimitAndMatch) {
  // 64 KB messages, 128 KB and then 2 MB tensors: only staging can carry
  // them, and the 2 MB plan makes the areas grow (and the workers remap).
  ScopedEnv limit("MONARCH_MAX_MESSAGE_BYTES", "65536");
  auto c = Controller::start(options(2));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  ASSERT_TRUE((*c)->loadPlan(serialize(allReducePlan(2, 32768))).isOk());
  auto grown = allReducePlan(2, 1 << 19);
  grown.plans[0].symbol = "big";
  auto loaded = (*c)->loadPlan(serialize(grown));
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  expectAllReduces(**c, "step", 2, 32768);
  expectAllReduces(**c, "big", 2, 1 << 19);
  expectAllReduces(**c, "step", 2, 32768);
  EXPECT_TRUE((*c)->stop().isOk());
}

TEST(SameHost, LocalControlOffUsesMessagesAndTheirLimit) {
  ScopedEnv off("MONARCH_LOCAL_CONTROL", "0");
  ScopedEnv limit("MONARCH_MAX_MESSAGE_BYTES", "1048576");
  auto c = Controller::start(options(2));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (int r = 0; r < 2; ++r)
    EXPECT_FALSE(listensLocally((*c)->workerPid(r))) << "rank " << r;
  ASSERT_TRUE((*c)->loadPlan(serialize(allReducePlan(2, 32768))).isOk());
  expectAllReduces(**c, "step", 2, 32768); // 128 KB: fits in a message
  auto big = allReducePlan(2, 1 << 19);
  big.plans[0].symbol = "big";
  ASSERT_TRUE((*c)->loadPlan(serialize(big)).isOk());
  auto out = (*c)->runStep("big", {floats(std::vector<float>(1 << 19))});
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("MONARCH_MAX_MESSAGE_BYTES"),
            std::string::npos)
      << out.status().toString();
  ASSERT_TRUE((*c)->stop().isOk());
}

TEST(SameHost, ABadStagingAreaIsRefused) {
  auto c = Controller::start(options(1));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  ASSERT_TRUE((*c)->loadPlan(serialize(allReducePlan(1, 4))).isOk());
  auto [host, port] = (*c)->workerAddress(0);
  auto conn = WorkerConnection::connect(
      host, port, WireOptions::fromEnv((*c)->jobToken()), 1000, 5000);
  ASSERT_TRUE(conn.isOk()) << conn.status().toString();
  auto request = [&] {
    control::RunStepRequest r;
    r.token = (*c)->jobToken();
    r.plan = "step";
    r.step = 100;
    control::Feed feed;
    feed.index = 0;
    feed.tensor.dtype = "float32";
    feed.tensor.shape = {4};
    feed.stagingOffset = 0;
    feed.stagingBytes = 16;
    r.feeds.push_back(feed);
    r.staging.pid = ::getpid();
    r.staging.fd = 9999; // not open here
    r.staging.bytes = 4096;
    r.staging.fetchOffset = 64;
    r.__isset.staging = true;
    return r;
  };
  control::RunStepReply reply;
  Status st = callThrift("runStep",
                         [&] { (*conn)->client().runStep(reply, request()); });
  EXPECT_EQ(st.code(), StatusCode::Unavailable) << st.toString();
  EXPECT_NE(st.message().find("staging area"), std::string::npos)
      << st.toString();
  // A feed that points outside a real area: the controller's own area is
  // not reachable from here, so use no area at all.
  control::RunStepRequest noArea = request();
  noArea.__isset.staging = false;
  st = callThrift("runStep", [&] { (*conn)->client().runStep(reply, noArea); });
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument) << st.toString();
  EXPECT_NE(st.message().find("outside the staging area"), std::string::npos)
      << st.toString();
  // The worker is unharmed: the controller's next step works.
  expectAllReduces(**c, "step", 1, 4);
  EXPECT_TRUE((*c)->health().isOk());
  EXPECT_TRUE((*c)->stop().isOk());
}

TEST(BufferPool, LargeBuffersAreReusedSmallOnesAreNot) {
  holdBufferPool(); // what a running controller does
  std::string a = takeBytes(300 << 10);
  ASSERT_EQ(a.size(), size_t(300) << 10);
  const char *storage = a.data();
  recycleBytes(std::move(a));
  // Within twice the size: the same storage comes back, resized.
  std::string b = takeBytes(200 << 10);
  EXPECT_EQ(b.data(), storage);
  EXPECT_EQ(b.size(), size_t(200) << 10);
  // Too small for it (more than twice as small): a fresh buffer.
  recycleBytes(std::move(b));
  std::string c = takeBytes(100 << 10);
  EXPECT_NE(c.data(), storage);
  std::string d = takeBytes(300 << 10);
  EXPECT_EQ(d.data(), storage);
  // Small buffers are never pooled.
  std::string small = takeBytes(1000);
  EXPECT_EQ(small.size(), 1000u);
  recycleBytes(std::move(small));
  recycleBytes(std::move(c));
  recycleBytes(std::move(d));
  EXPECT_EQ(pooledBytes(), (size_t(100) << 10) + (size_t(300) << 10));
  // The last holder's release frees everything, and nothing is pooled after.
  releaseBufferPool();
  EXPECT_EQ(pooledBytes(), 0u);
  recycleBytes(takeBytes(300 << 10));
  EXPECT_EQ(pooledBytes(), 0u);
}

} // namespace
