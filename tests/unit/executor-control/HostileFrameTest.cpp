//===- HostileFrameTest.cpp - Forged and stalled control frames -----------===//
//
// The three attacks of issue 16 against real processes: a worker started by
// the local launcher and the controller in this test process.
//   1. A 34-byte frame whose list length is 2^31-1 (it aborted a worker, and
//      the user's process when sent to the controller).
//   2. 34-byte frames declaring 2^24 runStep feeds, a setState shape of 2^30
//      and a heartbeat of 2^24 log records (they took 1-2.8 GB each).
//   3. Stalled connections: nothing sent, a partial handshake, a partial
//      frame (each held a server thread forever).
// Each frame is sent both without the job token (refused at the handshake,
// never decoded) and after an accepted handshake (refused by the bounded
// protocol before anything is allocated). The processes must survive, stay
// small, close every stalled connection within the configured timeouts,
// never run more connection threads than the cap, and keep running steps.
//
//===----------------------------------------------------------------------===//
#include "TestPlans.h"

#include "monarch/Executor/Controller.h"

#include "ControlTransport.h"
#include "ScopedEnv.h"
#include "ThriftGlue.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace monarch::executor;
using namespace monarch::testing;
using Clock = std::chrono::steady_clock;

namespace {

//===--- Raw sockets ------------------------------------------------------===//

int dial(const std::string &host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool sendAll(int fd, const std::string &bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n =
        ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

/// Whether the peer closed `fd` within `timeout` (bytes it sends first, a
/// handshake answer, are read and dropped).
bool closedWithin(int fd, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    int left =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - Clock::now())
                             .count());
    if (::poll(&p, 1, std::max(left, 1)) <= 0)
      continue;
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
      return true;
  }
  return false;
}

//===--- Frames -----------------------------------------------------------===//

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  s[0] = static_cast<char>(v >> 24);
  s[1] = static_cast<char>(v >> 16);
  s[2] = static_cast<char>(v >> 8);
  s[3] = static_cast<char>(v);
  return s;
}

/// Field header: type, id.
std::string field(uint8_t type, uint16_t id) {
  return std::string{static_cast<char>(type), static_cast<char>(id >> 8),
                     static_cast<char>(id & 0xff)};
}

constexpr uint8_t kStruct = 12, kList = 15, kI64 = 10;

/// A framed strict-binary call of `method` whose arguments are `args`.
std::string callFrame(const std::string &method, const std::string &args) {
  std::string body = be32(0x80010001u) + be32(uint32_t(method.size())) +
                     method + be32(1) + args;
  return be32(uint32_t(body.size())) + body;
}

/// runStep(request { feeds: list<Feed> of `count` }), nothing after.
std::string runStepFeeds(uint32_t count) {
  return callFrame("runStep", field(kStruct, 1) + field(kList, 4) +
                                  char(kStruct) + be32(count));
}

/// setState(value: Tensor { shape: list<i64> of `count` }).
std::string setStateShape(uint32_t count) {
  return callFrame("setState", field(kStruct, 3) + field(kList, 2) +
                                   char(kI64) + be32(count));
}

/// heartbeat(request { logs: list<LogRecord> of `count` }).
std::string heartbeatLogs(uint32_t count) {
  return callFrame("heartbeat", field(kStruct, 1) + field(kList, 4) +
                                    char(kStruct) + be32(count));
}

//===--- Processes --------------------------------------------------------===//

long statusField(pid_t pid, const std::string &name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0)
      return std::atol(line.c_str() + name.size() + 1);
  return -1;
}

long rssMb(pid_t pid) { return statusField(pid, "VmRSS") / 1024; }
long threadsOf(pid_t pid) { return statusField(pid, "Threads"); }

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

/// Sends `frame` to host:port, with the handshake of `token` first unless it
/// is empty, and expects the server to close the connection.
void expectRefused(const std::string &host, int port, const std::string &token,
                   const std::string &frame, const std::string &what) {
  int fd = dial(host, port);
  ASSERT_GE(fd, 0) << what;
  std::string bytes = token.empty() ? frame : handshakeBytes(token) + frame;
  EXPECT_TRUE(sendAll(fd, bytes)) << what;
  EXPECT_TRUE(closedWithin(fd, std::chrono::seconds(5)))
      << what << ": the connection stayed open";
  ::close(fd);
}

std::unique_ptr<Controller> startOrDie(ControllerOptions o) {
  auto c = Controller::start(std::move(o));
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(c).value() : nullptr;
}

void expectSteps(Controller &c) {
  auto out = c.runStep("step", {floats({1, 2, 3, 4})});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(toFloats((*out)[0]), (std::vector<float>{2, 4, 6, 8}));
}

} // namespace

