//===- Interpreter.cpp - Runs one rank's program, step after step ---------===//
//
// The step loop: each step's instructions issued in order (feeds, fetches,
// prints and waits on the issuing thread; launches and communication on
// their streams' threads, or inline where a hand-off would only add
// wake-ups), resident values bound, and the public face of Interpreter.
// Binding a program before its first step is InterpreterBinding.cpp; the
// state both share is InterpreterImpl.h.
//
// Failure is fail fast: the first failure of a step (an instruction that
// throws, a kernel argument that does not fit, a communication op that
// fails) is handed to `onFailure` (the worker reports it to the controller
// before anything else happens, so the root cause arrives first), then the
// rank's communicators are aborted so peers blocked on this rank fail at
// once instead of at their deadlines.
//
//===----------------------------------------------------------------------===//
#include "InterpreterImpl.h"

namespace monarch::worker {

std::string_view FetchResult::view() const {
  if (resident)
    return resident->view();
  return area ? std::string_view(area->data() + offset, size)
              : std::string_view(bytes);
}

char *Interpreter::Impl::ptr(const BufferRef &b) const {
  if (device)
    return device->at(b.offset);
  for (const std::vector<StateRegion> *regions : {&stateRegions, &boundRegions})
    for (const StateRegion &r : *regions)
      if (b.offset >= r.offset && b.offset + b.bytes() <= r.offset + r.bytes)
        return r.storage + (b.offset - r.offset);
  return arena + b.offset;
}

void Interpreter::Impl::bindResidents(
    const std::map<int, std::string_view> &feeds) {
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

void Interpreter::Impl::writeKernelProfile() const {
  std::string path = knobs::getString(knobs::Id::KernelProfile).value;
  if (path.empty() || !kernels)
    return;
  std::vector<executor::KernelOpProfile> rows = kernels->profile(kernelSymbols);
  if (rows.empty())
    return;
  std::string file = path + ".rank" + std::to_string(profileRank);
  if (std::FILE *f = std::fopen(file.c_str(), "a")) {
    std::string table = executor::formatKernelProfile(std::move(rows));
    std::fprintf(f, "# %s\n%s\n", profileLabel.c_str(), table.c_str());
    std::fclose(f);
  }
}

Interpreter::Impl::~Impl() {
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

Status Interpreter::Impl::syncStates(bool toDevice) {
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

void Interpreter::Impl::record(const Instruction &instr, int stream,
                               int64_t start) {
  if (!options.trace)
    return;
  std::string name = instr.name;
  if (isComm(instr.kind)) {
    auto comm = commForStream.find({instr.communicator, stream});
    if (comm != commForStream.end() && comm->second)
      name +=
          std::string(" via ") +
          (instr.kind == OpKind::Collective
               ? comm->second->collectiveTransport(
                     instr.collective,
                     static_cast<size_t>(
                         std::max(instr.buffer.bytes(), instr.output.bytes())))
               : comm->second->transportTo(memberIndex(
                     program->communicators[instr.communicator], instr.peer)));
  }
  std::lock_guard<std::mutex> lock(traceMutex);
  if (trace)
    trace->push_back({std::move(name), category(instr.kind), stream, start,
                      nowUs() - start, instr.location});
}

void Interpreter::Impl::recordNests(
    const std::vector<executor::KernelSlice> &slices, int stream,
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

void Interpreter::Impl::fail(Status status, int instruction) {
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

void Interpreter::Impl::abortAll(const std::string &reason) {
  for (auto &c : comms)
    if (c)
      c->abort(reason);
  for (auto &c : duplicates)
    c->abort(reason);
}

Status Interpreter::Impl::runLaunch(int i) {
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

StatusOr<CommOp> Interpreter::Impl::makeOp(int i) {
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
    op = CommOp::reduceScatter(in, out,
                               static_cast<size_t>(instr.output.numElements()),
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

Status Interpreter::Impl::runGroup(const std::vector<int> &instrs, int stream,
                                   int *failed,
                                   std::optional<Clock::time_point> deadline) {
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

void Interpreter::Impl::streamLoop(int id) {
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

void Interpreter::Impl::execute(Stream &stream, int id, const Entry &entry,
                                std::unique_lock<std::mutex> &lock,
                                const Instruction *inlineWait) {
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

bool Interpreter::Impl::runsInline(const Entry &entry,
                                   const Stream &stream) const {
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

Status Interpreter::Impl::waitExpired(const Instruction &wait) {
  std::string events;
  for (int e : wait.waitEvents)
    events += (events.empty() ? "" : ", ") + std::to_string(e);
  return Status(StatusCode::DeadlineExceeded,
                "'" + wait.name + "' waited " +
                    std::to_string(options.waitTimeout.count()) +
                    " ms for events " + events + " (" + pendingSummary() + ")");
}

bool Interpreter::Impl::waitWatched(std::unique_lock<std::mutex> &lock,
                                    const std::function<bool()> &holds) {
  if (holds())
    return true;
  waiting = &holds;
  bool inTime = cv.wait_for(lock, options.waitTimeout, holds);
  waiting = nullptr;
  return inTime;
}

std::string Interpreter::Impl::pendingSummary() {
  std::lock_guard<std::mutex> lock(mutex);
  std::string out;
  for (auto &[id, stream] : streams)
    if (!stream.entries.empty() || stream.busy >= 0) {
      int i = stream.busy >= 0 ? stream.busy : stream.entries.front().instrs[0];
      out += (out.empty() ? "" : ", ") + std::string("stream ") +
             std::to_string(id) + " at '" + program->instructions[i].name + "'";
    }
  return out.empty() ? "nothing in flight" : out;
}

Status Interpreter::Impl::issue(int &i,
                                const std::map<int, std::string_view> &feeds,
                                FetchArea *fetchArea,
                                std::vector<FetchResult> &fetches) {
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
