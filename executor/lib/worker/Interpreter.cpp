//===- Interpreter.cpp - Runs one rank's program, step after step ---------===//
//
// Failure is fail fast: the first failure of a step (an instruction that
// throws, a kernel argument that does not fit, a communication op that
// fails) is handed to `onFailure` (the worker reports it to the controller
// before anything else happens, so the root cause arrives first), then the
// rank's communicators are aborted so peers blocked on this rank fail at
// once instead of at their deadlines.
//
//===----------------------------------------------------------------------===//
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

using namespace monarch::executor;

namespace monarch::worker {

namespace {
using Clock = std::chrono::steady_clock;

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
/// Index of world rank `rank` among the members of `spec`, -1 when none.
int memberIndex(const CommunicatorSpec &spec, int rank) {
  for (size_t k = 0; k < spec.ranks.size(); ++k)
    if (spec.ranks[k] == rank)
      return static_cast<int>(k);
  return -1;
}
bool isComm(OpKind kind) {
  return kind == OpKind::Send || kind == OpKind::Recv ||
         kind == OpKind::Collective;
}
const char *category(OpKind kind) {
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

} // namespace

std::string_view FetchResult::view() const {
  if (resident)
    return resident->view();
  return area ? std::string_view(area->data() + offset, size)
              : std::string_view(bytes);
}

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
  char *ptr(const BufferRef &b) const {
    if (device)
      return device->at(b.offset);
    for (const std::vector<StateRegion> *regions :
         {&stateRegions, &boundRegions})
      for (const StateRegion &r : *regions)
        if (b.offset >= r.offset && b.offset + b.bytes() <= r.offset + r.bytes)
          return r.storage + (b.offset - r.offset);
    return arena + b.offset;
  }

