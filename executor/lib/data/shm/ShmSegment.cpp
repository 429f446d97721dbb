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

} // namespace

void Segment::closeFd() { area_.closeFd(); }

size_t Segment::sizeFor(int ranks, size_t ringBytes) {
  return ringsOffset(ranks) + size_t(ranks) * roundUp(ringBytes, kPage);
}

RingHeader &Segment::ring(int sender) const {
  auto *rings =
      reinterpret_cast<RingHeader *>(area_.data() + sizeof(SegmentHeader));
  return rings[sender];
}

char *Segment::ringData(int sender) const {
  return area_.data() + ringsOffset(ranks_) +
         size_t(sender) * roundUp(ringBytes_, kPage);
}

StatusOr<Segment> Segment::create(const std::string &name, int ranks, int owner,
                                  size_t ringBytes) {
  auto area = SharedArea::create("shm:" + name, sizeFor(ranks, ringBytes));
  if (!area.isOk())
    return area.status();
  Segment seg;
  seg.area_ = std::move(area).value();
  seg.ranks_ = ranks;
  seg.ringBytes_ = ringBytes;
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
  size_t size = sizeFor(ranks, ringBytes);
  auto area = SharedArea::open(pid, fd, size);
  std::string path =
      "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  if (!area.isOk())
    return area.status();
  if (area->bytes() != size)
    return Status(StatusCode::Unavailable,
                  path + " is not a segment of the expected size");
  Segment seg;
  seg.area_ = std::move(area).value();
  seg.ranks_ = ranks;
  seg.ringBytes_ = ringBytes;
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

} // namespace monarch::executor::shm_backend
