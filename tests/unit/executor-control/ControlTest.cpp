//===- ControlTest.cpp - Controller and workers as real processes ---------===//
//
// Every test starts real monarch-worker processes on loopback through the
// local launcher (or by hand for the env launcher), runs small plans built
// in TestPlans.cpp, and checks numerics against values computed here. Fault
// tests inject each failure for real (SIGKILL, SIGSTOP, an exception in a
// worker, a dropped connection, a wrong job token, a malformed Thrift frame,
// a controller killed with SIGKILL), check the error text names the rank,
// the op and the source location, check the 2 s / 5 s bounds, and check no
// worker process is left behind.
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/Controller.h"
#include "monarch/Executor/Npy.h"

#include "ControlClient.h"
#include "ControlTransport.h"
#include "ThriftGlue.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <csignal>
#include <future>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace monarch::executor;
using namespace monarch::testing;
using Clock = std::chrono::steady_clock;

namespace {

ControllerOptions options(int ranks) { return localOptions(ranks); }

std::vector<pid_t> pidsOf(Controller &c) {
  std::vector<pid_t> pids;
  for (int r = 0; r < c.worldSize(); ++r)
    pids.push_back(static_cast<pid_t>(c.workerPid(r)));
  return pids;
}

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

std::unique_ptr<Controller> startOrDie(ControllerOptions o) {
  auto c = Controller::start(std::move(o));
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(c).value() : nullptr;
}

class Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Ranks, AllReduceStepMatchesTheSum) {
  int n = GetParam();
  auto c = startOrDie(options(n));
  ASSERT_TRUE(c);
  auto names = c->loadPlan(serialize(allReducePlan(n)));
  ASSERT_TRUE(names.isOk()) << names.status().toString();
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0], "step");
  for (int s = 0; s < 3; ++s) {
    std::vector<float> x = {1.5f, -2.0f, 3.25f + s, 100.0f * s};
    auto out = c->runStep("step", {floats(x)});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    ASSERT_EQ(out->size(), 1u);
    std::vector<float> got = toFloats((*out)[0]);
    ASSERT_EQ(got.size(), 4u);
    for (int i = 0; i < 4; ++i)
      EXPECT_FLOAT_EQ(got[i], x[i] * n) << "element " << i;
  }
  std::vector<pid_t> pids = pidsOf(*c);
  EXPECT_TRUE(c->stop().isOk());
  EXPECT_TRUE(allGone(pids, std::chrono::milliseconds(100)));
}

TEST_P(Ranks, RingMovesBytesBetweenWorkers) {
  int n = GetParam();
  auto c = startOrDie(options(n));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(ringPlan(n))).isOk());
  std::vector<float> x = {4, 3, 2, 1};
  auto out = c->runStep("ring", {floats(x)});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // The receive buffer starts zeroed: only a real transfer fills it.
  EXPECT_EQ(toFloats((*out)[0]), x);
  EXPECT_TRUE(c->stop().isOk());
}

INSTANTIATE_TEST_SUITE_P(Executor, Ranks, ::testing::Values(2, 4));

TEST(ExecutorControl, ActorStatePersistsAcrossSteps) {
  auto c = startOrDie(options(2));
  ASSERT_TRUE(c);
  auto names = c->loadPlan(serialize(statePlan(2, readFile(TEST_KERNELS))));
  ASSERT_TRUE(names.isOk()) << names.status().toString();
  EXPECT_EQ(*names, (std::vector<std::string>{"accumulate", "peek"}));
  std::vector<float> total(4, 0.0f);
  for (int s = 1; s <= 3; ++s) {
    std::vector<float> x = {1.0f * s, 2.0f, -0.5f * s, 10.0f};
    for (int i = 0; i < 4; ++i)
      total[i] += x[i];
    auto out = c->runStep("accumulate", {floats(x)});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    EXPECT_EQ(toFloats((*out)[0]), total) << "after step " << s;
    // Another plan sees the same actor state.
    auto peek = c->runStep("peek", {});
    ASSERT_TRUE(peek.isOk()) << peek.status().toString();
    EXPECT_EQ(toFloats((*peek)[0]), total) << "peek after step " << s;
  }
  EXPECT_TRUE(c->stop().isOk());
}