  /// Binds this step's resident values (and points every other binding's
  /// kernel arguments back at the arena). A feed is bound only when the
  /// step's bytes for it are the resident value's own.
  void bindResidents(const std::map<int, std::string_view> &feeds) {
    boundRegions.clear();
    boundFeeds.clear();
    boundKeeps.clear();
    std::map<int, ResidentPtr> residents = std::move(residentFeeds);
    residentFeeds.clear();
    auto point = [&](const Binding &b, char *base) {
      for (auto [i, k, delta] : b.args)
        kernelArgs[i][k] = base + delta;
    };
    for (const auto &[index, b] : feedBindings) {
      char *base = arena + b.offset;
      auto it = residents.find(index);
      auto fed = feeds.find(index);
      if (it != residents.end() && it->second && it->second->size == b.bytes &&
          fed != feeds.end() && fed->second.data() == it->second->data) {
        base = it->second->data;
        boundRegions.push_back({b.offset, b.bytes, base});
        boundFeeds[index] = it->second;
      }
      point(b, base);
    }
    for (const auto &[index, b] : keepBindings) {
      char *base = arena + b.offset;
      if (std::find(keeps.begin(), keeps.end(), index) != keeps.end())
        if (ResidentPtr r = pool->take(b.bytes)) {
          base = r->data;
          boundRegions.push_back({b.offset, b.bytes, base});
          boundKeeps[index] = std::move(r);
        }
      point(b, base);
    }
  }

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
  void writeKernelProfile() const {
    std::string path = knobs::getString(knobs::Id::KernelProfile).value;
    if (path.empty() || !kernels)
      return;
    std::vector<executor::KernelOpProfile> rows =
        kernels->profile(kernelSymbols);
    if (rows.empty())
      return;
    std::string file = path + ".rank" + std::to_string(profileRank);
    if (std::FILE *f = std::fopen(file.c_str(), "a")) {
      std::string table = executor::formatKernelProfile(std::move(rows));
      std::fprintf(f, "# %s\n%s\n", profileLabel.c_str(), table.c_str());
      std::fclose(f);
    }
  }
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

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      shutdown = true;
    }
    cv.notify_all();
    for (auto &[id, stream] : streams)
      stream.work.notify_all();
    for (auto &[id, stream] : streams)
      if (stream.thread.joinable())
        stream.thread.join();
    writeKernelProfile();
    duplicates.clear();
    comms.clear();
    device.reset();
    if (!sharedArena.valid())
      std::free(arena);
  }

  /// Device plans: actor state into the arena before a step, back to the
  /// host after it.
  Status syncStates(bool toDevice) {
    if (!device)
      return Status::ok();
    for (const StateRegion &r : stateRegions) {
      Status st = toDevice ? device->copyIn(r.offset, r.storage, r.bytes)
                           : device->copyOut(r.storage, r.offset, r.bytes);
      if (!st)
        return st.withContext("actor state");
    }
    return Status::ok();
  }

  /// A trace slice of `instr`; communication is named with the transport
  /// its communicator runs over ("... via shm", "via gloo", "via nccl"), so
  /// a trace shows which pairs crossed hosts.
  void record(const Instruction &instr, int stream, int64_t start) {
    if (!options.trace)
      return;
    std::string name = instr.name;
    if (isComm(instr.kind)) {
      auto comm = commForStream.find({instr.communicator, stream});
      if (comm != commForStream.end() && comm->second)
        name += std::string(" via ") +
                (instr.kind == OpKind::Collective
                     ? comm->second->transport()
                     : comm->second->transportTo(memberIndex(
                           program->communicators[instr.communicator],
                           instr.peer)));
    }
    std::lock_guard<std::mutex> lock(traceMutex);
    if (trace)
      trace->push_back({std::move(name), category(instr.kind), stream, start,
                        nowUs() - start, instr.location});
  }

  /// The loop nests a profiled kernel ran, as trace slices inside its
  /// launch's slice on the same stream: the op and its shapes, at the
  /// user's line. Their monotonic-clock times move to the trace's wall
  /// clock by the two clocks' offset now, clamped to the launch's slice
  /// (whole microseconds, so that they nest).
  void recordNests(const std::vector<executor::KernelSlice> &slices, int stream,
                   int64_t launchStartUs) {
    if (slices.empty())
      return;
    timespec mono;
    ::clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t endUs = nowUs();
    int64_t offsetUs = endUs - (static_cast<int64_t>(mono.tv_sec) * 1000000 +
                                mono.tv_nsec / 1000);
    std::lock_guard<std::mutex> lock(traceMutex);
    if (!trace)
      return;
    for (const executor::KernelSlice &slice : slices) {
      auto table = nestTables.find(slice.counts);
      if (table == nestTables.end() || slice.slot < 0 ||
          slice.slot >= static_cast<int64_t>(table->second.size()))
        continue;
      const executor::KernelOpProfile &nest = table->second[slice.slot];
      int64_t from = std::max(launchStartUs, offsetUs + slice.startNs / 1000);
      int64_t to = std::min(endUs, offsetUs + slice.endNs / 1000);
      trace->push_back({nest.op + " " + nest.shapes, "loop nest", stream, from,
                        std::max<int64_t>(0, to - from),
                        nest.location == "-" ? "" : nest.location});
    }
  }

  /// The first failure of a step wins: reported, then the communicators
  /// are aborted.
  void fail(Status status, int instruction) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stepFailed)
        return;
      stepFailed = true;
      failure = {std::move(status), instruction};
    }
    cv.notify_all();
    if (options.onFailure) {
      const Instruction *instr =
          failure.instruction >= 0 &&
                  failure.instruction <
                      static_cast<int>(program->instructions.size())
              ? &program->instructions[failure.instruction]
              : nullptr;
      options.onFailure(failure, step, instr);
    }
    abortAll("rank " + std::to_string(program->rank) +
             " failed: " + failure.status.message());
  }

  void abortAll(const std::string &reason) {
    for (auto &c : comms)
      if (c)
        c->abort(reason);
    for (auto &c : duplicates)
      c->abort(reason);
  }

  Status runLaunch(int i) {
    const Instruction &instr = program->instructions[i];
    if (device) {
      std::vector<int64_t> offsets;
      for (const BufferRef &b : instr.ins)
        offsets.push_back(b.offset);
      for (const BufferRef &b : instr.outs)
        offsets.push_back(b.offset);
      return device->launch(instr.kernelSymbol, offsets);
    }
    if (!kernelFns[i])
      return Status(StatusCode::Internal,
                    "kernel " + instr.kernelSymbol + " was not loaded");
    kernelFns[i](kernelArgs[i].data());
    return Status::ok();
  }

  /// The data-plane op of comm instruction `i` (validated by create).
  StatusOr<CommOp> makeOp(int i) {
    const Instruction &instr = program->instructions[i];
    const CommunicatorSpec &spec = program->communicators[instr.communicator];
    uint64_t tag = static_cast<uint64_t>(step) * tagStride[i] + tagIndex[i];
    void *in = ptr(instr.buffer);
    size_t count = static_cast<size_t>(instr.buffer.numElements());
    switch (instr.kind) {
    case OpKind::Send:
    case OpKind::Recv: {
      int peer = memberIndex(spec, instr.peer);
      if (peer < 0)
        return Status(StatusCode::InvalidArgument,
                      "peer " + std::to_string(instr.peer) +
                          " is not a member of @" + spec.name);
      CommOp op = instr.kind == OpKind::Send
                      ? CommOp::send(in, count, instr.buffer.dtype, peer, tag)
                      : CommOp::recv(in, count, instr.buffer.dtype, peer, tag);
      return op;
    }
    case OpKind::Collective:
      break;
    default:
      return Status(StatusCode::InvalidArgument,
                    "instruction " + std::to_string(i) +
                        " is not a communication op");
    }
    void *out = ptr(instr.output);
    int size = static_cast<int>(spec.ranks.size());
    CommOp op;
    switch (instr.collective) {
    case CommOpKind::AllReduce:
      op = CommOp::allReduce(in, out, count, instr.buffer.dtype, instr.reduce);
      break;
    case CommOpKind::AllGather:
      op = CommOp::allGather(in, out, count, instr.buffer.dtype);
      break;
    case CommOpKind::ReduceScatter:
      op = CommOp::reduceScatter(
          in, out, static_cast<size_t>(instr.output.numElements()),
          instr.buffer.dtype, instr.reduce);
      break;
    case CommOpKind::Broadcast:
      op = CommOp::broadcast(in, out, count, instr.buffer.dtype, instr.root);
      break;
    case CommOpKind::AllToAll:
      op = CommOp::allToAll(in, out, count / std::max(1, size),
                            instr.buffer.dtype);
      break;
    default:
      return Status(StatusCode::InvalidArgument,
                    "unknown collective kind " +
                        std::to_string(static_cast<int>(instr.collective)));
    }
    op.tag = tag;
    return op;
  }

  /// Posts a group (one or more comm instructions) and waits for it.
  Status runGroup(const std::vector<int> &instrs, int stream, int *failed,
                  std::optional<Clock::time_point> deadline = std::nullopt) {
    std::map<Communicator *, std::vector<CommOp>> posts;
    std::map<Communicator *, int> first;
    for (int i : instrs) {
      const Instruction &instr = program->instructions[i];
      Communicator *comm = commForStream[{instr.communicator, stream}];
      if (!comm) {
        *failed = i;
        return Status(StatusCode::Internal,
                      "no communicator for stream " + std::to_string(stream));
      }
      StatusOr<CommOp> op = makeOp(i);
      if (!op.isOk()) {
        *failed = i;
        return op.status();
      }
      posts[comm].push_back(std::move(op).value());
      first.emplace(comm, i);
    }
    std::vector<std::pair<std::shared_ptr<Work>, int>> works;
    // One communicator: this thread waits for it at once, so the backend
    // may run it here (no hand-off to its thread and back).
    for (auto &[comm, ops] : posts)
      works.push_back({posts.size() != 1 ? comm->post(std::move(ops))
                       : deadline
                           ? comm->postAndRunUntil(std::move(ops), *deadline)
                           : comm->postAndRun(std::move(ops)),
                       first[comm]});
    for (auto &[work, i] : works) {
      while (true) {
        // Wake every 100 ms to notice an abort. The work's own status is
        // read with poll(): one that completes just after the wait timed
        // out (a peer reported dead) must not be taken for a deadline.
        (void)work->wait(std::chrono::milliseconds(100));
        std::optional<Status> done = work->poll();
        if (!done) {
          if (aborted) {
            *failed = i;
            return Status(StatusCode::Aborted, abortReason);
          }
          if (deadline && Clock::now() >= *deadline) {
            *failed = i;
            return Status(StatusCode::DeadlineExceeded, "deadline passed");
          }
          continue;
        }
        if (!*done) {
          *failed = i;
          return *done;
        }
        break;
      }
    }
    return Status::ok();
  }

  void streamLoop(int id) {
    Stream &stream = streams[id];
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      if (!shutdown && stream.entries.empty()) {
        stream.sleeping = true;
        stream.work.wait(lock,
                         [&] { return shutdown || !stream.entries.empty(); });
        stream.sleeping = false;
      }
      if (stream.entries.empty())
        return;
      Entry entry = std::move(stream.entries.front());
      stream.entries.pop_front();
      execute(stream, id, entry, lock);
    }
  }

  /// Runs `entry` of stream `id` (counted in pendingEntries), with `mutex`
  /// held by `lock` on entry and on return (released while it runs).
  void execute(Stream &stream, int id, const Entry &entry,
               std::unique_lock<std::mutex> &lock,
               const Instruction *inlineWait = nullptr) {
    bool skip = stepFailed || aborted;
    stream.busy = entry.instrs.front();
    if (stream.progress)
      stream.progress->enter(planId, step, entry.instrs.front());
    lock.unlock();
    Status status;
    int failed = entry.instrs.front();
    if (skip) {
      status = Status(StatusCode::Aborted, "skipped after a failure");
    } else {
      int64_t start = nowUs();
      const Instruction &head = program->instructions[entry.instrs.front()];
      if (head.kind == OpKind::Launch && !nestTables.empty()) {
        executor::KernelSliceRecording nests;
        status = runLaunch(entry.instrs.front());
        recordNests(nests.slices(), id, start);
      } else if (head.kind == OpKind::Launch) {
        status = runLaunch(entry.instrs.front());
      } else if (inlineWait) {
        // Run here, in place of the wait after it: that wait's deadline
        // holds, and failing it reads as the wait would have.
        auto deadline = Clock::now() + options.waitTimeout;
        status = runGroup(entry.instrs, id, &failed, deadline);
        if (!status && status.code() == StatusCode::DeadlineExceeded &&
            Clock::now() >= deadline) {
          failed = entry.instrs.back() + 1;
          status = waitExpired(*inlineWait);
        }
      } else {
        status = runGroup(entry.instrs, id, &failed);
      }
      for (int i : entry.instrs)
        record(program->instructions[i], id, start);
      if (!status && !skip)
        fail(status.withContext(program->instructions[failed].name), failed);
    }
    lock.lock();
    for (int i : entry.instrs) {
      int e = program->instructions[i].event;
      if (e >= 0) {
        eventDone[e] = 1;
        eventStatus[e] = status;
      }
    }
    stream.busy = -1;
    if (stream.progress)
      stream.progress->leave();
    --pendingEntries;
    // (A failure or an abort notifies by itself.)
    if (waiting && (*waiting)())
      cv.notify_all();
  }

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
  bool runsInline(const Entry &entry, const Stream &stream) const {
    int last = entry.instrs.back();
    if (device || stream.busy >= 0 || !stream.entries.empty())
      return false;
    if ((inlineLaunches || oneStream) &&
        program->instructions[last].kind == OpKind::Launch)
      return true;
    if (last + 1 >= static_cast<int>(program->instructions.size()))
      return false;
    const Instruction &next = program->instructions[last + 1];
    if (next.kind != OpKind::Wait)
      return false;
    bool waitsForIt = false;
    for (int e : next.waitEvents) {
      bool mine = false;
      for (int i : entry.instrs)
        mine |= program->instructions[i].event == e;
      if (mine)
        waitsForIt = true;
      else if (!eventDone[e])
        return false;
    }
    return waitsForIt;
  }

  /// The failure of `wait` whose deadline passed, naming what is still in
  /// flight.
  Status waitExpired(const Instruction &wait) {
    std::string events;
    for (int e : wait.waitEvents)
      events += (events.empty() ? "" : ", ") + std::to_string(e);
    return Status(StatusCode::DeadlineExceeded,
                  "'" + wait.name + "' waited " +
                      std::to_string(options.waitTimeout.count()) +
                      " ms for events " + events + " (" + pendingSummary() +
                      ")");
  }

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
                   const std::function<bool()> &holds) {
    if (holds())
      return true;
    waiting = &holds;
    bool inTime = cv.wait_for(lock, options.waitTimeout, holds);
    waiting = nullptr;
    return inTime;
  }

  /// What is still in flight, for a deadline's message (under no lock).
  std::string pendingSummary() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string out;
    for (auto &[id, stream] : streams)
      if (!stream.entries.empty() || stream.busy >= 0) {
        int i =
            stream.busy >= 0 ? stream.busy : stream.entries.front().instrs[0];
        out += (out.empty() ? "" : ", ") + std::string("stream ") +
               std::to_string(id) + " at '" + program->instructions[i].name +
               "'";
      }
    return out.empty() ? "nothing in flight" : out;
  }

  /// Issues instruction `i` (and, for a group, its adjacent members, which
  /// advances `i` past them). Feeds and fetches act now; launch and
  /// communication are queued on their stream; `wait` blocks until its
  /// events completed, the step failed, or the deadline.
  Status issue(int &i, const std::map<int, std::string_view> &feeds,
               FetchArea *fetchArea, std::vector<FetchResult> &fetches) {
    const Instruction &instr = program->instructions[i];
    const FaultInjection &fault = options.fault;
    if (fault.kind != FaultInjection::Kind::None && fault.step == step &&
        fault.instruction == i) {
      switch (fault.kind) {
      case FaultInjection::Kind::Raise:
        return Status(StatusCode::Internal,
                      "injected fault (MONARCH_FAULT_INJECT)");
      case FaultInjection::Kind::Drop:
        if (options.dropConnections)
          options.dropConnections();
        break;
      case FaultInjection::Kind::Sleep:
        std::this_thread::sleep_for(std::chrono::milliseconds(fault.ms));
        break;
      case FaultInjection::Kind::Exit:
        std::_Exit(3);
      case FaultInjection::Kind::None:
        break;
      }
    }
    switch (instr.kind) {
    case OpKind::Feed: {
      auto it = feeds.find(instr.index);
      if (it == feeds.end())
        return Status(StatusCode::InvalidArgument,
                      "feed " + std::to_string(instr.index) +
                          " was not sent to this rank");
      if (static_cast<int64_t>(it->second.size()) != instr.buffer.bytes())
        return Status(StatusCode::InvalidArgument,
                      "feed " + std::to_string(instr.index) + " has " +
                          std::to_string(it->second.size()) +
                          " bytes, the buffer " +
                          std::to_string(instr.buffer.bytes()));
      if (device)
        return device->copyIn(instr.buffer.offset, it->second.data(),
                              it->second.size());
      int64_t start = options.trace ? nowUs() : 0;
      if (!boundFeeds.count(instr.index))
        std::memcpy(ptr(instr.buffer), it->second.data(), it->second.size());
      record(instr, -1, start);
      return Status::ok();
    }
    case OpKind::Fetch: {
      bool kept =
          std::find(keeps.begin(), keeps.end(), instr.index) != keeps.end();
      if (instr.keepOnly && !kept)
        return Status::ok();
      int64_t start = options.trace ? nowUs() : 0;
      FetchResult &out = fetches.emplace_back();
      out.index = instr.index;
      int64_t bytes = instr.buffer.bytes();
      int64_t at = fetchArea ? (fetchArea->next + 63) / 64 * 64 : 0;
      char *dst;
      if (kept) {
        // A kept fetch: written in place by the step (bound), else copied
        // into resident bytes (from the device, for device plans).
        if (auto bound = boundKeeps.find(instr.index);
            bound != boundKeeps.end()) {
          out.resident = bound->second;
          record(instr, -1, start);
          return Status::ok();
        }
        out.resident = pool->take(bytes);
        if (!out.resident)
          return Status(StatusCode::Internal, "cannot allocate " +
                                                  std::to_string(bytes) +
                                                  " bytes for kept output " +
                                                  std::to_string(instr.index));
        dst = out.resident->data;
      } else if (!kept && fetchArea && bytes >= fetchArea->minBytes &&
                 at + bytes <= fetchArea->end) {
        dst = fetchArea->area->data() + at;
        out.area = fetchArea->area;
        out.offset = at;
        out.size = bytes;
        fetchArea->next = at + bytes;
      } else {
        out.bytes.resize(static_cast<size_t>(bytes));
        dst = out.bytes.data();
      }
      if (device)
        return device->copyOut(dst, instr.buffer.offset,
                               static_cast<size_t>(bytes));
      std::memcpy(dst, ptr(instr.buffer), static_cast<size_t>(bytes));
      record(instr, -1, start);
      return Status::ok();
    }
    case OpKind::State:
      return Status::ok();
    case OpKind::Print: {
      // The plan waited for the buffers' writers before this instruction.
      std::vector<std::vector<char>> copies(instr.ins.size());
      std::vector<printfmt::ValueView> views;
      for (size_t k = 0; k < instr.ins.size(); ++k) {
        const BufferRef &b = instr.ins[k];
        const void *data = nullptr;
        if (device) {
          copies[k].resize(static_cast<size_t>(b.bytes()));
          if (Status st =
                  device->copyOut(copies[k].data(), b.offset, copies[k].size());
              !st)
            return st;
          data = copies[k].data();
        } else {
          data = ptr(b);
        }
        views.push_back({b.dtype, data, b.shape});
      }
      int64_t start = nowUs();
      prints.push_back(printfmt::format(instr.printFormat, views));
      record(instr, -1, start);
      return Status::ok();
    }
    case OpKind::Wait: {
      int64_t start = nowUs();
      bool inTime = waitUntil([&] {
        for (int e : instr.waitEvents)
          if (!eventDone[e])
            return false;
        return true;
      });
      record(instr, -1, start);
      if (!inTime)
        return waitExpired(instr);
      return Status::ok();
    }
    case OpKind::Launch:
    case OpKind::Send:
    case OpKind::Recv:
    case OpKind::Collective: {
      // One stream entry: the instruction and, for a group, the adjacent
      // members of the same group on the same stream.
      Entry entry;
      entry.instrs.push_back(i);
      int n = static_cast<int>(program->instructions.size());
      if (instr.kind != OpKind::Launch && instr.group >= 0)
        while (i + 1 < n) {
          const Instruction &next = program->instructions[i + 1];
          if (!isComm(next.kind) || next.group != instr.group ||
              next.stream != instr.stream)
            break;
          entry.instrs.push_back(++i);
        }
      std::unique_lock<std::mutex> lock(mutex);
      Stream &stream = streams[instr.stream];
      ++pendingEntries;
      if (runsInline(entry, stream)) {
        execute(stream, instr.stream, entry, lock,
                instr.kind == OpKind::Launch ? nullptr
                                             : &program->instructions[i + 1]);
        return Status::ok();
      }
      stream.entries.push_back(std::move(entry));
      if (stream.sleeping)
        stream.work.notify_one();
      return Status::ok();
    }
    }
    return Status(StatusCode::InvalidArgument,
                  "instruction " + std::to_string(i) + " has an unknown kind");
  }
};

