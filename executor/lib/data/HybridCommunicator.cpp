//===- HybridCommunicator.cpp - One communicator over two transports ------===//
//
// See HybridCommunicator.h. Without `cross`, a posted group is split by op:
// send/recv with a member of this host go to `near` (peer renumbered among
// its members), everything else to `wide`; a group with both halves posts
// both and completes when both have, with the first failure.
//
// With `cross`, each group runs on this object's queue in up to three steps:
//   1. `near`: all_reduce of every hierarchical all_reduce (within the
//      host), reduce_scatter of every reduce_scatter's blocks ordered by
//      position; `cross`: the first hop of every broadcast whose root holds
//      this member's position, all_gather of every all_gather's block
//      among this position's members;
//   2. `cross`: all_reduce of this member's slice of each all_reduce,
//      reduce_scatter of what step 1 left; `near`: the second hop of every
//      broadcast (from the root's position), all_gather of what step 1
//      gathered (then each block is copied to its place);
//   3. `near`: each position's slice of each all_reduce, broadcast by its
//      owner; then the group's sends and receives with this host's members.
// The group's other ops (send/recv across hosts, the other collectives) go
// to `wide` at the start and run beside the steps. The sends and receives
// on `near` come after the steps, never before: a receive waiting for a
// peer's later group must not hold up a step that peer needs (the plan's
// deadlock freedom assumes a group's collectives progress while its
// receives wait). Every member posts the same steps in the same order on
// `near` and on `cross`, so their collectives match by posting order.
//
//===----------------------------------------------------------------------===//
#include "HybridCommunicator.h"

#include "core/Reduction.h"
#include "core/SharedArea.h"
#include "core/WorkQueue.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>

namespace monarch::executor {
namespace {

using Clock = std::chrono::steady_clock;

class HybridCommunicator final : public Communicator {
public:
  HybridCommunicator(std::unique_ptr<Communicator> wide,
                     std::unique_ptr<Communicator> near, Hierarchy hierarchy)
      : wide_(std::move(wide)), near_(std::move(near)),
        cross_(std::move(hierarchy.cross)),
        nearGather_(std::move(hierarchy.nearGather)),
        hosts_(std::move(hierarchy.hosts)),
        explicitTagsInOrder_(hierarchy.explicitTagsInOrder),
        timeout_(hierarchy.timeout) {
    const std::vector<int> &all = wide_->worldRanks();
    const std::vector<int> &local = near_->worldRanks();
    nearIndex_.assign(all.size(), -1);
    for (size_t i = 0; i < all.size(); ++i) {
      auto it = std::find(local.begin(), local.end(), all[i]);
      if (it != local.end())
        nearIndex_[i] = static_cast<int>(it - local.begin());
    }
    if (!cross_)
      return;
    place_.resize(all.size());
    wideIndex_.assign(hosts_.size(), {});
    for (size_t h = 0; h < hosts_.size(); ++h)
      for (int w : hosts_[h]) {
        int k = static_cast<int>(std::find(all.begin(), all.end(), w) -
                                 all.begin());
        place_[k] = {static_cast<int>(h),
                     static_cast<int>(wideIndex_[h].size())};
        wideIndex_[h].push_back(k);
      }
    // The gathers' buffers within the host: sparse until touched, read in
    // place by the peers once registered (before any collective on it).
    if (nearGather_) {
      auto area = SharedArea::create("monarch-hierarchical",
                                     2 * kHierarchicalReduceScatterMaxBytes);
      if (area.isOk()) {
        gatherArea_ = std::move(area).value();
        nearGather_->registerMemory(gatherArea_.data(), gatherArea_.bytes(),
                                    gatherArea_.fd());
      }
    }
    withinText_ = "hierarchical step within the host (" + members(*near_) + ")";
    acrossText_ = "hierarchical step across hosts (" + members(*cross_) + ")";
    queue_ = std::make_unique<data::WorkQueue<Entry>>(
        [this](Entry &e) { return run(e); });
  }

