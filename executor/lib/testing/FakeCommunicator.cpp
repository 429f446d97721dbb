//===- FakeCommunicator.cpp - In-process Communicator for tests -*- C++ -*-===//
//
// One mutex and condition variable per world. Sends copy into a mailbox keyed
// by (sender, receiver, tag); collectives deposit their input under their
// explicit tag (shared by duplicates, as in Gloo), or else under (object
// index, sequence), the k-th object a rank created matching the k-th of the
// others; the last member to arrive computes every member's output with the
// same host reductions Gloo uses.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/FakeCommunicator.h"
#include "core/Reduction.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace monarch::executor {
namespace fake {

constexpr uint32_t kExplicit = ~uint32_t(0);

struct Collective {
  int arrived = 0;
  bool done = false;
  std::vector<std::vector<char>> inputs;  // by rank
  std::vector<std::vector<char>> outputs; // by rank
};

struct WorldState {
  int size;
  std::chrono::milliseconds timeout;
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::tuple<int, int, uint64_t>, std::deque<std::vector<char>>>
      mailbox;
  /// (object index, sequence) for automatic sequencing, (kExplicit, tag)
  /// for explicit tags, which match across duplicates as in Gloo.
  std::map<std::pair<uint32_t, uint64_t>, Collective> collectives;
  std::vector<bool> killed;
  std::vector<int> posted;
  std::string abortReason;              // non-empty once some member aborted
  std::vector<uint32_t> objectsCreated; // by rank: matches k-th with k-th
};

namespace {

void computeOutputs(Collective &c, const CommOp &op, int n) {
  size_t elem = dtypeSize(op.dtype);
  size_t chunk = op.count * elem;
  c.outputs.assign(n, {});
  switch (op.kind) {
  case CommOpKind::AllReduce:
  case CommOpKind::ReduceScatter: {
    std::vector<char> acc = c.inputs[0];
    size_t count = acc.size() / elem;
    for (int r = 1; r < n; ++r)
      data::reduceElements(acc.data(), acc.data(), c.inputs[r].data(), count,
                           op.dtype, op.reduce);
    if (op.reduce == ReduceOp::Avg)
      data::finishAverage(acc.data(), count, op.dtype, n);
    for (int r = 0; r < n; ++r)
      c.outputs[r] = op.kind == CommOpKind::AllReduce
                         ? acc
                         : std::vector<char>(acc.begin() + r * chunk,
                                             acc.begin() + (r + 1) * chunk);
    return;
  }
  case CommOpKind::AllGather: {
    std::vector<char> all;
    for (int r = 0; r < n; ++r)
      all.insert(all.end(), c.inputs[r].begin(), c.inputs[r].end());
    c.outputs.assign(n, all);
    return;
  }
  case CommOpKind::Broadcast:
    c.outputs.assign(n, c.inputs[op.peer]);
    return;
  case CommOpKind::AllToAll:
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s)
        c.outputs[r].insert(c.outputs[r].end(), c.inputs[s].begin() + r * chunk,
                            c.inputs[s].begin() + (r + 1) * chunk);
    return;
  case CommOpKind::Send:
  case CommOpKind::Recv:
    return;
  }
}

class FakeCommunicator final : public Communicator {
public:
  FakeCommunicator(std::shared_ptr<WorldState> world, int rank,
                   std::string name)
      : world_(std::move(world)), rank_(rank), name_(std::move(name)) {
    for (int r = 0; r < world_->size; ++r)
      ranks_.push_back(r);
    std::lock_guard<std::mutex> lock(world_->mutex);
    object_ = world_->objectsCreated[rank_]++;
    worker_ = std::thread([this] { run(); });
  }

  ~FakeCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    world_->cv.notify_all();
    worker_.join();
    for (auto &e : queue_)
      e.second->complete(
          Status(StatusCode::Aborted, "fake communicator destroyed"));
  }

  Backend backend() const override { return Backend::Gloo; }
  int rank() const override { return rank_; }
  int size() const override { return world_->size; }
  const std::vector<int> &worldRanks() const override { return ranks_; }
  const std::string &name() const override { return name_; }

  std::shared_ptr<Work> post(std::vector<CommOp> ops) override {
    for (const CommOp &op : ops) {
      Status st = data::validateOp(op, rank_, size(), "fake");
      if (!st)
        return Work::completed(st);
    }
    auto work = std::make_shared<Work>();
    {
      std::lock_guard<std::mutex> lock(world_->mutex);
      ++world_->posted[rank_];
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back(std::move(ops), work);
    }
    cv_.notify_all();
    return work;
  }

  void abort(const std::string &reason) override {
    {
      std::lock_guard<std::mutex> lock(world_->mutex);
      if (world_->abortReason.empty())
        world_->abortReason =
            "aborted on rank " + std::to_string(rank_) + ": " + reason;
    }
    world_->cv.notify_all();
  }

