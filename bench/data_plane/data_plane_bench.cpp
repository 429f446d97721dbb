//===- data_plane_bench.cpp - Gloo bandwidth vs a TCP floor -----*- C++ -*-===//
//
// Two processes on 127.0.0.1 (this one and a forked child) meeting through a
// file store. For 1 MB..64 MB it measures, in the same run:
//  * the floor: one plain TCP connection, one side writes the buffer, the
//    other reads it and answers one byte;
//  * Gloo send/recv of the same buffer (answered the same way);
//  * Gloo all_reduce (sum, float32) of the same buffer through our
//    Communicator, and through Gloo's API directly (its own sum, on the
//    calling thread) as the peer to be at parity with: algbw = bytes / time,
//    busbw = algbw * 2(n-1)/n, which equals algbw at two ranks.
// Prints GB/s and the ratios to the floor; asserts nothing. Both processes
// share a host, where the CPU backend would use shared memory: this bench
// sets MONARCH_SHM=0 to measure the Gloo TCP path (bench/transfer compares
// the shared-memory path).
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Communicator.h"

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace monarch::executor;
using monarch::DType;
using monarch::dtypeSize;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "data_plane_bench: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status &st, const char *what) {
  if (!st)
    die(std::string(what) + ": " + st.toString());
}

void writeAll(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0)
      die("tcp write failed");
    p += k;
    n -= k;
  }
}

void readAll(int fd, char *p, size_t n) {
  while (n) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0)
      die("tcp read failed");
    p += k;
    n -= k;
  }
}