  ~HybridCommunicator() override {
    if (queue_)
      queue_->stop([this] { abortAll("communicator destroyed"); });
  }

  Backend backend() const override { return wide_->backend(); }
  const char *transport() const override { return wide_->transport(); }
  const char *transportTo(int peer) const override {
    return nearPeer(peer) >= 0 ? near_->transport() : wide_->transport();
  }
  const char *collectiveTransport(CommOpKind kind,
                                  size_t bytes) const override {
    return cross_ && kind != CommOpKind::AllToAll &&
                   bytes <= hierarchicalMaxBytes(kind)
               ? "shm+gloo"
               : wide_->transport();
  }
  int rank() const override { return wide_->rank(); }
  int size() const override { return wide_->size(); }
  const std::vector<int> &worldRanks() const override {
    return wide_->worldRanks();
  }
  const std::string &name() const override { return wide_->name(); }

  std::shared_ptr<Work> post(std::vector<CommOp> ops) override {
    if (!queue_)
      return route(std::move(ops), [](Communicator &c, std::vector<CommOp> o) {
        return c.post(std::move(o));
      });
    auto work = std::make_shared<Work>();
    queue_->push([&](bool) { return Entry{std::move(ops), work, {}}; });
    return work;
  }
  std::shared_ptr<Work> postAndRun(std::vector<CommOp> ops) override {
    if (!queue_)
      return route(std::move(ops), [](Communicator &c, std::vector<CommOp> o) {
        return c.postAndRun(std::move(o));
      });
    return queue_->pushOrRun([&](bool) {
      return Entry{std::move(ops), std::make_shared<Work>(), {}};
    });
  }
  std::shared_ptr<Work>
  postAndRunUntil(std::vector<CommOp> ops,
                  std::chrono::steady_clock::time_point deadline) override {
    if (!queue_)
      return route(std::move(ops),
                   [deadline](Communicator &c, std::vector<CommOp> o) {
                     return c.postAndRunUntil(std::move(o), deadline);
                   });
    return queue_->pushOrRun([&](bool) {
      return Entry{std::move(ops), std::make_shared<Work>(), deadline};
    });
  }

  void registerMemory(const void *base, size_t bytes, int fd) override {
    near_->registerMemory(base, bytes, fd);
    wide_->registerMemory(base, bytes, fd);
    if (cross_)
      cross_->registerMemory(base, bytes, fd);
  }
  void abort(const std::string &reason) override { abortAll(reason); }
  bool isAborted() const override {
    return wide_->isAborted() || near_->isAborted() ||
           (cross_ && cross_->isAborted());
  }

  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override {
    auto wide = wide_->duplicate(name);
    if (!wide.isOk())
      return wide.status();
    auto near = near_->duplicate(name + "/near");
    if (!near.isOk())
      return near.status();
    Hierarchy h;
    if (cross_) {
      auto cross = cross_->duplicate(name + "/cross");
      if (!cross.isOk())
        return cross.status();
      h.cross = std::move(cross).value();
      if (nearGather_) {
        auto gather = near_->duplicate(name + "/gather");
        if (!gather.isOk())
          return gather.status();
        h.nearGather = std::move(gather).value();
      }
      h.hosts = hosts_;
      h.explicitTagsInOrder = explicitTagsInOrder_;
      h.timeout = timeout_;
    }
    return std::unique_ptr<Communicator>(std::make_unique<HybridCommunicator>(
        std::move(wide).value(), std::move(near).value(), std::move(h)));
  }

private:
  struct Entry {
    std::vector<CommOp> ops;
    std::shared_ptr<Work> work;
    /// The caller's deadline (postAndRunUntil).
    std::optional<Clock::time_point> deadline;
  };

  void abortAll(const std::string &reason) {
    if (nearGather_)
      nearGather_->abort(reason);
    near_->abort(reason);
    wide_->abort(reason);
    if (cross_)
      cross_->abort(reason);
  }

