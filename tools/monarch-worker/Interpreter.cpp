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
#include "Interpreter.h"

#include "DeviceArena.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

using namespace monarch::executor;

namespace monarch::worker {

namespace {
int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
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

struct Interpreter::Impl {
  Options options;
  const RankProgram *program = nullptr;
  std::unique_ptr<codegen::LoadedKernelLibrary> kernels;
  std::vector<codegen::KernelFunction> kernelFns;
  std::vector<std::vector<void *>> kernelArgs;
  char *arena = nullptr;
  /// Device plans (RankProgram::device): the arena on the GPU instead.
  std::unique_ptr<DeviceArena> device;
  std::shared_ptr<ActorStates> states;
  /// Arena ranges that are actor state, and where that state lives.
  struct StateRegion {
    int64_t offset, bytes;
    char *storage;
  };
  std::vector<StateRegion> stateRegions;

  /// Where a buffer's bytes are: in actor state, or in the arena (a
  /// device address for device plans, whose state is in the arena).
  char *ptr(const BufferRef &b) const {
    if (device)
      return device->at(b.offset);
    for (const StateRegion &r : stateRegions)
      if (b.offset >= r.offset && b.offset + b.bytes() <= r.offset + r.bytes)
        return r.storage + (b.offset - r.offset);
    return arena + b.offset;
  }

  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<Communicator>> duplicates;
  std::map<std::pair<int, int>, Communicator *> commForStream;
  /// Per instruction: its index among equal keys within a step, and how many
  /// such instructions a step has (for tags unique across steps).
  std::vector<uint64_t> tagIndex, tagStride;

  std::mutex mutex;
  std::condition_variable cv;
  std::vector<char> eventDone;
  std::vector<Status> eventStatus;
  int pendingEntries = 0;
  bool stepFailed = false;
  StepFailure failure;
  std::atomic<bool> aborted{false};
  std::string abortReason;
  int64_t step = -1;
  bool shutdown = false;

  struct Entry {
    std::vector<int> instrs;
  };
  struct Stream {
    std::deque<Entry> entries;
    std::thread thread;
  };
  std::map<int, Stream> streams;

  std::mutex traceMutex;
  std::vector<TraceRecord> *trace = nullptr;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      shutdown = true;
    }
    cv.notify_all();
    for (auto &[id, stream] : streams)
      if (stream.thread.joinable())
        stream.thread.join();
    duplicates.clear();
    comms.clear();
    device.reset();
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

