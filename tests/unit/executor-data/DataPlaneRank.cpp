//===- DataPlaneRank.cpp - One rank of a data-plane process --- -*- C++ -*-===//
//
// The multi-process tests start N copies of this program on 127.0.0.1, one
// per rank, meeting through a file store. Each runs one scenario against the
// Gloo communicator and checks every result against an expectation computed
// independently here (element by element, in double, from the same
// deterministic inputs), printing "FAIL ..." lines on stderr and exiting
// non-zero on a mismatch. Fault scenarios print "READY" when blocked and
// "STATUS <rank> <code> <elapsed ms> <message>" for the test to check.
//
// usage: data-plane-rank SCENARIO RANK SIZE STORE_DIR TIMEOUT_MS [ARG]
//
//===----------------------------------------------------------------------===//

#include "ElementIO.h"
#include "core/Reduction.h"
#include "monarch/Executor/Communicator.h"

#include <sys/prctl.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>

using namespace monarch::executor;
using monarch::DType;
using monarch::dtypeName;
using monarch::dtypeSize;
using monarch::isFloatDType;
using monarch::kAllDTypes;
using monarch::testing::readElem;
using monarch::testing::writeElem;
using Clock = std::chrono::steady_clock;

namespace {

int gRank = 0, gSize = 1, gFailures = 0;

void fail(const std::string &what) {
  std::fprintf(stderr, "FAIL rank %d: %s\n", gRank, what.c_str());
  ++gFailures;
}

bool expectOk(const Status &st, const std::string &what) {
  if (!st)
    fail(what + ": " + st.toString());
  return st.isOk();
}

void printStatus(const Status &st, Clock::time_point since) {
  long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                  since)
                .count();
  std::printf("STATUS %d %s %ld %s\n", gRank, statusCodeName(st.code()), ms,
              st.message().c_str());
  std::fflush(stdout);
}

bool isInteger(DType t) { return !isFloatDType(t); }

/// Small integers, exact in every dtype and in every partial reduction:
/// [-3, 3] (unsigned: [0, 6]), a different pattern per rank, index and salt.
double inputValue(int rank, size_t i, DType t, int salt = 0) {
  int v = int((rank * 7 + i * 3 + salt * 5) % 7);
  if (t == DType::I1)
    return v % 2;
  return t == DType::UI8 ? v : v - 3;
}

std::vector<char> makeInput(int rank, size_t count, DType t, int salt = 0) {
  std::vector<char> buf(count * dtypeSize(t));
  for (size_t i = 0; i < count; ++i)
    writeElem(buf.data(), i, t, inputValue(rank, i, t, salt));
  return buf;
}

double reduceReference(ReduceOp op, size_t i, DType t, int n, size_t offset) {
  double acc = inputValue(0, offset + i, t);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(r, offset + i, t);
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      // A sum of bools is a bool: any.
      acc = t == DType::I1 ? std::max(acc, v) : acc + v;
      break;
    case ReduceOp::Prod:
      acc *= v;
      break;
    case ReduceOp::Max:
      acc = std::max(acc, v);
      break;
    case ReduceOp::Min:
      acc = std::min(acc, v);
      break;
    }
  }
  if (op == ReduceOp::Avg)
    acc = isInteger(t) ? std::trunc(acc / n) : acc / n;
  return acc;
}

/// Compares `count` elements of `got` with `expected(i)` after casting the
/// expectation to the dtype (so integer wrap-around matches).
template <typename Fn>
void checkBuffer(const std::string &what, const void *got, size_t count,
                 DType t, Fn expected) {
  std::vector<char> want(dtypeSize(t));
  for (size_t i = 0; i < count; ++i) {
    writeElem(want.data(), 0, t, expected(i));
    double w = readElem(want.data(), 0, t);
    double g = readElem(got, i, t);
    if (w != g) {
      fail(what + " " + dtypeName(t) + " element " + std::to_string(i) +
           ": got " + std::to_string(g) + ", want " + std::to_string(w));
      return;
    }
  }
}

std::string opName(ReduceOp op) { return reduceOpName(op); }

constexpr ReduceOp kReduceOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                                   ReduceOp::Min, ReduceOp::Avg};
constexpr std::chrono::milliseconds kWait(20000);

