//===- transfer_bench.cpp - Worker-to-worker bandwidth ----------*- C++ -*-===//
//
// Processes on one host (this one and forked children) meeting through a
// file store, as workers do. For 4 KB .. 256 MB (powers of 4) it measures,
// interleaved within each repetition (A B C ... A B C ...), medians over
// the repetitions:
//  * memcpy of the buffer in one process (the ceiling);
//  * one plain TCP loopback connection: rank 0 writes the buffer, rank 1
//    reads it and answers one byte (the floor a TCP transport can reach);
//  * our CPU communicator over shared memory (the default on one host) and
//    over Gloo TCP (MONARCH_SHM=0 at creation): send of the buffer from
//    rank 0 to rank 1, answered by a one-byte send;
//  * all_reduce (float32 sum) over every rank: ours on shm, ours on Gloo,
//    and plain Gloo (gloo::allreduce on its own context) in the same run;
//    algbw = bytes / time, busbw = algbw * 2(n-1)/n;
//  * all_gather (ours on shm and on Gloo, plain gloo::allgather) and
//    reduce_scatter (ours on shm and on Gloo; Gloo has none of its own).
// Prints a table of GB/s and ratios; asserts nothing.
//
// Ours is posted with postAndRun, as a worker's stream does.
//
// usage: transfer_bench [--ranks N] [--reps R] [--min-kb K] [--max-mb M]
//                       [--netns PREFIX --hosts H]
// (sizes from K KB, default 4, by powers of 4 up to M MB, default 256).
// With --netns, rank r runs in network namespace PREFIX-h<r / (N/H)> (made
// by scripts/netns-hosts.sh; needs root) and everything binds that
// namespace's address: the same rows across hosts. The "shm" communicator
// then spans hosts: with as many ranks on every host (two or more) its
// all_reduce is hierarchical (shared memory within each host, Gloo across,
// a slice per member; HybridCommunicator.h), else Gloo.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace monarch::executor;
using monarch::DType;
using monarch::dtypeSize;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "transfer_bench: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status &st, const char *what) {
  if (!st)
    die(std::string(what) + ": " + st.toString());
}

constexpr auto kTimeout = std::chrono::milliseconds(120000);

void writeAll(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0)
      die("tcp write failed");
    p += k;
    n -= size_t(k);
  }
}

void readAll(int fd, char *p, size_t n) {
  while (n) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0)
      die("tcp read failed");
    p += k;
    n -= size_t(k);
  }
}

