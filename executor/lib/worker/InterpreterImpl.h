//===- InterpreterImpl.h - The interpreter's state and machinery -*- C++
//-*-===//
//
// Interpreter::Impl: what one rank's loaded program holds (its arena,
// kernels, communicators, streams, resident bindings) and the step loop's
// machinery over it, declared for the interpreter's two rooms:
// Interpreter.cpp is the step loop (issuing instructions, the stream
// threads, waits, failure and abort), InterpreterBinding.cpp is
// `Interpreter::create`, which validates a RankProgram and binds it.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_WORKER_INTERPRETERIMPL_H
#define MONARCH_EXECUTOR_WORKER_INTERPRETERIMPL_H

#include "monarch/Executor/Worker.h"

#include "DeviceArena.h"
#include "ResidentBinding.h"

#include "core/Progress.h"
#include "core/SharedArea.h"
#include "monarch/Executor/KernelRuntime.h"
#include "monarch/Support/Knobs.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>

namespace monarch::worker {

namespace interp {
using Clock = std::chrono::steady_clock;

inline int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
/// Index of world rank `rank` among the members of `spec`, -1 when none.
inline int memberIndex(const CommunicatorSpec &spec, int rank) {
  for (size_t k = 0; k < spec.ranks.size(); ++k)
    if (spec.ranks[k] == rank)
      return static_cast<int>(k);
  return -1;
}
inline bool isComm(OpKind kind) {
  return kind == OpKind::Send || kind == OpKind::Recv ||
         kind == OpKind::Collective;
}
inline const char *category(OpKind kind) {
  switch (kind) {
  case OpKind::Launch:
    return "kernel";
  case OpKind::Send:
    return "send";
  case OpKind::Recv:
    return "recv";
  case OpKind::Collective:
    return "collective";
  default:
    return "host";
  }
}

} // namespace interp

using namespace monarch::executor;
using namespace interp;

struct Interpreter::Impl {
  Options options;
  const RankProgram *program = nullptr;
  std::unique_ptr<executor::LoadedKernelLibrary> kernels;
  /// The kernels this rank launches, and what names its profile
  /// (MONARCH_KERNEL_PROFILE).
  std::vector<std::string> kernelSymbols;
  int profileRank = 0;
  std::string profileLabel;
  std::vector<executor::KernelFunction> kernelFns;
  std::vector<std::vector<void *>> kernelArgs;
  /// Tracing with profiled kernels (MONARCH_TRACE with
  /// MONARCH_KERNEL_PROFILE): each kernel's loop nests by slot, keyed by
  /// the `counts` its KernelSlices carry. Empty otherwise.
  std::map<const void *, std::vector<executor::KernelOpProfile>> nestTables;
  char *arena = nullptr;
  /// The arena as memory the peers on this host may map, where the plan
  /// has collectives (Communicator::registerMemory): then the shared-memory
  /// transport reads large buffers where they are.
  SharedArea sharedArena;
  /// Device plans (RankProgram::device): the arena on the GPU instead.
  std::unique_ptr<DeviceArena> device;
  std::shared_ptr<ActorStates> states;
  /// Arena ranges that are actor state, and where that state lives.
  struct StateRegion {
    int64_t offset, bytes;
    char *storage;
  };
  std::vector<StateRegion> stateRegions;
  /// Lines of the step's print instructions (the issuing thread's).
  std::vector<std::string> prints;
  /// Fetch indices the step keeps resident (setKeeps).
  std::vector<int> keeps;

  /// Resident values bound in place of arena buffers (setResidentFeeds):
  /// a feed or kept fetch, by index, whose buffer the program shares with
  /// nothing else, and the kernel arguments to point at the bound bytes
  /// (instruction, argument, offset into the buffer).
  using Binding = ResidentBinding;
  std::map<int, Binding> feedBindings, keepBindings;
  std::shared_ptr<ResidentPool> pool;
  /// The next step's feeds from resident values (setResidentFeeds; used
  /// once).
  std::map<int, ResidentPtr> residentFeeds;
  /// This step's: the regions bound, the feeds read in place and their
  /// bytes, the kept fetches written in place (held until the next step
  /// binds, so that a kernel still running after an abort never touches
  /// freed memory).
  std::vector<StateRegion> boundRegions;
  std::map<int, ResidentPtr> boundFeeds, boundKeeps;

  /// Where a buffer's bytes are: in actor state, in resident bytes bound
  /// for this step, or in the arena (a device address for device plans,
  /// whose state is in the arena).
  char *ptr(const BufferRef &b) const;

  /// Binds this step's resident values (and points every other binding's
  /// kernel arguments back at the arena). A feed is bound only when the
  /// step's bytes for it are the resident value's own.
  void bindResidents(const std::map<int, std::string_view> &feeds);

  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<Communicator>> duplicates;
  std::map<std::pair<int, int>, Communicator *> commForStream;
  /// Per instruction: its index among equal keys within a step, and how many
  /// such instructions a step has (for tags unique across steps).
  std::vector<uint64_t> tagIndex, tagStride;

  std::mutex mutex;
  /// The issuing thread's wake-up. A stream thread that finishes an entry
  /// notifies it only when what it waits for (`waiting`, under `mutex`) now
  /// holds, or the step failed: a wake-up per kernel cost a futex call and
  /// a context switch each, about 7 us a launch on a step of 100 kernels.
  std::condition_variable cv;
  const std::function<bool()> *waiting = nullptr;
  std::vector<char> eventDone;
  std::vector<Status> eventStatus;
  int pendingEntries = 0;
  bool stepFailed = false;
  StepFailure failure;
  std::atomic<bool> aborted{false};
  std::string abortReason;

