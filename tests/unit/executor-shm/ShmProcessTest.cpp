//===- ShmProcessTest.cpp - Shared memory across processes ------*- C++ -*-===//
//
// Every test starts its ranks as real processes (2 and 4 of them) through
// shm-rank, which creates the CPU communicator as a worker does; on one host
// that is the shared-memory transport. Besides this folder's scenarios the
// Gloo process tests' scenarios run here too (shm-rank hands them to
// data-plane-rank), with the same expectations, so both transports keep the
// same semantics. Every test checks that no process outlives it and that
// nothing new is left in /dev/shm.
//
//===----------------------------------------------------------------------===//

#include "ProcessHarness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dirent.h>
#include <set>

using namespace monarch::testing;
using namespace std::chrono_literals;

namespace {

std::set<std::string> devShm() {
  std::set<std::string> names;
  if (DIR *d = ::opendir("/dev/shm")) {
    while (dirent *e = ::readdir(d))
      names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

class ShmTest : public ::testing::Test {
protected:
  void SetUp() override {
    ::unsetenv("MONARCH_SHM");
    ::unsetenv("MONARCH_SHM_HOST");
    ::unsetenv("MONARCH_SHM_COLLECTIVES");
    before_ = devShm();
  }
  void TearDown() override {
    ::unsetenv("MONARCH_SHM");
    ::unsetenv("MONARCH_SHM_COLLECTIVES");
    EXPECT_TRUE(childProcesses().empty())
        << childProcesses().size() << " child processes left behind";
    for (const std::string &name : devShm())
      EXPECT_TRUE(before_.count(name)) << "left in /dev/shm: " << name;
  }
  std::set<std::string> before_;
};

class ShmProcess : public ShmTest, public ::testing::WithParamInterface<int> {};

void runScenario(const std::string &scenario, int ranks,
                 const std::string &arg = "") {
  RankGroup group;
  group.start(scenario, ranks, /*timeoutMs=*/20000, arg);
  ASSERT_TRUE(group.waitAll(Clock::now() + 100s)) << group.describe();
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(group.process(r).exitCode, 0) << group.describe();
}

/// The transport each rank reports for its "world" communicator (`key`
/// TRANSPORT), or for its all_reduce (ALL_REDUCE).
std::vector<std::string> transports(int ranks, const std::string &arg = "",
                                    const std::string &which = "TRANSPORT") {
  RankGroup group;
  group.start("transport", ranks, /*timeoutMs=*/10000, arg);
  EXPECT_TRUE(group.waitAll(Clock::now() + 30s)) << group.describe();
  std::vector<std::string> out;
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(group.process(r).exitCode, 0) << group.describe();
    std::string text = group.process(r).out;
    std::string key = which + " " + std::to_string(r) + " ";
    size_t at = text.find(key);
    out.push_back(at == std::string::npos
                      ? "?"
                      : text.substr(at + key.size(),
                                    text.find('\n', at) - at - key.size()));
  }
  return out;
}

TEST_F(ShmTest, ThreeRanksDivideAnAverageInTheReducingRanksBlock) {
  // An odd number of ranks: blocks of unequal length, and an average that
  // rounds (a division by 3), divided once by the rank that reduced each
  // block, through the slots and through the registered memory.
  runScenario("shm-collectives", 3);
  runScenario("windows", 3);
}

TEST_P(ShmProcess, OneHostUsesSharedMemory) {
  for (const std::string &t : transports(GetParam()))
    EXPECT_EQ(t, "shm");
}

TEST_P(ShmProcess, MonarchShmZeroForcesGloo) {
  ::setenv("MONARCH_SHM", "0", 1);
  for (const std::string &t : transports(GetParam()))
    EXPECT_EQ(t, "gloo");
}

TEST_P(ShmProcess, MembersOnTwoHostsUseGloo) {
  // Every member must reach the same answer, or the creation would hang.
  for (const std::string &t : transports(GetParam(), "two-hosts"))
    EXPECT_EQ(t, "gloo");
}

TEST_P(ShmProcess, TwoHostsRunCollectivesHierarchically) {
  // 4 ranks: two hosts of two members each, so every collective but
  // all_to_all runs within each host over shared memory and across them
  // over Gloo (HybridCommunicator.h); 2 ranks: one member per host, Gloo.
  std::string want = GetParam() == 4 ? "shm+gloo" : "gloo";
  for (const std::string &t : transports(GetParam(), "two-hosts", "ALL_REDUCE"))
    EXPECT_EQ(t, want);
  for (const std::string &t : transports(GetParam(), "two-hosts"))
    EXPECT_EQ(t, "gloo");
  // Every op, type, reduction and size, exactly; in place; large buffers
  // within float rounding; sends and receives within and across hosts
  // beside them; explicit tags in posting order (the worker's way) and
  // without that promise (then on Gloo); buffers in registered memory.
  runScenario("shm-collectives", GetParam(), "two-hosts");
  runScenario("collectives", GetParam(), "two-hosts");
  runScenario("large", GetParam(), "two-hosts");
  runScenario("duplicate", GetParam(), "two-hosts");
  runScenario("p2p-shm", GetParam(), "two-hosts");
  runScenario("tagged", GetParam(), "two-hosts in-order");
  runScenario("tagged", GetParam(), "two-hosts");
  runScenario("windows", GetParam(), "two-hosts");
}

TEST_P(ShmProcess, MonarchHierarchicalZeroKeepsCollectivesOnGloo) {
  ::setenv("MONARCH_HIERARCHICAL", "0", 1);
  for (const std::string &t : transports(GetParam(), "two-hosts", "ALL_REDUCE"))
    EXPECT_EQ(t, "gloo");
  runScenario("collectives", GetParam(), "two-hosts");
  ::unsetenv("MONARCH_HIERARCHICAL");
}

TEST_P(ShmProcess, EveryOpEveryDTypeOddSizesAndSlices) {
  runScenario("shm-collectives", GetParam());
}

TEST_P(ShmProcess, EveryOpEveryDTypeThroughMessages) {
  // The direct path (mapped areas) off: every collective through the rings.
  ::setenv("MONARCH_SHM_COLLECTIVES", "messages", 1);
  runScenario("shm-collectives", GetParam());
}

TEST_P(ShmProcess, EveryOpEveryDTypeOnAnOversubscribedHost) {
  // More processes than cores (CommOptions::processesOnHost): every wait
  // yields the core between its checks, direct and through the rings.
  runScenario("shm-collectives", GetParam(), "oversubscribed");
  ::setenv("MONARCH_SHM_COLLECTIVES", "messages", 1);
  runScenario("shm-collectives", GetParam(), "oversubscribed");
  runScenario("p2p-shm", GetParam(), "oversubscribed");
}

TEST_P(ShmProcess, ExplicitTagsInPostingOrderGoDirect) {
  runScenario("tagged", GetParam(), "in-order");
}

TEST_P(ShmProcess, ExplicitTagsWithoutThePromiseUseMessages) {
  runScenario("tagged", GetParam());
}

TEST_P(ShmProcess, LargeCollectivesReadThePeersRegisteredMemory) {
  runScenario("windows", GetParam());
}

TEST_P(ShmProcess, ABufferOutsideRegisteredMemoryFallsBackOnEveryMember) {
  runScenario("windows", GetParam(), "outside");
}

TEST_P(ShmProcess, SendRecvAcrossDuplicatesAndPastTheRing) {
  runScenario("p2p-shm", GetParam());
}

TEST_P(ShmProcess, ConcurrentCommunicators) {
  runScenario("concurrent", GetParam());
}

// The Gloo process tests' scenarios, over shared memory.
TEST_P(ShmProcess, GlooScenarioCollectives) {
  runScenario("collectives", GetParam());
}
TEST_P(ShmProcess, GlooScenarioSendRecv) { runScenario("p2p", GetParam()); }
TEST_P(ShmProcess, GlooScenarioLarge) { runScenario("large", GetParam()); }
TEST_P(ShmProcess, GlooScenarioDuplicate) {
  runScenario("duplicate", GetParam());
}
TEST_P(ShmProcess, GlooScenarioSubCommunicator) {
  runScenario("sub", GetParam());
}

TEST_P(ShmProcess, PeerKilledMidCollectiveFailsOthersFastNamingIt) {
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
    EXPECT_NE(st[0].message.find("shm all_reduce"), std::string::npos)
        << st[0].message;
    EXPECT_NE(st[0].message.find("connection to rank "), std::string::npos)
        << st[0].message;
    if (st[0].message.find("connection to rank " + std::to_string(victim)) !=
        std::string::npos)
      someoneNamedVictim = true;
  }
  EXPECT_TRUE(someoneNamedVictim) << group.describe();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmProcess, ::testing::Values(2, 4),
                         [](const auto &info) {
                           return std::to_string(info.param) + "ranks";
                         });

using ShmFault = ShmTest;
using ShmHosts = ShmTest;

TEST_F(ShmHosts, UnevenHostsKeepCollectivesOnGloo) {
  // Ranks 0 and 2 on one host, rank 1 alone on the other: no hierarchy
  // (every member agrees), the pair still sends over shared memory.
  for (const std::string &t : transports(3, "two-hosts", "ALL_REDUCE"))
    EXPECT_EQ(t, "gloo");
  runScenario("collectives", 3, "two-hosts");
  runScenario("p2p-shm", 3, "two-hosts");
}

TEST_F(ShmHosts, PeerKilledMidHierarchicalAllReduceFailsEveryone) {
  // Rank 3 (host "odd") dies inside a hierarchical all_reduce: its host's
  // member fails on shared memory, the other host's on Gloo or when the
  // step within its host is broken; nobody hangs.
  RankGroup group;
  group.start("kill", 4, /*timeoutMs=*/20000, "3 two-hosts");
  std::optional<Clock::time_point> killed = group.killWhenReady(3, 10s);
  ASSERT_TRUE(killed) << group.describe();
  for (int r = 0; r < 3; ++r) {
    long after = group.exitedAfterMs(r, *killed);
    EXPECT_LT(after, 5000) << "rank " << r << " took " << after << " ms\n"
                           << group.describe();
    auto st = group.statuses(r);
    ASSERT_EQ(st.size(), 1u) << group.describe();
    EXPECT_NE(st[0].code, "Ok") << group.describe();
  }
}

TEST_F(ShmFault, PeerNeverArrivesIsDeadlineExceededNamingIt) {
  RankGroup group;
  group.start("no-arrive", 2, {0}, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  auto st = group.statuses(0);
  ASSERT_EQ(st.size(), 1u) << group.describe();
  EXPECT_EQ(st[0].code, "DeadlineExceeded");
  EXPECT_NE(st[0].message.find("shm communicator 'world': rank 1"),
            std::string::npos)
      << st[0].message;
  EXPECT_GE(st[0].elapsedMs, 450);
  EXPECT_LT(st[0].elapsedMs, 2000);
}

TEST_F(ShmFault, SilentPeerIsDeadlineExceeded) {
  RankGroup group;
  group.start("silent-peer", 2, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  auto st = group.statuses(0);
  ASSERT_EQ(st.size(), 1u) << group.describe();
  EXPECT_EQ(st[0].code, "DeadlineExceeded") << st[0].message;
  EXPECT_NE(st[0].message.find("shm send"), std::string::npos) << st[0].message;
  EXPECT_NE(st[0].message.find("posted no matching recv"), std::string::npos)
      << st[0].message;
  EXPECT_GE(st[0].elapsedMs, 450);
  EXPECT_LT(st[0].elapsedMs, 2000);
}

TEST_F(ShmFault, SizeMismatchFailsBothSidesWithoutCrashing) {
  RankGroup group;
  group.start("size-mismatch", 2, /*timeoutMs=*/500);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(group.process(r).exitCode, 0) << group.describe();
    auto st = group.statuses(r);
    ASSERT_EQ(st.size(), 1u) << group.describe();
    EXPECT_NE(st[0].code, "Ok") << group.describe();
  }
  std::string all = group.describe();
  EXPECT_NE(all.find("sizes and tags must agree"), std::string::npos) << all;
}

TEST_F(ShmFault, CollectiveMismatchFailsBothSidesWithoutCrashing) {
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

TEST_F(ShmFault, AbortUnblocksWaitersHereAndAtThePeer) {
  RankGroup group;
  group.start("abort", 2, /*timeoutMs=*/20000);
  ASSERT_TRUE(group.waitAll(Clock::now() + 10s)) << group.describe();
  auto here = group.statuses(0);
  ASSERT_EQ(here.size(), 2u) << group.describe();
  EXPECT_EQ(here[0].code, "Aborted");
  EXPECT_NE(here[0].message.find("test abort"), std::string::npos);
  EXPECT_LT(here[0].elapsedMs, 1000);
  EXPECT_EQ(here[1].code, "Aborted");
  EXPECT_LT(here[1].elapsedMs, 100);
  // The peer sees the abort through shared memory (rank 0 lives on).
  auto peer = group.statuses(1);
  ASSERT_EQ(peer.size(), 1u) << group.describe();
  EXPECT_EQ(peer[0].code, "Unavailable") << peer[0].message;
  EXPECT_NE(peer[0].message.find("connection to rank 0"), std::string::npos)
      << peer[0].message;
  EXPECT_NE(peer[0].message.find("test abort"), std::string::npos)
      << peer[0].message;
  EXPECT_LT(peer[0].elapsedMs, 1000);
}

} // namespace
