//===- ShmRank.cpp - One rank of a shared-memory process test ---*- C++ -*-===//
//
// ShmProcessTest starts N copies of this program, one per rank, meeting
// through a file store; createCommunicator(Backend::Gloo) picks the shared-
// memory transport because they share the host. Each scenario checks every
// result against an expectation computed here in double from the same
// deterministic inputs (small integers, so every dtype and reduction is
// exact), prints "FAIL ..." on stderr and exits non-zero on a mismatch.
// Scenarios it does not know are handed to data-plane-rank (the Gloo
// process tests' program), so those run over shared memory too.
//
// usage: shm-rank SCENARIO RANK SIZE STORE_DIR TIMEOUT_MS [ARG]
//
//===----------------------------------------------------------------------===//

#include "ElementIO.h"
#include "core/Reduction.h"
#include "monarch/Executor/Communicator.h"

#include <sys/mman.h>
#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>

#ifndef DATA_PLANE_RANK_BINARY
#error "DATA_PLANE_RANK_BINARY must name the data-plane-rank executable"
#endif

using namespace monarch::executor;
using monarch::DType;
using monarch::dtypeSize;
using monarch::testing::readElem;
using monarch::testing::writeElem;
using Clock = std::chrono::steady_clock;

namespace {

int gRank = 0, gSize = 1;
std::atomic<int> gFailures{0};
constexpr auto kWait = std::chrono::seconds(60);

void fail(const std::string &what) {
  std::fprintf(stderr, "FAIL rank %d: %s\n", gRank, what.c_str());
  ++gFailures;
}

bool expectOk(const Status &st, const std::string &what) {
  if (!st)
    fail(what + ": " + st.toString());
  return st.isOk();
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 ||
         t == DType::BF16;
}

/// The value rank `r` contributes at element `i` (1, 2 or 3).
double value(int r, size_t i, int salt) {
  return double(1 + (size_t(r) * 7 + i * 3 + size_t(salt)) % 3);
}

double reference(ReduceOp op, DType t, size_t i, int salt) {
  double acc = value(0, i, salt);
  for (int r = 1; r < gSize; ++r) {
    double v = value(r, i, salt);
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      acc += v;
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
  if (op == ReduceOp::Avg && !isFloat(t))
    return double(int64_t(acc) / gSize);
  if (op == ReduceOp::Avg) {
    // Rounded to the type as the division there rounds (exact for 2 and 4
    // ranks; 3 ranks divide by 3).
    alignas(8) char one[8];
    writeElem(one, 0, t, acc / gSize);
    return readElem(one, 0, t);
  }
  return acc;
}

std::vector<char> filled(DType t, size_t count, int r, int salt,
                         size_t offset = 0) {
  std::vector<char> buf(count * dtypeSize(t));
  for (size_t i = 0; i < count; ++i)
    writeElem(buf.data(), i, t, value(r, offset + i, salt));
  return buf;
}

/// Checks `count` elements of `buf` against `want(i)`; one FAIL per buffer.
template <typename Want>
void check(const std::string &what, const void *buf, size_t count, DType t,
           Want want) {
  for (size_t i = 0; i < count; ++i) {
    double got = readElem(buf, i, t), w = want(i);
    if (got != w) {
      fail(what + " " + dtypeName(t) + " x" + std::to_string(count) +
           ": element " + std::to_string(i) + " is " + std::to_string(got) +
           ", want " + std::to_string(w));
      return;
    }
  }
}

void everyOp(Communicator &c, DType t, size_t count, int salt) {
  int n = gSize, r = gRank;
  size_t elem = dtypeSize(t);
  std::string tag = "count " + std::to_string(count);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                      ReduceOp::Min, ReduceOp::Avg}) {
    std::string what = tag + " all_reduce " + reduceOpName(op);
    std::vector<char> in = filled(t, count, r, salt), out(count * elem);
    if (expectOk(c.allReduce(in.data(), out.data(), count, t, op)->wait(kWait),
                 what))
      check(what, out.data(), count, t,
            [&](size_t i) { return reference(op, t, i, salt); });
    // In place.
    if (expectOk(c.allReduce(in.data(), in.data(), count, t, op)->wait(kWait),
                 what + " in place"))
      check(what + " in place", in.data(), count, t,
            [&](size_t i) { return reference(op, t, i, salt); });
    // reduce_scatter: rank r gets block r of the reduction of count * n.
    what = tag + " reduce_scatter " + reduceOpName(op);
    std::vector<char> big = filled(t, count * n, r, salt), part(count * elem);
    if (expectOk(
            c.reduceScatter(big.data(), part.data(), count, t, op)->wait(kWait),
            what))
      check(what, part.data(), count, t, [&](size_t i) {
        return reference(op, t, size_t(r) * count + i, salt);
      });
  }
  std::vector<char> in = filled(t, count, r, salt), all(count * n * elem);
  if (expectOk(c.allGather(in.data(), all.data(), count, t)->wait(kWait),
               tag + " all_gather"))
    check(tag + " all_gather", all.data(), count * n, t,
          [&](size_t i) { return value(int(i / count), i % count, salt); });
  for (int root = 0; root < n; ++root) {
    std::vector<char> b = filled(t, count, r, salt), o(count * elem);
    std::string what = tag + " broadcast from " + std::to_string(root);
    if (expectOk(c.broadcast(b.data(), o.data(), count, t, root)->wait(kWait),
                 what))
      check(what, o.data(), count, t,
            [&](size_t i) { return value(root, i, salt); });
  }
  // all_to_all: block p of rank q's input holds value(q, p * count + i).
  std::vector<char> a = filled(t, count * n, r, salt), o(count * n * elem);
  if (expectOk(c.allToAll(a.data(), o.data(), count, t)->wait(kWait),
               tag + " all_to_all"))
    check(tag + " all_to_all", o.data(), count * n, t, [&](size_t i) {
      return value(int(i / count), size_t(r) * count + i % count, salt);
    });
}

