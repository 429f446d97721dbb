//===- ShmGroup.h - Same-host shared-memory connections ---------*- C++ -*-===//
//
// A ShmGroup is what a GlooGroup is for TCP: the connections between the
// members of one communicator, shared by the communicator and its
// duplicates, with the fail-fast state. It moves tagged messages through
// the per-pair rings of the members' segments (ShmSegment.h):
//
//  * small messages go eagerly (header and payload at once); the receiver
//    copies them into the matching posted receive, or keeps them aside until
//    one is posted, and acknowledges the match; the send completes on the
//    acknowledgement (as a Gloo send completes once the peer received it);
//  * large messages announce themselves (RTS); the receiver answers with a
//    clear-to-send once a matching receive is posted, and the payload then
//    streams through the ring in chunks, copied straight into the receive
//    buffer while the sender is still writing, so any size goes through a
//    bounded ring.
//
// Matching is on (sender, tag, byte count), FIFO among equal keys, over the
// whole group (duplicates share it). There is no progress thread: threads
// waiting for their requests drive progress for everyone (under one mutex),
// spin briefly, then sleep on their rank's doorbell futex.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_SHM_SHMGROUP_H
#define MONARCH_EXECUTOR_DATA_SHM_SHMGROUP_H

#include "ShmSegment.h"
#include "core/ConnectionGroup.h"

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace monarch::executor::shm_backend {

class ShmCommunicator;
using Clock = std::chrono::steady_clock;

/// One send or receive handed to the group. The caller owns it and keeps it
/// (and its buffer) alive until wait() returns ok or the group is broken.
struct ShmRequest {
  bool isSend = false;
  int peer = -1;
  uint64_t tag = 0; // the match tag (send/recv tags, or a collective's)
  size_t bytes = 0;
  const char *src = nullptr;
  char *dst = nullptr;
  /// Filled in by the group (under its mutex).
  bool done = false;
  uint64_t msgId = 0;
};

/// Sizes of the transport (fixed per build; every member must agree).
inline constexpr size_t kRingBytes = size_t(2) << 20;
inline constexpr size_t kEagerBytes = size_t(64) << 10;
inline constexpr size_t kChunkBytes = size_t(256) << 10;

class ShmGroup final : public data::ConnectionGroup<ShmCommunicator> {
public:
  /// Rendezvous through `store` under "shm/<name>". Returns a null pointer
  /// (and leaves nothing behind) when the members cannot share memory: not
  /// every member on this host, or a segment that cannot be mapped; the
  /// caller then uses TCP. Every member reaches the same decision.
  static StatusOr<std::shared_ptr<ShmGroup>>
  connect(Store &store, int worldRank, const std::vector<int> &ranks,
          const std::string &name, const CommOptions &options);
  ~ShmGroup();

  /// CommOptions::collectivesInPostingOrder at creation.
  bool collectivesInPostingOrder() const { return collectivesInPostingOrder_; }
  /// The job's processes on this host (CommOptions::processesOnHost, at
  /// least the members) outnumber this process's cores: waiters yield
  /// the core rather than spin on it.
  bool oversubscribed() const { return oversubscribed_; }

  /// Hands `req` to the group (never blocks). Ignored once broken.
  void post(ShmRequest *req);
  /// One progress pass unless another thread is making progress.
  void tryProgress();
  /// Drives progress until every one of `reqs` is done. On a failure
  /// returns the status (naming the peer where one is at fault) and sets
  /// `culprit` to the request it was waiting for; the caller then breaks
  /// the group, which forgets every request.
  Status wait(const std::vector<ShmRequest *> &reqs, Clock::time_point deadline,
              const std::string &what, const ShmRequest **culprit);

  /// "rank 1 (world rank 3)".
  std::string describeRank(int r) const;
  /// The header of member `r`'s segment (its doorbell and liveness).
  SegmentHeader &header(int r) const { return segments_[r].header(); }
  /// Unavailable naming `p` when it aborted, left or exited; ok otherwise
  /// (`checkProcess` adds a system call that sees a process that died
  /// without saying so).
  Status peerGone(int p, bool checkProcess);

private:
  ShmGroup() = default;
  /// breakWith(): marks this member's segment aborted (peers waiting on
  /// this rank see it at once) and rings every doorbell (local waiters
  /// return); then forgets every request.
  void breakLocked() override;
  void afterBreak() override;

  enum class FrameType : uint32_t { Eager = 1, Rts, Data, Ack, Cts };
  struct FrameHeader {
    uint32_t type;
    uint32_t reserved;
    uint64_t tag;
    uint64_t bytes;
    uint64_t msgId;
  };
  static_assert(sizeof(FrameHeader) == 32);
  struct OutFrame {
    FrameType type;
    uint64_t tag, bytes, msgId;
    const char *payload; // Eager and Data
    ShmRequest *req;     // Eager, Rts, Data
  };
  struct Unexpected {
    bool rts = false;
    uint64_t tag = 0, bytes = 0, msgId = 0;
    std::vector<char> data;
  };
  struct Peer {
    // Outgoing (our ring in the peer's segment).
    std::deque<OutFrame> out;
    bool headerWritten = false;
    uint64_t payloadWritten = 0;
    uint64_t head = 0;
    uint64_t nextMsgId = 1;
    std::unordered_map<uint64_t, ShmRequest *> awaitingAck, awaitingCts;
    // Incoming (the peer's ring in our segment).
    uint64_t tail = 0;
    bool inPayload = false;
    FrameHeader current{};
    char *dst = nullptr;
    uint64_t remaining = 0;
    ShmRequest *target = nullptr;
    std::unique_ptr<Unexpected> arriving;
    std::deque<std::unique_ptr<Unexpected>> unexpected;
    std::deque<ShmRequest *> posted;
    std::unordered_map<uint64_t, ShmRequest *> incoming; // after a CTS
    // Liveness.
    int pid = 0;
    int pidfd = -1;
  };

  /// One pass over every peer; sets `completed` when a request finished.
  /// Returns an error status on a protocol violation.
  Status progress(bool &completed);
  bool progressOut(int p, bool &completed);
  Status progressIn(int p, bool &completed);
  void matchRecv(int p, ShmRequest *req, bool &completed);
  void clearLocked();

  bool collectivesInPostingOrder_ = false;
  bool oversubscribed_ = false;
  std::vector<Segment> segments_; // [rank]: ours at rank_, the peers' others

  std::mutex mu_; // the engine state below, and progress
  std::vector<Peer> peers_;
  std::atomic<int> localWaiters_{0};
};

} // namespace monarch::executor::shm_backend

#endif // MONARCH_EXECUTOR_DATA_SHM_SHMGROUP_H