  bool isAborted() const override {
    std::lock_guard<std::mutex> lock(world_->mutex);
    return !world_->abortReason.empty() || world_->killed[rank_];
  }

  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override {
    return std::unique_ptr<Communicator>(
        std::make_unique<FakeCommunicator>(world_, rank_, name));
  }

private:
  void run() {
    for (;;) {
      std::pair<std::vector<CommOp>, std::shared_ptr<Work>> entry;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_)
          return;
        entry = std::move(queue_.front());
        queue_.pop_front();
      }
      entry.second->complete(runGroup(entry.first));
    }
  }

  /// Why this rank cannot go on, if it cannot (world lock held).
  std::optional<Status> blocked(int waitingOn) {
    auto &w = *world_;
    if (w.killed[rank_])
      return Status(StatusCode::Aborted,
                    "fake rank " + std::to_string(rank_) + " was killed");
    if (!w.abortReason.empty())
      return Status(StatusCode::Aborted, "fake communicator '" + name_ +
                                             "' is broken: " + w.abortReason);
    if (waitingOn >= 0 && w.killed[waitingOn])
      return Status(StatusCode::Unavailable,
                    "fake communicator '" + name_ + "': connection to rank " +
                        std::to_string(waitingOn) + " lost");
    if (waitingOn == -2)
      for (int r = 0; r < w.size; ++r)
        if (w.killed[r])
          return Status(StatusCode::Unavailable, "fake communicator '" + name_ +
                                                     "': connection to rank " +
                                                     std::to_string(r) +
                                                     " lost");
    if (stopping_)
      return Status(StatusCode::Aborted, "fake communicator destroyed");
    return std::nullopt;
  }

  Status runGroup(const std::vector<CommOp> &ops) {
    auto &w = *world_;
    auto deadline = std::chrono::steady_clock::now() + w.timeout;
    std::unique_lock<std::mutex> lock(w.mutex);
    if (auto st = blocked(-1))
      return *st;
    auto tagOf = [](const CommOp &op) {
      return op.tag == kAutoTag ? uint64_t(0) : op.tag;
    };
    for (const CommOp &op : ops)
      if (op.kind == CommOpKind::Send) {
        const char *p = static_cast<const char *>(op.input);
        w.mailbox[{rank_, op.peer, tagOf(op)}].emplace_back(
            p, p + op.count * dtypeSize(op.dtype));
      }
    w.cv.notify_all();
    auto waitFor = [&](int on, auto ready) -> Status {
      while (!ready()) {
        if (auto st = blocked(on))
          return *st;
        if (w.cv.wait_until(lock, deadline) == std::cv_status::timeout &&
            !ready())
          return Status(StatusCode::DeadlineExceeded,
                        "fake communicator '" + name_ + "': not completed " +
                            "within " + std::to_string(w.timeout.count()) +
                            " ms");
      }
      return Status::ok();
    };
    for (const CommOp &op : ops) {
      if (op.kind == CommOpKind::Send || op.kind == CommOpKind::Recv)
        continue;
      std::pair<uint32_t, uint64_t> key =
          op.tag == kAutoTag ? std::make_pair(object_, uint64_t(seq_++))
                             : std::make_pair(kExplicit, op.tag);
      Collective &c = w.collectives[key];
      c.inputs.resize(w.size);
      const char *in = static_cast<const char *>(op.input);
      if (op.kind != CommOpKind::Broadcast || op.peer == rank_)
        c.inputs[rank_].assign(in, in + op.inputBytes(w.size));
      if (++c.arrived == w.size) {
        computeOutputs(c, op, w.size);
        c.done = true;
        w.cv.notify_all();
      }
      Status st = waitFor(-2, [&] { return c.done; });
      if (!st)
        return st;
      std::memcpy(op.output, c.outputs[rank_].data(), c.outputs[rank_].size());
      if (--c.arrived == 0)
        w.collectives.erase(key);
    }
    for (const CommOp &op : ops) {
      if (op.kind != CommOpKind::Recv)
        continue;
      auto key = std::make_tuple(op.peer, rank_, tagOf(op));
      Status st = waitFor(op.peer, [&] {
        auto it = w.mailbox.find(key);
        return it != w.mailbox.end() && !it->second.empty();
      });
      if (!st)
        return st;
      auto &q = w.mailbox[key];
      std::vector<char> msg = std::move(q.front());
      q.pop_front();
      if (msg.size() != op.count * dtypeSize(op.dtype))
        return Status(StatusCode::InvalidArgument,
                      "fake " + op.describe() + ": the matching send has " +
                          std::to_string(msg.size()) + " bytes");
      std::memcpy(op.output, msg.data(), msg.size());
    }
    return Status::ok();
  }

  std::shared_ptr<WorldState> world_;
  int rank_;
  std::string name_;
  std::vector<int> ranks_;
  uint32_t object_ = 0;
  uint32_t seq_ = 0; // only the worker thread touches it
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<std::vector<CommOp>, std::shared_ptr<Work>>> queue_;
  std::atomic<bool> stopping_{false};
  std::thread worker_;
};

} // namespace
} // namespace fake

FakeCommWorld::FakeCommWorld(int size, std::chrono::milliseconds timeout)
    : state_(std::make_shared<fake::WorldState>()) {
  state_->size = size;
  state_->timeout = timeout;
  state_->killed.assign(size, false);
  state_->posted.assign(size, 0);
  state_->objectsCreated.assign(size, 0);
}

FakeCommWorld::~FakeCommWorld() = default;

int FakeCommWorld::size() const { return state_->size; }

std::unique_ptr<Communicator>
FakeCommWorld::communicator(int rank, const std::string &name) {
  return std::make_unique<fake::FakeCommunicator>(state_, rank, name);
}

void FakeCommWorld::kill(int rank) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->killed[rank] = true;
  }
  state_->cv.notify_all();
}

int FakeCommWorld::postedGroups(int rank) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->posted[rank];
}

} // namespace monarch::executor