void scenarioCollectives(Communicator &c) {
  int salt = 0;
  for (DType t : monarch::kAllDTypes) {
    // Values here are 1..3; bools (any/all) are DataPlaneRank's, which runs
    // over shared memory too.
    if (t == DType::I1)
      continue;
    for (size_t count : {size_t(1), size_t(7), size_t(1001), size_t(40009)})
      everyOp(c, t, count, ++salt);
  }
  // Past the all_reduce and reduce_scatter blocks (4 MB): several slices.
  everyOp(c, DType::F32, (size_t(5) << 20) + 3, ++salt);
}

/// Messages around the eager limit and past the ring, receives posted in
/// the reverse order of the sends on another duplicate, both directions in
/// one group (no deadlock), and tags that differ only in size.
void scenarioP2P(Communicator &c) {
  auto dup = c.duplicate("p2p/dup");
  if (!dup) {
    fail(dup.status().toString());
    return;
  }
  int r = gRank, n = gSize;
  std::vector<size_t> sizes = {1,
                               1000,
                               (64 << 10) - 1,
                               (64 << 10),
                               (64 << 10) + 1,
                               (3 << 20) + 5,
                               size_t(40) << 20};
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  // All sends as one group; the receives, in reverse order, as one group on
  // the duplicate after a pause, so that the messages wait at the receiver
  // (eager payloads kept aside, large ones announced).
  std::vector<std::vector<char>> sendBufs, recvBufs(sizes.size());
  std::vector<CommOp> sends, recvs;
  for (size_t k = 0; k < sizes.size(); ++k) {
    sendBufs.push_back(filled(DType::UI8, sizes[k], r, int(k)));
    sends.push_back(CommOp::send(sendBufs[k].data(), sizes[k], DType::UI8, next,
                                 /*tag=*/100 + k));
  }
  auto sent = c.post(sends);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (size_t k = sizes.size(); k-- > 0;) {
    recvBufs[k].resize(sizes[k]);
    recvs.push_back(
        CommOp::recv(recvBufs[k].data(), sizes[k], DType::UI8, prev, 100 + k));
  }
  auto received = (*dup)->post(recvs);
  expectOk(sent->wait(kWait), "sends");
  if (expectOk(received->wait(kWait), "recvs"))
    for (size_t k = 0; k < sizes.size(); ++k)
      check("p2p of " + std::to_string(sizes[k]) + " bytes", recvBufs[k].data(),
            sizes[k], DType::UI8,
            [&](size_t i) { return value(prev, i, int(k)); });
  // Exchange with both neighbours in one group: 8 MB each way.
  size_t big = size_t(8) << 20;
  std::vector<char> out = filled(DType::UI8, big, r, 99), in(big);
  auto w = c.post({CommOp::send(out.data(), big, DType::UI8, next, 7),
                   CommOp::recv(in.data(), big, DType::UI8, prev, 7)});
  if (expectOk(w->wait(kWait), "ring exchange"))
    check("ring exchange", in.data(), big, DType::UI8,
          [&](size_t i) { return value(prev, i, 99); });
  // Same tag, different sizes: matched by size, not by order.
  std::vector<char> a = filled(DType::UI8, 10, r, 1),
                    b = filled(DType::UI8, 20, r, 2), ra(10), rb(20);
  auto s12 = c.post({CommOp::send(a.data(), 10, DType::UI8, next, 5),
                     CommOp::send(b.data(), 20, DType::UI8, next, 5)});
  auto r21 = (*dup)->post({CommOp::recv(rb.data(), 20, DType::UI8, prev, 5),
                           CommOp::recv(ra.data(), 10, DType::UI8, prev, 5)});
  expectOk(s12->wait(kWait), "same tag, two sizes: sends");
  expectOk(r21->wait(kWait), "same tag, two sizes: recvs");
  check("tag 5, 10 bytes", ra.data(), 10, DType::UI8,
        [&](size_t i) { return value(prev, i, 1); });
  check("tag 5, 20 bytes", rb.data(), 20, DType::UI8,
        [&](size_t i) { return value(prev, i, 2); });
}