/// The plain TCP connection between ranks 0 (listens, at `address`) and 1.
int connectTcp(Store &store, int rank, const std::string &address) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (rank == 0) {
    ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
    check(store.set("tcp-addr", address), "set");
  } else {
    auto host = store.get("tcp-addr", kTimeout);
    if (!host)
      check(host.status(), "tcp address");
    ::inet_pton(AF_INET, host->c_str(), &addr.sin_addr);
  }
  int one = 1;
  if (rank == 0) {
    int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof(addr);
    if (::bind(ls, reinterpret_cast<sockaddr *>(&addr), len) != 0 ||
        ::listen(ls, 1) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
      die("tcp listen failed");
    check(store.set("tcp-port", std::to_string(ntohs(addr.sin_port))), "set");
    int fd = ::accept(ls, nullptr, nullptr);
    ::close(ls);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  auto port = store.get("tcp-port", kTimeout);
  if (!port)
    check(port.status(), "tcp port");
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  addr.sin_port = htons(uint16_t(std::stoi(*port)));
  if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
    die("tcp connect failed");
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Iterations per timed measurement: enough to last a few milliseconds.
int itersFor(size_t bytes) {
  return int(std::clamp<size_t>((size_t(16) << 20) / bytes, 1, 1000));
}

enum Method {
  Memcpy,
  Tcp,
  ShmP2P,
  GlooP2P,
  ShmAR,
  GlooAR,
  PlainAR,
  ShmAG,
  GlooAG,
  PlainAG,
  ShmRS,
  GlooRS,
  kMethods
};
struct Options {
  int ranks = 2;
  /// --netns PREFIX --hosts H: ranks in network namespaces as hosts.
  std::string netns;
  int hosts = 1;
  int reps = 5;
  bool onlyShm = false; // --only-shm: profiling the shm path alone
  size_t minBytes = 4096;
  size_t maxBytes = size_t(256) << 20;
};

/// 127.0.0.1, or with --netns: enters this rank's host namespace and
/// returns its first non-loopback IPv4 address.
std::string enterHost(const Options &o, int rank) {
  if (o.netns.empty())
    return "127.0.0.1";
  int host = rank / std::max(1, o.ranks / o.hosts);
  std::string path = "/run/netns/" + o.netns + "-h" + std::to_string(host);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0)
    die("cannot enter " + path + " (scripts/netns-hosts.sh up; root)");
  ::close(fd);
  ifaddrs *all = nullptr;
  std::string address;
  if (::getifaddrs(&all) == 0)
    for (ifaddrs *a = all; a && address.empty(); a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
          !(a->ifa_flags & IFF_LOOPBACK)) {
        char text[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET,
                    &reinterpret_cast<sockaddr_in *>(a->ifa_addr)->sin_addr,
                    text, sizeof(text));
        address = text;
      }
  if (all)
    ::freeifaddrs(all);
  if (address.empty())
    die(path + " has no IPv4 address");
  return address;
}

/// Every rank runs this; rank 0 writes the medians (seconds per op) to
/// `results[size index][method]`.
void run(int rank, const Options &o, const std::string &dir,
         std::vector<std::vector<double>> &results) {
  int n = o.ranks;
  std::string address = enterHost(o, rank);
  auto store = createFileStore(dir);
  if (!store)
    check(store.status(), "file store");
  CommOptions options;
  options.timeout = kTimeout;
  options.hostname = address;
  ::unsetenv("MONARCH_SHM");
  auto shm =
      createCommunicator(Backend::Gloo, **store, rank, n, {}, "shm", options);
  if (!shm)
    check(shm.status(), "shm communicator");
  ::setenv("MONARCH_SHM", "0", 1);
  auto tcp =
      createCommunicator(Backend::Gloo, **store, rank, n, {}, "gloo", options);
  ::unsetenv("MONARCH_SHM");
  if (!tcp)
    check(tcp.status(), "gloo communicator");
  if (rank == 0 && o.netns.empty() &&
      (std::string((*shm)->transport()) != "shm" ||
       std::string((*tcp)->transport()) != "gloo"))
    die(std::string("transports are ") + (*shm)->transport() + " and " +
        (*tcp)->transport());
  // The buffers live in memory the peers may map, as a worker's arena does
  // (registerMemory): the shm all_reduce of large buffers reads them there.
  size_t windowBytes = 2 * o.maxBytes;
  int windowFd = ::memfd_create("transfer-bench", MFD_CLOEXEC);
  if (windowFd < 0 || ::ftruncate(windowFd, off_t(windowBytes)) != 0)
    die("memfd for the buffers");
  void *window = ::mmap(nullptr, windowBytes, PROT_READ | PROT_WRITE,
                        MAP_SHARED, windowFd, 0);
  if (window == MAP_FAILED)
    die("mmap of the buffers");
  (*shm)->registerMemory(window, windowBytes, windowFd);
  int fd = rank < 2 ? connectTcp(**store, rank, address) : -1;
  std::filesystem::create_directories(dir + "/plain");
  ::gloo::rendezvous::FileStore plainStore(dir + "/plain");
  ::gloo::transport::tcp::attr attr;
  attr.hostname = address;
  auto dev = ::gloo::transport::tcp::CreateDevice(attr);
  auto plain = std::make_shared<::gloo::rendezvous::Context>(rank, n);
  plain->setTimeout(kTimeout);
  plain->connectFullMesh(plainStore, dev);

  std::vector<size_t> sizes;
  for (size_t b = o.minBytes; b <= o.maxBytes; b *= 4)
    sizes.push_back(b);
  results.assign(sizes.size(), std::vector<double>(kMethods, 0));
  uint32_t plainTag = 0;
  char ack = 0;
  for (size_t si = 0; si < sizes.size(); ++si) {
    size_t bytes = sizes[si], count = bytes / 4;
    float *buf = static_cast<float *>(window);
    float *out = buf + o.maxBytes / 4;
    std::fill(buf, buf + count, 1.0f);
    std::fill(out, out + count, 0.0f);
    int iters = itersFor(bytes);
    std::vector<std::vector<double>> samples(kMethods);
    auto p2p = [&](Communicator &c) {
      auto run = [&](CommOp op) { return c.postAndRun({op})->wait(kTimeout); };
      if (rank == 0) {
        check(run(CommOp::send(buf, count, DType::F32, 1)), "send");
        check(run(CommOp::recv(&ack, 1, DType::UI8, 1)), "ack");
      } else if (rank == 1) {
        check(run(CommOp::recv(out, count, DType::F32, 0)), "recv");
        check(run(CommOp::send(&ack, 1, DType::UI8, 0)), "ack");
      }
    };
    auto once = [&](int m) {
      switch (m) {
      case Memcpy:
        if (rank == 0)
          std::memcpy(out, buf, bytes);
        break;
      case Tcp:
        if (rank == 0) {
          writeAll(fd, reinterpret_cast<char *>(buf), bytes);
          readAll(fd, &ack, 1);
        } else if (rank == 1) {
          readAll(fd, reinterpret_cast<char *>(out), bytes);
          writeAll(fd, &ack, 1);
        }
        break;
      case ShmP2P:
        p2p(**shm);
        break;
      case GlooP2P:
        p2p(**tcp);
        break;
      case ShmAR:
      case GlooAR: {
        Communicator &c = m == ShmAR ? **shm : **tcp;
        // postAndRun, as a worker's stream posts a group it waits for:
        // an idle communicator runs it on this thread.
        check(c.postAndRun({CommOp::allReduce(buf, out, count, DType::F32,
                                              ReduceOp::Sum)})
                  ->wait(kTimeout),
              "all_reduce");
        break;
      }
      case ShmAG:
      case GlooAG: {
        // `bytes` is the gathered output; each rank brings 1/n of it.
        Communicator &c = m == ShmAG ? **shm : **tcp;
        check(c.postAndRun({CommOp::allGather(buf, out, count / n, DType::F32)})
                  ->wait(kTimeout),
              "all_gather");
        break;
      }
      case PlainAG: {
        ::gloo::AllgatherOptions opts(plain);
        opts.setInput<float>(buf, count / n);
        opts.setOutput<float>(out, count / n * n);
        opts.setTag(plainTag++);
        opts.setTimeout(kTimeout);
        ::gloo::allgather(opts);
        break;
      }
      case ShmRS:
      case GlooRS: {
        // `bytes` is the input; each rank keeps its 1/n, reduced.
        Communicator &c = m == ShmRS ? **shm : **tcp;
        check(c.postAndRun({CommOp::reduceScatter(buf, out, count / n,
                                                  DType::F32, ReduceOp::Sum)})
                  ->wait(kTimeout),
              "reduce_scatter");
        break;
      }
      case PlainAR: {
        ::gloo::AllreduceOptions opts(plain);
        opts.setInput<float>(buf, count);
        opts.setOutput<float>(out, count);
        opts.setReduceFunction(
            static_cast<void (*)(void *, const void *, const void *, size_t)>(
                &::gloo::sum<float>));
        opts.setTag(plainTag++);
        opts.setTimeout(kTimeout);
        ::gloo::allreduce(opts);
        break;
      }
      }
    };
    for (int rep = 0; rep < o.reps; ++rep) {
      for (int m = 0; m < kMethods; ++m) {
        if ((m == Tcp || m == ShmP2P || m == GlooP2P) && rank >= 2)
          continue;
        if (o.onlyShm && m != ShmP2P && m != ShmAR)
          continue;
        once(m); // warm-up, and the ranks meet
        auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i)
          once(m);
        samples[m].push_back(
            std::chrono::duration<double>(Clock::now() - t0).count() / iters);
      }
    }
    for (int m = 0; m < kMethods; ++m)
      results[si][m] = median(samples[m]);
  }
  if (fd >= 0)
    ::close(fd);
  ::munmap(window, windowBytes);
  ::close(windowFd);
}

