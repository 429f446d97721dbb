//===- GlooCommunicator.h - The Gloo (CPU, TCP) communicator ---*- C++ -*-===//
//
// One worker thread per communicator object runs its posted groups in order
// on a GlooGroup's context. Point-to-point ops use Gloo unbound buffers with
// slots derived from the caller's tag (shared by duplicates); collectives use
// Gloo's algorithms with tags derived from the duplicate id and the posting
// sequence, so duplicates can run collectives concurrently on one context.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_GLOO_GLOOCOMMUNICATOR_H
#define MONARCH_EXECUTOR_DATA_GLOO_GLOOCOMMUNICATOR_H

#include "GlooGroup.h"

#include "core/WorkQueue.h"

namespace monarch::executor::gloo_backend {

class GlooCommunicator final : public Communicator {
public:
  GlooCommunicator(std::shared_ptr<GlooGroup> group, std::string name,
                   uint32_t duplicateId);
  ~GlooCommunicator() override;

  Backend backend() const override { return Backend::Gloo; }
  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  const std::vector<int> &worldRanks() const override {
    return group_->worldRanks();
  }
  const std::string &name() const override { return name_; }

  std::shared_ptr<Work> post(std::vector<CommOp> ops) override;
  void abort(const std::string &reason) override;
  bool isAborted() const override { return group_->isBroken(); }
  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override;

  /// Hands over queued and in-flight work with the status to complete it
  /// with (called by the group when it breaks, with the group's lock held;
  /// the group completes them after releasing it).
  void takePending(const Status &status,
                   std::vector<std::pair<std::shared_ptr<Work>, Status>> &out);

private:
  struct Entry {
    std::vector<CommOp> ops;
    std::vector<uint32_t> collectiveTags; // one per collective, in order
    std::shared_ptr<Work> work;
  };

  /// One entry on the queue's thread.
  Status run(Entry &entry);
  Status runEntry(Entry &entry);
  Status runCollective(const CommOp &op, uint32_t tag);
  void ringReduceScatter(const CommOp &op, uint32_t tag);

  std::shared_ptr<GlooGroup> group_;
  std::string name_;
  uint32_t duplicateId_;
  uint32_t collectiveSeq_ = 0; // guarded by the queue's lock
  std::vector<char> scratch_;  // the worker thread's, reused across ops
  /// Last: its thread runs entries with the members above.
  data::WorkQueue<Entry> queue_{[this](Entry &e) { return run(e); }};
};

/// createCommunicator() for Backend::Gloo.
StatusOr<std::unique_ptr<Communicator>>
createGlooCommunicator(Store &store, int worldRank,
                       const std::vector<int> &ranks, const std::string &name,
                       const CommOptions &options);

} // namespace monarch::executor::gloo_backend

#endif // MONARCH_EXECUTOR_DATA_GLOO_GLOOCOMMUNICATOR_H