/// Two communicators used at the same time from two threads.
void scenarioConcurrent(Store &store, const CommOptions &options) {
  auto worker = [&](const std::string &name, int salt) {
    auto made = createCommunicator(Backend::Gloo, store, gRank, gSize, {}, name,
                                   options);
    if (!made) {
      fail(name + ": " + made.status().toString());
      return;
    }
    Communicator &c = **made;
    if (std::string(c.transport()) != "shm")
      fail(name + " runs over " + c.transport());
    int next = (gRank + 1) % gSize, prev = (gRank + gSize - 1) % gSize;
    for (int it = 0; it < 30; ++it) {
      size_t count = 1000 + size_t(it) * 4099;
      int s = salt + it;
      std::vector<char> in = filled(DType::I32, count, gRank, s),
                        out(count * 4), got(count * 4);
      auto w = c.allReduce(in.data(), out.data(), count, DType::I32);
      auto p = c.post({CommOp::send(in.data(), count, DType::I32, next, it),
                       CommOp::recv(got.data(), count, DType::I32, prev, it)});
      if (expectOk(w->wait(kWait), name + " all_reduce"))
        check(name + " all_reduce", out.data(), count, DType::I32,
              [&](size_t i) {
                return reference(ReduceOp::Sum, DType::I32, i, s);
              });
      if (expectOk(p->wait(kWait), name + " ring"))
        check(name + " ring", got.data(), count, DType::I32,
              [&](size_t i) { return value(prev, i, s); });
    }
  };
  std::thread a(worker, "conc/a", 1000), b(worker, "conc/b", 2000);
  a.join();
  b.join();
}

} // namespace

