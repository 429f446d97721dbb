//===- PlanLoader.cpp - ExecutionPlan -> this rank's programs -------------===//
//
// Binding (Worker.h): decodes and validates a .mcplan (MonarchPlan) and
// resolves, for every step plan, what this world rank runs: ranks of slices
// mapped to world ranks, buffers to numpy types, kernels to exported
// symbols, waits to events, and the user's source location per instruction.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Worker.h"

#include "monarch/Plan/PlanFile.h"

#include <climits>
#include <map>
#include <optional>
#include <set>

using namespace monarch::executor;
namespace pm = monarch::plan;

namespace monarch::worker {
namespace {

BufferRef buffer(const pm::Buffer &b) {
  BufferRef ref;
  ref.offset = b.offset;
  ref.dtype = b.dtype;
  ref.numpy = dtypeName(b.dtype);
  ref.elementBytes = static_cast<int64_t>(dtypeSize(b.dtype));
  ref.shape = b.shape;
  return ref;
}

ReduceOp reduceOp(std::optional<pm::ReductionKind> kind) {
  switch (kind.value_or(pm::ReductionKind::Sum)) {
  case pm::ReductionKind::Sum:
    return ReduceOp::Sum;
  case pm::ReductionKind::Prod:
    return ReduceOp::Prod;
  case pm::ReductionKind::Max:
    return ReduceOp::Max;
  case pm::ReductionKind::Min:
    return ReduceOp::Min;
  case pm::ReductionKind::Avg:
    return ReduceOp::Avg;
  }
  return ReduceOp::Sum;
}

CommOpKind collectiveKind(pm::CollectiveKind kind) {
  switch (kind) {
  case pm::CollectiveKind::AllReduce:
    return CommOpKind::AllReduce;
  case pm::CollectiveKind::AllGather:
    return CommOpKind::AllGather;
  case pm::CollectiveKind::ReduceScatter:
    return CommOpKind::ReduceScatter;
  case pm::CollectiveKind::Broadcast:
    return CommOpKind::Broadcast;
  case pm::CollectiveKind::AllToAll:
    return CommOpKind::AllToAll;
  }
  return CommOpKind::AllReduce;
}

/// Maps ranks of any mesh of the plan to ranks of its root mesh.
class RankMap {
public:
  explicit RankMap(const pm::ExecutionPlan &plan) : plan_(plan) {}
  StatusOr<int> world(const std::string &mesh, int64_t rank) const {
    int32_t m = plan_.findMesh(mesh);
    if (m < 0)
      return Status(StatusCode::InvalidArgument, "unknown mesh @" + mesh);
    if (std::optional<int> w = worldIn(plan_.meshes[m], rank))
      return *w;
    return outside(mesh, rank);
  }
  /// world() of each of `ranks`, appended to `out` (one mesh lookup: a
  /// communicator's members are resolved together).
  Status worlds(const std::string &mesh, const std::vector<int64_t> &ranks,
                std::vector<int> &out) const {
    int32_t m = plan_.findMesh(mesh);
    if (m < 0)
      return Status(StatusCode::InvalidArgument, "unknown mesh @" + mesh);
    out.reserve(out.size() + ranks.size());
    // No Status per member: a 4,096-member communicator is resolved in
    // microseconds.
    for (int64_t rank : ranks) {
      std::optional<int> w = worldIn(plan_.meshes[m], rank);
      if (!w)
        return outside(mesh, rank);
      out.push_back(*w);
    }
    return Status::ok();
  }
  StatusOr<int64_t> rootSize(const std::string &mesh) const {
    std::string name = mesh;
    for (int depth = 0; depth < 64; ++depth) {
      int32_t m = plan_.findMesh(name);
      if (m < 0)
        return Status(StatusCode::InvalidArgument, "unknown mesh @" + name);
      const pm::ProcMesh &pm = plan_.meshes[m];
      if (!pm.parent)
        return pm.numRanks();
      name = *pm.parent;
    }
    return Status(StatusCode::InvalidArgument, "mesh parents form a cycle");
  }

private:
  /// `rank`'s world rank, or nullopt where the mesh does not hold it.
  static std::optional<int> worldIn(const pm::ProcMesh &mesh, int64_t rank) {
    if (mesh.rootRanks.empty())
      return static_cast<int>(rank);
    if (rank < 0 || rank >= static_cast<int64_t>(mesh.rootRanks.size()))
      return std::nullopt;
    return static_cast<int>(mesh.rootRanks[rank]);
  }
  static Status outside(const std::string &mesh, int64_t rank) {
    return Status(StatusCode::InvalidArgument,
                  "rank " + std::to_string(rank) + " outside @" + mesh);
  }