StatusOr<std::unique_ptr<Interpreter>> Interpreter::create(RankProgram program,
                                                           Options options) {
  std::unique_ptr<Interpreter> interp(new Interpreter());
  interp->program_ = std::move(program);
  interp->impl_ = std::make_unique<Impl>();
  Impl &s = *interp->impl_;
  const RankProgram &p = interp->program_;
  s.options = std::move(options);
  s.program = &p;
  s.pool = s.options.residents ? s.options.residents : ResidentPool::create();
  s.inlineLaunches = hostOversubscribed(s.options.comm);
  size_t n = p.instructions.size();

  // Validate every buffer against the arena before touching memory.
  auto fits = [&](const BufferRef &b) {
    return b.offset >= 0 && b.bytes() >= 0 &&
           b.offset + b.bytes() <= p.arenaBytes;
  };
  for (size_t i = 0; i < n; ++i) {
    const Instruction &instr = p.instructions[i];
    bool ok = true;
    if (instr.kind != OpKind::Wait && instr.kind != OpKind::Launch &&
        instr.kind != OpKind::Print)
      ok = fits(instr.buffer);
    if (instr.kind == OpKind::Collective)
      ok = ok && fits(instr.output);
    for (const BufferRef &b : instr.ins)
      ok = ok && fits(b);
    for (const BufferRef &b : instr.outs)
      ok = ok && fits(b);
    if (!ok)
      return Status(StatusCode::InvalidArgument,
                    "instruction " + std::to_string(i) + " '" + instr.name +
                        "' has a buffer outside the arena of " +
                        std::to_string(p.arenaBytes) + " bytes");
    if (instr.event >= p.numEvents)
      return Status(StatusCode::InvalidArgument, "event out of range");
    for (int e : instr.waitEvents)
      if (e < 0 || e >= p.numEvents)
        return Status(StatusCode::InvalidArgument,
                      "instruction " + std::to_string(i) +
                          " waits on an unknown event");
    auto bad = [&](const std::string &what) {
      return Status(StatusCode::InvalidArgument, "instruction " +
                                                     std::to_string(i) + " '" +
                                                     instr.name + "' " + what);
    };
    if (static_cast<int>(instr.kind) < static_cast<int>(OpKind::Feed) ||
        static_cast<int>(instr.kind) > static_cast<int>(OpKind::Print))
      return bad("has an unknown kind " +
                 std::to_string(static_cast<int>(instr.kind)));
    if ((instr.kind == OpKind::Launch || isComm(instr.kind)) &&
        instr.stream < 0)
      return bad("has no stream");
    if (isComm(instr.kind)) {
      if (instr.communicator < 0 ||
          instr.communicator >= static_cast<int>(p.communicators.size()))
        return bad("names no communicator");
      const CommunicatorSpec &spec = p.communicators[instr.communicator];
      if (memberIndex(spec, p.rank) < 0)
        return bad("runs on @" + spec.name + ", which rank " +
                   std::to_string(p.rank) + " is not a member of");
      if (instr.kind != OpKind::Collective &&
          (memberIndex(spec, instr.peer) < 0 || instr.peer == p.rank))
        return bad("has peer " + std::to_string(instr.peer) +
                   ", not another member of @" + spec.name);
      if (instr.kind == OpKind::Collective) {
        switch (instr.collective) {
        case CommOpKind::AllReduce:
        case CommOpKind::AllGather:
        case CommOpKind::ReduceScatter:
        case CommOpKind::AllToAll:
          break;
        case CommOpKind::Broadcast:
          if (instr.root < 0 ||
              instr.root >= static_cast<int>(spec.ranks.size()))
            return bad("broadcasts from position " +
                       std::to_string(instr.root) + " of @" + spec.name +
                       ", which has " + std::to_string(spec.ranks.size()) +
                       " members");
          break;
        default:
          return bad("has an unknown collective kind " +
                     std::to_string(static_cast<int>(instr.collective)));
        }
      }
    }
  }

  if (p.device) {
    auto device = DeviceArena::create(p, s.options.comm.cudaDevice);
    if (!device.isOk())
      return device.status();
    s.device = std::move(device).value();
  } else {
    // With collectives, the arena is memory the peers on this host may map
    // (registered with the communicators below): the shared-memory
    // transport then reads large buffers where they are.
    bool collectives = false;
    for (const Instruction &instr : p.instructions)
      collectives |= instr.kind == OpKind::Collective;
    if (collectives && p.arenaBytes > 0) {
      auto area =
          SharedArea::create("monarch-arena-rank" + std::to_string(p.rank),
                             static_cast<size_t>(p.arenaBytes));
      if (area.isOk()) {
        s.sharedArena = std::move(area).value();
        s.arena = s.sharedArena.data();
      }
    }
    if (!s.arena)
      s.arena = static_cast<char *>(std::aligned_alloc(
          64, static_cast<size_t>((std::max<int64_t>(p.arenaBytes, 1) + 63) /
                                  64 * 64)));
    if (!s.arena)
      return Status(StatusCode::Internal, "cannot allocate an arena of " +
                                              std::to_string(p.arenaBytes) +
                                              " bytes");
    std::memset(s.arena, 0, static_cast<size_t>(p.arenaBytes));
  }

  // Actor state lives outside the arena, shared with the worker's other
  // plans. A buffer must lie inside a state region or outside all of them.
  s.states =
      s.options.states ? s.options.states : std::make_shared<ActorStates>();
  for (const Instruction &instr : p.instructions) {
    if (instr.kind != OpKind::State)
      continue;
    auto storage = s.states->get(instr.stateKey, instr.buffer.bytes());
    if (!storage.isOk())
      return storage.status();
    s.stateRegions.push_back(
        {instr.buffer.offset, instr.buffer.bytes(), *storage});
  }
  for (size_t i = 0; i < n; ++i) {
    const Instruction &instr = p.instructions[i];
    for (const BufferAccess &a : accessesOf(instr))
      for (const Impl::StateRegion &r : s.stateRegions) {
        const BufferRef *b = a.ref;
        bool inside = b->offset >= r.offset &&
                      b->offset + b->bytes() <= r.offset + r.bytes;
        bool disjoint = b->offset + b->bytes() <= r.offset ||
                        b->offset >= r.offset + r.bytes;
        if (!inside && !disjoint)
          return Status(StatusCode::InvalidArgument,
                        "instruction " + std::to_string(i) + " '" + instr.name +
                            "' has a buffer straddling an actor state buffer");
      }
  }

  // Kernels.
  s.kernelFns.assign(n, nullptr);
  s.kernelArgs.resize(n);
  bool anyLaunch = false;
  for (const Instruction &instr : p.instructions)
    anyLaunch |= instr.kind == OpKind::Launch;
  if (anyLaunch && !s.device) {
    auto lib = executor::LoadedKernelLibrary::load(
        p.kernelLibrary, "kernels of rank " + std::to_string(p.rank));
    if (!lib.isOk())
      return lib.status();
    s.kernels = std::move(lib).value();
    s.profileRank = p.rank;
    s.profileLabel = "kernel profile of plan '" + p.planName + "', rank " +
                     std::to_string(p.rank) +
                     " (time summed over the steps run)";
    for (size_t i = 0; i < n; ++i) {
      const Instruction &instr = p.instructions[i];
      if (instr.kind != OpKind::Launch)
        continue;
      if (std::find(s.kernelSymbols.begin(), s.kernelSymbols.end(),
                    instr.kernelSymbol) == s.kernelSymbols.end())
        s.kernelSymbols.push_back(instr.kernelSymbol);
      auto fn = s.kernels->lookup(instr.kernelSymbol);
      if (!fn.isOk())
        return fn.status().withContext("instruction " + std::to_string(i));
      s.kernelFns[i] = *fn;
      for (const BufferRef &b : instr.ins)
        s.kernelArgs[i].push_back(s.ptr(b));
      if (!instr.kernelParams.empty())
        s.kernelArgs[i].push_back(
            const_cast<int64_t *>(instr.kernelParams.data()));
      for (const BufferRef &b : instr.outs)
        s.kernelArgs[i].push_back(s.ptr(b));
    }
    // Feeds and kept fetches that may be bound to resident values: one
    // instruction of their index on this rank, a buffer shared with
    // nothing else.
    std::map<int, int> feedCount, fetchCount;
    for (const Instruction &instr : p.instructions)
      if (instr.kind == OpKind::Feed)
        ++feedCount[instr.index];
      else if (instr.kind == OpKind::Fetch)
        ++fetchCount[instr.index];
    for (size_t i = 0; i < n; ++i) {
      const Instruction &instr = p.instructions[i];
      bool feed = instr.kind == OpKind::Feed;
      if (!(feed && feedCount[instr.index] == 1) &&
          !(instr.kind == OpKind::Fetch && fetchCount[instr.index] == 1))
        continue;
      if (std::optional<ResidentBinding> b =
              residentBinding(p, static_cast<int>(i)))
        (feed ? s.feedBindings : s.keepBindings)[instr.index] = std::move(*b);
    }
    if (s.options.trace)
      for (const std::string &symbol : s.kernelSymbols) {
        auto [counts, nests] = s.kernels->sliceTable(symbol);
        if (counts)
          s.nestTables[counts] = std::move(nests);
      }
  }

  // Tags: the k-th send a->b on C matches the k-th recv on b from a on C,
  // the k-th collective on C matches across members.
  std::map<std::tuple<int, int, int, int>, uint64_t> counters;
  s.tagIndex.assign(n, 0);
  s.tagStride.assign(n, 1);
  std::vector<std::tuple<int, int, int, int>> keys(n);
  for (size_t i = 0; i < n; ++i) {
    const Instruction &instr = p.instructions[i];
    if (!isComm(instr.kind))
      continue;
    std::tuple<int, int, int, int> key;
    if (instr.kind == OpKind::Send)
      key = {instr.communicator, 0, p.rank, instr.peer};
    else if (instr.kind == OpKind::Recv)
      key = {instr.communicator, 0, instr.peer, p.rank};
    else
      key = {instr.communicator, 1, 0, 0};
    keys[i] = key;
    s.tagIndex[i] = counters[key]++;
  }
  for (size_t i = 0; i < n; ++i)
    if (isComm(p.instructions[i].kind))
      s.tagStride[i] = counters[keys[i]];

  // Communicators and one duplicate per stream.
  s.comms.resize(p.communicators.size());
  for (size_t c = 0; c < p.communicators.size(); ++c) {
    const CommunicatorSpec &spec = p.communicators[c];
    bool member = false;
    for (int r : spec.ranks)
      member |= r == p.rank;
    if (!member)
      continue;
    std::string name = p.planName + "/" + spec.name;
    StatusOr<std::unique_ptr<Communicator>> comm =
        Status(StatusCode::InvalidArgument,
               "no rendezvous store to create communicators in");
    if (s.options.makeCommunicator)
      comm = s.options.makeCommunicator(spec, name);
    else if (s.options.store) {
      // The plan posts a communicator's collectives on one stream (one
      // duplicate) in program order, as NCCL needs: then they may match
      // per object whatever their tags.
      CommOptions options = s.options.comm;
      std::set<int> streams;
      for (const Instruction &instr : p.instructions)
        if (instr.kind == OpKind::Collective &&
            instr.communicator == static_cast<int>(c))
          streams.insert(instr.stream);
      options.collectivesInPostingOrder = streams.size() <= 1;
      comm = createCommunicator(spec.backend, *s.options.store, p.rank,
                                s.options.worldSize, spec.ranks, name, options);
    }
    if (!comm.isOk())
      return comm.status().withContext("communicator @" + spec.name);
    s.comms[c] = std::move(comm).value();
    for (int stream : spec.streams) {
      auto dup =
          s.comms[c]->duplicate(name + "/stream" + std::to_string(stream));
      if (!dup.isOk())
        return dup.status().withContext("communicator @" + spec.name);
      s.commForStream[{static_cast<int>(c), stream}] = dup->get();
      s.duplicates.push_back(std::move(dup).value());
    }
  }
  if (s.sharedArena.valid()) {
    for (auto &c : s.comms)
      if (c)
        c->registerMemory(s.arena, s.sharedArena.bytes(), s.sharedArena.fd());
    for (auto &c : s.duplicates)
      c->registerMemory(s.arena, s.sharedArena.bytes(), s.sharedArena.fd());
  }

  s.eventDone.assign(p.numEvents, 0);
  s.eventStatus.assign(p.numEvents, Status::ok());
  for (const Instruction &instr : p.instructions)
    if (instr.kind == OpKind::Launch || isComm(instr.kind))
      s.streams[instr.stream];
  s.oneStream = s.streams.size() <= 1;
  s.planId = executor::planHash(p.planName);
  for (auto &[id, stream] : s.streams) {
    if (s.options.progress)
      stream.progress = s.options.progress->claim(id);
    int streamId = id;
    Impl *impl = &s;
    stream.thread =
        std::thread([impl, streamId] { impl->streamLoop(streamId); });
  }
  return interp;
}