/// Collectives with explicit tags on one object, as the worker posts them
/// (CommOptions::collectivesInPostingOrder; all_gathers through
/// postAndRun): every size up to and past the direct path's limit, each
/// checked exactly; consecutive ones alternate the areas' slots.
void scenarioTagged(Communicator &c) {
  uint64_t tag = 1;
  for (size_t count : {size_t(1), size_t(7), size_t(1001), size_t(16384),
                       size_t(16385), size_t(40009)})
    for (int salt = 0; salt < 3; ++salt) {
      std::string what = "tagged all_reduce x" + std::to_string(count);
      std::vector<char> in = filled(DType::F32, count, gRank, salt),
                        out(count * 4);
      CommOp op = CommOp::allReduce(in.data(), out.data(), count, DType::F32,
                                    ReduceOp::Sum);
      op.tag = tag++;
      if (expectOk(c.post({op})->wait(kWait), what))
        check(what, out.data(), count, DType::F32, [&](size_t i) {
          return reference(ReduceOp::Sum, DType::F32, i, salt);
        });
      what = "tagged all_gather x" + std::to_string(count);
      std::vector<char> all(count * 4 * gSize);
      op = CommOp::allGather(in.data(), all.data(), count, DType::F32);
      op.tag = tag++;
      // As the worker posts a lone group: run on this thread when idle.
      if (expectOk(c.postAndRun({op})->wait(kWait), what))
        for (int p = 0; p < gSize; ++p)
          check(what, all.data() + p * count * 4, count, DType::F32,
                [&](size_t i) { return value(p, i, salt); });
    }
}