  void record(const Instruction &instr, int stream, int64_t start) {
    if (!options.trace)
      return;
    std::lock_guard<std::mutex> lock(traceMutex);
    if (trace)
      trace->push_back(
          {instr.name, category(instr.kind), stream, start, nowUs() - start});
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

  CommOp makeOp(int i) {
    const Instruction &instr = program->instructions[i];
    const CommunicatorSpec &spec = program->communicators[instr.communicator];
    auto commRank = [&](int meshRank) {
      for (size_t k = 0; k < spec.ranks.size(); ++k)
        if (spec.ranks[k] == meshRank)
          return static_cast<int>(k);
      return -1;
    };
    uint64_t tag = static_cast<uint64_t>(step) * tagStride[i] + tagIndex[i];
    void *in = ptr(instr.buffer);
    size_t count = static_cast<size_t>(instr.buffer.numElements());
    switch (instr.kind) {
    case OpKind::Send:
      return CommOp::send(in, count, instr.buffer.dtype, commRank(instr.peer),
                          tag);
    case OpKind::Recv:
      return CommOp::recv(in, count, instr.buffer.dtype, commRank(instr.peer),
                          tag);
    default:
      break;
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
      op = CommOp::allReduce(in, out, count, instr.buffer.dtype, instr.reduce);
    }
    op.tag = tag;
    return op;
  }

  /// Posts a group (one or more comm instructions) and waits for it.
  Status runGroup(const std::vector<int> &instrs, int stream, int *failed) {
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
      posts[comm].push_back(makeOp(i));
      first.emplace(comm, i);
    }
    std::vector<std::pair<std::shared_ptr<Work>, int>> works;
    for (auto &[comm, ops] : posts)
      works.push_back({comm->post(std::move(ops)), first[comm]});
    for (auto &[work, i] : works) {
      while (true) {
        Status st = work->wait(std::chrono::milliseconds(100));
        if (st.code() == StatusCode::DeadlineExceeded && !work->isCompleted()) {
          if (aborted) {
            *failed = i;
            return Status(StatusCode::Aborted, abortReason);
          }
          continue;
        }
        if (!st) {
          *failed = i;
          return st;
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
      cv.wait(lock, [&] { return shutdown || !stream.entries.empty(); });
      if (stream.entries.empty())
        return;
      Entry entry = std::move(stream.entries.front());
      stream.entries.pop_front();
      bool skip = stepFailed || aborted;
      lock.unlock();
      Status status;
      int failed = entry.instrs.front();
      if (skip) {
        status = Status(StatusCode::Aborted, "skipped after a failure");
      } else {
        int64_t start = nowUs();
        const Instruction &head = program->instructions[entry.instrs.front()];
        if (head.kind == OpKind::Launch)
          status = runLaunch(entry.instrs.front());
        else
          status = runGroup(entry.instrs, id, &failed);
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
      --pendingEntries;
      cv.notify_all();
    }
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
  size_t n = p.instructions.size();

  // Validate every buffer against the arena before touching memory.
  auto fits = [&](const BufferRef &b) {
    return b.offset >= 0 && b.bytes() >= 0 &&
           b.offset + b.bytes() <= p.arenaBytes;
  };
  for (size_t i = 0; i < n; ++i) {
    const Instruction &instr = p.instructions[i];
    bool ok = true;
    if (instr.kind != OpKind::Wait && instr.kind != OpKind::Launch)
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
    if (isComm(instr.kind) &&
        (instr.communicator < 0 ||
         instr.communicator >= static_cast<int>(p.communicators.size())))
      return Status(StatusCode::InvalidArgument, "instruction " +
                                                     std::to_string(i) +
                                                     " names no communicator");
  }

  if (p.device) {
    auto device = DeviceArena::create(p, s.options.comm.cudaDevice);
    if (!device.isOk())
      return device.status();
    s.device = std::move(device).value();
  } else {
    s.arena = static_cast<char *>(std::aligned_alloc(
        64, static_cast<size_t>((std::max<int64_t>(p.arenaBytes, 1) + 63) / 64 *
                                64)));
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
    std::vector<const BufferRef *> all = {&instr.buffer, &instr.output};
    if (instr.kind == OpKind::Wait || instr.kind == OpKind::Launch)
      all.clear();
    if (instr.kind != OpKind::Collective && !all.empty())
      all.pop_back();
    for (const BufferRef &b : instr.ins)
      all.push_back(&b);
    for (const BufferRef &b : instr.outs)
      all.push_back(&b);
    for (const BufferRef *b : all)
      for (const Impl::StateRegion &r : s.stateRegions) {
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
    auto lib = codegen::LoadedKernelLibrary::load(
        p.kernelLibrary, "kernels of rank " + std::to_string(p.rank));
    if (!lib.isOk())
      return lib.status();
    s.kernels = std::move(lib).value();
    for (size_t i = 0; i < n; ++i) {
      const Instruction &instr = p.instructions[i];
      if (instr.kind != OpKind::Launch)
        continue;
      auto fn = s.kernels->lookup(instr.kernelSymbol);
      if (!fn.isOk())
        return fn.status().withContext("instruction " + std::to_string(i));
      s.kernelFns[i] = *fn;
      for (const BufferRef &b : instr.ins)
        s.kernelArgs[i].push_back(s.ptr(b));
      for (const BufferRef &b : instr.outs)
        s.kernelArgs[i].push_back(s.ptr(b));
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
    if (!s.options.store)
      return Status(StatusCode::Internal, "no rendezvous store");
    std::string name = p.planName + "/" + spec.name;
    auto comm = createCommunicator(spec.backend, *s.options.store, p.rank,
                                   s.options.worldSize, spec.ranks, name,
                                   s.options.comm);
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

  s.eventDone.assign(p.numEvents, 0);
  s.eventStatus.assign(p.numEvents, Status::ok());
  for (const Instruction &instr : p.instructions)
    if (instr.kind == OpKind::Launch || isComm(instr.kind))
      s.streams[instr.stream];
  for (auto &[id, stream] : s.streams) {
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
  {
    std::lock_guard<std::mutex> lock(s.traceMutex);
    s.trace = &trace;
  }
  currentStep_ = step;
  size_t n = p.instructions.size();
  int i = 0;
  if (Status st = s.syncStates(/*toDevice=*/true); !st)
    s.fail(st, -1);
  try {
    for (; i < static_cast<int>(n); ++i) {
      current_ = i;
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.stepFailed || s.aborted)
          break;
      }
      const FaultInjection &fault = s.options.fault;
      if (fault.kind != FaultInjection::Kind::None && fault.step == step &&
          fault.instruction == i) {
        switch (fault.kind) {
        case FaultInjection::Kind::Raise:
          throw std::runtime_error("injected fault (MONARCH_FAULT_INJECT)");
        case FaultInjection::Kind::Drop:
          if (s.options.dropConnections)
            s.options.dropConnections();
          break;
        case FaultInjection::Kind::Sleep:
          std::this_thread::sleep_for(std::chrono::milliseconds(fault.ms));
          break;
        case FaultInjection::Kind::Exit:
          std::_Exit(3);
        default:
          break;
        }
      }
      const Instruction &instr = p.instructions[i];
      switch (instr.kind) {
      case OpKind::Feed: {
        auto it = feeds.find(instr.index);
        if (it == feeds.end())
          throw std::runtime_error("feed " + std::to_string(instr.index) +
                                   " was not sent to this rank");
        if (static_cast<int64_t>(it->second.size()) != instr.buffer.bytes())
          throw std::runtime_error("feed " + std::to_string(instr.index) +
                                   " has " + std::to_string(it->second.size()) +
                                   " bytes, the buffer " +
                                   std::to_string(instr.buffer.bytes()));
        if (s.device) {
          Status st = s.device->copyIn(instr.buffer.offset, it->second.data(),
                                       it->second.size());
          if (!st)
            throw std::runtime_error(st.message());
        } else {
          std::memcpy(s.ptr(instr.buffer), it->second.data(),
                      it->second.size());
        }
        break;
      }
      case OpKind::Fetch: {
        FetchResult &out = fetches.emplace_back();
        out.index = instr.index;
        int64_t bytes = instr.buffer.bytes();
        int64_t at = fetchArea ? (fetchArea->next + 63) / 64 * 64 : 0;
        char *dst;
        if (fetchArea && bytes >= fetchArea->minBytes &&
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
        if (s.device) {
          Status st = s.device->copyOut(dst, instr.buffer.offset,
                                        static_cast<size_t>(bytes));
          if (!st)
            throw std::runtime_error(st.message());
        } else {
          std::memcpy(dst, s.ptr(instr.buffer), static_cast<size_t>(bytes));
        }
        break;
      }
      case OpKind::State:
        break;
      case OpKind::Wait: {
        int64_t start = nowUs();
        std::unique_lock<std::mutex> lock(s.mutex);
        s.cv.wait(lock, [&] {
          if (s.stepFailed || s.aborted)
            return true;
          for (int e : instr.waitEvents)
            if (!s.eventDone[e])
              return false;
          return true;
        });
        lock.unlock();
        s.record(instr, -1, start);
        break;
      }
      default: {
        // One stream entry: the instruction and, for a group, the adjacent
        // members of the same group on the same stream.
        Impl::Entry entry;
        entry.instrs.push_back(i);
        if (instr.kind != OpKind::Launch && instr.group >= 0)
          while (i + 1 < static_cast<int>(n)) {
            const Instruction &next = p.instructions[i + 1];
            if (!isComm(next.kind) || next.group != instr.group ||
                next.stream != instr.stream)
              break;
            entry.instrs.push_back(++i);
          }
        std::lock_guard<std::mutex> lock(s.mutex);
        s.streams[instr.stream].entries.push_back(std::move(entry));
        ++s.pendingEntries;
        s.cv.notify_all();
      }
      }
    }
  } catch (const std::exception &e) {
    s.fail(Status(StatusCode::Internal, e.what()), i);
  }
  // Drain the streams: a step ends when everything it issued completed.
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.cv.wait(lock, [&] { return s.pendingEntries == 0; });
  }
  bool ok;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ok = !s.stepFailed && !s.aborted;
  }
  if (ok)
    if (Status st = s.syncStates(/*toDevice=*/false); !st)
      s.fail(st, -1);
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

} // namespace monarch::worker
