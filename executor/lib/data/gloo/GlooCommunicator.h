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

#include "core/GroupCommunicator.h"

namespace monarch::executor::gloo_backend {

/// One posted group on a Gloo communicator's queue.
struct GlooEntry {
  std::vector<CommOp> ops;
  std::vector<uint32_t> collectiveTags; // one per collective, in order
  std::shared_ptr<Work> work;
};

class GlooCommunicator final
    : public data::GroupCommunicator<GlooGroup, GlooEntry> {
public:
  GlooCommunicator(std::shared_ptr<GlooGroup> group, std::string name,
                   uint32_t duplicateId);
  ~GlooCommunicator() override;

  Backend backend() const override { return Backend::Gloo; }
  std::shared_ptr<Work> post(std::vector<CommOp> ops) override;
  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override {
    return duplicateAs<GlooCommunicator>(name);
  }

private:
  using Entry = GlooEntry;
  Status runEntry(Entry &entry) override;
  Status runCollective(const CommOp &op, uint32_t tag);
  void ringReduceScatter(const CommOp &op, uint32_t tag);
};

/// createCommunicator() for Backend::Gloo.
StatusOr<std::unique_ptr<Communicator>>
createGlooCommunicator(Store &store, int worldRank,
                       const std::vector<int> &ranks, const std::string &name,
                       const CommOptions &options);

} // namespace monarch::executor::gloo_backend

#endif // MONARCH_EXECUTOR_DATA_GLOO_GLOOCOMMUNICATOR_H