/// The plain-TCP connection: rank 0 listens, rank 1 connects.
int connectFloor(Store &store, int rank) {
  if (rank == 0) {
    int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(ls, reinterpret_cast<sockaddr *>(&addr), len) != 0 ||
        ::listen(ls, 1) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
      die("tcp listen failed");
    check(store.set("tcp-port", std::to_string(ntohs(addr.sin_port))), "set");
    int fd = ::accept(ls, nullptr, nullptr);
    ::close(ls);
    return fd;
  }
  auto port = store.get("tcp-port", std::chrono::milliseconds(10000));
  check(port.status().isOk() ? Status::ok() : port.status(), "tcp port");
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(uint16_t(std::stoi(*port)));
  if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
    die("tcp connect failed");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int itersFor(size_t bytes) {
  return int(std::clamp<size_t>((256u << 20) / bytes, 3, 30));
}

struct Row {
  size_t bytes;
  double tcp, sendRecv, allReduce, plainGloo; // seconds per op (median)
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double gCreateMs = 0, gDuplicateUs = 0, gPingPongUs = 0;

/// Both ranks run this; rank 0 returns the timings.
std::vector<Row> run(int rank, const std::string &dir) {
  auto store = createFileStore(dir);
  check(store.status(), "file store");
  CommOptions options;
  options.timeout = std::chrono::milliseconds(30000);
  auto t0 = Clock::now();
  auto comm =
      createCommunicator(Backend::Gloo, **store, rank, 2, {}, "bench", options);
  if (!comm)
    check(comm.status(), "createCommunicator");
  auto t1 = Clock::now();
  Communicator &c = **comm;
  // Duplicates (one per plan stream) share the connections.
  std::vector<std::unique_ptr<Communicator>> dups;
  for (int i = 0; i < 8; ++i) {
    auto d = c.duplicate("bench/dup" + std::to_string(i));
    if (!d)
      check(d.status(), "duplicate");
    dups.push_back(std::move(*d));
  }
  auto t2 = Clock::now();
  // Small-message round trip through the worker threads: a 4 KB ping-pong.
  std::vector<char> small(4096);
  std::vector<double> rtt;
  for (int i = 0; i < 201; ++i) {
    auto s0 = Clock::now();
    if (rank == 0) {
      check(c.send(small.data(), small.size(), DType::UI8, 1)
                ->wait(options.timeout),
            "ping");
      check(c.recv(small.data(), small.size(), DType::UI8, 1)
                ->wait(options.timeout),
            "pong");
    } else {
      check(c.recv(small.data(), small.size(), DType::UI8, 0)
                ->wait(options.timeout),
            "ping");
      check(c.send(small.data(), small.size(), DType::UI8, 0)
                ->wait(options.timeout),
            "pong");
    }
    if (i > 0)
      rtt.push_back(std::chrono::duration<double>(Clock::now() - s0).count());
  }
  if (rank == 0) {
    gCreateMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
    gDuplicateUs =
        std::chrono::duration<double, std::micro>(t2 - t1).count() / 8;
    gPingPongUs = median(rtt) * 1e6;
  }
  int fd = connectFloor(**store, rank);
  // Plain Gloo, for comparison: its own file store, device and context.
  std::filesystem::create_directories(dir + "/plain");
  ::gloo::rendezvous::FileStore plainStore(dir + "/plain");
  ::gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = ::gloo::transport::tcp::CreateDevice(attr);
  auto plain = std::make_shared<::gloo::rendezvous::Context>(rank, 2);
  plain->setTimeout(options.timeout);
  plain->connectFullMesh(plainStore, dev);
  std::vector<Row> rows;
  char ack = 0;
  for (size_t mb : {1, 4, 16, 64}) {
    size_t bytes = mb << 20;
    size_t count = bytes / 4;
    std::vector<float> buf(count, 1.0f), out(count);
    int iters = itersFor(bytes);
    std::vector<double> tcp, sr, ar, pg;
    for (int i = 0; i < iters + 1; ++i) { // the first round warms up
      auto t0 = Clock::now();
      if (rank == 0) {
        writeAll(fd, reinterpret_cast<char *>(buf.data()), bytes);
        readAll(fd, &ack, 1);
      } else {
        readAll(fd, reinterpret_cast<char *>(out.data()), bytes);
        writeAll(fd, &ack, 1);
      }
      auto t1 = Clock::now();
      if (rank == 0) {
        check(c.send(buf.data(), count, DType::F32, 1)->wait(options.timeout),
              "send");
        check(c.recv(&ack, 1, DType::UI8, 1)->wait(options.timeout), "ack");
      } else {
        check(c.recv(out.data(), count, DType::F32, 0)->wait(options.timeout),
              "recv");
        check(c.send(&ack, 1, DType::UI8, 0)->wait(options.timeout), "ack");
      }
      auto t2 = Clock::now();
      check(c.allReduce(buf.data(), out.data(), count, DType::F32)
                ->wait(options.timeout),
            "all_reduce");
      auto t3 = Clock::now();
      {
        ::gloo::AllreduceOptions opts(plain);
        opts.setInput<float>(buf.data(), count);
        opts.setOutput<float>(out.data(), count);
        opts.setReduceFunction(
            static_cast<void (*)(void *, const void *, const void *, size_t)>(
                &::gloo::sum<float>));
        opts.setTag(uint32_t(i));
        ::gloo::allreduce(opts);
      }
      auto t4 = Clock::now();
      if (i == 0)
        continue;
      pg.push_back(std::chrono::duration<double>(t4 - t3).count());
      tcp.push_back(std::chrono::duration<double>(t1 - t0).count());
      sr.push_back(std::chrono::duration<double>(t2 - t1).count());
      ar.push_back(std::chrono::duration<double>(t3 - t2).count());
    }
    rows.push_back({bytes, median(tcp), median(sr), median(ar), median(pg)});
  }
  ::close(fd);
  return rows;
}

} // namespace

int main() {
  // The Gloo TCP path, not the same-host shared-memory one (see above).
  ::setenv("MONARCH_SHM", "0", /*overwrite=*/1);
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("monarch-data-plane-bench-" + std::to_string(::getpid())))
                        .string();
  pid_t child = ::fork();
  if (child < 0)
    die("fork failed");
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    run(1, dir);
    ::_exit(0);
  }
  std::vector<Row> rows = run(0, dir);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::filesystem::remove_all(dir);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("rank 1 failed");

  std::printf("data_plane: Gloo (TCP, 127.0.0.1) between 2 processes vs one "
              "plain TCP connection, same run; medians\n");
  std::printf("%8s %9s %15s %16s %17s %s\n", "size", "tcp GB/s",
              "send/recv GB/s", "all_reduce GB/s", "plain Gloo GB/s",
              "(x tcp floor) all_reduce/plain");
  for (const Row &r : rows) {
    double gb = double(r.bytes) / 1e9;
    double tcp = gb / r.tcp, sr = gb / r.sendRecv, ar = gb / r.allReduce,
           pg = gb / r.plainGloo;
    std::printf("%6zuMB %9.2f %7.2f (%4.2fx) %8.2f (%4.2fx) %8.2f (%4.2fx) "
                "%8.2fx\n",
                r.bytes >> 20, tcp, sr, sr / tcp, ar, ar / tcp, pg, pg / tcp,
                ar / pg);
  }
  std::printf("createCommunicator (2 ranks, file store): %.1f ms; "
              "duplicate(): %.0f us; 4 KB send/recv round trip p50: %.0f us\n",
              gCreateMs, gDuplicateUs, gPingPongUs);
  std::printf("all_reduce busbw = algbw at 2 ranks (2(n-1)/n = 1); design "
              "section 6 expects ~1.5-2 GB/s for 1M floats (4 MB)\n");
  return 0;
}