/// Buffers in memory every member registered (registerMemory, as a
/// worker's arena): collectives above the direct path's 64 KB read the
/// peers' buffers there. Every kind, reduction and several dtypes (all_reduce
/// in place too; an all_gather may not overlap), sizes around the blocks,
/// interleaved with small collectives (the areas' slots) so that both paths
/// share the counters. With `outside`, rank 1's inputs lie outside the memory:
/// every member must then agree on messages instead.
void scenarioWindows(Communicator &c, bool outside) {
  const size_t windowBytes = size_t(192) << 20;
  int fd = ::memfd_create("shm-rank-window", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, off_t(windowBytes)) != 0) {
    fail("memfd");
    return;
  }
  void *mapped =
      ::mmap(nullptr, windowBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) {
    fail("mmap");
    return;
  }
  c.registerMemory(mapped, windowBytes, fd);
  char *window = static_cast<char *>(mapped);
  int n = gSize, r = gRank;
  // Rank-dependent offsets: the members' buffers are not at equal places.
  size_t next = size_t(r) * 4096;
  auto take = [&](size_t bytes) {
    char *p = window + next;
    next += (bytes + 63) / 64 * 64;
    return p;
  };
  std::vector<char> outsideIn;
  auto input = [&](DType t, size_t count, int salt) -> char * {
    std::vector<char> v = filled(t, count, r, salt);
    char *p =
        outside && r == 1 ? (outsideIn = v, outsideIn.data()) : take(v.size());
    std::memcpy(p, v.data(), v.size());
    return p;
  };
  int salt = 500;
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::BF16}) {
    size_t elem = dtypeSize(t);
    for (size_t count : {size_t(16385), size_t(40009), (size_t(1) << 20) + 3}) {
      std::string tag = "window x" + std::to_string(count);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg}) {
        next = size_t(r) * 4096;
        ++salt;
        std::string what = tag + " all_reduce " + reduceOpName(op);
        char *in = input(t, count, salt), *out = take(count * elem);
        if (expectOk(c.allReduce(in, out, count, t, op)->wait(kWait), what))
          check(what, out, count, t,
                [&](size_t i) { return reference(op, t, i, salt); });
        // A small one between: the slots.
        std::vector<char> small = filled(t, 5, r, salt), smallOut(5 * elem);
        if (expectOk(c.allReduce(small.data(), smallOut.data(), 5, t, op)
                         ->wait(kWait),
                     what + " then a small one"))
          check(what + " then a small one", smallOut.data(), 5, t,
                [&](size_t i) { return reference(op, t, i, salt); });
        if (expectOk(c.allReduce(in, in, count, t, op)->wait(kWait),
                     what + " in place"))
          check(what + " in place", in, count, t,
                [&](size_t i) { return reference(op, t, i, salt); });
        what = tag + " reduce_scatter " + reduceOpName(op);
        char *big = input(t, count * n, salt), *part = take(count * elem);
        if (expectOk(c.reduceScatter(big, part, count, t, op)->wait(kWait),
                     what))
          check(what, part, count, t, [&](size_t i) {
            return reference(op, t, size_t(r) * count + i, salt);
          });
      }
      next = size_t(r) * 4096;
      ++salt;
      char *in = input(t, count, salt), *all = take(count * n * elem);
      if (expectOk(c.allGather(in, all, count, t)->wait(kWait),
                   tag + " all_gather"))
        check(tag + " all_gather", all, count * n, t,
              [&](size_t i) { return value(int(i / count), i % count, salt); });
      for (int root = 0; root < n; ++root) {
        char *b = input(t, count, salt + root), *o = take(count * elem);
        std::string what = tag + " broadcast from " + std::to_string(root);
        if (expectOk(c.broadcast(b, o, count, t, root)->wait(kWait), what))
          check(what, o, count, t,
                [&](size_t i) { return value(root, i, salt + root); });
      }
    }
  }
  ::munmap(mapped, windowBytes);
  ::close(fd);
}

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
  std::string arg = argc > 6 ? argv[6] : "";
  // Even and odd ranks claim different hosts ("two-hosts", also in
  // "two-hosts in-order"); set before handing over to DataPlaneRank too.
  if (arg.find("two-hosts") != std::string::npos)
    ::setenv("MONARCH_SHM_HOST", std::atoi(argv[2]) % 2 ? "odd" : "even", 1);
  if (scenario != "shm-collectives" && scenario != "p2p-shm" &&
      scenario != "concurrent" && scenario != "transport" &&
      scenario != "tagged" && scenario != "windows") {
    argv[0] = const_cast<char *>(DATA_PLANE_RANK_BINARY);
    ::execv(argv[0], argv);
    std::perror("execv data-plane-rank");
    return 2;
  }
  gRank = std::atoi(argv[2]);
  gSize = std::atoi(argv[3]);
  auto store = createFileStore(argv[4]);
  if (!store) {
    fail(store.status().toString());
    return 1;
  }
  CommOptions options;
  options.timeout = std::chrono::milliseconds(std::atoi(argv[5]));
  if (arg.find("in-order") != std::string::npos)
    options.collectivesInPostingOrder = true;
  if (arg == "oversubscribed") // waiters yield the core instead of spinning
    options.processesOnHost = 1 << 20;
  if (scenario == "concurrent") {
    scenarioConcurrent(**store, options);
    return gFailures ? 1 : 0;
  }
  auto comm = createCommunicator(Backend::Gloo, **store, gRank, gSize, {},
                                 "world", options);
  if (!comm) {
    fail(comm.status().toString());
    return 1;
  }
  Communicator &c = **comm;
  if (scenario == "transport") {
    std::printf("TRANSPORT %d %s\n", gRank, c.transport());
    std::printf("ALL_REDUCE %d %s\n", gRank,
                c.collectiveTransport(CommOpKind::AllReduce, 12));
    // Still a working communicator.
    std::vector<float> v(3, 1.0f);
    expectOk(c.allReduce(v.data(), v.data(), 3, DType::F32)->wait(kWait),
             "all_reduce");
    check("all_reduce", v.data(), 3, DType::F32,
          [&](size_t) { return double(gSize); });
  } else if (scenario == "shm-collectives") {
    scenarioCollectives(c);
  } else if (scenario == "p2p-shm") {
    scenarioP2P(c);
  } else if (scenario == "tagged") {
    scenarioTagged(c);
  } else if (scenario == "windows") {
    scenarioWindows(c, arg == "outside");
  }
  std::fflush(stdout);
  return gFailures ? 1 : 0;
}