std::string sizeText(size_t b) {
  return b >= (1u << 20) ? std::to_string(b >> 20) + " MB"
                         : std::to_string(b >> 10) + " KB";
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--only-shm") {
      o.onlyShm = true;
      --i;
      continue;
    }
    if (i + 1 >= argc)
      die("missing value after " + a);
    if (a == "--ranks")
      o.ranks = std::max(2, std::atoi(argv[i + 1]));
    else if (a == "--netns")
      o.netns = argv[i + 1];
    else if (a == "--hosts")
      o.hosts = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--reps")
      o.reps = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--min-kb")
      o.minBytes = size_t(std::max(1, std::atoi(argv[i + 1]))) << 10;
    else if (a == "--max-mb")
      o.maxBytes = size_t(std::max(1, std::atoi(argv[i + 1]))) << 20;
    else
      die("usage: transfer_bench [--ranks N] [--reps R] [--min-kb K] "
          "[--max-mb M] [--netns PREFIX --hosts H]");
  }
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("monarch-transfer-bench-" + std::to_string(::getpid())))
                        .string();
  std::vector<pid_t> children;
  std::vector<std::vector<double>> results;
  for (int r = 1; r < o.ranks; ++r) {
    pid_t child = ::fork();
    if (child < 0)
      die("fork failed");
    if (child == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      run(r, o, dir, results);
      ::_exit(0);
    }
    children.push_back(child);
  }
  run(0, o, dir, results);
  bool ok = true;
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::filesystem::remove_all(dir);
  if (!ok)
    die("a rank failed");

  std::string load;
  std::getline(std::ifstream("/proc/loadavg"), load);
  std::string where = o.netns.empty() ? std::string("on one host")
                                      : "across " + std::to_string(o.hosts) +
                                            " hosts (network namespaces " +
                                            o.netns + "-h*)";
  std::printf("transfer: worker to worker %s, %d processes, medians "
              "of %d interleaved repetitions (load average %s)\n",
              where.c_str(), o.ranks, o.reps, load.substr(0, 14).c_str());
  std::printf("GB/s = bytes / time; ratios: x memcpy, x raw TCP loopback\n");
  std::printf("%7s %7s %7s | %7s %6s %6s | %7s %6s %6s | %6s\n", "size",
              "memcpy", "tcp", "shm", "x mcpy", "x tcp", "gloo", "x mcpy",
              "x tcp", "shm/gl");
  std::vector<size_t> sizes;
  for (size_t b = o.minBytes; b <= o.maxBytes; b *= 4)
    sizes.push_back(b);
  auto gbps = [](size_t bytes, double s) {
    return s > 0 ? double(bytes) / s / 1e9 : 0.0;
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto &r = results[i];
    double mc = gbps(sizes[i], r[Memcpy]), tcp = gbps(sizes[i], r[Tcp]),
           shm = gbps(sizes[i], r[ShmP2P]), gl = gbps(sizes[i], r[GlooP2P]);
    std::printf("%7s %7.2f %7.2f | %7.2f %6.2f %6.2f | %7.2f %6.2f %6.2f | "
                "%5.2fx\n",
                sizeText(sizes[i]).c_str(), mc, tcp, shm, shm / mc, shm / tcp,
                gl, gl / mc, gl / tcp, shm / gl);
  }
  double bus = 2.0 * (o.ranks - 1) / o.ranks;
  std::printf("\nall_reduce float32 sum over %d ranks: algbw GB/s (busbw = "
              "algbw x %.2f), time per op\n",
              o.ranks, bus);
  std::printf("%7s | %7s %9s | %7s %9s | %7s %9s | %8s %8s\n", "size", "shm",
              "us", "gloo", "us", "plain", "us", "shm/plain", "gloo/plain");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto &r = results[i];
    double s = gbps(sizes[i], r[ShmAR]), g = gbps(sizes[i], r[GlooAR]),
           p = gbps(sizes[i], r[PlainAR]);
    std::printf("%7s | %7.2f %9.1f | %7.2f %9.1f | %7.2f %9.1f | %8.2fx "
                "%8.2fx\n",
                sizeText(sizes[i]).c_str(), s, r[ShmAR] * 1e6, g,
                r[GlooAR] * 1e6, p, r[PlainAR] * 1e6, s / p, g / p);
  }
  std::printf("(send: rank 0 -> rank 1, answered by a 1-byte send; plain: "
              "gloo::allreduce on its own context)\n");
  std::printf("\nall_gather (size: the gathered output) and reduce_scatter "
              "(size: the input) float32 over %d ranks, time per op in us\n",
              o.ranks);
  std::printf("%7s | %9s %9s %9s %8s | %9s %9s %8s\n", "size", "ag shm",
              "ag gloo", "ag plain", "shm/pl", "rs shm", "rs gloo", "shm/gl");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto &r = results[i];
    auto ratio = [](double a, double b) { return a > 0 ? b / a : 0.0; };
    std::printf("%7s | %9.1f %9.1f %9.1f %7.2fx | %9.1f %9.1f %7.2fx\n",
                sizeText(sizes[i]).c_str(), r[ShmAG] * 1e6, r[GlooAG] * 1e6,
                r[PlainAG] * 1e6, ratio(r[ShmAG], r[PlainAG]), r[ShmRS] * 1e6,
                r[GlooRS] * 1e6, ratio(r[ShmRS], r[GlooRS]));
  }
  std::printf("(shm/pl, shm/gl: how many times faster the shm column is; "
              "plain: gloo::allgather; Gloo has no reduce_scatter)\n");
  return 0;
}
