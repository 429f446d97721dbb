//===- ShmCommunicator.h - The shared-memory communicator -------*- C++ -*-===//
//
// The CPU backend ("gloo" in plans and MONARCH_BACKEND) between processes
// of one host: the same semantics as GlooCommunicator (a worker thread per
// object running its posted groups in order, tags shared by duplicates,
// fail-fast groups), over a ShmGroup instead of TCP pairs. Collectives are
// built from the group's tagged messages: small all_reduce exchanges whole
// buffers, large ones reduce-scatter then all-gather in blocks; reductions
// run in rank order on every rank, so all members get identical bits.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_SHM_SHMCOMMUNICATOR_H
#define MONARCH_EXECUTOR_DATA_SHM_SHMCOMMUNICATOR_H

#include "ShmGroup.h"

#include "core/GroupCommunicator.h"
#include "core/SharedArea.h"

namespace monarch::executor::shm_backend {

/// Match tag of the messages of step `step` of a collective whose 32-bit
/// tag is `tag` (send/recv tags stay below 2^40, so the two never meet).
inline uint64_t collectiveMatchTag(uint32_t tag, uint32_t step) {
  return uint64_t(1) << 63 | uint64_t(tag) << 24 | (step & 0xffffff);
}

/// One posted group on a shared-memory communicator's queue.
struct ShmEntry {
  std::vector<CommOp> ops;
  std::vector<uint32_t> collectiveTags; // one per collective, in order
  std::shared_ptr<Work> work;
  /// The group's sends and receives to peers (their buffers keep their
  /// addresses when the entry moves), and whether post() already handed
  /// them to the ShmGroup.
  std::vector<ShmRequest> p2p;
  std::vector<const CommOp *> p2pOps;
  bool preposted = false;
  /// The caller's deadline where earlier than the group's timeout
  /// (postAndRunUntil).
  std::optional<Clock::time_point> deadline;
};

class ShmCommunicator final
    : public data::GroupCommunicator<ShmGroup, ShmEntry> {
public:
  ShmCommunicator(std::shared_ptr<ShmGroup> group, std::string name,
                  uint32_t duplicateId);
  ~ShmCommunicator() override;

  Backend backend() const override { return Backend::Gloo; }
  const char *transport() const override { return "shm"; }

  std::shared_ptr<Work> post(std::vector<CommOp> ops) override;
  /// Groups of collectives only run on the caller's thread when idle.
  std::shared_ptr<Work> postAndRun(std::vector<CommOp> ops) override;
  std::shared_ptr<Work>
  postAndRunUntil(std::vector<CommOp> ops,
                  std::chrono::steady_clock::time_point deadline) override;
  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override {
    return duplicateAs<ShmCommunicator>(name);
  }
  void registerMemory(const void *base, size_t bytes, int fd) override;

  /// Direct collectives (ShmDirect.cpp): this object's mapped area of
  /// every member, set up by its first collective.
  struct Direct {
    std::vector<SharedArea> areas; // [rank]: ours at rank(), peers' others
    uint64_t seq = 0;              // chunks run so far (equal on every member)
    /// A member's registered memory as this process sees it.
    struct Window {
      const char *base = nullptr;
      size_t bytes = 0;
      SharedArea mapping; // a peer's, mapped here (ours is not mapped)
    };
    /// Windows: every member's registered memory, by rank. Empty unless
    /// every member registered memory and mapped every peer's.
    std::vector<Window> windows;
  };
  /// The counters of a member's area (ShmDirect.cpp).
  enum class Counter { Posted, Reduced, Consumed };

private:
  using Entry = ShmEntry;
  static void prepareP2P(Entry &entry, int rank);
  /// The sends and receives of one step of a collective.
  struct Exchange {
    std::vector<ShmRequest> reqs;
    void send(int peer, uint64_t tag, const void *src, size_t bytes);
    void recv(int peer, uint64_t tag, void *dst, size_t bytes);
  };

  Status runEntry(Entry &entry) override;
  Status runCollective(const CommOp &op, uint32_t tag,
                       Clock::time_point deadline);
  Status exchange(Exchange &ex, const CommOp &op, Clock::time_point deadline);
  Status allReduce(const CommOp &op, uint32_t tag, Clock::time_point deadline);
  Status reduceScatter(const CommOp &op, uint32_t tag,
                       Clock::time_point deadline);
  /// Reduces the n blocks of `len` elements at scratch_ (one per rank, in
  /// rank order) into `out`.
  void reduceBlocks(void *out, size_t len, size_t stride, const CommOp &op);
  Status failed(Status st, const CommOp *op, const ShmRequest *culprit);

  /// Maps the members' areas (one exchange of messages; every member
  /// reaches the same decision). Leaves direct_ null where an area cannot
  /// be mapped or MONARCH_SHM_COLLECTIVES=messages: then messages serve.
  Status setUpDirect(uint32_t tag, const CommOp &op,
                     Clock::time_point deadline);
  /// all_reduce, reduce_scatter, all_gather or broadcast through the areas.
  Status runDirect(const CommOp &op, uint32_t tag, Clock::time_point deadline);
  /// The same kinds, reading the peers' buffers in their registered memory
  /// (every member agrees from what each posted); `*ran` false when a
  /// member's buffers are not in it: then the caller uses messages.
  Status runWindow(const CommOp &op, uint32_t tag, Clock::time_point deadline,
                   bool *ran);
  /// Waits until `counter` of every peer reaches `value`.
  Status waitAll(Counter counter, uint64_t value, const CommOp &op,
                 Clock::time_point deadline);
  /// Sets this member's `counter` and rings the peers' doorbells.
  void publish(Counter counter, uint64_t value);
  /// Fails when a peer posted another collective than this one at the
  /// same point (its descriptor of chunk `k`).
  Status checkDescriptors(uint64_t k, const CommOp &op);
  std::string describeDirect(const CommOp &op) const;

  std::unique_ptr<Direct> direct_;
  bool directTried_ = false;
  /// registerMemory(): where, and its memfd (-1: none).
  const char *windowBase_ = nullptr;
  size_t windowBytes_ = 0;
  int windowFd_ = -1;
};

/// False when MONARCH_SHM=0 (read at every call).
bool shmEnabled();

/// createCommunicator() for the CPU backend when every member runs on this
/// host: the shared-memory communicator, or a null pointer when the members
/// cannot share memory (the caller then uses Gloo TCP).
StatusOr<std::unique_ptr<Communicator>>
createShmCommunicator(Store &store, int worldRank,
                      const std::vector<int> &ranks, const std::string &name,
                      const CommOptions &options);

/// After createShmCommunicator() answered "not one host" for `name`: the
/// members (world ranks) grouped by host, read from the host identities
/// that rendezvous published: groups in the order of their first member in
/// `ranks`, members in `ranks` order (a member that could not publish one
/// is a group of its own). {{worldRank}} when they cannot be read. Every
/// member that reads them gets the same groups.
std::vector<std::vector<int>> hostGroups(Store &store, int worldRank,
                                         const std::vector<int> &ranks,
                                         const std::string &name,
                                         std::chrono::milliseconds timeout);

/// One more store round under `name`, keyed by `question` (a word): every
/// member says `mine`; true when
/// all said yes (false for every member otherwise, and when a member does
/// not answer within `timeout`). Members that must all take the same path
/// (a hierarchical collective needs every member's sub-communicators)
/// decide with it.
bool allAgree(Store &store, int worldRank, const std::vector<int> &ranks,
              const std::string &name, const std::string &question, bool mine,
              std::chrono::milliseconds timeout);

} // namespace monarch::executor::shm_backend

#endif // MONARCH_EXECUTOR_DATA_SHM_SHMCOMMUNICATOR_H