TEST(ExecutorControl, CheckpointRestoresActorState) {
  auto c = startOrDie(options(2));
  ASSERT_TRUE(c);
  ASSERT_TRUE(
      c->loadPlan(serialize(statePlan(2, readFile(TEST_KERNELS)))).isOk());
  ASSERT_TRUE(c->runStep("accumulate", {floats({1, 2, 3, 4})}).isOk());
  auto checkpoint = c->checkpointActorState();
  ASSERT_TRUE(checkpoint.isOk()) << checkpoint.status().toString();
  EXPECT_EQ(checkpoint->states.size(), 2u); // @acc::@total on ranks 0 and 1
  ASSERT_TRUE(c->runStep("accumulate", {floats({10, 10, 10, 10})}).isOk());
  ASSERT_TRUE(c->restoreActorState(*checkpoint).isOk());
  auto out = c->runStep("accumulate", {floats({1, 1, 1, 1})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(toFloats((*out)[0]), (std::vector<float>{2, 3, 4, 5}));
  // A value of the wrong shape is refused without harming the job.
  EXPECT_EQ(c->setActorState("@acc::@total", floats({1, 2})).code(),
            StatusCode::InvalidArgument);
  EXPECT_TRUE(c->stop().isOk());
}

TEST(ExecutorControl, BadInputsAreRejectedWithoutFailingTheJob) {
  auto c = startOrDie(options(2));
  ASSERT_TRUE(c);
  // (NCCL plans on a worker without a GPU: DevicePlanTest.cpp.)
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  auto wrongShape = c->runStep("step", {floats({1, 2, 3})});
  ASSERT_FALSE(wrongShape.isOk());
  EXPECT_EQ(wrongShape.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(wrongShape.status().message().find("float32[4]"), std::string::npos)
      << wrongShape.status().message();
  auto unknown = c->runStep("nope", {});
  EXPECT_EQ(unknown.status().code(), StatusCode::NotFound);
  auto garbage = c->loadPlan("not a plan");
  ASSERT_FALSE(garbage.isOk());
  EXPECT_EQ(garbage.status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(c->health().isOk()) << c->health().toString();
  EXPECT_TRUE(c->runStep("step", {floats({1, 1, 1, 1})}).isOk());
  EXPECT_TRUE(c->stop().isOk());
}

TEST(ExecutorControl, ControllerProgramsFeedRunAndFetch) {
  auto c = startOrDie(options(2));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(programPlan(2))).isOk());
  EXPECT_EQ(c->programs(), (std::vector<std::string>{"main", "twice_const"}));
  auto out = c->call("main", {floats({1, -2, 3, 0.5f})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(toFloats((*out)[0]), (std::vector<float>{2, -4, 6, 1}));
  auto twice = c->call("twice_const", {});
  ASSERT_TRUE(twice.isOk()) << twice.status().toString();
  ASSERT_EQ(twice->size(), 2u);
  for (const HostTensor &t : *twice)
    EXPECT_EQ(toFloats(t), (std::vector<float>{5, 5, 5, 5}));
  auto wrong = c->call("main", {});
  EXPECT_EQ(wrong.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(c->call("nope", {}).status().code(), StatusCode::NotFound);
  EXPECT_TRUE(c->stop().isOk());
}

TEST(ExecutorControl, TraceHasEveryRanksOps) {
  std::string path = ::testing::TempDir() + "monarch-trace-" +
                     std::to_string(::getpid()) + ".json";
  std::remove(path.c_str());
  ControllerOptions o = options(2);
  o.tracePath = path;
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  ASSERT_TRUE(
      c->loadPlan(serialize(statePlan(2, readFile(TEST_KERNELS)))).isOk());
  for (int s = 0; s < 2; ++s) {
    ASSERT_TRUE(c->runStep("step", {floats({1, 2, 3, 4})}).isOk());
    ASSERT_TRUE(c->runStep("accumulate", {floats({1, 2, 3, 4})}).isOk());
  }
  ASSERT_TRUE(c->stop().isOk());
  std::string trace = readFile(path);
  // Valid JSON (checked by Python's parser), one process per rank.
  std::string check = std::string(MONARCH_PYTHON) +
                      " -c \"import json,sys; "
                      "t=json.load(open(sys.argv[1]))['traceEvents']; "
                      "x=[e for e in t if e['ph']=='X']; "
                      "assert {e['pid'] for e in x} == {0, 1, 2}, x; "
                      "assert {e['cat'] for e in x} >= {'step', 'collective', "
                      "'kernel', 'host'}, x\" " +
                      path;
  EXPECT_EQ(std::system(check.c_str()), 0) << trace;
  EXPECT_NE(trace.find("\"name\":\"rank 1\""), std::string::npos);
  // Communication is named with its transport (both ranks on this host).
  EXPECT_NE(trace.find("\"name\":\"all_reduce sum on @world via shm\""),
            std::string::npos);
  EXPECT_NE(trace.find("\"name\":\"launch @add4\""), std::string::npos);
  // The copies in and out of the arena are slices of the issuing thread.
  EXPECT_NE(trace.find("\"name\":\"feed_buffer 0\""), std::string::npos);
  EXPECT_NE(trace.find("\"name\":\"fetch_buffer 0\""), std::string::npos);
  // Each slice carries the user's line of its instruction (the launch of
  // "accumulate" is at test.py:3:5).
  std::string located = std::string(MONARCH_PYTHON) +
                        " -c \"import json,sys; "
                        "t=json.load(open(sys.argv[1]))['traceEvents']; "
                        "k=[e for e in t if e.get('name')=='launch @add4']; "
                        "assert k and all(e['args']['loc']=='test.py:3:5' "
                        "for e in k), k\" " +
                        path;
  EXPECT_EQ(std::system(located.c_str()), 0) << trace;
  EXPECT_NE(trace.find("\"name\":\"accumulate step 1\""), std::string::npos);
}

TEST(ExecutorControl, MessagesAboveTheLimitAreRefused) {
  // Same-host workers stage large inputs outside the messages
  // (SameHostTest.cpp): take the message path.
  ::setenv("MONARCH_MAX_MESSAGE_BYTES", "65536", 1);
  ::setenv("MONARCH_LOCAL_CONTROL", "0", 1);
  auto c = startOrDie(options(2));
  ::unsetenv("MONARCH_MAX_MESSAGE_BYTES");
  ::unsetenv("MONARCH_LOCAL_CONTROL");
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2, 32768))).isOk());
  std::vector<float> big(32768, 1.0f);
  auto out = c->runStep("step", {floats(big)});
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(out.status().message().find("MONARCH_MAX_MESSAGE_BYTES"),
            std::string::npos)
      << out.status().message();
  // A raw frame just above the limit is dropped by the worker.
  auto [host, port] = c->workerAddress(0);
  auto conn = WorkerConnection::connect(
      host, port, WireOptions::fromEnv(c->jobToken()), 1000, 2000);
  ASSERT_TRUE(conn.isOk());
  std::vector<monarch::executor::control::PlanInfo> infos;
  Status st = callThrift("loadPlan", [&] {
    (*conn)->client().loadPlan(infos, c->jobToken(), std::string(70000, 'x'));
  });
  EXPECT_EQ(st.code(), StatusCode::Unavailable) << st.toString();
  EXPECT_TRUE(c->health().isOk());
  EXPECT_TRUE(c->stop().isOk());
}

TEST(ExecutorControl, ControlClientSaysHowACallFailed) {
  // The seam the controller's core calls workers through: a worker's
  // refusal comes back as its own status (without the call's name) and a
  // dropped connection as a transport failure, never an exception.
  auto c = startOrDie(options(1));
  ASSERT_TRUE(c);
  auto [host, port] = c->workerAddress(0);
  ControlEndpoint endpoint{host, port, ""};
  auto wrong =
      ControlClient::dial(endpoint, WireOptions::fromEnv("wrong"), 1000, 1000);
  ASSERT_FALSE(wrong.isOk());
  EXPECT_EQ(wrong.status().code(), StatusCode::PermissionDenied)
      << wrong.status().toString();
  auto client = ControlClient::dial(
      endpoint, WireOptions::fromEnv(c->jobToken()), 1000, 2000);
  ASSERT_TRUE(client.isOk()) << client.status().toString();
  std::vector<monarch::executor::control::PlanInfo> infos;
  CallFailure refused;
  Status st = (*client)->loadPlan("not a plan", infos, &refused);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument) << st.toString();
  EXPECT_EQ(st.message().rfind("loadPlan: ", 0), 0u) << st.message();
  EXPECT_FALSE(refused.transportFailed);
  EXPECT_EQ(refused.worker.code(), StatusCode::InvalidArgument);
  EXPECT_EQ("loadPlan: " + refused.worker.message(), st.message());
  monarch::executor::control::Tensor value;
  CallFailure missing;
  st = (*client)->getState("no such state", value, &missing);
  ASSERT_FALSE(st.isOk());
  EXPECT_FALSE(missing.transportFailed);
  EXPECT_EQ(missing.worker.code(), st.code());
  // After interrupt() the connection is gone: the next call says so.
  (*client)->interrupt();
  CallFailure dropped;
  st = (*client)->getState("no such state", value, &dropped);
  ASSERT_FALSE(st.isOk());
  EXPECT_TRUE(dropped.transportFailed) << st.toString();
  EXPECT_EQ(st.code(), StatusCode::Unavailable) << st.toString();
  EXPECT_TRUE(c->health().isOk());
  EXPECT_TRUE(c->stop().isOk());
}

