//===- WorkQueue.h - A communicator object's FIFO and its thread -*- C++
//-*-===//
//
// What every host communicator (Gloo TCP, shared memory) has in common: the
// groups posted to one object run in posting order on a thread of its own;
// the group that breaks the connections takes what is queued and running to
// fail it; destroying an object with work pending breaks it first rather
// than waiting for its deadline. And the tags of collectives: the k-th
// collective of an object (or one with an explicit tag) gets a 32-bit tag
// that members agree on only when they posted the same shape.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_WORKQUEUE_H
#define MONARCH_EXECUTOR_DATA_WORKQUEUE_H

#include "monarch/Executor/Communicator.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace monarch::executor::data {

inline bool isP2P(const CommOp &op) {
  return op.kind == CommOpKind::Send || op.kind == CommOpKind::Recv;
}

/// The low 24 bits of a collective's tag: `seq` mixed with what the members
/// must agree on (kind, count, type, reduction, root), so members that
/// posted different shapes never match and time out with an explanation
/// (and Gloo never sees an oversized message, which terminates a process).
inline uint32_t shapeTag(uint64_t seq, const CommOp &op) {
  bool reduces =
      op.kind == CommOpKind::AllReduce || op.kind == CommOpKind::ReduceScatter;
  uint64_t fields[] = {seq,
                       uint64_t(op.kind),
                       uint64_t(op.count),
                       uint64_t(op.dtype),
                       reduces ? uint64_t(op.reduce) + 1 : 0,
                       op.kind == CommOpKind::Broadcast ? uint64_t(op.peer)
                                                        : 0};
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t v : fields) {
    h ^= v;
    h *= 0x100000001b3ull;
    h ^= h >> 33;
  }
  return uint32_t(h ^ (h >> 29)) & 0xffffff;
}

/// The tag of each collective of `ops`, in order: for kAutoTag the object's
/// next sequence number (`seq`, advanced) under the duplicate id in the top
/// byte, so duplicates run collectives concurrently; an explicit tag matches
/// across duplicates, its low 24 bits kept and the shape in the top byte.
inline std::vector<uint32_t> collectiveTags(const std::vector<CommOp> &ops,
                                            uint32_t duplicateId,
                                            uint32_t &seq) {
  std::vector<uint32_t> tags;
  for (const CommOp &op : ops) {
    if (isP2P(op))
      continue;
    if (op.tag == kAutoTag)
      tags.push_back((duplicateId & 0x7f) << 24 | shapeTag(seq++, op));
    else
      tags.push_back((0x80 | (shapeTag(0, op) & 0x7f)) << 24 |
                     uint32_t(op.tag & 0xffffff));
  }
  return tags;
}

/// `Entry` has a `std::shared_ptr<Work> work`, completed with what `run`
/// returns for it.
template <typename Entry> class WorkQueue {
public:
  using RunFn = std::function<Status(Entry &)>;

  explicit WorkQueue(RunFn run) : run_(std::move(run)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~WorkQueue() { stop({}); }

  /// Appends the entry `make(idle)` returns, built under the queue's lock
  /// (`idle`: nothing queued or running, so the caller may start the
  /// entry's work itself). `make` may update state guarded by that lock.
  template <typename Make> void push(Make make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(make(queue_.empty() && !inFlight_));
    }
    cv_.notify_all();
  }

  /// Runs the entry `make(true)` returns on the calling thread when nothing
  /// is queued or running (in flight meanwhile: later pushes queue behind
  /// it and takePending() sees it), else pushes `make(false)`'s. Returns
  /// the entry's Work (completed when it ran here).
  template <typename Make> std::shared_ptr<Work> pushOrRun(Make make) {
    Entry entry;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      bool idle = queue_.empty() && !inFlight_ && !stopping_;
      entry = make(idle);
      if (!idle) {
        std::shared_ptr<Work> work = entry.work;
        queue_.push_back(std::move(entry));
        cv_.notify_all();
        return work;
      }
      inFlight_ = entry.work;
    }
    runInFlight(entry);
    return entry.work;
  }
  /// Stops the thread once what is queued has run; when work is queued or
  /// running, `breakWork` is called first (it must make that work finish,
  /// e.g. by breaking the connections). Idempotent.
  void stop(const std::function<void()> &breakWork) {
    bool busy;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_ && !thread_.joinable())
        return;
      stopping_ = true;
      busy = inFlight_ != nullptr || !queue_.empty();
    }
    cv_.notify_all();
    if (busy && breakWork)
      breakWork();
    if (thread_.joinable())
      thread_.join();
  }

  /// Hands queued and in-flight work over, each with `failed` (the caller
  /// completes them after releasing its own locks).
  void takePending(const Status &failed,
                   std::vector<std::pair<std::shared_ptr<Work>, Status>> &out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (inFlight_)
      out.emplace_back(inFlight_, failed);
    for (Entry &e : queue_)
      out.emplace_back(e.work, failed);
    queue_.clear();
  }

private:
  void loop() {
    for (;;) {
      Entry entry;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        // Not while an entry runs on a poster's thread (pushOrRun).
        cv_.wait(lock,
                 [&] { return !inFlight_ && (stopping_ || !queue_.empty()); });
        if (queue_.empty())
          return;
        entry = std::move(queue_.front());
        queue_.pop_front();
        inFlight_ = entry.work;
      }
      runInFlight(entry);
    }
  }

  /// Runs `entry`, which is inFlight_, on this thread and completes it.
  void runInFlight(Entry &entry) {
    Status st = run_(entry);
    {
      // Idle before the poster wakes, so that its next group sees an idle
      // queue; the group's ops are all done already.
      std::lock_guard<std::mutex> lock(mutex_);
      inFlight_.reset();
    }
    cv_.notify_all(); // after pushOrRun: what was pushed meanwhile may start
    entry.work->complete(st);
  }

  RunFn run_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;
  std::shared_ptr<Work> inFlight_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace monarch::executor::data

#endif // MONARCH_EXECUTOR_DATA_WORKQUEUE_H