void scenarioAllReduce(Communicator &c) {
  const size_t count = 37;
  for (DType t : kAllDTypes) {
    for (ReduceOp op : kReduceOps) {
      auto in = makeInput(c.rank(), count, t);
      std::vector<char> out(in.size());
      if (t == DType::I1 && op == ReduceOp::Avg) {
        // The average of bools is no bool: refused, on every rank alike.
        Status st =
            c.allReduce(in.data(), out.data(), count, t, op)->wait(kWait);
        if (st.code() != StatusCode::InvalidArgument)
          fail("all_reduce avg of bool: want InvalidArgument, got " +
               st.toString());
        continue;
      }
      expectOk(c.allReduce(in.data(), out.data(), count, t, op)->wait(kWait),
               "all_reduce");
      checkBuffer(
          "all_reduce " + opName(op), out.data(), count, t,
          [&](size_t i) { return reduceReference(op, i, t, c.size(), 0); });
      // In place.
      expectOk(c.allReduce(in.data(), in.data(), count, t, op)->wait(kWait),
               "all_reduce in place");
      checkBuffer(
          "all_reduce in place " + opName(op), in.data(), count, t,
          [&](size_t i) { return reduceReference(op, i, t, c.size(), 0); });
    }
  }
}

void scenarioReduceScatter(Communicator &c) {
  const size_t chunk = 13;
  for (DType t : kAllDTypes) {
    for (ReduceOp op : kReduceOps) {
      if (t == DType::I1 && op == ReduceOp::Avg)
        continue; // refused, as in scenarioAllReduce
      auto in = makeInput(c.rank(), chunk * c.size(), t);
      std::vector<char> out(chunk * dtypeSize(t));
      expectOk(
          c.reduceScatter(in.data(), out.data(), chunk, t, op)->wait(kWait),
          "reduce_scatter");
      checkBuffer(
          "reduce_scatter " + opName(op), out.data(), chunk, t, [&](size_t i) {
            return reduceReference(op, i, t, c.size(), chunk * c.rank());
          });
    }
  }
}

void scenarioAllGather(Communicator &c) {
  const size_t chunk = 11;
  for (DType t : kAllDTypes) {
    auto in = makeInput(c.rank(), chunk, t);
    std::vector<char> out(chunk * c.size() * dtypeSize(t));
    expectOk(c.allGather(in.data(), out.data(), chunk, t)->wait(kWait),
             "all_gather");
    checkBuffer("all_gather", out.data(), chunk * c.size(), t, [&](size_t i) {
      return inputValue(int(i / chunk), i % chunk, t);
    });
  }
}

void scenarioBroadcast(Communicator &c) {
  const size_t count = 29;
  for (DType t : kAllDTypes) {
    for (int root = 0; root < c.size(); ++root) {
      auto in = makeInput(c.rank(), count, t, 1);
      std::vector<char> out(in.size(), 0);
      expectOk(c.broadcast(in.data(), out.data(), count, t, root)->wait(kWait),
               "broadcast");
      checkBuffer("broadcast from " + std::to_string(root), out.data(), count,
                  t, [&](size_t i) { return inputValue(root, i, t, 1); });
      // In place: only the root's buffer holds the data beforehand.
      expectOk(c.broadcast(in.data(), in.data(), count, t, root)->wait(kWait),
               "broadcast in place");
      checkBuffer("broadcast in place from " + std::to_string(root), in.data(),
                  count, t,
                  [&](size_t i) { return inputValue(root, i, t, 1); });
    }
  }
}

void scenarioAllToAll(Communicator &c) {
  const size_t chunk = 7;
  int n = c.size();
  for (DType t : kAllDTypes) {
    // Block j of rank r's input is meant for rank j: values salted by j.
    std::vector<char> in(chunk * n * dtypeSize(t));
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < chunk; ++i)
        writeElem(in.data(), j * chunk + i, t, inputValue(c.rank(), i, t, j));
    std::vector<char> out(in.size());
    expectOk(c.allToAll(in.data(), out.data(), chunk, t)->wait(kWait),
             "all_to_all");
    // Block j of the output came from rank j.
    checkBuffer("all_to_all", out.data(), chunk * n, t, [&](size_t i) {
      return inputValue(int(i / chunk), i % chunk, t, c.rank());
    });
  }
}

