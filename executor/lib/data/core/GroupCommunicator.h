//===- GroupCommunicator.h - A communicator object over a group -*- C++ -*-===//
//
// What the Gloo and the shared-memory communicators have in common: one
// object of a connection group (a GlooGroup's context, a ShmGroup's mapped
// segments) shared by its duplicates, a FIFO of posted groups run on a
// thread of its own (WorkQueue.h), ops checked before they are queued, the
// group's broken state answered at once, duplicates numbered by the group.
// A backend derives from it with its group and queue entry types and runs
// an entry's ops in runEntry().
//
// Destruction: a derived class calls shutDown() first thing in its
// destructor, so that the queue's thread has stopped (a pending group made
// to fail by breaking the connections) before the derived members it runs
// with go; then it detaches from its group.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_GROUPCOMMUNICATOR_H
#define MONARCH_EXECUTOR_DATA_GROUPCOMMUNICATOR_H

#include "core/Reduction.h"
#include "core/WorkQueue.h"

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace monarch::executor::data {

/// Duplicate ids of one connection group fit in 7 bits of a collective's
/// tag (collectiveTags); 127 is left out.
inline constexpr uint32_t kMaxDuplicateId = 126;

template <typename Group, typename Entry>
class GroupCommunicator : public Communicator {
public:
  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  const std::vector<int> &worldRanks() const override {
    return group_->worldRanks();
  }
  const std::string &name() const override { return name_; }
  bool isAborted() const override { return group_->isBroken(); }
  void abort(const std::string &reason) override {
    group_->breakWith(
        Status(StatusCode::Aborted,
               "aborted on rank " + std::to_string(rank()) + ": " + reason));
  }

  /// Hands over queued and in-flight work with the status to complete it
  /// with (called by the group when it breaks, with the group's lock held;
  /// the group completes them after releasing it).
  void takePending(const Status &status,
                   std::vector<std::pair<std::shared_ptr<Work>, Status>> &out) {
    queue_.takePending(Status(StatusCode::Aborted, brokenText(status)), out);
  }

protected:
  /// `transport` names the backend in messages ("gloo", "shm").
  GroupCommunicator(std::shared_ptr<Group> group, std::string name,
                    uint32_t duplicateId, const char *transport)
      : group_(std::move(group)), name_(std::move(name)),
        duplicateId_(duplicateId), transport_(transport) {}

  /// Stops the queue's thread once what is queued has run; work still
  /// pending would hold the join until its deadline, so the connections are
  /// broken first (the peers see this rank leave, as they would on exit).
  void shutDown() {
    queue_.stop([&] {
      group_->breakWith(Status(StatusCode::Aborted,
                               "communicator '" + name_ +
                                   "' destroyed with work pending on rank " +
                                   std::to_string(rank())));
    });
  }

  /// "<transport> communicator '<name>' is broken: <why>".
  std::string brokenText(const Status &why) const {
    return std::string(transport_) + " communicator '" + name_ +
           "' is broken: " + why.message();
  }
  Status brokenError() const {
    return Status(StatusCode::Aborted, brokenText(group_->brokenStatus()));
  }

  /// A completed Work failing `ops` when one is invalid (validateOp) or the
  /// group is broken; null when they may be queued.
  std::shared_ptr<Work> refusal(const std::vector<CommOp> &ops) const {
    for (const CommOp &op : ops) {
      Status st = validateOp(op, rank(), size(), transport_);
      if (!st)
        return Work::completed(st);
    }
    if (group_->isBroken())
      return Work::completed(brokenError());
    return nullptr;
  }

  /// duplicate() for a backend whose objects are `Derived(group, name, id)`.
  template <typename Derived>
  StatusOr<std::unique_ptr<Communicator>> duplicateAs(const std::string &name) {
    if (group_->isBroken())
      return brokenError();
    uint32_t id = group_->nextDuplicateId();
    if (id > kMaxDuplicateId)
      return Status(StatusCode::InvalidArgument,
                    std::string(transport_) + " communicator '" + name_ +
                        "': more than 126 duplicates of one connection group");
    try {
      return std::unique_ptr<Communicator>(
          std::make_unique<Derived>(group_, name, id));
    } catch (const std::exception &e) {
      return Status(StatusCode::Internal, std::string(transport_) +
                                              " communicator '" + name +
                                              "': " + e.what());
    }
  }

  /// Runs one entry's ops on the queue's thread (or the poster's, for
  /// WorkQueue::pushOrRun); the group is not broken when it is called.
  virtual Status runEntry(Entry &entry) = 0;

  std::shared_ptr<Group> group_;
  std::string name_;
  uint32_t duplicateId_;
  const char *transport_;
  uint32_t collectiveSeq_ = 0; // guarded by the queue's lock
  std::vector<char> scratch_;  // the queue thread's, reused across ops
  /// Last: its thread runs entries with the members above (and the derived
  /// class's, hence shutDown()).
  WorkQueue<Entry> queue_{[this](Entry &e) {
    return group_->isBroken() ? brokenError() : runEntry(e);
  }};
};

} // namespace monarch::executor::data

#endif // MONARCH_EXECUTOR_DATA_GROUPCOMMUNICATOR_H