TEST(HostileFrames, ForgedContainerLengthsAreRefusedBeforeAllocating) {
  auto c = startOrDie(localOptions(2));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  expectSteps(*c);
  auto [host, port] = c->workerAddress(0);
  pid_t worker = static_cast<pid_t>(c->workerPid(0));
  long workerBefore = rssMb(worker);
  long selfBefore = rssMb(::getpid());
  ASSERT_EQ(runStepFeeds(0x7fffffffu).size(), 34u);

  struct Attack {
    std::string what, frame;
  };
  std::vector<Attack> workerAttacks = {
      {"runStep feeds of 2^31-1", runStepFeeds(0x7fffffffu)},
      {"runStep feeds of 2^24", runStepFeeds(1u << 24)},
      {"setState shape of 2^30", setStateShape(1u << 30)},
      {"setState shape of 2^31-1", setStateShape(0x7fffffffu)}};
  for (const Attack &a : workerAttacks) {
    expectRefused(host, port, "", a.frame, "unauthenticated " + a.what);
    expectRefused(host, port, c->jobToken(), a.frame,
                  "authenticated " + a.what);
    ASSERT_TRUE(alive(worker)) << a.what << " killed the worker";
  }
  EXPECT_LT(rssMb(worker) - workerBefore, 64)
      << "worker grew from " << workerBefore << " MB";

  // The controller serves in this process: an abort would end the test.
  auto address = parseHostPort(c->address());
  ASSERT_TRUE(address.isOk()) << address.status().toString();
  std::vector<Attack> controllerAttacks = {
      {"heartbeat logs of 2^24", heartbeatLogs(1u << 24)},
      {"heartbeat logs of 2^31-1", heartbeatLogs(0x7fffffffu)}};
  for (const Attack &a : controllerAttacks) {
    expectRefused(address->first, address->second, "", a.frame,
                  "unauthenticated " + a.what);
    expectRefused(address->first, address->second, c->jobToken(), a.frame,
                  "authenticated " + a.what);
  }
  EXPECT_LT(rssMb(::getpid()) - selfBefore, 64)
      << "the controller's process grew from " << selfBefore << " MB";

  EXPECT_TRUE(c->health().isOk()) << c->health().toString();
  expectSteps(*c);
  EXPECT_TRUE(c->stop().isOk());
}

TEST(HostileFrames, StalledConnectionsAreClosedAndCapped) {
  ControllerOptions o = localOptions(2);
  o.rankEnv[0]["MONARCH_HANDSHAKE_TIMEOUT_MS"] = "300";
  o.rankEnv[0]["MONARCH_FRAME_TIMEOUT_MS"] = "500";
  auto c = startOrDie(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->loadPlan(serialize(allReducePlan(2))).isOk());
  expectSteps(*c);
  auto [host, port] = c->workerAddress(0);
  pid_t worker = static_cast<pid_t>(c->workerPid(0));
  long baseline = threadsOf(worker);

  // 50 silent, 50 with half a handshake, 20 authenticated with half a frame.
  std::vector<int> fds;
  for (int i = 0; i < 120; ++i) {
    int fd = dial(host, port);
    ASSERT_GE(fd, 0);
    if (i >= 50 && i < 100)
      sendAll(fd, handshakeBytes(c->jobToken()).substr(0, 7));
    if (i >= 100)
      sendAll(fd, handshakeBytes(c->jobToken()) + be32(1000) +
                      std::string(10, 'x'));
    fds.push_back(fd);
  }
  // The established connections of the job still work meanwhile.
  expectSteps(*c);
  auto t0 = Clock::now();
  long most = 0;
  size_t closed = 0;
  std::vector<bool> done(fds.size(), false);
  while (closed < fds.size() && Clock::now() - t0 < std::chrono::seconds(10)) {
    most = std::max(most, threadsOf(worker));
    for (size_t i = 0; i < fds.size(); ++i)
      if (!done[i] && closedWithin(fds[i], std::chrono::milliseconds(1))) {
        done[i] = true;
        ++closed;
      }
  }
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(closed, fds.size())
      << "connections still open after " << seconds << " s";
  // 120 connections, 64 at a time, each closed after 0.3 or 0.5 s.
  EXPECT_LT(seconds, 5.0);
  EXPECT_LE(most - baseline, 64 + 4)
      << "connection threads beyond the cap (baseline " << baseline << ")";
  for (int fd : fds)
    ::close(fd);
  // The threads go with their connections.
  auto t1 = Clock::now();
  while (threadsOf(worker) > baseline + 2 &&
         Clock::now() - t1 < std::chrono::seconds(3))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_LE(threadsOf(worker), baseline + 2);
  ASSERT_TRUE(alive(worker));
  expectSteps(*c);
  EXPECT_TRUE(c->stop().isOk());
}

TEST(HostileFrames, TheControllerClosesStalledConnections) {
  ScopedEnv handshake("MONARCH_HANDSHAKE_TIMEOUT_MS", "300");
  auto c = startOrDie(localOptions(1));
  ASSERT_TRUE(c);
  auto address = parseHostPort(c->address());
  ASSERT_TRUE(address.isOk()) << address.status().toString();
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    int fd = dial(address->first, address->second);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  auto t0 = Clock::now();
  for (int fd : fds) {
    EXPECT_TRUE(closedWithin(fd, std::chrono::seconds(3)));
    ::close(fd);
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3.0);
  EXPECT_TRUE(c->health().isOk()) << c->health().toString();
  EXPECT_TRUE(c->stop().isOk());
}
