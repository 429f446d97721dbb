//===- dispatch_bench.cpp - Step dispatch overhead vs a TCP floor -*- C++
//-*-===//
//
// Issue 5: the per-step overhead of a no-op step (every rank feeds and
// fetches one float, nothing else) run through executor::Controller at 1, 2
// and 4 local workers, as a ratio to a raw TCP loopback ping-pong floor (a
// forked child echoing 64-byte messages, TCP_NODELAY) measured in the same
// run. Floor and step batches alternate (A B A B) so that noise on a shared
// machine hits both. Prints a table; the 1.5x target is reported, never
// asserted. docs/executor.md, "bench/dispatch".
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/Plan.h"
#include "monarch/Codegen/PlanFile.h"
#include "monarch/Executor/Controller.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <numeric>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace cg = monarch::codegen;
namespace ex = monarch::executor;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMessageBytes = 64;

double us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Stats {
  double p50 = 0, mean = 0;
};

Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  s.p50 = v[v.size() / 2];
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  return s;
}

bool fullIo(int fd, char *buf, size_t n, bool write) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = write ? ::send(fd, buf + done, n - done, MSG_NOSIGNAL)
                      : ::recv(fd, buf + done, n - done, 0);
    if (k <= 0)
      return false;
    done += static_cast<size_t>(k);
  }
  return true;
}

void noDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// A forked echo child on a 127.0.0.1 TCP connection. Created before any
/// controller thread exists, so the fork is safe.
struct EchoPeer {
  int fd = -1;
  pid_t child = -1;

  bool start() {
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listener < 0 ||
        ::bind(listener, reinterpret_cast<sockaddr *>(&addr), len) != 0 ||
        ::listen(listener, 1) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
      return false;
    child = ::fork();
    if (child < 0)
      return false;
    if (child == 0) {
      ::close(listener);
      int c = ::socket(AF_INET, SOCK_STREAM, 0);
      if (c < 0 ||
          ::connect(c, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
        ::_exit(1);
      noDelay(c);
      char buf[kMessageBytes];
      while (fullIo(c, buf, sizeof(buf), false) &&
             fullIo(c, buf, sizeof(buf), true)) {
      }
      ::_exit(0);
    }
    fd = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    if (fd < 0)
      return false;
    noDelay(fd);
    return true;
  }

  bool pingPong(int rounds, std::vector<double> &samples) {
    char buf[kMessageBytes];
    std::memset(buf, 7, sizeof(buf));
    for (int i = 0; i < rounds; ++i) {
      auto t0 = Clock::now();
      if (!fullIo(fd, buf, sizeof(buf), true) ||
          !fullIo(fd, buf, sizeof(buf), false))
        return false;
      samples.push_back(us(Clock::now() - t0));
    }
    return true;
  }

  void stop() {
    if (fd >= 0)
      ::close(fd);
    if (child > 0)
      ::waitpid(child, nullptr, 0);
    fd = -1;
    child = -1;
  }
};

cg::Buffer oneFloat() {
  cg::Buffer b;
  b.offset = 0;
  b.dtype = cg::DType::F32;
  b.shape = {1};
  return b;
}

/// One step, "noop": every rank feeds input 0 (f32[1]) into its arena and
/// fetches it back as output 0. No kernel, no collective.
cg::ExecutionPlan noopPlan(int ranks) {
  cg::ExecutionPlan plan;
  plan.compilerVersion = "dispatch_bench";
  plan.source = "dispatch_bench.cpp";
  cg::ProcMesh mesh;
  mesh.name = "mesh";
  mesh.dims = {{"gpus", ranks}};
  cg::MeshTopology topo;
  topo.mesh = "mesh";
  cg::Host host;
  host.name = "localhost";
  for (int r = 0; r < ranks; ++r) {
    mesh.rootRanks.push_back(r);
    host.ranks.push_back(r);
  }
  topo.hosts = {host};
  plan.meshes = {mesh};
  plan.topology = {topo};

  cg::StepPlan s;
  s.symbol = "noop";
  s.mesh = "mesh";
  cg::ValueType t;
  t.shape = {1};
  s.inputs = {t};
  s.outputs = {t};
  for (int r = 0; r < ranks; ++r) {
    cg::RankProgram p;
    p.rank = r;
    p.arenaBytes = 4;
    cg::Instruction feed, fetch;
    feed.kind = cg::InstrKind::FeedBuffer;
    feed.io.index = 0;
    feed.io.buffer = oneFloat();
    fetch.kind = cg::InstrKind::FetchBuffer;
    fetch.io.index = 0;
    fetch.io.buffer = oneFloat();
    feed.loc.file = fetch.loc.file = "dispatch_bench.cpp";
    feed.loc.line = 1;
    fetch.loc.line = 2;
    p.instructions = {feed, fetch};
    s.programs.push_back(p);
  }
  plan.plans = {s};
  return plan;
}

struct Row {
  int workers;
  Stats step, floor;
};

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 1500;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: dispatch_bench [rounds per batch > 0]\n");
    return 2;
  }
  EchoPeer peer;
  if (!peer.start()) {
    std::fprintf(stderr, "error: cannot start the TCP echo peer: %s\n",
                 std::strerror(errno));
    return 1;
  }

