//===- ShmSegment.cpp - Shared-memory layout, rings and futexes -*- C++ -*-===//
//
// Segments are memfds (sparse until touched). The futex calls use the
// shared (non-private) operations since the word lives in a mapping shared
// by several processes.
//
//===----------------------------------------------------------------------===//

#include "ShmSegment.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace monarch::executor::shm_backend {
namespace {

constexpr size_t kPage = 4096;

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

size_t ringsOffset(int ranks) {
  return roundUp(sizeof(SegmentHeader) + size_t(ranks) * sizeof(RingHeader),
                 kPage);
}

std::string errnoText() { return std::strerror(errno); }

} // namespace

Segment &Segment::operator=(Segment &&other) noexcept {
  if (this != &other) {
    this->~Segment();
    base_ = other.base_;
    size_ = other.size_;
    ringBytes_ = other.ringBytes_;
    ranks_ = other.ranks_;
    fd_ = other.fd_;
    other.base_ = nullptr;
    other.fd_ = -1;
  }
  return *this;
}

Segment::~Segment() {
  if (base_)
    ::munmap(base_, size_);
  base_ = nullptr;
  closeFd();
}

void Segment::closeFd() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

size_t Segment::sizeFor(int ranks, size_t ringBytes) {
  return ringsOffset(ranks) + size_t(ranks) * roundUp(ringBytes, kPage);
}

RingHeader &Segment::ring(int sender) const {
  auto *rings = reinterpret_cast<RingHeader *>(static_cast<char *>(base_) +
                                               sizeof(SegmentHeader));
  return rings[sender];
}

char *Segment::ringData(int sender) const {
  return static_cast<char *>(base_) + ringsOffset(ranks_) +
         size_t(sender) * roundUp(ringBytes_, kPage);
}

StatusOr<Segment> Segment::create(const std::string &name, int ranks, int owner,
                                  size_t ringBytes) {
  std::string label = "monarch-shm:" + name;
  int fd = static_cast<int>(
      ::syscall(SYS_memfd_create, label.c_str(), unsigned(MFD_CLOEXEC)));
  if (fd < 0)
    return Status(StatusCode::Unavailable, "memfd_create: " + errnoText());
  Segment seg;
  seg.fd_ = fd;
  seg.ranks_ = ranks;
  seg.ringBytes_ = ringBytes;
  seg.size_ = sizeFor(ranks, ringBytes);
  if (::ftruncate(fd, static_cast<off_t>(seg.size_)) != 0)
    return Status(StatusCode::Unavailable, "ftruncate: " + errnoText());
  void *p =
      ::mmap(nullptr, seg.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Status(StatusCode::Unavailable, "mmap: " + errnoText());
  seg.base_ = p;
  // A fresh memfd reads as zeros: atomics start at 0, state Alive.
  SegmentHeader &h = seg.header();
  h.magic = kSegmentMagic;
  h.ranks = uint32_t(ranks);
  h.owner = uint32_t(owner);
  h.ringBytes = ringBytes;
  return seg;
}

StatusOr<Segment> Segment::open(int pid, int fd, int ranks, int owner,
                                size_t ringBytes) {
  std::string path =
      "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int mine = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0)
    return Status(StatusCode::Unavailable,
                  "cannot open " + path + ": " + errnoText());
  Segment seg;
  seg.fd_ = mine;
  seg.ranks_ = ranks;
  seg.ringBytes_ = ringBytes;
  seg.size_ = sizeFor(ranks, ringBytes);
  struct stat st;
  if (::fstat(mine, &st) != 0 || size_t(st.st_size) != seg.size_)
    return Status(StatusCode::Unavailable,
                  path + " is not a segment of the expected size");
  void *p =
      ::mmap(nullptr, seg.size_, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
  if (p == MAP_FAILED)
    return Status(StatusCode::Unavailable, "mmap " + path + ": " + errnoText());
  seg.base_ = p;
  seg.closeFd(); // the mapping keeps it alive
  SegmentHeader &h = seg.header();
  if (h.magic != kSegmentMagic || h.ranks != uint32_t(ranks) ||
      h.owner != uint32_t(owner) || h.ringBytes != ringBytes)
    return Status(StatusCode::Unavailable, path + " is not rank " +
                                               std::to_string(owner) +
                                               "'s segment");
  return seg;
}

void ringDoorbell(SegmentHeader &h) {
  h.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (h.sleepers.load(std::memory_order_seq_cst) != 0)
    ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&h.doorbell), FUTEX_WAKE,
              INT_MAX, nullptr, nullptr, 0);
}

void waitDoorbell(SegmentHeader &h, uint32_t seen,
                  std::chrono::microseconds timeout) {
  if (timeout.count() <= 0)
    return;
  h.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (h.doorbell.load(std::memory_order_seq_cst) == seen) {
    struct timespec ts;
    ts.tv_sec = timeout.count() / 1000000;
    ts.tv_nsec = (timeout.count() % 1000000) * 1000;
    ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&h.doorbell), FUTEX_WAIT,
              seen, &ts, nullptr, 0);
  }
  h.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void ringCopyIn(char *ring, size_t cap, uint64_t pos, const void *src,
                size_t len) {
  size_t at = size_t(pos % cap);
  size_t first = std::min(len, cap - at);
  std::memcpy(ring + at, src, first);
  if (first < len)
    std::memcpy(ring, static_cast<const char *>(src) + first, len - first);
}

void ringCopyOut(char *ring, size_t cap, uint64_t pos, void *dst, size_t len) {
  size_t at = size_t(pos % cap);
  size_t first = std::min(len, cap - at);
  std::memcpy(dst, ring + at, first);
  if (first < len)
    std::memcpy(static_cast<char *>(dst) + first, ring, len - first);
}

std::string hostIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  char ns[128] = {0};
  ssize_t n = ::readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  // Tests and debugging: pretend to be on another host (forces TCP).
  if (const char *fake = std::getenv("MONARCH_SHM_HOST"); fake && *fake)
    std::snprintf(host, sizeof(host), "%s", fake);
  return std::string(host) + "/" + boot + "/" +
         (n > 0 ? std::string(ns, n) : std::string("?")) + "/uid" +
         std::to_string(::getuid());
}

} // namespace monarch::executor::shm_backend
