//===- ConnectionGroup.h - The members' connections, shared -----*- C++ -*-===//
//
// What a Gloo context (GlooGroup) and a set of mapped segments (ShmGroup)
// have in common as the connections one communicator and its duplicates
// share: the members and this process's rank among them, the timeout,
// duplicate ids, and the broken state: the first failure breaks the group
// for good, every attached communicator object's queued and in-flight work
// then fails with it (GroupCommunicator::takePending), and the transport
// makes the peers see it (breakLocked: Gloo shuts its sockets down, shared
// memory marks its segment aborted and rings the peers' doorbells).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_CONNECTIONGROUP_H
#define MONARCH_EXECUTOR_DATA_CONNECTIONGROUP_H

#include "monarch/Executor/Communicator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace monarch::executor::data {

/// `Comm` is the transport's communicator class (it has takePending()).
template <typename Comm> class ConnectionGroup {
public:
  virtual ~ConnectionGroup() = default;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(worldRanks_.size()); }
  const std::vector<int> &worldRanks() const { return worldRanks_; }
  const std::string &name() const { return name_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  /// The status that broke the group, or ok.
  Status brokenStatus() const {
    std::lock_guard<std::mutex> lock(stateMutex_);
    return brokenStatus_;
  }
  bool isBroken() const { return broken_.load(); }
  /// Breaks the group with `status` (the first one wins): the transport's
  /// breakLocked() under the state lock, then every attached object's work
  /// fails, then afterBreak(); the works complete with no lock held (their
  /// callbacks may call back into the communicator).
  void breakWith(const Status &status) {
    std::vector<std::pair<std::shared_ptr<Work>, Status>> pending;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (!broken_.exchange(true))
        brokenStatus_ = status;
      breakLocked();
      for (Comm *comm : attached_)
        comm->takePending(brokenStatus_, pending);
    }
    afterBreak();
    for (auto &[work, st] : pending)
      work->complete(st);
  }

  /// Communicator objects register so that breakWith() reaches their
  /// queues.
  void attach(Comm *comm) {
    std::lock_guard<std::mutex> lock(stateMutex_);
    attached_.push_back(comm);
  }
  void detach(Comm *comm) {
    std::lock_guard<std::mutex> lock(stateMutex_);
    attached_.erase(std::remove(attached_.begin(), attached_.end(), comm),
                    attached_.end());
  }
  /// Next duplicate id (0 is the original communicator).
  uint32_t nextDuplicateId() { return nextDuplicate_++; }

protected:
  ConnectionGroup() = default;
  /// The transport's part of breaking, with the state lock held
  /// (brokenStatus_ is set).
  virtual void breakLocked() {}
  /// After the attached objects' work was taken, without the state lock.
  virtual void afterBreak() {}

  int rank_ = 0;
  std::vector<int> worldRanks_;
  std::string name_;
  std::chrono::milliseconds timeout_{0};

  std::atomic<bool> broken_{false};
  /// Guards brokenStatus_, attached_ and what breakLocked() touches.
  mutable std::mutex stateMutex_;
  Status brokenStatus_;

private:
  std::vector<Comm *> attached_;
  std::atomic<uint32_t> nextDuplicate_{1};
};

} // namespace monarch::executor::data

#endif // MONARCH_EXECUTOR_DATA_CONNECTIONGROUP_H