  /// MONARCH_KERNEL_PROFILE=PATH: the kernels were compiled with a timer
  /// around each loop nest; their table, slowest first, is appended to
  /// PATH.rank<N> when the program is unloaded (the job ends).
  void writeKernelProfile() const;
  int64_t step = -1;
  bool shutdown = false;

  struct Entry {
    std::vector<int> instrs;
  };
  struct Stream {
    std::deque<Entry> entries;
    std::thread thread;
    /// Its thread's wake-up, notified only while it sleeps.
    std::condition_variable work;
    bool sleeping = false;
    /// The first instruction of the entry being run, -1 when idle.
    int busy = -1;
    /// This stream's slot of the worker's progress page, if it has one.
    executor::ProgressSlot *progress = nullptr;
  };
  std::map<int, Stream> streams;
  /// planHash of the program's plan, written to progress slots.
  uint32_t planId = 0;
  /// The job's processes outnumber this host's cores
  /// (hostOversubscribed): a launch whose stream is idle runs on the
  /// issuing thread, since a hand-off to the stream thread costs two
  /// wake-ups that only pay for themselves when the threads have cores.
  bool inlineLaunches = false;
  /// Every asynchronous instruction of the program is on one stream (no
  /// communication, nothing to overlap): a launch whose stream is idle runs
  /// on the issuing thread too. A decode step of 11 small kernels paid a
  /// stream thread's wake-up (~4 us here) per launch.
  bool oneStream = false;

  std::mutex traceMutex;
  std::vector<TraceRecord> *trace = nullptr;

  ~Impl();

  /// Device plans: actor state into the arena before a step, back to the
  /// host after it.
  Status syncStates(bool toDevice);

  /// A trace slice of `instr`; communication is named with the transport
  /// its communicator runs over ("... via shm", "via gloo", "via nccl"), so
  /// a trace shows which pairs crossed hosts.
  void record(const Instruction &instr, int stream, int64_t start);

  /// The loop nests a profiled kernel ran, as trace slices inside its
  /// launch's slice on the same stream: the op and its shapes, at the
  /// user's line. Their monotonic-clock times move to the trace's wall
  /// clock by the two clocks' offset now, clamped to the launch's slice
  /// (whole microseconds, so that they nest).
  void recordNests(const std::vector<executor::KernelSlice> &slices, int stream,
                   int64_t launchStartUs);

  /// The first failure of a step wins: reported, then the communicators
  /// are aborted.
  void fail(Status status, int instruction);

  void abortAll(const std::string &reason);

  Status runLaunch(int i);

  /// The data-plane op of comm instruction `i` (validated by create).
  StatusOr<CommOp> makeOp(int i);

  /// Posts a group (one or more comm instructions) and waits for it.
  Status runGroup(const std::vector<int> &instrs, int stream, int *failed,
                  std::optional<Clock::time_point> deadline = std::nullopt);

  void streamLoop(int id);

  /// Runs `entry` of stream `id` (counted in pendingEntries), with `mutex`
  /// held by `lock` on entry and on return (released while it runs).
  void execute(Stream &stream, int id, const Entry &entry,
               std::unique_lock<std::mutex> &lock,
               const Instruction *inlineWait = nullptr);

  /// Whether the issuing thread may run `entry` (a launch, or a group of
  /// communication) itself: its stream is idle and the next instruction
  /// waits for it (and for nothing still running), so the issuing thread
  /// would only block until it is done. Handing it to the stream thread
  /// cost two wake-ups (about 95 us on this VM for a step of one kernel,
  /// dispatch_bench); communication run here keeps the wait's deadline
  /// (execute). On an oversubscribed host every launch whose stream is idle
  /// runs here (inlineLaunches): the issuing thread's earlier waits made
  /// its inputs from other streams current, and a kernel waits on no other
  /// rank, so running it now only delays what the program issues next.
  bool runsInline(const Entry &entry, const Stream &stream) const;

  /// The failure of `wait` whose deadline passed, naming what is still in
  /// flight.
  Status waitExpired(const Instruction &wait);

  /// Waits on `cv` until `done` (called under `mutex`) or the step failed,
  /// for at most waitTimeout; false when the deadline passed first.
  template <typename Done> bool waitUntil(Done done) {
    std::unique_lock<std::mutex> lock(mutex);
    return waitWatched(lock, [&] { return stepFailed || aborted || done(); });
  }
  /// Waits on `cv` (`mutex` held by `lock`) until `holds`, for at most
  /// waitTimeout, as the condition a finishing entry checks before it
  /// wakes this thread (`waiting`).
  bool waitWatched(std::unique_lock<std::mutex> &lock,
                   const std::function<bool()> &holds);

  /// What is still in flight, for a deadline's message (under no lock).
  std::string pendingSummary();

  /// Issues instruction `i` (and, for a group, its adjacent members, which
  /// advances `i` past them). Feeds and fetches act now; launch and
  /// communication are queued on their stream; `wait` blocks until its
  /// events completed, the step failed, or the deadline.
  Status issue(int &i, const std::map<int, std::string_view> &feeds,
               FetchArea *fetchArea, std::vector<FetchResult> &fetches);
};

} // namespace monarch::worker

#endif // MONARCH_EXECUTOR_WORKER_INTERPRETERIMPL_H
