//===- InterpreterTest.cpp - The step loop in process ---------------------===//
//
// Ranks are threads: each binds its RankProgram (from a serialized plan, as
// the worker does, or built here) and runs it with Interpreter over
// FakeCommWorld members. Covers the results, actor state across steps, the
// refusals of create (every unknown case is an error), the status codes of
// step failures, the deadline of every wait, abort, and a dead peer.
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/FakeCommunicator.h"
#include "monarch/Executor/Worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace monarch;
using namespace monarch::worker;
using executor::Status;
using executor::StatusCode;
using executor::StatusOr;
using Clock = std::chrono::steady_clock;
namespace tp = monarch::testing;

namespace {

/// One FakeCommWorld per communicator name, shared by the ranks' threads.
class FakeWorlds {
public:
  explicit FakeWorlds(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000))
      : timeout_(timeout) {}

  /// The factory Interpreter::Options::makeCommunicator takes, for `rank`.
  auto factory(int rank) {
    return [this, rank](const CommunicatorSpec &spec, const std::string &name)
               -> StatusOr<std::unique_ptr<executor::Communicator>> {
      std::lock_guard<std::mutex> lock(mutex_);
      auto &world = worlds_[spec.name];
      if (!world)
        world = std::make_unique<executor::FakeCommWorld>(
            static_cast<int>(spec.ranks.size()), timeout_);
      for (size_t k = 0; k < spec.ranks.size(); ++k)
        if (spec.ranks[k] == rank)
          return world->communicator(static_cast<int>(k), name);
      return Status(StatusCode::InvalidArgument, "not a member");
    };
  }
  executor::FakeCommWorld &world(const std::string &name) {
    std::lock_guard<std::mutex> lock(mutex_);
    return *worlds_.at(name);
  }

private:
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<executor::FakeCommWorld>> worlds_;
};

