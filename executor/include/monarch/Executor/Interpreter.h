//===- Interpreter.h - Runs one rank's program, step after step -*- C++ -*-===//
//
// Follows docs/plan-semantics.md: one issuing thread (the caller of
// runStep) walks the instructions in order; launch/send/recv/collective are
// enqueued on their stream, a FIFO served by a thread of its own; grouped
// communication is posted together; `wait` blocks issue until its events
// completed; feed/fetch act at issue time. The arena is allocated once per
// plan, so state buffers keep actor state across steps. Each
// (communicator, stream) pair gets its own duplicate of the communicator,
// and send/recv/collective carry tags derived from program order, so the
// matching rules of the plan hold whatever thread posts first.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_INTERPRETER_H
#define MONARCH_EXECUTOR_INTERPRETER_H

#include "monarch/Executor/RankProgram.h"

#include "monarch/Executor/Store.h"
#include "monarch/Support/Status.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

namespace monarch::executor {
class SharedArea;
struct ProgressPage;
struct ProgressSlot;
} // namespace monarch::executor

namespace monarch::worker {

/// A failure injected on purpose (tests; MONARCH_FAULT_INJECT), as
/// "KIND:STEP:INSTRUCTION[:MS]": raise (throw at that instruction), drop
/// (drop the control connections), sleep (pause MS before it), exit (exit
/// with code 3).
struct FaultInjection {
  enum class Kind { None, Raise, Drop, Sleep, Exit } kind = Kind::None;
  int64_t step = 0;
  int instruction = 0;
  int ms = 0;
  static executor::StatusOr<FaultInjection> parse(const std::string &text);
};

/// Actor state of one worker, shared by every plan it loads: a state
/// buffer (`state_buffer @actor::@state`) of any plan lives here rather than
/// in that plan's arena, so a plan that updates parameters and a plan that
/// reads them see the same bytes, from step to step.
class ActorStates {
public:
  ~ActorStates();
  /// The storage of `key`, zero-filled when first asked for; InvalidArgument
  /// when a plan declares it with another size.
  executor::StatusOr<char *> get(const std::string &key, int64_t bytes);
  /// Overwrites / reads existing state; NotFound for an unknown key.
  executor::Status write(const std::string &key, const std::string &bytes);
  executor::StatusOr<std::string> read(const std::string &key);

private:
  std::mutex mutex_;
  std::map<std::string, std::pair<char *, int64_t>> states_;
};

struct TraceRecord {
  std::string name;
  std::string category;
  int stream = -1;
  int64_t startUs = 0;
  int64_t durationUs = 0;
  /// The user's source location of the instruction ("" when unknown).
  std::string location;
};

/// The bytes of a value that stays on the worker between steps (a kept
/// fetch: `donate_argnums`), 64-byte aligned so that a step may run its
/// kernels on them in place of an arena buffer.
struct ResidentBytes {
  char *data = nullptr;
  int64_t size = 0;
  std::string_view view() const { return {data, static_cast<size_t>(size)}; }
};
using ResidentPtr = std::shared_ptr<ResidentBytes>;

/// Where resident bytes come from: the bytes of a released value go back to
/// the pool (up to `capBytes` in all) and a later kept fetch of the same
/// size takes them, so a training step that keeps its weights reuses the
/// pages the step before last kept (no page faults, no zeroing).
class ResidentPool : public std::enable_shared_from_this<ResidentPool> {
public:
  static std::shared_ptr<ResidentPool> create(int64_t capBytes = 256 << 20);
  ~ResidentPool();
  /// `bytes` of storage (contents unspecified); null when out of memory.
  ResidentPtr take(int64_t bytes);

private:
  explicit ResidentPool(int64_t capBytes) : cap_(capBytes) {}
  void give(char *data, int64_t bytes);
  std::mutex mutex_;
  std::multimap<int64_t, char *> free_;
  int64_t pooled_ = 0;
  int64_t cap_;
};

/// One fetch of a step: its bytes, either owned or in the staging area the
/// controller shares with this worker (kept mapped while referenced), or,
/// for a kept fetch, resident bytes.
struct FetchResult {
  int index = 0;
  std::string bytes;
  ResidentPtr resident;
  std::shared_ptr<const executor::SharedArea> area;
  int64_t offset = -1;
  int64_t size = 0;
  /// The fetched bytes, wherever they are.
  std::string_view view() const;
};

/// Where fetches of at least `minBytes` go instead of a string: the next
/// free byte of [next, end) of `area` (64-byte aligned).
struct FetchArea {
  std::shared_ptr<executor::SharedArea> area;
  int64_t next = 0;
  int64_t end = 0;
  int64_t minBytes = 0;
};

struct StepFailure {
  executor::Status status;
  /// The failing instruction, -1 when not one.
  int instruction = -1;
};

class Interpreter {
public:
  struct Options {
    /// The rendezvous store the default communicator factory meets the
    /// other members in (unused when `makeCommunicator` is set).
    executor::Store *store = nullptr;
    /// Creates this rank's member of a communicator of the program, named
    /// `name` (unique per plan and communicator). Default:
    /// executor::createCommunicator with the spec's backend over `store`.
    /// Tests pass FakeCommWorld members here.
    std::function<executor::StatusOr<std::unique_ptr<executor::Communicator>>(
        const CommunicatorSpec &spec, const std::string &name)>
        makeCommunicator;
    /// The deadline of every wait of the step loop: a `wait` instruction for
    /// its events, and the end of a step for its streams to drain. When it
    /// passes the step fails with DeadlineExceeded naming what it waited
    /// for (a hung kernel, a lost completion), and the communicators abort.
    std::chrono::milliseconds waitTimeout{600000};
    /// Where state buffers live; a private one when null.
    std::shared_ptr<ActorStates> states;
    int worldSize = 1;
    executor::CommOptions comm;
    bool trace = false;
    FaultInjection fault;
    /// Called for the `drop` fault.
    std::function<void()> dropConnections;
    /// Where this program's threads write what they execute (Progress.h):
    /// each stream claims a slot of `progress`; the issuing thread writes
    /// `issuingProgress`. Null: not reported.
    executor::ProgressPage *progress = nullptr;
    executor::ProgressSlot *issuingProgress = nullptr;
    /// Called once with the first failure of a step, before the
    /// communicators are aborted (the worker reports it to the controller).
    std::function<void(const StepFailure &, int64_t step,
                       const Instruction *instr)>
        onFailure;
    /// Where kept fetches are written (a private pool when null).
    std::shared_ptr<ResidentPool> residents;
  };