//===--- Faults -----------------------------------------------------------===//

/// Starts 2 ranks whose rank 1 sleeps 8 s at the first instruction of step
/// 0, so a step is in flight with rank 0 blocked in the all-reduce.
struct HungStep {
  std::unique_ptr<Controller> controller;
  std::future<StatusOr<std::vector<HostTensor>>> step;
  std::vector<pid_t> pids;

  bool start() {
    ControllerOptions o = options(2);
    o.rankEnv[1]["MONARCH_FAULT_INJECT"] = "sleep:0:0:8000";
    controller = startOrDie(o);
    if (!controller ||
        !controller->loadPlan(serialize(allReducePlan(2))).isOk())
      return false;
    pids = pidsOf(*controller);
    Controller *c = controller.get();
    step = std::async(std::launch::async, [c] {
      return c->runStep("step", {floats({1, 2, 3, 4})});
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    return true;
  }
};

TEST(ExecutorFaults, KilledWorkerFailsTheStepWithinTwoSeconds) {
  HungStep job;
  ASSERT_TRUE(job.start());
  auto t0 = Clock::now();
  ASSERT_EQ(::kill(job.pids[1], SIGKILL), 0);
  auto result = job.step.get();
  double elapsed = ms(Clock::now() - t0);
  ASSERT_FALSE(result.isOk());
  std::string text = result.status().message();
  EXPECT_LT(elapsed, 2000.0) << text;
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("SIGKILL"), std::string::npos) << text;
  EXPECT_NE(text.find("step 0 of plan 'step'"), std::string::npos) << text;
  EXPECT_FALSE(job.controller->stop().isOk());
  EXPECT_TRUE(allGone(job.pids, std::chrono::milliseconds(100)));
}

TEST(ExecutorFaults, AKillNamesTheInstructionEachThreadWasRunning) {
  // Rank 1 sleeps before issuing the all-reduce of step 2, so rank 0's
  // stream 1 sits in the all-reduce and its issuing thread at the wait.
  // Rank 0 is killed 100 ms into that step, less than a heartbeat after
  // the last one: the report comes from its progress page, not from a
  // heartbeat that still says "step 1" or "idle".
  ControllerOptions o = options(2);
  o.rankEnv[1]["MONARCH_FAULT_INJECT"] = "sleep:2:1:5000";
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  for (int s = 0; s < 2; ++s)
    ASSERT_TRUE(c->runStep("step", {floats({1, 2, 3, 4})}).isOk());
  std::vector<pid_t> pids = pidsOf(*c);
  Controller *raw = c.get();
  auto step = std::async(std::launch::async, [raw] {
    return raw->runStep("step", {floats({1, 2, 3, 4})});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  auto result = step.get();
  ASSERT_FALSE(result.isOk());
  std::string text = result.status().message();
  EXPECT_NE(text.find("rank 0"), std::string::npos) << text;
  EXPECT_NE(text.find("during step 2 of plan 'step'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("stream 1 at instruction 1 'all_reduce"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(test.py:2:5)"), std::string::npos) << text;
  // The wait right after the all_reduce lets the issuing thread run the
  // all_reduce itself (Interpreter: runsInline).
  EXPECT_NE(text.find("the issuing thread at instruction 1 'all_reduce"),
            std::string::npos)
      << text;
  (void)c->stop();
  EXPECT_TRUE(allGone(pids, std::chrono::milliseconds(100)));
}

TEST(ExecutorFaults, StoppedWorkerIsDetectedByHeartbeatsWithinTwoSeconds) {
  HungStep job;
  ASSERT_TRUE(job.start());
  auto t0 = Clock::now();
  ASSERT_EQ(::kill(job.pids[1], SIGSTOP), 0);
  auto result = job.step.get();
  double elapsed = ms(Clock::now() - t0);
  ASSERT_FALSE(result.isOk());
  std::string text = result.status().message();
  EXPECT_EQ(result.status().code(), StatusCode::DeadlineExceeded) << text;
  EXPECT_LT(elapsed, 2000.0) << text;
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("heartbeat"), std::string::npos) << text;
  // Where it was: the first instruction, with its source location.
  EXPECT_NE(text.find("feed_buffer 0"), std::string::npos) << text;
  EXPECT_NE(text.find("test.py:1:5"), std::string::npos) << text;
  (void)job.controller->stop();
  EXPECT_TRUE(allGone(job.pids, std::chrono::milliseconds(100)));
}

TEST(ExecutorFaults, RaisingWorkerNamesRankOpAndSourceLine) {
  ControllerOptions o = options(2);
  // Instruction 1 is the all_reduce (test.py:2:5).
  o.rankEnv[1]["MONARCH_FAULT_INJECT"] = "raise:1:1";
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  ASSERT_TRUE(c->runStep("step", {floats({1, 2, 3, 4})}).isOk());
  std::vector<pid_t> pids = pidsOf(*c);
  auto t0 = Clock::now();
  auto result = c->runStep("step", {floats({1, 2, 3, 4})});
  double elapsed = ms(Clock::now() - t0);
  ASSERT_FALSE(result.isOk());
  std::string text = result.status().message();
  EXPECT_LT(elapsed, 2000.0) << text;
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("all_reduce sum on @world"), std::string::npos) << text;
  EXPECT_NE(text.find("test.py:2:5"), std::string::npos) << text;
  EXPECT_NE(text.find("injected fault"), std::string::npos) << text;
  EXPECT_NE(text.find("step 1"), std::string::npos) << text;
  // The job is failed: later calls say so at once.
  auto again = c->runStep("step", {floats({1, 2, 3, 4})});
  EXPECT_EQ(again.status().message(), text);
  (void)c->stop();
  EXPECT_TRUE(allGone(pids, std::chrono::milliseconds(100)));
}

TEST(ExecutorFaults, DroppedConnectionFailsTheStep) {
  ControllerOptions o = options(2);
  o.rankEnv[1]["MONARCH_FAULT_INJECT"] = "drop:0:3";
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  std::vector<pid_t> pids = pidsOf(*c);
  auto t0 = Clock::now();
  auto result = c->runStep("step", {floats({1, 2, 3, 4})});
  double elapsed = ms(Clock::now() - t0);
  ASSERT_FALSE(result.isOk());
  std::string text = result.status().message();
  EXPECT_LT(elapsed, 2000.0) << text;
  EXPECT_NE(text.find("lost connection to rank 1"), std::string::npos) << text;
  (void)c->stop();
  EXPECT_TRUE(allGone(pids, std::chrono::milliseconds(100)));
}

TEST(ExecutorFaults, APlanOneRankRefusesFailsAtOnceWithThatRanksError) {
  auto c = startOrDie(options(2));
  ASSERT_TRUE(c);
  // Rank 0's program declares actor state over half of its feed buffer:
  // its worker refuses the plan, while rank 1 waits for it in the
  // all-reduce's rendezvous (MONARCH_COMM_TIMEOUT_MS, 30 s).
  auto bad = allReducePlan(2);
  monarch::plan::Instruction state;
  state.kind = monarch::plan::InstrKind::StateBuffer;
  state.stateBuffer.actorMesh = "acc";
  state.stateBuffer.state = "total";
  state.stateBuffer.buffer.offset = 8;
  state.stateBuffer.buffer.shape = {4};
  auto &program = bad.plans[0].programs[0];
  program.instructions.push_back(state);
  std::string bytes = serialize(bad);
  ASSERT_EQ(bytes.rfind("invalid plan", 0), std::string::npos) << bytes;
  auto t0 = Clock::now();
  auto names = c->loadPlan(bytes);
  double elapsed = ms(Clock::now() - t0);
  ASSERT_FALSE(names.isOk());
  std::string text = names.status().toString();
  EXPECT_EQ(names.status().code(), StatusCode::InvalidArgument) << text;
  EXPECT_NE(text.find("straddling an actor state buffer"), std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 0"), std::string::npos) << text;
  EXPECT_LT(elapsed, 2000.0) << text;
  // The job is healthy, and the same plan name loads once fixed.
  EXPECT_TRUE(c->health().isOk()) << c->health().toString();
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  auto out = c->runStep("step", {floats({1, 2, 3, 4})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(toFloats((*out)[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_TRUE(c->stop().isOk());
}

TEST(ExecutorFaults, WrongTokenIsRejected) {
  std::vector<std::string> logs;
  std::mutex logMutex;
  ControllerOptions o = options(2);
  o.logLevel = "info";
  o.logSink = [&](int rank, int, const std::string &line) {
    std::lock_guard<std::mutex> lock(logMutex);
    logs.push_back("[rank " + std::to_string(rank) + "] " + line);
  };
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  // A client with a wrong token on a worker's port is refused at the
  // connection's handshake, before it can send a request.
  auto [host, port] = c->workerAddress(0);
  auto conn = WorkerConnection::connect(
      host, port, WireOptions::fromEnv("wrong"), 1000, 1000);
  ASSERT_FALSE(conn.isOk());
  EXPECT_EQ(conn.status().code(), StatusCode::PermissionDenied)
      << conn.status().toString();
  // With the job's token, a request that carries a wrong one is still
  // refused by the handler.
  auto authentic = WorkerConnection::connect(
      host, port, WireOptions::fromEnv(c->jobToken()), 1000, 1000);
  ASSERT_TRUE(authentic.isOk()) << authentic.status().toString();
  monarch::executor::control::PingReply reply;
  Status st =
      callThrift("ping", [&] { (*authentic)->client().ping(reply, "wrong"); });
  EXPECT_EQ(st.code(), StatusCode::PermissionDenied) << st.toString();
  // A worker process presenting a wrong token to the controller.
  pid_t rogue = ::fork();
  if (rogue == 0) {
    std::string controller = "MONARCH_CONTROLLER=" + c->address();
    char *envp[] = {controller.data(), const_cast<char *>("MONARCH_RANK=1"),
                    const_cast<char *>("MONARCH_WORLD_SIZE=2"),
                    const_cast<char *>("MONARCH_JOB_TOKEN=not-the-token"),
                    nullptr};
    char *argv[] = {const_cast<char *>(MONARCH_WORKER_BIN), nullptr};
    ::execve(argv[0], argv, envp);
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(rogue, &status, 0), rogue);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  // The job is unaffected and the rejection was logged by the worker.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(c->health().isOk()) << c->health().toString();
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  EXPECT_TRUE(c->runStep("step", {floats({1, 1, 1, 1})}).isOk());
  EXPECT_TRUE(c->stop().isOk());
  std::lock_guard<std::mutex> lock(logMutex);
  bool logged = false;
  for (const std::string &line : logs)
    logged |= line.find("[rank 0] worker 0: rejected connection from") !=
                  std::string::npos &&
              line.find("wrong job token") != std::string::npos;
  EXPECT_TRUE(logged) << "no forwarded log of the rejected connection";
}

TEST(ExecutorFaults, MalformedFrameIsRejectedAndTheWorkerSurvives) {
  std::vector<std::string> logs;
  std::mutex logMutex;
  ControllerOptions o = options(2);
  o.logSink = [&](int rank, int, const std::string &line) {
    std::lock_guard<std::mutex> lock(logMutex);
    logs.push_back("[rank " + std::to_string(rank) + "] " + line);
  };
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  auto [host, port] = c->workerAddress(1);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)),
            0);
  // An authenticated connection, then a frame claiming 2 GiB and junk.
  std::string bytes = handshakeBytes(c->jobToken());
  bytes += std::string("\x7f\xff\xff\xff\x80\x01\x00\x01garbage", 15);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  char accepted = 0;
  ASSERT_EQ(::read(fd, &accepted, 1), 1);
  EXPECT_EQ(accepted, 'A');
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[64];
  // The worker drops the connection instead of reading 2 GiB.
  EXPECT_EQ(::read(fd, buf, sizeof(buf)), 0);
  ::close(fd);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  auto out = c->runStep("step", {floats({1, 2, 3, 4})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(toFloats((*out)[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_TRUE(c->stop().isOk());
  std::lock_guard<std::mutex> lock(logMutex);
  bool logged = false;
  for (const std::string &line : logs)
    logged |= line.find("[rank 1]") == 0 &&
              line.find("oversized frame") != std::string::npos;
  EXPECT_TRUE(logged) << "no forwarded log of the rejected frame";
}

//===--- Controller death -------------------------------------------------===//

/// Runs monarch-run on a plan whose ranks sleep in step 0, returns its pid.
pid_t spawnMonarchRun(const std::string &planPath, std::vector<std::string> env,
                      std::vector<std::string> args = {}) {
  std::string input =
      ::testing::TempDir() + "input4-" + std::to_string(::getpid()) + ".npy";
  EXPECT_TRUE(writeNpyFile(input, floats({1, 2, 3, 4})).isOk());
  std::vector<std::string> argvStrings = {MONARCH_RUN_BIN, planPath, "--inputs",
                                          input};
  for (auto &a : args)
    argvStrings.push_back(a);
  env.push_back(std::string("MONARCH_WORKER_BIN=") + MONARCH_WORKER_BIN);
  env.push_back("MONARCH_FAULT_INJECT=sleep:0:0:20000");
  env.push_back("MONARCH_LOG_LEVEL=error");
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char *> argv, envp;
    for (auto &a : argvStrings)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto &e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

std::string writePlan(const std::string &name, int ranks) {
  std::string path = ::testing::TempDir() + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  std::string bytes = serialize(allReducePlan(ranks));
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

TEST(ExecutorFaults, LocalWorkersDieWithTheController) {
  std::string plan = writePlan("controller-death-local.mcplan", 2);
  pid_t run = spawnMonarchRun(plan, {});
  std::vector<pid_t> workers;
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (workers.size() < 2 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    workers = childrenOf(run);
  }
  ASSERT_EQ(workers.size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto t0 = Clock::now();
  ::kill(run, SIGKILL);
  ::waitpid(run, nullptr, 0);
  EXPECT_TRUE(allGone(workers, std::chrono::milliseconds(5000)));
  EXPECT_LT(ms(Clock::now() - t0), 5000.0);
}

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Starts monarch-worker for `rank` the way another system would (no
/// PDEATHSIG, not our launcher's child).
pid_t spawnEnvWorker(int rank, std::vector<std::string> env,
                     bool slurmStyle = false) {
  env.push_back((slurmStyle ? "SLURM_PROCID=" : "MONARCH_RANK=") +
                std::to_string(rank));
  env.push_back("MONARCH_LOG_LEVEL=error");
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char *> envp;
    for (auto &e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    char *argv[] = {const_cast<char *>(MONARCH_WORKER_BIN), nullptr};
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  return pid;
}

TEST(ExecutorControl, EnvLauncherWorkersJoinRunAndLeave) {
  int port = freePort();
  ControllerOptions o = options(2);
  o.launcherName = "env";
  o.port = port;
  o.jobToken = "env-join-token";
  std::vector<std::string> env = {"MONARCH_CONTROLLER=127.0.0.1:" +
                                      std::to_string(port),
                                  "MONARCH_JOB_TOKEN=env-join-token"};
  // Workers may start before the controller listens: they retry. Rank 1
  // finds its rank and the world size where a SLURM task would.
  std::vector<std::string> env0 = env, env1 = env;
  env0.push_back("MONARCH_WORLD_SIZE=2");
  env1.push_back("SLURM_NTASKS=2");
  std::vector<pid_t> workers = {spawnEnvWorker(0, env0),
                                spawnEnvWorker(1, env1, true)};
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  auto out = c->runStep("step", {floats({1, 2, 3, 4})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(toFloats((*out)[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_TRUE(c->stop().isOk());
  auto t0 = Clock::now();
  for (pid_t w : workers) {
    int status = 0;
    pid_t got = 0;
    while (got == 0 && ms(Clock::now() - t0) < 3000) {
      got = ::waitpid(w, &status, WNOHANG);
      if (got == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (got == 0) {
      ::kill(w, SIGKILL);
      ::waitpid(w, &status, 0);
      ADD_FAILURE() << "env worker " << w << " did not leave after stop()";
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
}

TEST(ExecutorFaults, EnvWorkersLeaveWhenTheControllerDies) {
  std::string plan = writePlan("controller-death-env.mcplan", 2);
  std::string controller = "127.0.0.1:" + std::to_string(freePort());
  std::vector<std::string> common = {"MONARCH_CONTROLLER=" + controller,
                                     "MONARCH_WORLD_SIZE=2",
                                     "MONARCH_JOB_TOKEN=env-test-token"};
  pid_t run = spawnMonarchRun(plan, common, {"--launcher=env"});
  // Workers started "by another system": this test, without PDEATHSIG.
  std::vector<pid_t> workers;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env = common;
    env.push_back("MONARCH_RANK=" + std::to_string(r));
    env.push_back("MONARCH_FAULT_INJECT=sleep:0:0:20000");
    env.push_back("MONARCH_LOG_LEVEL=error");
    pid_t pid = ::fork();
    if (pid == 0) {
      std::vector<char *> envp;
      for (auto &e : env)
        envp.push_back(e.data());
      envp.push_back(nullptr);
      char *argv[] = {const_cast<char *>(MONARCH_WORKER_BIN), nullptr};
      ::execve(argv[0], argv, envp.data());
      ::_exit(127);
    }
    workers.push_back(pid);
  }
  // Registered, plan loaded, step 0 in flight.
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  for (pid_t w : workers)
    ASSERT_FALSE(processGone(w)) << "worker " << w << " exited early";
  auto t0 = Clock::now();
  ::kill(run, SIGKILL);
  ::waitpid(run, nullptr, 0);
  for (pid_t w : workers) {
    int status = 0;
    // Reap with a bound: poll until 6 s.
    pid_t got = 0;
    while (got == 0 && ms(Clock::now() - t0) < 6000) {
      got = ::waitpid(w, &status, WNOHANG);
      if (got == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (got == 0) {
      ::kill(w, SIGKILL);
      ::waitpid(w, &status, 0);
      ADD_FAILURE() << "worker " << w << " outlived its controller";
    }
  }
  EXPECT_LT(ms(Clock::now() - t0), 5000.0);
}

} // namespace

// mc.debug_print lines of one step, as the controller hands them on: the
// k-th line of every rank together, each text once with the ranks that
// printed it.
TEST(FoldRankLines, FoldsIdenticalLinesAndKeepsOrder) {
  EXPECT_EQ(monarch::executor::foldRankLines(
                {{"loss 1", "a"}, {"loss 1", "b"}, {"loss 1", "a"}, {}}),
            (std::vector<std::string>{"[ranks 0-2] loss 1", "[ranks 0,2] a",
                                      "[rank 1] b"}));
  EXPECT_EQ(monarch::executor::rankPrefix({0, 1, 2, 5, 7, 8}),
            "[ranks 0-2,5,7-8] ");
  EXPECT_EQ(monarch::executor::rankPrefix({3}), "[rank 3] ");
  EXPECT_TRUE(monarch::executor::foldRankLines({{}, {}}).empty());
}

// Forwarded log lines: the same text from several ranks within the window
// comes out once, in the order lines first arrived; a rank repeating itself
// starts a new line.
TEST(FoldRankLines, LogFolderFoldsLinesWithinTheWindow) {
  using monarch::executor::LogFolder;
  std::vector<std::string> out;
  LogFolder folder(std::chrono::milliseconds(100),
                   [&](int level, const std::string &line) {
                     out.push_back(std::to_string(level) + " " + line);
                   });
  auto t0 = LogFolder::Clock::now();
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  folder.add(2, 2, "loading plan", at(0));
  folder.add(0, 2, "loading plan", at(10));
  folder.add(1, 3, "slow rank", at(20));
  folder.add(1, 2, "loading plan", at(30));
  folder.add(0, 2, "loading plan", at(40)); // rank 0 again: a new line
  folder.flush(at(90));
  EXPECT_TRUE(out.empty());
  folder.flush(at(105));
  EXPECT_EQ(out, (std::vector<std::string>{"2 [ranks 0-2] loading plan"}));
  folder.flush(at(200), /*all=*/true);
  EXPECT_EQ(out, (std::vector<std::string>{"2 [ranks 0-2] loading plan",
                                           "3 [rank 1] slow rank",
                                           "2 [rank 0] loading plan"}));
}

// A flood of distinct lines is not held back: past 4096 pending, the
// oldest goes out at once (and only it).
TEST(FoldRankLines, LogFolderLetsTheOldestOfAFloodOut) {
  using monarch::executor::LogFolder;
  std::vector<std::string> out;
  LogFolder folder(std::chrono::seconds(10),
                   [&](int, const std::string &line) { out.push_back(line); });
  auto t0 = LogFolder::Clock::now();
  for (int i = 0; i <= 4096; ++i)
    folder.add(0, 2, "line " + std::to_string(i), t0);
  EXPECT_EQ(out, (std::vector<std::string>{"[rank 0] line 0"}));
}
