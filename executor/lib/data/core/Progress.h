//===- Progress.h - Where a worker's threads are, in shared memory -*- C++
//-*-===//
//
// A page a worker creates (a SharedArea) and writes as it runs: the issuing
// thread's slot and one slot per stream of each loaded plan, each holding
// the plan (a hash of its name), the step and the instruction that thread
// is executing, or -1 between instructions. Writing costs a relaxed store
// per instruction. A controller on the same host maps the page at
// registration and reads it when the worker dies or stops answering: the
// page outlives the worker, is readable while the worker is stopped, and is
// never older than the instruction in progress (a heartbeat is up to its
// interval old, and only sees the issuing thread).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_PROGRESS_H
#define MONARCH_EXECUTOR_DATA_PROGRESS_H

#include <atomic>
#include <cstdint>
#include <string_view>

namespace monarch::executor {

struct ProgressSlot {
  std::atomic<int64_t> step{-1};
  /// planHash of the plan's name; 0: the slot is unused.
  std::atomic<uint32_t> plan{0};
  /// The instruction being executed, -1 between instructions.
  std::atomic<int32_t> instruction{-1};
  /// The stream the slot belongs to, -1 for the issuing thread.
  std::atomic<int32_t> stream{-1};
  int32_t reserved = 0;

  void enter(uint32_t planId, int64_t s, int32_t i) {
    plan.store(planId, std::memory_order_relaxed);
    step.store(s, std::memory_order_relaxed);
    instruction.store(i, std::memory_order_relaxed);
  }
  void leave() { instruction.store(-1, std::memory_order_relaxed); }
};

struct ProgressPage {
  static constexpr uint32_t kMagic = 0x5250434d; // "MCPR"
  static constexpr int kSlots = 128;
  std::atomic<uint32_t> magic{0};
  std::atomic<int32_t> claimed{0};
  /// Slot 0 is the issuing thread's.
  ProgressSlot slots[kSlots];

  /// A slot for `stream`, or nullptr when all are taken (that stream then
  /// goes unreported).
  ProgressSlot *claim(int32_t stream) {
    int32_t i = claimed.fetch_add(1, std::memory_order_relaxed);
    if (i >= kSlots)
      return nullptr;
    slots[i].stream.store(stream, std::memory_order_relaxed);
    return &slots[i];
  }
};

static_assert(std::atomic<int64_t>::is_always_lock_free &&
                  std::atomic<int32_t>::is_always_lock_free,
              "progress slots are shared between processes");

/// FNV-1a of a plan name, never 0.
inline uint32_t planHash(std::string_view name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name)
    h = (h ^ c) * 16777619u;
  return h ? h : 1;
}

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_DATA_PROGRESS_H