  /// `peer`'s rank in `near`, -1 when it is on another host.
  int nearPeer(int peer) const {
    return peer >= 0 && peer < static_cast<int>(nearIndex_.size())
               ? nearIndex_[peer]
               : -1;
  }
  /// Whether `op` is a send/recv with a member of this host; then its peer
  /// is renumbered as a rank of `near`.
  bool toNear(CommOp &op) const {
    int local = data::isP2P(op) ? nearPeer(op.peer) : -1;
    if (local >= 0)
      op.peer = local;
    return local >= 0;
  }

  /// Whether `op` runs in steps over `near` and `cross`.
  bool hierarchical(const CommOp &op) const {
    if (op.kind == CommOpKind::AllToAll || data::isP2P(op))
      return false;
    if (op.tag != kAutoTag && !explicitTagsInOrder_)
      return false;
    // An average of averages is the average for floats (every host has
    // the same number of members); integers would round twice.
    bool reduces = op.kind == CommOpKind::AllReduce ||
                   op.kind == CommOpKind::ReduceScatter;
    if (reduces && op.reduce == ReduceOp::Avg && !isFloatDType(op.dtype))
      return false;
    // The larger of input and output (all_gather: the output,
    // reduce_scatter: the input), the same on every member.
    return op.count * dtypeSize(op.dtype) * size_t(size()) <=
           hierarchicalMaxBytes(op.kind);
  }

  /// The largest all_gather and reduce_scatter (by the larger of input and
  /// output) that run hierarchically; no bound for the other kinds.
  static size_t hierarchicalMaxBytes(CommOpKind kind) {
    if (kind == CommOpKind::AllGather)
      return kHierarchicalAllGatherMaxBytes;
    if (kind == CommOpKind::ReduceScatter)
      return kHierarchicalReduceScatterMaxBytes;
    return ~size_t(0);
  }

  /// Member `k` of `wide` as (host, position), and the member at (host,
  /// position) as a rank of `wide`.
  std::pair<int, int> placeOf(int k) const { return place_[k]; }
  int memberAt(int host, int position) const {
    return wideIndex_[host][position];
  }

  /// A buffer of `bytes` for one op of the running group: kept by this
  /// object (a transport broken mid-op may still touch it until it is
  /// destroyed), reused by the next group.
  char *scratch(size_t bytes) {
    size_t aligned = (bytes + 63) & ~size_t(63);
    if (gatherArea_.valid() &&
        gatherAreaUsed_ + aligned <= gatherArea_.bytes()) {
      char *p = gatherArea_.data() + gatherAreaUsed_;
      gatherAreaUsed_ += aligned;
      return p;
    }
    if (scratchUsed_ == scratch_.size())
      scratch_.emplace_back();
    std::vector<char> &s = scratch_[scratchUsed_++];
    if (s.size() < bytes)
      s.resize(bytes);
    return s.data();
  }

