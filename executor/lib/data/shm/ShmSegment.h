//===- ShmSegment.h - Shared-memory layout, rings and futexes ---*- C++ -*-===//
//
// Every member of a shared-memory communicator owns one segment: a memfd
// holding a header (its doorbell and its liveness state) and one
// single-producer single-consumer byte ring per sender, through which the
// other members write frames to it. Peers map each other's segments through
// /proc/<pid>/fd/<fd> during the rendezvous, so no name ever exists in
// /dev/shm and a crash leaves nothing behind.
//
// Waiting: a rank's threads sleep on the futex word `doorbell` of its own
// header (an event count). Whoever makes progress possible for that rank
// (writes into one of its rings, frees space in a ring it writes to, aborts)
// increments the word and calls FUTEX_WAKE only when `sleepers` is nonzero,
// so a busy pipeline makes no system calls.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_SHM_SHMSEGMENT_H
#define MONARCH_EXECUTOR_DATA_SHM_SHMSEGMENT_H

#include "core/SharedArea.h"
#include "monarch/Support/Status.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace monarch::executor::shm_backend {

inline constexpr uint64_t kSegmentMagic = 0x31304d48534e4f4dull; // MONSHM01

/// Liveness of a segment's owner, read by the peers waiting on it.
enum class PeerState : uint32_t { Alive = 0, Aborted = 1, Left = 2 };

struct alignas(64) SegmentHeader {
  uint64_t magic;
  uint32_t ranks;
  uint32_t owner;
  uint64_t ringBytes;
  alignas(64) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleepers;
  alignas(64) std::atomic<uint32_t> state; // PeerState
  std::atomic<uint32_t> stateClaim;        // the first writer of `reason`
  char reason[448];
};

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> head; // bytes written, by the sender
  alignas(64) std::atomic<uint64_t> tail; // bytes consumed, by the owner
  /// Set by a sender that found the ring full: the owner rings the
  /// sender's doorbell when it frees space.
  alignas(64) std::atomic<uint32_t> writerBlocked;
};

/// One mapped segment (ours or a peer's).
class Segment {
public:
  Segment() = default;
  /// Bytes of a segment for `ranks` members with rings of `ringBytes`.
  static size_t sizeFor(int ranks, size_t ringBytes);
  /// A new memfd-backed segment owned by `owner`; keeps the fd open (for
  /// the peers to open) until closeFd().
  static StatusOr<Segment> create(const std::string &name, int ranks, int owner,
                                  size_t ringBytes);
  /// Maps the segment another process created, through /proc/<pid>/fd/<fd>.
  static StatusOr<Segment> open(int pid, int fd, int ranks, int owner,
                                size_t ringBytes);
  void closeFd();
  int fd() const { return area_.fd(); }

  SegmentHeader &header() const {
    return *reinterpret_cast<SegmentHeader *>(area_.data());
  }
  RingHeader &ring(int sender) const;
  char *ringData(int sender) const;
  size_t ringBytes() const { return ringBytes_; }
  bool valid() const { return area_.valid(); }

private:
  SharedArea area_;
  size_t ringBytes_ = 0;
  int ranks_ = 0;
};

/// Increments `h.doorbell` and wakes its sleepers, if any.
void ringDoorbell(SegmentHeader &h);
/// Sleeps while `h.doorbell == seen`, at most `timeout`.
void waitDoorbell(SegmentHeader &h, uint32_t seen,
                  std::chrono::microseconds timeout);

/// Copies `len` bytes into / out of a ring of `cap` bytes at stream
/// position `pos` (wrapping).
void ringCopyIn(char *ring, size_t cap, uint64_t pos, const void *src,
                size_t len);
void ringCopyOut(char *ring, size_t cap, uint64_t pos, void *dst, size_t len);

/// Whether members can map each other's segments (core/SharedArea.h).
using executor::hostIdentity;

} // namespace monarch::executor::shm_backend

#endif // MONARCH_EXECUTOR_DATA_SHM_SHMSEGMENT_H
