//===- PlanSummary.cpp - What a planned program does per rank -------------===//
//
// Counts read off a planned module (PlanSummary.h). Work is the product of
// each linalg op's static loop extents, counted once per kernel symbol
// however many ranks launch it.
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/PlanSummary.h"

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <tuple>

using namespace mlir;

namespace monarch::codegen {

/// Iterations of the structured ops under `root` (the product of each
/// linalg op's static loop extents): the measure of work that a rank's
/// share of a step's compute is counted in.
static int64_t structuredWork(Operation *root) {
  int64_t total = 0;
  root->walk([&](linalg::LinalgOp op) {
    int64_t n = 1;
    for (int64_t extent : op.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(extent))
        return;
      n *= extent;
    }
    total += n;
  });
  return total;
}

int64_t tracedWork(ModuleOp module) {
  int64_t total = 0;
  SymbolTableCollection tables;
  for (auto fn : module.getOps<func::FuncOp>()) {
    total += structuredWork(fn);
    fn.walk([&](Operation *op) {
      StringAttr actorMeshName, endpointName;
      if (auto call = dyn_cast<CallOp>(op)) {
        actorMeshName = call.getActorMeshName();
        endpointName = call.getEndpointName();
      } else if (auto bcast = dyn_cast<BroadcastOp>(op)) {
        actorMeshName = bcast.getActorMeshName();
        endpointName = bcast.getEndpointName();
      } else {
        return;
      }
      auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
          op, FlatSymbolRefAttr::get(actorMeshName));
      if (!actorMesh)
        return;
      auto actorClass = tables.lookupNearestSymbolFrom<ActorClassOp>(
          op, actorMesh.getActorClassAttr());
      MeshOpInterface mesh = lookupMesh(op, actorMesh.getMeshAttr(), &tables);
      if (!actorClass || !mesh)
        return;
      Operation *endpoint =
          SymbolTable::lookupSymbolIn(actorClass, endpointName);
      if (!endpoint)
        return;
      int64_t ranks = 1;
      for (int64_t extent : mesh.getMeshShape())
        ranks *= extent;
      total += structuredWork(endpoint) * ranks;
    });
  }
  return total;
}

PlanSummary summarizePlan(ModuleOp planned) {
  PlanSummary summary;
  // Work per kernel symbol, computed once however many ranks launch it.
  llvm::DenseMap<StringAttr, int64_t> kernelWork;
  auto workOf = [&](LaunchOp launch) -> int64_t {
    StringAttr name = launch.getKernelAttr().getAttr();
    auto it = kernelWork.find(name);
    if (it != kernelWork.end())
      return it->second;
    Operation *kernel = SymbolTable::lookupSymbolIn(planned, name);
    int64_t work = kernel ? structuredWork(kernel) : 0;
    kernelWork[name] = work;
    return work;
  };
  std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> links;
  std::map<std::tuple<std::string, std::string, std::string>,
           std::pair<int64_t, int64_t>>
      colls;
  SymbolTableCollection tables;
  // A mesh's root proc mesh and each of its ranks there (empty when the
  // chain does not resolve; a verified module always does).
  auto rootOf = [&](Operation *from, FlatSymbolRefAttr mesh)
      -> std::pair<std::string, SmallVector<int64_t>> {
    MeshOpInterface m = lookupMesh(from, mesh, &tables);
    ProcMeshOp root = m ? getRootMesh(m, &tables) : ProcMeshOp();
    auto ranks = m ? getRootRanks(m, &tables)
                   : FailureOr<SmallVector<int64_t>>(failure());
    if (!root || failed(ranks))
      return {};
    return {root.getSymName().str(), *ranks};
  };
  // Rank `r` of a mesh as a rank of its root (itself when out of range).
  auto rootRank = [](ArrayRef<int64_t> ranks, int64_t r) {
    return r >= 0 && r < static_cast<int64_t>(ranks.size()) ? ranks[r] : r;
  };
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>>
      commMembers;
  std::map<std::string, std::pair<std::string, SmallVector<int64_t>>> planRoots;
  planned->walk([&](CommunicatorOp comm) {
    auto [root, ranks] = rootOf(comm, comm.getMeshAttr());
    std::vector<int64_t> members;
    for (int64_t r : comm.getRanks())
      members.push_back(rootRank(ranks, r));
    commMembers[comm.getSymName().str()] = {root, members};
  });
  planned->walk([&](PlanOp plan) {
    std::string name = plan.getSymName().str();
    planRoots[name] = rootOf(plan, plan.getMeshAttr());
    // A member (monarch.rank_member) is summarised as its program with its
    // own rank, peers and communicators.
    DenseMap<int64_t, RankProgramOp> programs;
    for (Operation &top : plan.getBody().front()) {
      auto program = dyn_cast<RankProgramOp>(top);
      auto member = dyn_cast<RankMemberOp>(top);
      if (program)
        programs[program.getRank()] = program;
      else if (member)
        program = programs.lookup(member.getOf());
      if (!program)
        continue;
      PlanSummary::Rank rank;
      rank.plan = name;
      rank.rank =
          static_cast<int64_t>(member ? member.getRank() : program.getRank());
      rank.arenaBytes = static_cast<int64_t>(program.getArena());
      rank.peakBytes = rank.arenaBytes;
      if (auto peak = program->getAttrOfType<IntegerAttr>("monarch.peak_bytes"))
        rank.peakBytes = peak.getInt();
      size_t peer = 0, comm = 0;
      for (Operation &op : program.getBody().front()) {
        ++rank.ops;
        if (auto launch = dyn_cast<LaunchOp>(op)) {
          ++rank.kernels;
          rank.work += workOf(launch);
        } else if (auto send = dyn_cast<SendOp>(op)) {
          ++rank.sends;
          int64_t to = member && peer < member.getPeers().size()
                           ? member.getPeers()[peer]
                           : static_cast<int64_t>(send.getPeer());
          ++peer;
          links[{name, rank.rank, to}] += send.getBuffer().getSizeInBytes();
        } else if (auto state = dyn_cast<StateBufferOp>(op)) {
          rank.stateBytes += state.getBuffer().getSizeInBytes();
        } else if (isa<RecvOp>(op)) {
          ++rank.recvs;
          ++peer;
        } else if (auto c = dyn_cast<CollectiveOp>(op)) {
          ++rank.collectives;
          StringRef commName = c.getComm();
          if (member && comm < member.getComms().size())
            if (auto ref = dyn_cast<FlatSymbolRefAttr>(member.getComms()[comm]))
              commName = ref.getValue();
          ++comm;
          auto &entry = colls[{name, commName.str(),
                               stringifyCollectiveKind(c.getKind()).str()}];
          entry.first += c.getInput().getSizeInBytes();
          ++entry.second;
        }
      }
      summary.ranks.push_back(rank);
    }
  });
  for (auto &[key, bytes] : links) {
    PlanSummary::Link link;
    std::tie(link.plan, link.from, link.to) = key;
    link.bytes = bytes;
    const auto &[root, ranks] = planRoots[link.plan];
    link.root = root;
    link.fromRoot = rootRank(ranks, link.from);
    link.toRoot = rootRank(ranks, link.to);
    summary.links.push_back(std::move(link));
  }
  for (auto &[key, value] : colls) {
    PlanSummary::Collective c;
    std::tie(c.plan, c.communicator, c.kind) = key;
    c.bytes = value.first;
    c.count = value.second;
    std::tie(c.root, c.members) = commMembers[c.communicator];
    summary.collectives.push_back(std::move(c));
  }
  return summary;
}

} // namespace monarch::codegen