void scenarioSendRecv(Communicator &c) {
  int n = c.size(), r = c.rank();
  int right = (r + 1) % n, left = (r + n - 1) % n;
  const size_t count = 53;
  for (DType t : kAllDTypes) {
    // A ring in one group.
    auto in = makeInput(r, count, t, 2);
    std::vector<char> out(in.size());
    expectOk(c.post({CommOp::send(in.data(), count, t, right),
                     CommOp::recv(out.data(), count, t, left)})
                 ->wait(kWait),
             "grouped ring");
    checkBuffer("grouped ring", out.data(), count, t,
                [&](size_t i) { return inputValue(left, i, t, 2); });
  }
  // Tags: two messages to the right, received in the opposite order.
  auto a = makeInput(r, 17, DType::I64, 4), b = makeInput(r, 17, DType::I64, 5);
  std::vector<char> ga(a.size()), gb(b.size());
  expectOk(c.post({CommOp::send(a.data(), 17, DType::I64, right, 5),
                   CommOp::send(b.data(), 17, DType::I64, right, 9),
                   CommOp::recv(gb.data(), 17, DType::I64, left, 9),
                   CommOp::recv(ga.data(), 17, DType::I64, left, 5)})
               ->wait(kWait),
           "tagged");
  checkBuffer("tag 5", ga.data(), 17, DType::I64,
              [&](size_t i) { return inputValue(left, i, DType::I64, 4); });
  checkBuffer("tag 9", gb.data(), 17, DType::I64,
              [&](size_t i) { return inputValue(left, i, DType::I64, 5); });
  // Send to self, grouped with the receive.
  std::vector<char> self(a.size());
  expectOk(c.post({CommOp::send(a.data(), 17, DType::I64, r, 1),
                   CommOp::recv(self.data(), 17, DType::I64, r, 1)})
               ->wait(kWait),
           "self");
  checkBuffer("self", self.data(), 17, DType::I64,
              [&](size_t i) { return inputValue(r, i, DType::I64, 4); });
  // A group mixing a collective with point-to-point ops.
  std::vector<char> sum(a.size());
  expectOk(c.post({CommOp::send(a.data(), 17, DType::I64, right, 11),
                   CommOp::allReduce(a.data(), sum.data(), 17, DType::I64,
                                     ReduceOp::Sum),
                   CommOp::recv(ga.data(), 17, DType::I64, left, 11)})
               ->wait(kWait),
           "mixed group");
  checkBuffer("mixed group recv", ga.data(), 17, DType::I64,
              [&](size_t i) { return inputValue(left, i, DType::I64, 4); });
  checkBuffer("mixed group sum", sum.data(), 17, DType::I64, [&](size_t i) {
    double s = 0;
    for (int q = 0; q < n; ++q)
      s += inputValue(q, i, DType::I64, 4);
    return s;
  });
  // Separate posts: even ranks send first, odd ranks receive first (a
  // one-rank communicator would send to itself outside a group: an error).
  if (n == 1)
    return;
  auto in = makeInput(r, 1000, DType::F32, 3);
  std::vector<char> out(in.size());
  auto s = [&] { return c.send(in.data(), 1000, DType::F32, right); };
  auto v = [&] { return c.recv(out.data(), 1000, DType::F32, left); };
  std::shared_ptr<Work> w1, w2;
  if (r % 2 == 0) {
    w1 = s();
    w2 = v();
  } else {
    w1 = v();
    w2 = s();
  }
  expectOk(w1->wait(kWait), "ring first");
  expectOk(w2->wait(kWait), "ring second");
  if (n % 2 == 0)
    checkBuffer("separate ring", out.data(), 1000, DType::F32,
                [&](size_t i) { return inputValue(left, i, DType::F32, 3); });
}

/// Large float32 buffers (several Gloo segments) with random values,
/// compared with a double-precision sum within float32 rounding.
void scenarioLarge(Communicator &c) {
  const size_t count = size_t(3) << 20; // 12 MB
  auto gen = [](int rank, size_t i) {
    uint64_t x = (uint64_t(rank) << 32 | i) * 0x9E3779B97F4A7C15ull;
    return float(double(x >> 11) / double(1ull << 53) * 2.0 - 1.0);
  };
  std::vector<float> in(count), out(count);
  for (size_t i = 0; i < count; ++i)
    in[i] = gen(c.rank(), i);
  expectOk(c.allReduce(in.data(), out.data(), count, DType::F32)->wait(kWait),
           "large all_reduce");
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < c.size(); ++r)
      want += gen(r, i);
    if (std::fabs(out[i] - want) > 1e-5) {
      fail("large all_reduce element " + std::to_string(i) + ": got " +
           std::to_string(out[i]) + ", want " + std::to_string(want));
      break;
    }
  }
  int right = (c.rank() + 1) % c.size(),
      left = (c.rank() + c.size() - 1) % c.size();
  expectOk(c.post({CommOp::send(in.data(), count, DType::F32, right),
                   CommOp::recv(out.data(), count, DType::F32, left)})
               ->wait(kWait),
           "large ring");
  for (size_t i = 0; i < count; ++i)
    if (out[i] != gen(left, i)) {
      fail("large ring element " + std::to_string(i));
      break;
    }
}