  ex::HostTensor input;
  input.dtype = "float32";
  input.shape = {1};
  float one = 1.0f;
  input.data.assign(reinterpret_cast<const char *>(&one), sizeof(one));

  std::vector<Row> rows;
  int failures = 0;
  for (int n : {1, 2, 4}) {
    ex::ControllerOptions o;
    o.worldSize = n;
    o.workerBinary = MONARCH_WORKER_BIN;
    o.logLevel = "warn";
    auto started = ex::Controller::start(std::move(o));
    if (!started.isOk()) {
      std::fprintf(stderr, "error: %d workers: %s\n", n,
                   started.status().toString().c_str());
      ++failures;
      continue;
    }
    std::unique_ptr<ex::Controller> c = std::move(started).value();
    auto bytes = cg::serializePlan(noopPlan(n));
    auto loaded = bytes.isOk()
                      ? c->loadPlan(*bytes)
                      : ex::StatusOr<std::vector<std::string>>(bytes.status());
    if (!loaded.isOk()) {
      std::fprintf(stderr, "error: %d workers: load: %s\n", n,
                   loaded.status().toString().c_str());
      (void)c->stop();
      ++failures;
      continue;
    }
    std::vector<double> steps, floor;
    bool ok = true;
    auto runSteps = [&](int count, std::vector<double> *out) {
      for (int i = 0; i < count && ok; ++i) {
        auto t0 = Clock::now();
        auto r = c->runStep("noop", {input});
        double t = us(Clock::now() - t0);
        if (!r.isOk() || r->size() != 1 || r->front().data != input.data) {
          std::fprintf(stderr, "error: %d workers: step %d: %s\n", n, i,
                       r.isOk() ? "wrong output"
                                : r.status().toString().c_str());
          ok = false;
        } else if (out) {
          out->push_back(t);
        }
      }
    };
    runSteps(200, nullptr); // warm-up
    floor.reserve(2 * rounds);
    steps.reserve(2 * rounds);
    for (int batch = 0; batch < 2 && ok; ++batch) {
      ok = peer.pingPong(rounds, floor);
      runSteps(rounds, &steps);
    }
    ex::Status stopped = c->stop();
    if (!stopped.isOk())
      std::fprintf(stderr, "warning: %d workers: stop: %s\n", n,
                   stopped.toString().c_str());
    if (!ok) {
      ++failures;
      continue;
    }
    rows.push_back({n, summarize(steps), summarize(floor)});
  }
  peer.stop();

  std::printf("dispatch_bench: no-op step (feed+fetch f32[1] per rank) vs "
              "TCP loopback ping-pong (%d B), %d+%d samples each\n",
              kMessageBytes, rounds, rounds);
  std::printf("%7s %12s %12s %12s %12s %7s %s\n", "workers", "step p50 us",
              "step mean us", "floor p50 us", "floor mean", "ratio",
              "target <= 1.5x");
  for (const Row &r : rows) {
    double ratio = r.floor.p50 > 0 ? r.step.p50 / r.floor.p50 : 0;
    std::printf("%7d %12.1f %12.1f %12.1f %12.1f %6.2fx %s\n", r.workers,
                r.step.p50, r.step.mean, r.floor.p50, r.floor.mean, ratio,
                ratio <= 1.5 ? "met" : "not met");
  }
  return failures == 0 ? 0 : 1;
}