  /// Loads the kernels, allocates the arena, creates the communicators (a
  /// collective call with every member rank) and starts the stream threads.
  static executor::StatusOr<std::unique_ptr<Interpreter>>
  create(RankProgram program, Options options);
  ~Interpreter();

  /// Runs the program once. `feeds` maps feed index to bytes; fetches are
  /// appended, written to `fetchArea` when it is given and they fit.
  /// Returns Ok or the first failure.
  StepFailure runStep(int64_t step,
                      const std::map<int, std::string_view> &feeds,
                      FetchArea *fetchArea, std::vector<FetchResult> &fetches,
                      std::vector<TraceRecord> &trace);

  /// The lines the last step's print instructions made (mc.debug_print), in
  /// program order; taking them clears them. A failed step's lines up to
  /// the failure are kept too.
  std::vector<std::string> takePrints();

  /// The fetch indices the next step keeps as resident values: their
  /// fetches (keep_only ones included) are written to FetchResult::bytes,
  /// never to the staging area; keep_only fetches of other indices are
  /// skipped.
  void setKeeps(std::vector<int> indices);

  /// The feeds of the next step that are resident values (by feed index;
  /// `runStep`'s `feeds` has their views too; they apply to that step
  /// only). Resident values are bound
  /// in place of arena buffers: a feed the program only reads, and a kept
  /// fetch whose buffer is first written whole by a kernel, both through
  /// buffers it shares with nothing else (no communication, no actor
  /// state), are not copied: the step's kernels read the feed's resident
  /// bytes and write the kept value into fresh ones from the pool
  /// (docs/executor.md, "Resident values"). The others are copied.
  void setResidentFeeds(std::map<int, ResidentPtr> feeds);

  /// Whether feed / kept fetch `index` is bound in place (tests, traces).
  bool bindsFeed(int index) const;
  bool bindsKeep(int index) const;

  /// Fails the running step and every later one; aborts the communicators.
  void abort(const std::string &reason);

  /// MONARCH_KERNEL_PROFILE=PATH with kernels compiled for profiling:
  /// appends this program's loop-nest table to PATH.rank<N> (done when the
  /// program is unloaded and when the worker exits).
  void writeKernelProfile() const;

  const RankProgram &program() const { return program_; }
  /// The instruction being issued, -1 when idle (read by heartbeats).
  int currentInstruction() const { return current_.load(); }
  int64_t currentStep() const { return currentStep_.load(); }

  struct Impl;

private:
  Interpreter() = default;
  RankProgram program_;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> current_{-1};
  std::atomic<int64_t> currentStep_{-1};
};

} // namespace monarch::worker

#endif // MONARCH_EXECUTOR_INTERPRETER_H