  template <typename Post>
  std::shared_ptr<Work> route(std::vector<CommOp> ops, Post post) {
    std::vector<CommOp> nearOps, wideOps;
    for (CommOp &op : ops)
      (toNear(op) ? nearOps : wideOps).push_back(std::move(op));
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

  /// "world ranks 1, 3": the members of `c`.
  static std::string members(const Communicator &c) {
    std::string out = "world ranks ";
    for (size_t i = 0; i < c.worldRanks().size(); ++i)
      out += (i ? ", " : "") + std::to_string(c.worldRanks()[i]);
    return out;
  }

  /// One group of the queue, on its thread (or the poster's).
  Status run(Entry &e) {
    // A broken transport fails what is posted to it at once; the scratch
    // buffers may still be in use by what broke it.
    if (isAborted())
      return Status(StatusCode::Aborted,
                    "gloo communicator '" + name() + "' is broken");
    for (const CommOp &op : e.ops)
      if (Status st = data::validateOp(op, rank(), size(), "gloo"); !st)
        return st;
    scratchUsed_ = 0;
    gatherAreaUsed_ = 0;
    // The gathers' steps within the host, on `nearGather_` (or `near_`).
    std::vector<CommOp> gatherNear1, gatherNear2;
    Communicator &gatherNear = nearGather_ ? *nearGather_ : *near_;
    std::vector<CommOp> wideOps, nearP2P, near1, cross1, cross2, near2, near3;
    // Copies after step 2 (an all_gather's blocks into their places).
    std::vector<std::function<void()>> afterStep2;
    int positions = near_->size(), position = near_->rank();
    int hosts = cross_->size();
    for (CommOp &op : e.ops) {
      size_t esize = dtypeSize(op.dtype), block = op.count * esize;
      if (toNear(op)) {
        nearP2P.push_back(op);
      } else if (!hierarchical(op)) {
        wideOps.push_back(op);
      } else if (op.kind == CommOpKind::AllReduce) {
        near1.push_back(CommOp::allReduce(op.input, op.output, op.count,
                                          op.dtype, op.reduce));
        char *out = static_cast<char *>(op.output);
        auto slice = [&](int p) {
          size_t base = op.count / positions, extra = op.count % positions;
          size_t lo = base * p + std::min<size_t>(p, extra);
          return std::make_pair(lo, base + (size_t(p) < extra ? 1 : 0));
        };
        auto [lo, len] = slice(position);
        if (len)
          cross2.push_back(CommOp::allReduce(out + lo * esize, out + lo * esize,
                                             len, op.dtype, op.reduce));
        for (int p = 0; p < positions; ++p) {
          auto [plo, plen] = slice(p);
          if (plen)
            near3.push_back(CommOp::broadcast(
                out + plo * esize, out + plo * esize, plen, op.dtype, p));
        }
      } else if (op.kind == CommOpKind::AllGather) {
        // My block to my position on every host, then those blocks to my
        // host: every block once over the network, then into its place.
        if (!block)
          continue;
        char *mine = scratch(block * hosts);
        char *all = scratch(block * hosts * positions);
        cross1.push_back(CommOp::allGather(op.input, mine, op.count, op.dtype));
        gatherNear2.push_back(
            CommOp::allGather(mine, all, op.count * hosts, op.dtype));
        char *out = static_cast<char *>(op.output);
        afterStep2.push_back([this, all, out, block, hosts, positions] {
          for (int q = 0; q < positions; ++q)
            for (int h = 0; h < hosts; ++h)
              std::memcpy(out + size_t(memberAt(h, q)) * block,
                          all + (size_t(q) * hosts + h) * block, block);
        });
      } else if (op.kind == CommOpKind::ReduceScatter) {
        // The blocks ordered by position, then host: reduced within the
        // host, each member keeping its position's (one per host), then
        // across hosts, each keeping its own.
        if (!block)
          continue;
        char *ordered = scratch(block * hosts * positions);
        char *partial = scratch(block * hosts);
        const char *in = static_cast<const char *>(op.input);
        for (int q = 0; q < positions; ++q)
          for (int h = 0; h < hosts; ++h)
            std::memcpy(ordered + (size_t(q) * hosts + h) * block,
                        in + size_t(memberAt(h, q)) * block, block);
        gatherNear1.push_back(CommOp::reduceScatter(
            ordered, partial, op.count * hosts, op.dtype, op.reduce));
        cross2.push_back(CommOp::reduceScatter(partial, op.output, op.count,
                                               op.dtype, op.reduce));
      } else { // broadcast
        auto [host, at] = placeOf(op.peer);
        if (at == position)
          cross1.push_back(
              CommOp::broadcast(op.input, op.output, op.count, op.dtype, host));
        near2.push_back(
            CommOp::broadcast(op.output, op.output, op.count, op.dtype, at));
      }
    }

    std::vector<std::pair<std::shared_ptr<Work>, std::string>> pending;
    std::shared_ptr<Work> wide;
    if (!wideOps.empty())
      wide = wide_->post(std::move(wideOps));
    auto start = [&](Communicator &c, std::vector<CommOp> &ops,
                     const std::string &what) {
      if (!ops.empty())
        pending.emplace_back(c.post(std::move(ops)), what);
    };
    // Waits for this step's groups. A refused op (a type or reduction a
    // transport lacks) fails alike on every member and breaks nothing; any
    // other failure breaks every transport at once, so that what is still
    // posted fails too and no step is left writing the caller's buffers.
    auto settle = [&](const Status &st) {
      if (!st && st.code() != StatusCode::InvalidArgument &&
          st.code() != StatusCode::Unimplemented)
        abortAll(st.message());
    };
    auto finish = [&]() -> Status {
      Status first;
      for (auto &[work, what] : pending) {
        Status st = waitFor(*work, e);
        settle(st);
        if (!st && first)
          first = st.withContext(what);
      }
      pending.clear();
      return first;
    };
    const std::string &within = withinText_, &across = acrossText_;
    start(*near_, near1, within);
    start(gatherNear, gatherNear1, within);
    start(*cross_, cross1, across);
    Status st = finish();
    if (st) {
      start(*cross_, cross2, across);
      start(*near_, near2, within);
      start(gatherNear, gatherNear2, within);
      st = finish();
    }
    if (st)
      for (auto &copy : afterStep2)
        copy();
    if (st) {
      start(*near_, near3, within);
      start(*near_, nearP2P, "send/recv within the host");
      st = finish();
    }
    if (wide) {
      Status w = waitFor(*wide, e);
      settle(w);
      if (!w && st)
        st = w;
    }
    return st;
  }

  /// Waits for `work`: the steps' ops fail at their own deadline (the
  /// communicators' timeout); this bound is the caller's deadline, or a
  /// second past the timeout. Past it, breaks every transport so that
  /// nothing still writes the caller's buffers.
  Status waitFor(Work &work, const Entry &e) {
    Clock::time_point deadline =
        e.deadline.value_or(Clock::now() + timeout_ + std::chrono::seconds(1));
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - Clock::now());
      Status st = work.wait(std::max(left, std::chrono::milliseconds(1)));
      if (st.code() != StatusCode::DeadlineExceeded || work.isCompleted())
        return st;
      if (Clock::now() >= deadline) {
        std::string why = "gloo communicator '" + name() +
                          "': a hierarchical collective did not finish "
                          "within its deadline";
        abortAll(why);
        (void)work.wait(std::chrono::milliseconds(1000));
        return Status(StatusCode::DeadlineExceeded, why);
      }
    }
  }

