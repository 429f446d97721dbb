//===- HybridCommunicator.cpp - One communicator over two transports ------===//
//
// See HybridCommunicator.h. A posted group is split by op: send/recv with a
// member of this host go to `near` (peer renumbered among its members),
// everything else to `wide`; a group with both halves posts both and
// completes when both have, with the first failure.
//
//===----------------------------------------------------------------------===//
#include "HybridCommunicator.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace monarch::executor {
namespace {

class HybridCommunicator final : public Communicator {
public:
  HybridCommunicator(std::unique_ptr<Communicator> wide,
                     std::unique_ptr<Communicator> near)
      : wide_(std::move(wide)), near_(std::move(near)) {
    const std::vector<int> &all = wide_->worldRanks();
    const std::vector<int> &local = near_->worldRanks();
    nearIndex_.assign(all.size(), -1);
    for (size_t i = 0; i < all.size(); ++i) {
      auto it = std::find(local.begin(), local.end(), all[i]);
      if (it != local.end())
        nearIndex_[i] = static_cast<int>(it - local.begin());
    }
  }

  Backend backend() const override { return wide_->backend(); }
  const char *transport() const override { return wide_->transport(); }
  const char *transportTo(int peer) const override {
    return nearPeer(peer) >= 0 ? near_->transport() : wide_->transport();
  }
  int rank() const override { return wide_->rank(); }
  int size() const override { return wide_->size(); }
  const std::vector<int> &worldRanks() const override {
    return wide_->worldRanks();
  }
  const std::string &name() const override { return wide_->name(); }

  std::shared_ptr<Work> post(std::vector<CommOp> ops) override {
    return route(std::move(ops), [](Communicator &c, std::vector<CommOp> o) {
      return c.post(std::move(o));
    });
  }
  std::shared_ptr<Work> postAndRun(std::vector<CommOp> ops) override {
    return route(std::move(ops), [](Communicator &c, std::vector<CommOp> o) {
      return c.postAndRun(std::move(o));
    });
  }
  std::shared_ptr<Work>
  postAndRunUntil(std::vector<CommOp> ops,
                  std::chrono::steady_clock::time_point deadline) override {
    return route(std::move(ops),
                 [deadline](Communicator &c, std::vector<CommOp> o) {
                   return c.postAndRunUntil(std::move(o), deadline);
                 });
  }

  void registerMemory(const void *base, size_t bytes, int fd) override {
    near_->registerMemory(base, bytes, fd);
    wide_->registerMemory(base, bytes, fd);
  }
  void abort(const std::string &reason) override {
    near_->abort(reason);
    wide_->abort(reason);
  }
  bool isAborted() const override {
    return wide_->isAborted() || near_->isAborted();
  }

  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override {
    auto wide = wide_->duplicate(name);
    if (!wide.isOk())
      return wide.status();
    auto near = near_->duplicate(name + "/near");
    if (!near.isOk())
      return near.status();
    return std::unique_ptr<Communicator>(std::make_unique<HybridCommunicator>(
        std::move(wide).value(), std::move(near).value()));
  }

private:
  /// `peer`'s rank in `near`, -1 when it is on another host.
  int nearPeer(int peer) const {
    return peer >= 0 && peer < static_cast<int>(nearIndex_.size())
               ? nearIndex_[peer]
               : -1;
  }

  template <typename Post>
  std::shared_ptr<Work> route(std::vector<CommOp> ops, Post post) {
    std::vector<CommOp> nearOps, wideOps;
    for (CommOp &op : ops) {
      bool pointToPoint =
          op.kind == CommOpKind::Send || op.kind == CommOpKind::Recv;
      int local = pointToPoint ? nearPeer(op.peer) : -1;
      if (local >= 0) {
        op.peer = local;
        nearOps.push_back(std::move(op));
      } else {
        wideOps.push_back(std::move(op));
      }
    }
    if (nearOps.empty())
      return post(*wide_, std::move(wideOps));
    if (wideOps.empty())
      return post(*near_, std::move(nearOps));
    // Both halves progress on their own; the group is done when both are.
    auto both = std::make_shared<Work>();
    auto state = std::make_shared<std::pair<std::mutex, int>>();
    auto firstFailure = std::make_shared<Status>();
    auto join = [both, state, firstFailure](const Status &st) {
      std::lock_guard<std::mutex> lock(state->first);
      if (!st && *firstFailure)
        *firstFailure = st;
      if (++state->second == 2)
        both->complete(*firstFailure);
    };
    near_->post(std::move(nearOps))->onComplete(join);
    wide_->post(std::move(wideOps))->onComplete(join);
    return both;
  }

  std::unique_ptr<Communicator> wide_, near_;
  /// Per member of `wide`: its rank in `near`, or -1.
  std::vector<int> nearIndex_;
};

} // namespace

std::unique_ptr<Communicator>
makeHybridCommunicator(std::unique_ptr<Communicator> wide,
                       std::unique_ptr<Communicator> near) {
  return std::make_unique<HybridCommunicator>(std::move(wide), std::move(near));
}

} // namespace monarch::executor