std::string bytesOf(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}
std::vector<float> floatsOf(std::string_view bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

BufferRef f32(int64_t offset, int64_t n) {
  BufferRef b;
  b.offset = offset;
  b.shape = {n};
  return b;
}

/// A program of `ranks` members of @world, for `rank`.
RankProgram program(int rank, int ranks) {
  RankProgram p;
  p.planName = "test";
  p.meshSize = ranks;
  p.rank = rank;
  p.arenaBytes = 1024;
  CommunicatorSpec world;
  world.name = "world";
  for (int r = 0; r < ranks; ++r)
    world.ranks.push_back(r);
  world.streams = {1};
  p.communicators.push_back(world);
  return p;
}
Instruction feed(int index, BufferRef b) {
  Instruction i;
  i.kind = OpKind::Feed;
  i.name = "feed_buffer input " + std::to_string(index);
  i.index = index;
  i.buffer = b;
  return i;
}
Instruction fetch(int index, BufferRef b) {
  Instruction i = feed(index, b);
  i.kind = OpKind::Fetch;
  i.name = "fetch_buffer output " + std::to_string(index);
  return i;
}
Instruction comm(OpKind kind, BufferRef b, int event) {
  Instruction i;
  i.kind = kind;
  i.name = kind == OpKind::Recv   ? "recv"
           : kind == OpKind::Send ? "send"
                                  : "collective";
  i.buffer = b;
  i.output = b;
  i.stream = 1;
  i.communicator = 0;
  i.event = event;
  return i;
}
Instruction wait(std::vector<int> events) {
  Instruction i;
  i.kind = OpKind::Wait;
  i.name = "wait";
  i.waitEvents = std::move(events);
  return i;
}

/// rank 0 receives 4 floats from rank 1, waits, fetches them; rank 1 feeds
/// and sends them.
std::vector<RankProgram> sendRecv() {
  std::vector<RankProgram> ps = {program(0, 2), program(1, 2)};
  for (RankProgram &p : ps)
    p.numEvents = 1;
  Instruction recv = comm(OpKind::Recv, f32(0, 4), 0);
  recv.peer = 1;
  ps[0].instructions = {recv, wait({0}), fetch(0, f32(0, 4))};
  Instruction send = comm(OpKind::Send, f32(0, 4), 0);
  send.peer = 0;
  ps[1].instructions = {feed(0, f32(0, 4)), send, wait({0})};
  return ps;
}

Interpreter::Options options(FakeWorlds &worlds, int rank, int size) {
  Interpreter::Options o;
  o.worldSize = size;
  o.makeCommunicator = worlds.factory(rank);
  return o;
}

/// Creates every rank's interpreter, each in its own thread (creation is
/// collective).
std::vector<std::unique_ptr<Interpreter>>
createAll(std::vector<RankProgram> programs,
          const std::function<Interpreter::Options(int)> &opts) {
  std::vector<std::unique_ptr<Interpreter>> out(programs.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < programs.size(); ++r)
    threads.emplace_back([&, r] {
      auto interp = Interpreter::create(std::move(programs[r]), opts(r));
      ASSERT_TRUE(interp.isOk()) << interp.status().toString();
      out[r] = std::move(interp).value();
    });
  for (auto &t : threads)
    t.join();
  return out;
}

struct RankResult {
  StepFailure failure;
  std::vector<FetchResult> fetches;
};

/// Runs one step on every rank (a thread each); feeds[r] is rank r's.
std::vector<RankResult>
stepAll(std::vector<std::unique_ptr<Interpreter>> &interps, int64_t step,
        const std::vector<std::map<int, std::string>> &feeds) {
  std::vector<RankResult> out(interps.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < interps.size(); ++r)
    threads.emplace_back([&, r] {
      std::map<int, std::string_view> views;
      for (const auto &[i, bytes] : feeds[r])
        views[i] = bytes;
      std::vector<TraceRecord> trace;
      out[r].failure =
          interps[r]->runStep(step, views, nullptr, out[r].fetches, trace);
    });
  for (auto &t : threads)
    t.join();
  return out;
}

/// Rank `r`'s options on a host of `processesOnHost` processes of the job
/// (0: unknown).
Interpreter::Options hostOptions(FakeWorlds &worlds, int r,
                                 int processesOnHost) {
  Interpreter::Options o = options(worlds, r, 2);
  o.comm.processesOnHost = processesOnHost;
  return o;
}

/// Binds a serialized 2-rank plan for each rank, as the worker does (its
/// first program).
void bindBoth(const std::string &bytes, std::vector<RankProgram> &programs) {
  for (int r = 0; r < 2; ++r) {
    auto bound = loadRankPrograms(bytes, r, 2);
    ASSERT_TRUE(bound.isOk()) << bound.status().toString();
    ASSERT_FALSE(bound->empty());
    programs.push_back(std::move((*bound)[0]));
  }
}

/// A bound all-reduce plan run for three steps, with its results.
void allReducesAcrossSteps(int processesOnHost) {
  std::vector<RankProgram> programs;
  bindBoth(tp::serialize(tp::allReducePlan(2, 4)), programs);
  ASSERT_EQ(programs.size(), 2u);
  EXPECT_EQ(programs[1].rank, 1);
  FakeWorlds worlds;
  auto interps = createAll(std::move(programs), [&](int r) {
    return hostOptions(worlds, r, processesOnHost);
  });
  for (int64_t step = 0; step < 3; ++step) {
    float s = static_cast<float>(step);
    auto results = stepAll(
        interps, step,
        {{{0, bytesOf({1, 2, 3, s})}}, {{0, bytesOf({10, 20, 30, 2 * s})}}});
    for (const RankResult &r : results) {
      ASSERT_TRUE(r.failure.status.isOk()) << r.failure.status.toString();
      ASSERT_EQ(r.fetches.size(), 1u);
      EXPECT_EQ(floatsOf(r.fetches[0].view()),
                (std::vector<float>{11, 22, 33, 3 * s}));
    }
  }
}

/// Actor state updated by kernels over three steps.
void keepsActorState(int processesOnHost) {
  std::vector<RankProgram> programs;
  bindBoth(tp::serialize(tp::statePlan(2, tp::readFile(TEST_KERNELS))),
           programs);
  ASSERT_EQ(programs.size(), 2u);
  FakeWorlds worlds;
  auto interps = createAll(std::move(programs), [&](int r) {
    return hostOptions(worlds, r, processesOnHost);
  });
  std::vector<RankResult> results;
  for (int64_t step = 0; step < 3; ++step)
    results =
        stepAll(interps, step,
                {{{0, bytesOf({1, 2, 3, 4})}}, {{0, bytesOf({0, 0, 1, 1})}}});
  ASSERT_TRUE(results[0].failure.status.isOk())
      << results[0].failure.status.toString();
  EXPECT_EQ(floatsOf(results[0].fetches.at(0).view()),
            (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(floatsOf(results[1].fetches.at(0).view()),
            (std::vector<float>{0, 0, 3, 3}));
}

} // namespace

TEST(Interpreter, BindsASerializedPlanAndAllReducesAcrossSteps) {
  allReducesAcrossSteps(0);
}

TEST(Interpreter, KeepsActorStateAcrossStepsThroughKernels) {
  keepsActorState(0);
}

// On a host whose job has more processes than cores (4 workers on 2),
// every launch whose stream is idle runs on the issuing thread instead of
// being handed to its stream thread; actor state through kernels and
// all-reduces across steps give the same results.
TEST(Interpreter, RunsLaunchesOnTheIssuingThreadOnAnOversubscribedHost) {
  executor::CommOptions many;
  many.processesOnHost = 1 << 20;
  ASSERT_TRUE(executor::hostOversubscribed(many));
  EXPECT_FALSE(executor::hostOversubscribed(executor::CommOptions{}));
  keepsActorState(1 << 20);
  allReducesAcrossSteps(1 << 20);
}

TEST(Interpreter, SendsAndReceives) {
  FakeWorlds worlds;
  auto interps =
      createAll(sendRecv(), [&](int r) { return options(worlds, r, 2); });
  auto results = stepAll(interps, 0, {{}, {{0, bytesOf({5, 6, 7, 8})}}});
  ASSERT_TRUE(results[0].failure.status.isOk())
      << results[0].failure.status.toString();
  ASSERT_TRUE(results[1].failure.status.isOk());
  EXPECT_EQ(floatsOf(results[0].fetches.at(0).view()),
            (std::vector<float>{5, 6, 7, 8}));
}

// create refuses what it cannot run instead of guessing (an unknown
// collective kind used to run as an all-reduce).
TEST(Interpreter, CreateRefusesEveryUnknownCase) {
  struct Case {
    const char *what;
    std::function<void(RankProgram &)> mutate;
  };
  std::vector<Case> cases = {
      {"unknown collective kind",
       [](RankProgram &p) {
         p.instructions[0].kind = OpKind::Collective;
         p.instructions[0].collective = static_cast<executor::CommOpKind>(42);
       }},
      {"unknown kind",
       [](RankProgram &p) {
         p.instructions[0].kind = static_cast<OpKind>(99);
       }},
      {"not another member",
       [](RankProgram &p) { p.instructions[0].peer = 7; }},
      {"names no communicator",
       [](RankProgram &p) { p.instructions[0].communicator = 3; }},
      {"has no stream", [](RankProgram &p) { p.instructions[0].stream = -1; }},
      {"broadcasts from position 2",
       [](RankProgram &p) {
         p.instructions[0].kind = OpKind::Collective;
         p.instructions[0].collective = executor::CommOpKind::Broadcast;
         p.instructions[0].root = 2;
       }},
      {"is not a member",
       [](RankProgram &p) { p.communicators[0].ranks = {1, 2}; }},
      {"outside the arena",
       [](RankProgram &p) { p.instructions[2].buffer.offset = 1020; }},
      {"unknown event",
       [](RankProgram &p) { p.instructions[1].waitEvents = {5}; }},
  };
  for (const Case &c : cases) {
    RankProgram p = sendRecv()[0];
    c.mutate(p);
    FakeWorlds worlds;
    auto interp = Interpreter::create(std::move(p), options(worlds, 0, 2));
    ASSERT_FALSE(interp.isOk()) << c.what;
    EXPECT_EQ(interp.status().code(), StatusCode::InvalidArgument) << c.what;
    EXPECT_NE(interp.status().message().find(c.what), std::string::npos)
        << c.what << ": " << interp.status().toString();
  }
}

TEST(Interpreter, BadFeedsFailWithInvalidArgumentAtTheirInstruction) {
  RankProgram p = program(0, 1);
  p.instructions = {feed(0, f32(0, 4)), fetch(0, f32(0, 4))};
  FakeWorlds worlds;
  auto interp = Interpreter::create(std::move(p), options(worlds, 0, 1));
  ASSERT_TRUE(interp.isOk()) << interp.status().toString();
  std::vector<FetchResult> fetches;
  std::vector<TraceRecord> trace;
  StepFailure missing = (*interp)->runStep(0, {}, nullptr, fetches, trace);
  EXPECT_EQ(missing.status.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(missing.instruction, 0);
  EXPECT_NE(missing.status.message().find("feed 0 was not sent"),
            std::string::npos);
  // A failed step does not poison the next one.
  std::string shortFeed = bytesOf({1, 2});
  StepFailure wrong =
      (*interp)->runStep(1, {{0, shortFeed}}, nullptr, fetches, trace);
  EXPECT_EQ(wrong.status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(wrong.status.message().find("8 bytes, the buffer 16"),
            std::string::npos)
      << wrong.status.toString();
  std::string good = bytesOf({1, 2, 3, 4});
  fetches.clear();
  StepFailure ok = (*interp)->runStep(2, {{0, good}}, nullptr, fetches, trace);
  EXPECT_TRUE(ok.status.isOk()) << ok.status.toString();
  EXPECT_EQ(floatsOf(fetches.at(0).view()), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Interpreter, AnInjectedFaultIsReportedOnceWithItsInstruction) {
  RankProgram p = program(0, 1);
  p.instructions = {feed(0, f32(0, 4)), fetch(0, f32(0, 4))};
  FakeWorlds worlds;
  Interpreter::Options o = options(worlds, 0, 1);
  o.fault.kind = FaultInjection::Kind::Raise;
  o.fault.step = 1;
  o.fault.instruction = 1;
  int reports = 0;
  o.onFailure = [&](const StepFailure &f, int64_t step, const Instruction *i) {
    ++reports;
    EXPECT_EQ(step, 1);
    ASSERT_NE(i, nullptr);
    EXPECT_EQ(i->kind, OpKind::Fetch);
  };
  auto interp = Interpreter::create(std::move(p), std::move(o));
  ASSERT_TRUE(interp.isOk());
  std::string in = bytesOf({1, 2, 3, 4});
  std::vector<FetchResult> fetches;
  std::vector<TraceRecord> trace;
  EXPECT_TRUE(
      (*interp)->runStep(0, {{0, in}}, nullptr, fetches, trace).status.isOk());
  StepFailure f = (*interp)->runStep(1, {{0, in}}, nullptr, fetches, trace);
  EXPECT_EQ(f.status.code(), StatusCode::Internal);
  EXPECT_EQ(f.instruction, 1);
  EXPECT_NE(f.status.message().find("injected fault"), std::string::npos);
  EXPECT_EQ(reports, 1);
}

// A rank whose peer never sends fails at the wait's deadline, names the
// wait and what is in flight, and aborts its communicators.
TEST(Interpreter, EveryWaitHasADeadline) {
  FakeWorlds worlds(std::chrono::milliseconds(60000));
  std::vector<RankProgram> ps = sendRecv();
  Interpreter::Options o = options(worlds, 0, 2);
  o.waitTimeout = std::chrono::milliseconds(300);
  std::unique_ptr<Interpreter> interp;
  std::thread peer([&] {
    // Rank 1 joins the communicator (creation is collective) but never runs
    // a step.
    Interpreter::Options o1 = options(worlds, 1, 2);
    auto i1 = Interpreter::create(std::move(ps[1]), std::move(o1));
    ASSERT_TRUE(i1.isOk());
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  });
  auto created = Interpreter::create(std::move(ps[0]), std::move(o));
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  std::vector<FetchResult> fetches;
  std::vector<TraceRecord> trace;
  auto start = Clock::now();
  StepFailure f = (*created)->runStep(0, {}, nullptr, fetches, trace);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  peer.join();
  EXPECT_EQ(f.status.code(), StatusCode::DeadlineExceeded)
      << f.status.toString();
  EXPECT_EQ(f.instruction, 1);
  EXPECT_NE(f.status.message().find("'wait' waited 300 ms"), std::string::npos)
      << f.status.toString();
  EXPECT_NE(f.status.message().find("stream 1 at 'recv'"), std::string::npos)
      << f.status.toString();
  EXPECT_LT(seconds, 1.5);
}

TEST(Interpreter, AbortFailsABlockedStepAndEveryLaterOne) {
  FakeWorlds worlds;
  std::vector<RankProgram> ps = sendRecv();
  std::unique_ptr<Interpreter> i0;
  std::thread peer([&] {
    auto i1 = Interpreter::create(std::move(ps[1]), options(worlds, 1, 2));
    ASSERT_TRUE(i1.isOk());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  });
  auto created = Interpreter::create(std::move(ps[0]), options(worlds, 0, 2));
  ASSERT_TRUE(created.isOk());
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*created)->abort("the job is stopping");
  });
  std::vector<FetchResult> fetches;
  std::vector<TraceRecord> trace;
  auto start = Clock::now();
  StepFailure f = (*created)->runStep(0, {}, nullptr, fetches, trace);
  aborter.join();
  EXPECT_EQ(f.status.code(), StatusCode::Aborted) << f.status.toString();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
  StepFailure later = (*created)->runStep(1, {}, nullptr, fetches, trace);
  EXPECT_EQ(later.status.code(), StatusCode::Aborted);
  EXPECT_NE(later.status.message().find("the job is stopping"),
            std::string::npos);
  peer.join();
}

TEST(Interpreter, ADeadPeerFailsTheStepNamingIt) {
  FakeWorlds worlds;
  std::vector<RankProgram> ps = sendRecv();
  std::thread peer([&] {
    auto i1 = Interpreter::create(std::move(ps[1]), options(worlds, 1, 2));
    ASSERT_TRUE(i1.isOk());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    worlds.world("world").kill(1);
  });
  auto created = Interpreter::create(std::move(ps[0]), options(worlds, 0, 2));
  ASSERT_TRUE(created.isOk());
  std::vector<FetchResult> fetches;
  std::vector<TraceRecord> trace;
  StepFailure f = (*created)->runStep(0, {}, nullptr, fetches, trace);
  peer.join();
  EXPECT_EQ(f.status.code(), StatusCode::Unavailable) << f.status.toString();
  EXPECT_NE(f.status.message().find("1"), std::string::npos);
  EXPECT_EQ(f.instruction, 0);
}

namespace {

/// `add4(ins...) -> outs` on stream 1, yielding `event`.
Instruction add4(BufferRef a, BufferRef b, BufferRef out, int event) {
  Instruction i;
  i.kind = OpKind::Launch;
  i.name = "launch @add4";
  i.kernelSymbol = "monarch_test_add4";
  i.ins = {a, b};
  i.outs = {out};
  i.stream = 1;
  i.event = event;
  return i;
}

/// One rank: out = x + y (x fed as 0, y as 1, out fetched as 0), with the
/// test kernels.
RankProgram addProgram() {
  RankProgram p = program(0, 1);
  p.kernelLibrary = tp::readFile(TEST_KERNELS);
  p.numEvents = 1;
  p.instructions = {feed(0, f32(0, 4)), feed(1, f32(64, 4)),
                    add4(f32(0, 4), f32(64, 4), f32(128, 4), 0), wait({0}),
                    fetch(0, f32(128, 4))};
  return p;
}

ResidentPtr residentOf(ResidentPool &pool, const std::vector<float> &v) {
  ResidentPtr r = pool.take(static_cast<int64_t>(v.size() * sizeof(float)));
  std::memcpy(r->data, v.data(), v.size() * sizeof(float));
  return r;
}

} // namespace

// Donation in place: a feed read only by kernels runs on the resident
// bytes it comes from, a kept fetch is written by its kernel straight into
// fresh resident bytes (no copy either way), step after step as a training
// loop chains them; a step without resident values afterwards runs on the
// arena again (its kernel arguments pointed back).
TEST(Interpreter, BindsResidentFeedsAndKeptFetchesInPlace) {
  FakeWorlds worlds;
  Interpreter::Options o = options(worlds, 0, 1);
  std::shared_ptr<ResidentPool> pool = ResidentPool::create();
  o.residents = pool;
  auto interp = Interpreter::create(addProgram(), std::move(o));
  ASSERT_TRUE(interp.isOk()) << interp.status().toString();
  EXPECT_TRUE((*interp)->bindsFeed(0));
  EXPECT_TRUE((*interp)->bindsFeed(1));
  EXPECT_TRUE((*interp)->bindsKeep(0));

  ResidentPtr w = residentOf(*pool, {1, 2, 3, 4});
  std::string g = bytesOf({10, 20, 30, 40});
  std::vector<TraceRecord> trace;
  std::set<const char *> storages;
  for (int64_t step = 0; step < 6; ++step) {
    (*interp)->setKeeps({0});
    (*interp)->setResidentFeeds({{0, w}});
    std::vector<FetchResult> fetches;
    StepFailure f = (*interp)->runStep(step, {{0, w->view()}, {1, g}}, nullptr,
                                       fetches, trace);
    ASSERT_TRUE(f.status.isOk()) << f.status.toString();
    ASSERT_EQ(fetches.size(), 1u);
    ASSERT_TRUE(fetches[0].resident);
    EXPECT_TRUE(fetches[0].bytes.empty());
    EXPECT_NE(fetches[0].resident->data, w->data);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(fetches[0].resident->data) % 64, 0u);
    float s = 10.0f * static_cast<float>(step + 1);
    EXPECT_EQ(floatsOf(fetches[0].view()),
              (std::vector<float>{1 + s, 2 + 2 * s, 3 + 3 * s, 4 + 4 * s}));
    // The donated value is read, never written.
    float prev = 10.0f * static_cast<float>(step);
    EXPECT_EQ(floatsOf(w->view()),
              (std::vector<float>{1 + prev, 2 + 2 * prev, 3 + 3 * prev,
                                  4 + 4 * prev}));
    w = fetches[0].resident;
    storages.insert(w->data);
  }
  // Released values went back to the pool and were taken again: the one
  // fed, the one kept, and the one released.
  EXPECT_LE(storages.size(), 3u);
  ResidentPtr last = w;
  w.reset();
  (*interp)->setKeeps({});
  (*interp)->setResidentFeeds({});
  std::string x = bytesOf({1, 1, 1, 1});
  std::vector<FetchResult> fetches;
  StepFailure f =
      (*interp)->runStep(3, {{0, x}, {1, g}}, nullptr, fetches, trace);
  ASSERT_TRUE(f.status.isOk()) << f.status.toString();
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_FALSE(fetches[0].resident);
  EXPECT_EQ(floatsOf(fetches[0].view()), (std::vector<float>{11, 21, 31, 41}));
  EXPECT_EQ(floatsOf(last->view()), (std::vector<float>{61, 122, 183, 244}));
  // Resident feeds apply to the next step only, and only when its bytes
  // for the feed are the resident value's: other bytes are copied in.
  (*interp)->setResidentFeeds({{0, last}});
  fetches.clear();
  f = (*interp)->runStep(4, {{0, x}, {1, g}}, nullptr, fetches, trace);
  ASSERT_TRUE(f.status.isOk()) << f.status.toString();
  EXPECT_EQ(floatsOf(fetches.at(0).view()),
            (std::vector<float>{11, 21, 31, 41}));
  (*interp)->setResidentFeeds({{0, last}});
  fetches.clear();
  f = (*interp)->runStep(5, {{0, last->view()}, {1, g}}, nullptr, fetches,
                         trace);
  ASSERT_TRUE(f.status.isOk()) << f.status.toString();
  EXPECT_EQ(floatsOf(fetches.at(0).view()),
            (std::vector<float>{71, 142, 213, 284}));
  fetches.clear();
  f = (*interp)->runStep(6, {{0, x}, {1, g}}, nullptr, fetches, trace);
  ASSERT_TRUE(f.status.isOk()) << f.status.toString();
  EXPECT_EQ(floatsOf(fetches.at(0).view()),
            (std::vector<float>{11, 21, 31, 41}));
}

// The sharded weight update's new weight: an all_gather writes the kept
// value, and its output is bound to fresh resident bytes (members read each
// other's inputs, never the output); its input is not, and the numbers are
// the same step after step.
TEST(Interpreter, BindsAKeptFetchAnAllGatherWrites) {
  FakeWorlds worlds;
  std::shared_ptr<ResidentPool> pool = ResidentPool::create();
  Interpreter::Options o = options(worlds, 0, 1);
  o.residents = pool;
  RankProgram p = addProgram();
  p.numEvents = 2;
  Instruction gather = comm(OpKind::Collective, f32(128, 4), 1);
  gather.collective = CommOpKind::AllGather;
  gather.output = f32(192, 4);
  p.instructions = {feed(0, f32(0, 4)),
                    feed(1, f32(64, 4)),
                    add4(f32(0, 4), f32(64, 4), f32(128, 4), 0),
                    wait(std::vector<int>{0}),
                    gather,
                    wait(std::vector<int>{1}),
                    fetch(0, f32(192, 4))};
  auto interp = Interpreter::create(std::move(p), std::move(o));
  ASSERT_TRUE(interp.isOk()) << interp.status().toString();
  EXPECT_TRUE((*interp)->bindsKeep(0));
  std::vector<TraceRecord> trace;
  ResidentPtr w = residentOf(*pool, {1, 2, 3, 4});
  for (int64_t step = 0; step < 3; ++step) {
    (*interp)->setKeeps({0});
    (*interp)->setResidentFeeds({{0, w}});
    std::vector<FetchResult> fetches;
    StepFailure f =
        (*interp)->runStep(step, {{0, w->view()}, {1, bytesOf({1, 1, 1, 1})}},
                           nullptr, fetches, trace);
    ASSERT_TRUE(f.status.isOk()) << f.status.toString();
    ASSERT_EQ(fetches.size(), 1u);
    ASSERT_TRUE(fetches[0].resident);
    float s = static_cast<float>(step + 1);
    EXPECT_EQ(floatsOf(fetches[0].view()),
              (std::vector<float>{1 + s, 2 + s, 3 + s, 4 + s}));
    w = fetches[0].resident;
  }
  // Not kept: the same program fetches the bytes.
  (*interp)->setKeeps({});
  (*interp)->setResidentFeeds({});
  std::vector<FetchResult> fetches;
  StepFailure f = (*interp)->runStep(
      3, {{0, bytesOf({1, 2, 3, 4})}, {1, bytesOf({1, 1, 1, 1})}}, nullptr,
      fetches, trace);
  ASSERT_TRUE(f.status.isOk()) << f.status.toString();
  EXPECT_FALSE(fetches.at(0).resident);
  EXPECT_EQ(floatsOf(fetches[0].view()), (std::vector<float>{2, 3, 4, 5}));
}

// What is not its own is copied: a feed a kernel writes (in place), a
// kept fetch of a fed buffer, of a buffer a collective writes, or fetched
// twice; the numbers are the same.
TEST(Interpreter, CopiesResidentValuesItCannotBind) {
  FakeWorlds worlds;
  std::shared_ptr<ResidentPool> pool = ResidentPool::create();
  auto make = [&](RankProgram p) {
    Interpreter::Options o = options(worlds, 0, 1);
    o.residents = pool;
    auto interp = Interpreter::create(std::move(p), std::move(o));
    EXPECT_TRUE(interp.isOk()) << interp.status().toString();
    return std::move(interp).value();
  };
  // x += y in place, x fetched as 0 and fed as 0; y fetched as 1.
  RankProgram inPlace = addProgram();
  inPlace.instructions = {feed(0, f32(0, 4)),
                          feed(1, f32(64, 4)),
                          add4(f32(0, 4), f32(64, 4), f32(0, 4), 0),
                          wait(std::vector<int>{0}),
                          fetch(0, f32(0, 4)),
                          fetch(1, f32(64, 4))};
  auto a = make(std::move(inPlace));
  EXPECT_FALSE(a->bindsFeed(0));
  EXPECT_TRUE(a->bindsFeed(1));
  EXPECT_FALSE(a->bindsKeep(0));
  EXPECT_FALSE(a->bindsKeep(1));
  ResidentPtr x = residentOf(*pool, {1, 2, 3, 4});
  ResidentPtr y = residentOf(*pool, {5, 5, 5, 5});
  a->setKeeps({0, 1});
  a->setResidentFeeds({{0, x}, {1, y}});
  std::vector<FetchResult> fetches;
  std::vector<TraceRecord> trace;
  StepFailure f =
      a->runStep(0, {{0, x->view()}, {1, y->view()}}, nullptr, fetches, trace);
  ASSERT_TRUE(f.status.isOk()) << f.status.toString();
  ASSERT_EQ(fetches.size(), 2u);
  EXPECT_EQ(floatsOf(fetches[0].view()), (std::vector<float>{6, 7, 8, 9}));
  EXPECT_EQ(floatsOf(fetches[1].view()), (std::vector<float>{5, 5, 5, 5}));
  EXPECT_EQ(floatsOf(x->view()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_NE(fetches[1].resident->data, y->data);

  // The sum all-reduced in place, then kept; and the sum fetched twice.
  RankProgram reduced = addProgram();
  reduced.numEvents = 2;
  reduced.instructions = {feed(0, f32(0, 4)),
                          feed(1, f32(64, 4)),
                          add4(f32(0, 4), f32(64, 4), f32(128, 4), 0),
                          wait(std::vector<int>{0}),
                          comm(OpKind::Collective, f32(128, 4), 1),
                          wait(std::vector<int>{1}),
                          fetch(0, f32(128, 4))};
  auto b = make(std::move(reduced));
  EXPECT_FALSE(b->bindsKeep(0));
  RankProgram twice = addProgram();
  twice.instructions.push_back(fetch(1, f32(128, 4)));
  auto c = make(std::move(twice));
  EXPECT_FALSE(c->bindsKeep(0));
  EXPECT_FALSE(c->bindsKeep(1));
  for (Interpreter *interp : {b.get(), c.get()}) {
    interp->setKeeps({0, 1});
    interp->setResidentFeeds({});
    fetches.clear();
    f = interp->runStep(
        0, {{0, bytesOf({1, 2, 3, 4})}, {1, bytesOf({1, 1, 1, 1})}}, nullptr,
        fetches, trace);
    ASSERT_TRUE(f.status.isOk()) << f.status.toString();
    for (const FetchResult &r : fetches) {
      ASSERT_TRUE(r.resident);
      EXPECT_EQ(floatsOf(r.view()), (std::vector<float>{2, 3, 4, 5}));
    }
  }
  EXPECT_EQ(fetches.size(), 2u);
}
