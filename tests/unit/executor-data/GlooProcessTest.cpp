//===- GlooProcessTest.cpp - Gloo communicators --------------- -*- C++ -*-===//
//
// Every test starts its ranks as real processes on 127.0.0.1 (2 and 4 of
// them), checks what they report, and checks that no process outlives it.
// Numerics are checked inside data-plane-rank against expectations it
// computes independently; fault tests inject the fault for real (SIGKILL, a
// rank that never starts, a rank that never posts, abort()).
//
//===----------------------------------------------------------------------===//

#include "ProcessHarness.h"

#include <gtest/gtest.h>

using namespace monarch::testing;
using namespace std::chrono_literals;

namespace {

class GlooProcess : public ::testing::TestWithParam<int> {
protected:
  void TearDown() override {
    EXPECT_TRUE(childProcesses().empty())
        << childProcesses().size() << " child processes left behind";
  }
};

/// Runs a numerics scenario on GetParam() ranks; every rank must exit 0.
void runScenario(const std::string &scenario, int ranks) {
  RankGroup group;
  group.start(scenario, ranks, /*timeoutMs=*/10000);
  ASSERT_TRUE(group.waitAll(Clock::now() + 40s)) << group.describe();
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(group.process(r).exitCode, 0) << group.describe();
}

TEST_P(GlooProcess, CollectivesEveryOpAndDType) {
  runScenario("collectives", GetParam());
}

TEST_P(GlooProcess, SendRecvGroupsTagsAndSelf) {
  runScenario("p2p", GetParam());
}

TEST_P(GlooProcess, LargeBuffers) { runScenario("large", GetParam()); }

TEST_P(GlooProcess, DuplicatesShareConnections) {
  runScenario("duplicate", GetParam());
}

TEST_P(GlooProcess, SubCommunicatorOfOddRanks) {
  runScenario("sub", GetParam());
}

TEST_P(GlooProcess, PeerKilledMidCollectiveFailsOthersFast) {
  int n = GetParam();
  int victim = 1;
  RankGroup group;
  group.start("kill", n, /*timeoutMs=*/20000, std::to_string(victim));
  std::optional<Clock::time_point> killed = group.killWhenReady(victim, 5s);
  ASSERT_TRUE(killed) << group.describe();
  bool someoneNamedVictim = false;
  for (int r = 0; r < n; ++r) {
    if (r == victim)
      continue;
    long after = group.exitedAfterMs(r, *killed);
    EXPECT_LT(after, 2000) << "rank " << r << " took " << after << " ms\n"
                           << group.describe();
    auto st = group.statuses(r);
    ASSERT_EQ(st.size(), 1u) << group.describe();
    EXPECT_TRUE(st[0].code == "Unavailable" || st[0].code == "Aborted")
        << st[0].code;
    EXPECT_NE(st[0].message.find("all_reduce"), std::string::npos)
        << st[0].message;
    EXPECT_NE(st[0].message.find("connection to rank "), std::string::npos)
        << st[0].message;
    if (st[0].message.find("connection to rank " + std::to_string(victim)) !=
        std::string::npos)
      someoneNamedVictim = true;
  }
  EXPECT_TRUE(someoneNamedVictim) << group.describe();
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooProcess, ::testing::Values(2, 4),
                         [](const auto &info) {
                           return std::to_string(info.param) + "ranks";
                         });

class GlooFault : public ::testing::Test {
protected:
  void TearDown() override {
    EXPECT_TRUE(childProcesses().empty())
        << childProcesses().size() << " child processes left behind";
  }
};

TEST_F(GlooFault, PeerNeverArrivesIsDeadlineExceeded) {
  RankGroup group;
  group.start("no-arrive", 2, {0}, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  auto st = group.statuses(0);
  ASSERT_EQ(st.size(), 1u) << group.describe();
  EXPECT_EQ(st[0].code, "DeadlineExceeded");
  EXPECT_NE(st[0].message.find("rank 1"), std::string::npos) << st[0].message;
  EXPECT_GE(st[0].elapsedMs, 450);
  EXPECT_LT(st[0].elapsedMs, 2000);
}

TEST_F(GlooFault, SilentPeerIsDeadlineExceeded) {
  RankGroup group;
  group.start("silent-peer", 2, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  auto st = group.statuses(0);
  ASSERT_EQ(st.size(), 1u) << group.describe();
  EXPECT_EQ(st[0].code, "DeadlineExceeded") << st[0].message;
  EXPECT_NE(st[0].message.find("send"), std::string::npos) << st[0].message;
  EXPECT_GE(st[0].elapsedMs, 450);
  EXPECT_LT(st[0].elapsedMs, 2000);
}

TEST_F(GlooFault, SizeMismatchFailsBothSidesWithoutCrashing) {
  RankGroup group;
  group.start("size-mismatch", 2, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(group.process(r).exitCode, 0) << group.describe();
    auto st = group.statuses(r);
    ASSERT_EQ(st.size(), 1u) << group.describe();
    EXPECT_NE(st[0].code, "Ok") << group.describe();
  }
  // The first to reach its deadline explains; the other may instead see it
  // leave.
  std::string all = group.describe();
  EXPECT_NE(all.find("sizes and tags must agree"), std::string::npos) << all;
}

TEST_F(GlooFault, CollectiveMismatchFailsBothSidesWithoutCrashing) {
  RankGroup group;
  group.start("collective-mismatch", 2, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(group.process(r).exitCode, 0) << group.describe();
    auto st = group.statuses(r);
    ASSERT_EQ(st.size(), 1u) << group.describe();
    EXPECT_NE(st[0].code, "Ok") << group.describe();
  }
  std::string all = group.describe();
  EXPECT_NE(all.find("must post the same collective"), std::string::npos)
      << all;
}

TEST_F(GlooFault, AbortUnblocksWaitersHereAndAtThePeer) {
  RankGroup group;
  group.start("abort", 2, /*timeoutMs=*/20000);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  auto here = group.statuses(0);
  ASSERT_EQ(here.size(), 2u) << group.describe();
  // The blocked recv, aborted after 200 ms.
  EXPECT_EQ(here[0].code, "Aborted");
  EXPECT_NE(here[0].message.find("test abort"), std::string::npos);
  EXPECT_LT(here[0].elapsedMs, 1000);
  // A later op fails at once.
  EXPECT_EQ(here[1].code, "Aborted");
  EXPECT_LT(here[1].elapsedMs, 100);
  // The peer, blocked on a recv from rank 0, sees rank 0 leave.
  auto peer = group.statuses(1);
  ASSERT_EQ(peer.size(), 1u) << group.describe();
  EXPECT_EQ(peer[0].code, "Unavailable") << peer[0].message;
  EXPECT_NE(peer[0].message.find("connection to rank 0"), std::string::npos)
      << peer[0].message;
  // Rank 0 lives on for 1.5 s after aborting: the peer saw the abort itself.
  EXPECT_LT(peer[0].elapsedMs, 1000);
}

} // namespace
