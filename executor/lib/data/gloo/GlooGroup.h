//===- GlooGroup.h - Gloo connections shared by communicators ---*- C++ -*-===//
//
// A GlooGroup is one Gloo full-mesh context (a TCP pair per peer) over the
// members of a communicator, shared by the communicator and its duplicates.
// It owns the fail-fast state: the first transport failure, timeout or
// abort() breaks the group, closes every pair (so blocked peers fail within
// milliseconds instead of waiting for their own deadline) and makes all later
// ops fail with that first status. It also turns Gloo's exception text, which
// names socket addresses, into statuses that name ranks.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_GLOO_GLOOGROUP_H
#define MONARCH_EXECUTOR_DATA_GLOO_GLOOGROUP_H

#include "monarch/Executor/Communicator.h"

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace gloo {
class Context;
} // namespace gloo

namespace monarch::executor::gloo_backend {

class GlooCommunicator;

/// Gloo tags of collectives: (duplicate id << 24 | hash of sequence and
/// shape) for automatic sequencing, (0x80 | shape hash) << 24 | low 24 bits
/// of the tag for explicit tags. The connection check runs before any op.
inline constexpr uint32_t kConnectTag = 0xffffffffu;
inline constexpr uint32_t kMaxDuplicateId = 126;

class GlooGroup {
public:
  /// Rendezvous of the members through `store` under `name`; `rank` and
  /// `ranks` are as in createCommunicator().
  static StatusOr<std::shared_ptr<GlooGroup>>
  connect(Store &store, int worldRank, const std::vector<int> &ranks,
          const std::string &name, const CommOptions &options);
  ~GlooGroup();

  const std::shared_ptr<::gloo::Context> &context() const { return context_; }
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(worldRanks_.size()); }
  const std::vector<int> &worldRanks() const { return worldRanks_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  const CommOptions &options() const { return options_; }

  /// The status that broke the group, or ok.
  Status brokenStatus() const;
  bool isBroken() const { return broken_.load(); }
  /// Breaks the group with `status` (first one wins), closes the pairs and
  /// fails the pending work of every attached communicator.
  void breakWith(const Status &status);

  /// Converts an exception thrown by Gloo while running `what` into a status
  /// naming the peer rank where Gloo's message names its address.
  Status statusFromException(std::exception_ptr error, const std::string &what);

  /// Communicators register so that breakWith() reaches their queues.
  void attach(GlooCommunicator *comm);
  void detach(GlooCommunicator *comm);
  /// Next duplicate id (0 is the original communicator).
  uint32_t nextDuplicateId() { return nextDuplicate_++; }

private:
  GlooGroup() = default;
  std::string rankOfAddressIn(const std::string &message) const;

  std::shared_ptr<::gloo::Context> context_;
  std::shared_ptr<void> device_; // keeps the shared TCP device alive
  int rank_ = 0;
  std::vector<int> worldRanks_;
  std::string name_;
  std::chrono::milliseconds timeout_{0};
  CommOptions options_;
  /// "[127.0.0.1]:40001"-style socket addresses of each peer's pairs.
  std::vector<std::pair<std::string, int>> peerAddresses_;
  /// This group's pair sockets (fd, "socket:[inode]") and their local
  /// addresses.
  std::vector<std::pair<int, std::string>> sockets_;
  std::vector<std::string> localAddresses_;

  std::atomic<bool> broken_{false};
  mutable std::mutex mutex_;
  Status brokenStatus_;
  std::vector<GlooCommunicator *> attached_;
  std::atomic<uint32_t> nextDuplicate_{1};
};

} // namespace monarch::executor::gloo_backend

#endif // MONARCH_EXECUTOR_DATA_GLOO_GLOOGROUP_H
