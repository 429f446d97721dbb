//===- InterpreterBinding.cpp - Interpreter::create -----------*- C++ -*-===//
//
// Binds a rank's program before its first step: every buffer checked
// against the arena and every instruction's kind, stream, communicator,
// peer and kernel validated before any memory is touched; then the arena
// (shared memory where the plan has collectives, device memory for device
// plans), actor state and resident bindings, kernels, communicators with
// one duplicate per stream, and each communication instruction's tag.
//
//===----------------------------------------------------------------------===//
#include "InterpreterImpl.h"

namespace monarch::worker {

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
        return bad("runs on " +
                   (spec.name.empty()
                        ? "communicator " + std::to_string(instr.communicator)
                        : "@" + spec.name) +
                   ", which rank " + std::to_string(p.rank) +
                   " is not a member of");
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

} // namespace monarch::worker