/// Duplicates: collectives on two objects of one group, posted in opposite
/// orders on even and odd ranks; a send on one matches a recv on the other.
void scenarioDuplicate(Communicator &c) {
  auto dup = c.duplicate("world-dup");
  if (!dup) {
    fail("duplicate: " + dup.status().toString());
    return;
  }
  Communicator &d = **dup;
  if (d.rank() != c.rank() || d.size() != c.size())
    fail("duplicate rank/size differ");
  const size_t count = 5000;
  auto a = makeInput(c.rank(), count, DType::I32, 1);
  auto b = makeInput(c.rank(), count, DType::I32, 2);
  std::vector<char> ra(a.size()), rb(b.size());
  std::shared_ptr<Work> wa, wb;
  if (c.rank() % 2 == 0) {
    wa = c.allReduce(a.data(), ra.data(), count, DType::I32);
    wb = d.allReduce(b.data(), rb.data(), count, DType::I32);
  } else {
    wb = d.allReduce(b.data(), rb.data(), count, DType::I32);
    wa = c.allReduce(a.data(), ra.data(), count, DType::I32);
  }
  expectOk(wa->wait(kWait), "duplicate: all_reduce on the original");
  expectOk(wb->wait(kWait), "duplicate: all_reduce on the duplicate");
  auto sumOf = [&](int salt) {
    return [&, salt](size_t i) {
      double s = 0;
      for (int r = 0; r < c.size(); ++r)
        s += inputValue(r, i, DType::I32, salt);
      return s;
    };
  };
  checkBuffer("duplicate original", ra.data(), count, DType::I32, sumOf(1));
  checkBuffer("duplicate copy", rb.data(), count, DType::I32, sumOf(2));
  int right = (c.rank() + 1) % c.size(),
      left = (c.rank() + c.size() - 1) % c.size();
  auto ws = c.send(a.data(), count, DType::I32, right, 42);
  auto wr = d.recv(ra.data(), count, DType::I32, left, 42);
  expectOk(ws->wait(kWait), "cross-duplicate send");
  expectOk(wr->wait(kWait), "cross-duplicate recv");
  checkBuffer("cross-duplicate", ra.data(), count, DType::I32,
              [&](size_t i) { return inputValue(left, i, DType::I32, 1); });
  // Explicit collective tags match across duplicates: even ranks reduce on
  // the original, odd ranks on the duplicate, two collectives at once.
  Communicator &mine = c.rank() % 2 == 0 ? c : d;
  Communicator &other = c.rank() % 2 == 0 ? d : c;
  CommOp first =
      CommOp::allReduce(a.data(), ra.data(), count, DType::I32, ReduceOp::Sum);
  first.tag = 7;
  CommOp second =
      CommOp::allReduce(b.data(), rb.data(), count, DType::I32, ReduceOp::Sum);
  second.tag = 8;
  auto w7 = mine.post({first});
  auto w8 = other.post({second});
  expectOk(w7->wait(kWait), "explicit tag 7");
  expectOk(w8->wait(kWait), "explicit tag 8");
  checkBuffer("explicit tag 7", ra.data(), count, DType::I32, sumOf(1));
  checkBuffer("explicit tag 8", rb.data(), count, DType::I32, sumOf(2));
}

} // namespace