Interpreter::~Interpreter() = default;

void Interpreter::abort(const std::string &reason) {
  Impl &s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.aborted)
      return;
    s.abortReason = reason;
    s.aborted = true;
  }
  s.cv.notify_all();
  s.abortAll(reason);
}

void Interpreter::writeKernelProfile() const { impl_->writeKernelProfile(); }

std::vector<std::string> Interpreter::takePrints() {
  return std::move(impl_->prints);
}

void Interpreter::setKeeps(std::vector<int> indices) {
  impl_->keeps = std::move(indices);
}

StepFailure Interpreter::runStep(int64_t step,
                                 const std::map<int, std::string_view> &feeds,
                                 FetchArea *fetchArea,
                                 std::vector<FetchResult> &fetches,
                                 std::vector<TraceRecord> &trace) {
  Impl &s = *impl_;
  const RankProgram &p = program_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.aborted)
      return {Status(StatusCode::Aborted, s.abortReason), -1};
    std::fill(s.eventDone.begin(), s.eventDone.end(), 0);
    s.stepFailed = false;
    s.failure = {};
    s.pendingEntries = 0;
    s.step = step;
  }
  s.prints.clear();
  {
    std::lock_guard<std::mutex> lock(s.traceMutex);
    s.trace = &trace;
  }
  currentStep_ = step;
  size_t n = p.instructions.size();
  if (Status st = s.syncStates(/*toDevice=*/true); !st)
    s.fail(st, -1);
  if (!s.device)
    s.bindResidents(feeds);
  executor::ProgressSlot *issuing = s.options.issuingProgress;
  for (int i = 0; i < static_cast<int>(n); ++i) {
    current_ = i;
    if (issuing)
      issuing->enter(s.planId, step, i);
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.stepFailed || s.aborted)
        break;
    }
    int first = i;
    if (Status st = s.issue(i, feeds, fetchArea, fetches); !st) {
      s.fail(std::move(st), first);
      break;
    }
  }
  // Drain the streams: a step ends when everything it issued completed.
  if (!s.waitUntil([&] { return s.pendingEntries == 0; }))
    s.fail(Status(StatusCode::DeadlineExceeded,
                  "the step's streams did not drain within " +
                      std::to_string(s.options.waitTimeout.count()) + " ms (" +
                      s.pendingSummary() + ")"),
           -1);
  bool drained;
  {
    // After a failure the communicators are aborted and later entries are
    // skipped, so what is left is at most a running kernel: give it the
    // deadline once more, then give up on this program (its arena is still
    // in use) rather than return into a race.
    std::unique_lock<std::mutex> lock(s.mutex);
    drained = s.waitWatched(lock, [&] { return s.pendingEntries == 0; });
  }
  if (!drained)
    abort("a stream of step " + std::to_string(step) +
          " is still running after its deadline");
  bool ok;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ok = !s.stepFailed && !s.aborted;
  }
  if (ok)
    if (Status st = s.syncStates(/*toDevice=*/false); !st)
      s.fail(st, -1);
  if (issuing)
    issuing->leave();
  current_ = -1;
  currentStep_ = -1;
  {
    std::lock_guard<std::mutex> lock(s.traceMutex);
    s.trace = nullptr;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.stepFailed)
    return s.failure;
  if (s.aborted)
    return {Status(StatusCode::Aborted, s.abortReason), -1};
  return {Status::ok(), -1};
}

void Interpreter::setResidentFeeds(std::map<int, ResidentPtr> feeds) {
  // After an abort a kernel may still run on the bound bytes: keep them.
  if (!impl_->aborted)
    impl_->residentFeeds = std::move(feeds);
}

bool Interpreter::bindsFeed(int index) const {
  return impl_->feedBindings.count(index) > 0;
}

bool Interpreter::bindsKeep(int index) const {
  return impl_->keepBindings.count(index) > 0;
}

} // namespace monarch::worker