  std::unique_ptr<Communicator> wide_, near_, cross_, nearGather_;
  std::vector<std::vector<int>> hosts_;
  bool explicitTagsInOrder_ = false;
  std::chrono::milliseconds timeout_;
  /// Per member of `wide`: its rank in `near`, or -1.
  std::vector<int> nearIndex_;
  /// What a failed step's message begins with.
  std::string withinText_, acrossText_;
  /// With `cross`: per member of `wide`, its (host, position on it); and
  /// the member of `wide` at [host][position].
  std::vector<std::pair<int, int>> place_;
  std::vector<std::vector<int>> wideIndex_;
  /// scratch(): buffers of the running group's ops (the queue's thread).
  std::vector<std::vector<char>> scratch_;
  size_t scratchUsed_ = 0;
  /// Registered on `nearGather_`; scratch() takes from it first.
  SharedArea gatherArea_;
  size_t gatherAreaUsed_ = 0;
  /// Last: its thread runs groups with the members above.
  std::unique_ptr<data::WorkQueue<Entry>> queue_;
};

} // namespace

std::unique_ptr<Communicator>
makeHybridCommunicator(std::unique_ptr<Communicator> wide,
                       std::unique_ptr<Communicator> near,
                       Hierarchy hierarchy) {
  return std::make_unique<HybridCommunicator>(std::move(wide), std::move(near),
                                              std::move(hierarchy));
}

} // namespace monarch::executor