int main(int argc, char **argv) {
  // Die with the test that started us: no orphans even if it crashes.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1)
    return 2;
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s SCENARIO RANK SIZE STORE_DIR TIMEOUT_MS\n",
                 argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  gRank = std::atoi(argv[2]);
  gSize = std::atoi(argv[3]);
  std::string arg = argc > 6 ? argv[6] : "";
  auto store = createFileStore(argv[4]);
  if (!store) {
    fail(store.status().toString());
    return 1;
  }
  CommOptions options;
  options.timeout = std::chrono::milliseconds(std::atoi(argv[5]));
  auto start = Clock::now();

  if (scenario == "sub") {
    // Members are the odd world ranks in reverse order; others do nothing.
    std::vector<int> members;
    for (int r = gSize - 1; r >= 0; --r)
      if (r % 2 == 1)
        members.push_back(r);
    auto sub = createCommunicator(Backend::Gloo, **store, gRank, gSize, members,
                                  "odd", options);
    if (gRank % 2 == 0) {
      if (sub || sub.status().code() != StatusCode::InvalidArgument)
        fail("a non-member got " +
             (sub ? std::string("a communicator") : sub.status().toString()));
      return gFailures ? 1 : 0;
    }
    if (!sub) {
      fail(sub.status().toString());
      return 1;
    }
    Communicator &c = **sub;
    int want =
        int(std::find(members.begin(), members.end(), gRank) - members.begin());
    if (c.rank() != want || c.size() != int(members.size()) ||
        c.worldRanks() != members)
      fail("sub-communicator rank " + std::to_string(c.rank()) + " size " +
           std::to_string(c.size()));
    scenarioAllReduce(c);
    scenarioSendRecv(c);
    return gFailures ? 1 : 0;
  }

  auto comm = createCommunicator(Backend::Gloo, **store, gRank, gSize, {},
                                 "world", options);
  if (!comm) {
    printStatus(comm.status(), start);
    return scenario == "no-arrive" ? 0 : 1;
  }
  Communicator &c = **comm;

  if (scenario == "collectives") {
    scenarioAllReduce(c);
    scenarioReduceScatter(c);
    scenarioAllGather(c);
    scenarioBroadcast(c);
    scenarioAllToAll(c);
  } else if (scenario == "p2p") {
    scenarioSendRecv(c);
  } else if (scenario == "large") {
    scenarioLarge(c);
  } else if (scenario == "duplicate") {
    scenarioDuplicate(c);
  } else if (scenario == "kill") {
    // ARG is the victim. Everyone warms up, then the victim stops taking
    // part (the test kills it) while the others are inside an all_reduce.
    int victim = std::atoi(arg.c_str());
    std::vector<float> buf(1 << 20, 1.0f);
    expectOk(c.allReduce(buf.data(), buf.data(), buf.size(), DType::F32)
                 ->wait(kWait),
             "warm-up");
    if (gRank == victim) {
      std::printf("READY\n");
      std::fflush(stdout);
      for (;;)
        pause();
    }
    auto w = c.allReduce(buf.data(), buf.data(), buf.size(), DType::F32);
    std::printf("READY\n");
    std::fflush(stdout);
    auto posted = Clock::now();
    printStatus(w->wait(kWait), posted);
  } else if (scenario == "size-mismatch") {
    // Rank 0 sends more than rank 1 receives: both must fail, not crash.
    std::vector<float> buf(1000, 1.0f);
    auto w = gRank == 0 ? c.send(buf.data(), 1000, DType::F32, 1)
                        : c.recv(buf.data(), 500, DType::F32, 0);
    auto posted = Clock::now();
    printStatus(w->wait(kWait), posted);
  } else if (scenario == "collective-mismatch") {
    // Rank 0 reduces more elements than rank 1: both fail, neither crashes.
    std::vector<float> buf(100000, 1.0f);
    auto w = c.allReduce(buf.data(), buf.data(), gRank == 0 ? 100000 : 50000,
                         DType::F32);
    auto posted = Clock::now();
    printStatus(w->wait(kWait), posted);
  } else if (scenario == "silent-peer") {
    // Rank 1 joins but never posts the matching receive.
    if (gRank == 1) {
      std::this_thread::sleep_for(options.timeout * 3);
      return 0;
    }
    std::vector<float> buf(1000, 1.0f);
    auto w = c.send(buf.data(), buf.size(), DType::F32, 1);
    auto posted = Clock::now();
    printStatus(w->wait(kWait), posted);
  } else if (scenario == "abort") {
    // Rank 0 aborts while waiting for a message that never comes; rank 1,
    // blocked the same way, must see rank 0 leave.
    std::vector<float> buf(1000);
    auto w = c.recv(buf.data(), buf.size(), DType::F32, 1 - gRank);
    if (gRank == 0) {
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        c.abort("test abort");
      });
      auto posted = Clock::now();
      printStatus(w->wait(kWait), posted);
      aborter.join();
      auto again = Clock::now();
      printStatus(
          c.allReduce(buf.data(), buf.data(), 10, DType::F32)->wait(kWait),
          again);
      // Stay alive: the peer must notice the abort, not this process's exit.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    } else {
      auto posted = Clock::now();
      printStatus(w->wait(kWait), posted);
    }
  } else {
    fail("unknown scenario " + scenario);
  }
  return gFailures ? 1 : 0;
}