  const pm::ExecutionPlan &plan_;
};

std::string describe(const pm::ExecutionPlan &plan, const pm::Instruction &in,
                     const RankMap &ranks, const std::string &mesh) {
  auto commName = [&](int32_t c) {
    return c >= 0 && c < static_cast<int32_t>(plan.communicators.size())
               ? "@" + plan.communicators[c].name
               : std::string("@?");
  };
  switch (in.kind) {
  case pm::InstrKind::Launch:
    return "launch @" +
           (in.launch.kernel >= 0 &&
                    in.launch.kernel < static_cast<int32_t>(plan.kernels.size())
                ? plan.kernels[in.launch.kernel].name
                : std::string("?"));
  case pm::InstrKind::Send:
    return "send to " + std::to_string(in.p2p.peer) + " on " +
           commName(in.p2p.communicator);
  case pm::InstrKind::Recv:
    return "recv from " + std::to_string(in.p2p.peer) + " on " +
           commName(in.p2p.communicator);
  case pm::InstrKind::Collective: {
    std::string text = pm::collectiveKindName(in.collective.kind);
    if (in.collective.reduction)
      text +=
          std::string(" ") + pm::reductionKindName(*in.collective.reduction);
    return text + " on " + commName(in.collective.communicator);
  }
  case pm::InstrKind::Wait:
    return "wait";
  case pm::InstrKind::FeedBuffer:
    return "feed_buffer " + std::to_string(in.io.index);
  case pm::InstrKind::FetchBuffer:
    return "fetch_buffer " + std::to_string(in.io.index);
  case pm::InstrKind::StateBuffer:
    return "state_buffer @" + in.stateBuffer.actorMesh + "::@" +
           in.stateBuffer.state;
  case pm::InstrKind::PrintBuffers:
    return "debug_print";
  }
  return "?";
}

} // namespace

StatusOr<std::vector<RankProgram>>
loadRankPrograms(const std::string &planBytes, int worldRank, int worldSize) {
  // Only this rank's programs are rebuilt (issue 15): at 4,096 ranks
  // expanding and validating every rank's stream was 66 ms of a worker's
  // start against 0.2 ms at 8.
  auto decoded = pm::deserializePlanForRank(planBytes, worldRank);
  if (!decoded.isOk())
    return decoded.status();
  const pm::ExecutionPlan &plan = decoded->plan;
  RankMap ranks(plan);

  // The kernel libraries (CPU, CUDA) and each kernel's symbol in them.
  const pm::KernelLibraryBlob *library = nullptr, *cudaLibrary = nullptr;
  for (const pm::KernelLibraryBlob &lib : plan.libraries)
    (lib.target == pm::PlanTarget::Cpu ? library : cudaLibrary) = &lib;
  std::map<int32_t, std::string> cpuSymbols, cudaSymbols;
  std::map<int32_t, std::vector<int64_t>> cpuParams;
  if (library)
    for (const pm::CompiledKernelRef &k : library->kernels) {
      cpuSymbols[k.kernel] = k.symbol;
      if (!k.params.empty())
        cpuParams[k.kernel] = k.params;
    }
  if (cudaLibrary)
    for (const pm::CompiledKernelRef &k : cudaLibrary->kernels)
      cudaSymbols[k.kernel] = k.symbol;

  std::vector<RankProgram> out;
  for (size_t stepIndex = 0; stepIndex < plan.plans.size(); ++stepIndex) {
    const pm::StepPlan &step = plan.plans[stepIndex];
    RankProgram program;
    program.planName = step.symbol;
    program.rank = worldRank;
    auto root = ranks.rootSize(step.mesh);
    if (!root.isOk())
      return root.status().withContext("plan @" + step.symbol);
    if (*root != worldSize)
      return Status(StatusCode::InvalidArgument,
                    "plan @" + step.symbol + " runs on a mesh of " +
                        std::to_string(*root) + " ranks, the job has " +
                        std::to_string(worldSize) + " workers");
    program.meshSize = worldSize;

    // Streams using each communicator this rank is a member of, over every
    // rank's program (the plan file's table: the others' programs are not
    // read).
    std::map<int32_t, std::set<int>> commStreams;
    for (const auto &[c, streams] : decoded->commStreams[stepIndex])
      for (int64_t st : streams) {
        if (st < 0 || st > INT_MAX)
          return Status(StatusCode::InvalidArgument,
                        "plan @" + step.symbol + ": communicator " +
                            std::to_string(c) + " on stream " +
                            std::to_string(st));
        commStreams[c].insert(static_cast<int>(st));
      }
    const pm::RankProgram *mine = nullptr;
    for (const pm::RankProgram &rp : step.programs) {
      auto w = ranks.world(step.mesh, rp.rank);
      if (!w.isOk())
        return w.status().withContext("plan @" + step.symbol);
      if (*w == worldRank)
        mine = &rp;
    }
    // NCCL moves device memory: a plan using an NCCL communicator keeps
    // every buffer on the device, so all its communicators must be NCCL.
    const std::set<pm::Backend> &used = decoded->backends[stepIndex];
    program.device = used.count(pm::Backend::Nccl) != 0;
    if (program.device && used.size() > 1)
      return Status(StatusCode::InvalidArgument,
                    "plan @" + step.symbol +
                        " mixes nccl and gloo communicators: its buffers are "
                        "either on the device (nccl) or on the host (gloo)");
    const std::map<int32_t, std::string> &symbols =
        program.device ? cudaSymbols : cpuSymbols;
    program.communicators.reserve(plan.communicators.size());
    for (size_t c = 0; c < plan.communicators.size(); ++c) {
      const pm::Communicator &comm = plan.communicators[c];
      CommunicatorSpec spec;
      spec.backend =
          comm.backend == pm::Backend::Nccl ? Backend::Nccl : Backend::Gloo;
      // Communicators the plan does not use, or that this rank is not a
      // member of, are not created: neither their members nor their names
      // are copied (a worker of 4,096 ranks is in a few of hundreds).
      auto streams = commStreams.find(static_cast<int32_t>(c));
      if (streams != commStreams.end()) {
        spec.name = comm.name;
        if (Status s = ranks.worlds(comm.mesh, comm.ranks, spec.ranks);
            !s.isOk())
          return s.withContext("communicator @" + comm.name);
        spec.streams.assign(streams->second.begin(), streams->second.end());
      }
      program.communicators.push_back(std::move(spec));
    }
    if (!mine) {
      program.hasProgram = false;
      out.push_back(std::move(program));
      continue;
    }
    program.arenaBytes = mine->arenaBytes;
    program.numEvents = static_cast<int>(mine->instructions.size());
    bool launches = false;
    for (size_t i = 0; i < mine->instructions.size(); ++i) {
      const pm::Instruction &in = mine->instructions[i];
      Instruction instr;
      instr.name = describe(plan, in, ranks, step.mesh);
      if (!in.loc.file.empty())
        instr.location = in.loc.str();
      if (in.isAsync())
        instr.event = static_cast<int>(i);
      switch (in.kind) {
      case pm::InstrKind::Launch: {
        instr.kind = OpKind::Launch;
        instr.stream = static_cast<int>(in.launch.stream);
        auto it = symbols.find(in.launch.kernel);
        if (it == symbols.end())
          return Status(StatusCode::InvalidArgument,
                        "plan @" + step.symbol + ": " + instr.name +
                            (program.device
                                 ? " has no compiled code for CUDA (its "
                                   "communicators use nccl: compile with "
                                   "--target=cuda)"
                                 : " has no compiled code for the CPU"));
        instr.kernelSymbol = it->second;
        if (!program.device)
          if (auto params = cpuParams.find(in.launch.kernel);
              params != cpuParams.end())
            instr.kernelParams = params->second;
        for (const pm::Buffer &b : in.launch.ins)
          instr.ins.push_back(buffer(b));
        for (const pm::Buffer &b : in.launch.outs)
          instr.outs.push_back(buffer(b));
        launches = true;
        break;
      }
      case pm::InstrKind::Send:
      case pm::InstrKind::Recv: {
        instr.kind =
            in.kind == pm::InstrKind::Send ? OpKind::Send : OpKind::Recv;
        instr.buffer = buffer(in.p2p.buffer);
        instr.stream = static_cast<int>(in.p2p.stream);
        instr.group = in.p2p.group ? static_cast<int>(*in.p2p.group) : -1;
        instr.communicator = in.p2p.communicator;
        auto peer = ranks.world(step.mesh, in.p2p.peer);
        if (!peer.isOk())
          return peer.status();
        instr.peer = *peer;
        break;
      }
      case pm::InstrKind::Collective: {
        const pm::CollectiveInstr &c = in.collective;
        instr.kind = OpKind::Collective;
        instr.collective = collectiveKind(c.kind);
        instr.reduce = reduceOp(c.reduction);
        instr.buffer = buffer(c.input);
        instr.output = buffer(c.output);
        instr.stream = static_cast<int>(c.stream);
        instr.group = c.group ? static_cast<int>(*c.group) : -1;
        instr.communicator = c.communicator;
        // A root is a position in the communicator (the plan's semantics,
        // checked by validatePlan), not a rank of the mesh.
        if (c.root)
          instr.root = static_cast<int>(*c.root);
        break;
      }
      case pm::InstrKind::Wait:
        instr.kind = OpKind::Wait;
        for (int32_t e : in.wait.events)
          instr.waitEvents.push_back(e);
        break;
      case pm::InstrKind::FeedBuffer:
      case pm::InstrKind::FetchBuffer:
        instr.kind =
            in.kind == pm::InstrKind::FeedBuffer ? OpKind::Feed : OpKind::Fetch;
        instr.index = static_cast<int>(in.io.index);
        instr.buffer = buffer(in.io.buffer);
        instr.keepOnly = in.io.keepOnly;
        break;
      case pm::InstrKind::StateBuffer:
        instr.kind = OpKind::State;
        instr.buffer = buffer(in.stateBuffer.buffer);
        instr.stateKey =
            "@" + in.stateBuffer.actorMesh + "::@" + in.stateBuffer.state;
        break;
      case pm::InstrKind::PrintBuffers: {
        instr.kind = OpKind::Print;
        for (const pm::Buffer &b : in.print.buffers)
          instr.ins.push_back(buffer(b));
        if (Status bad = printfmt::parse(
                in.print.format, in.print.buffers.size(), instr.printFormat);
            !bad)
          return Status(StatusCode::InvalidArgument, "plan @" + step.symbol +
                                                         ": " + instr.name +
                                                         ": " + bad.message());
        break;
      }
      }
      program.instructions.push_back(std::move(instr));
    }
    if (program.device) {
      if (cudaLibrary)
        program.cudaLibrary =
            std::make_shared<const pm::KernelLibraryBlob>(*cudaLibrary);
    } else if (launches && library) {
      program.kernelLibrary = library->code;
    }
    out.push_back(std::move(program));
  }
  return out;
}

} // namespace monarch::worker
