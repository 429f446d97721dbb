//===- Lowering.cpp - Stages and plan summaries of a trace ------*- C++ -*-===//
//
// Lowers a copy of the traced module through the compile driver
// (CompileSession, as monarch-compile does), so `fn.ir(stage)` and the C++
// API print exactly what monarch-opt and monarch-compile produce and a
// failure carries the same reproducer; and summarizes a
// planned module (per-rank work, bytes per link, arena sizes).
//
//===----------------------------------------------------------------------===//

#include "TraceBuilderImpl.h"
#include "monarch/Frontend/TraceBuilderMLIR.h"

#include "monarch/Driver/CompileSession.h"
#include "monarch/Transforms/Pipelines.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;

namespace monarch::frontend {

/// Lowers a copy of the module to `stage`; the copy, or an error.
static Result<OwningOpRef<ModuleOp>> lowerCopy(TraceBuilder::Impl &I,
                                               const std::string &stageName,
                                               const std::string &backend) {
  std::optional<Stage> stage = parseStage(stageName);
  if (!stage)
    return I.error({}, "unknown stage '" + stageName +
                           "' (stages: traced, partitioned, split, planned)");
  if (!I.stack.empty())
    return I.error({}, "tracing is still in progress");
  OwningOpRef<ModuleOp> copy =
      llvm::cast<ModuleOp>(I.module->getOperation()->clone());
  driver::CompileOptions options;
  options.backend = backend;
  driver::CompileSession session(I.ctx, options);
  LogicalResult ok = success();
  std::string diags =
      I.collectDiagnostics([&] { ok = session.lower(*copy, *stage); });
  if (failed(ok)) {
    if (session.reproducer().empty())
      return I.error({}, session.error());
    return I.error({}, "lowering to '" + stageName + "' failed" +
                           (diags.empty() ? std::string(" (no diagnostic)")
                                          : ":\n" + diags) +
                           "\nreproduce with:\n  " + session.reproducer());
  }
  return copy;
}

ModuleOp tracedModule(const TraceBuilder &builder) {
  return const_cast<TraceBuilder::Impl &>(builder.impl()).module.get();
}

Result<OwningOpRef<ModuleOp>> cloneTracedModule(const TraceBuilder &builder,
                                                llvm::StringRef functionName) {
  const TraceBuilder::Impl &I = builder.impl();
  if (!I.stack.empty())
    return I.error({}, "tracing is still in progress");
  OwningOpRef<ModuleOp> copy =
      llvm::cast<ModuleOp>(tracedModule(builder)->clone());
  std::string from = builder.functionName();
  if (functionName.empty() || functionName == from)
    return copy;
  if (from.empty())
    return I.error({}, "no controller function was traced");
  if (SymbolTable::lookupSymbolIn(*copy, functionName))
    return I.error({}, "cannot rename the traced function to '" +
                           functionName.str() + "': the symbol is taken");
  Operation *fn = SymbolTable::lookupSymbolIn(*copy, from);
  if (failed(SymbolTable::replaceAllSymbolUses(
          fn, StringAttr::get(copy->getContext(), functionName), *copy)))
    return I.error({}, "cannot rename the uses of '" + from + "'");
  SymbolTable::setSymbolName(fn, functionName);
  return copy;
}

Result<std::string> TraceBuilder::lower(const LowerOptions &options) const {
  Impl &I = *pimpl;
  auto copy = lowerCopy(I, options.stage, options.backend);
  if (!copy)
    return copy.status();
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (options.debugInfo) {
    // Locations inline on each op (no #loc aliases): readable, greppable.
    flags.enableDebugInfo(true, /*prettyForm=*/false);
    flags.useLocalScope();
  }
  (*copy)->print(os, flags);
  return text;
}

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

/// The work of the traced program on one machine: its functions' own ops,
/// and each endpoint call's body once per rank of the mesh it runs on.
static int64_t tracedWork(ModuleOp module) {
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

Result<PlanSummary>
TraceBuilder::planSummary(const std::string &backend) const {
  Impl &I = *pimpl;
  auto copy = lowerCopy(I, "planned", backend);
  if (!copy)
    return copy.status();
  PlanSummary summary;
  summary.globalWork = tracedWork(tracedModule(*this));
  // Work per kernel symbol, computed once however many ranks launch it.
  llvm::DenseMap<StringAttr, int64_t> kernelWork;
  auto workOf = [&](LaunchOp launch) -> int64_t {
    StringAttr name = launch.getKernelAttr().getAttr();
    auto it = kernelWork.find(name);
    if (it != kernelWork.end())
      return it->second;
    Operation *kernel = SymbolTable::lookupSymbolIn(**copy, name);
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
  (*copy)->walk([&](CommunicatorOp comm) {
    auto [root, ranks] = rootOf(comm, comm.getMeshAttr());
    std::vector<int64_t> members;
    for (int64_t r : comm.getRanks())
      members.push_back(rootRank(ranks, r));
    commMembers[comm.getSymName().str()] = {root, members};
  });
  (*copy)->walk([&](PlanOp plan) {
    std::string name = plan.getSymName().str();
    planRoots[name] = rootOf(plan, plan.getMeshAttr());
    for (auto program : plan.getBody().front().getOps<RankProgramOp>()) {
      PlanSummary::Rank rank;
      rank.plan = name;
      rank.rank = static_cast<int64_t>(program.getRank());
      rank.arenaBytes = static_cast<int64_t>(program.getArena());
      rank.peakBytes = rank.arenaBytes;
      if (auto peak = program->getAttrOfType<IntegerAttr>("monarch.peak_bytes"))
        rank.peakBytes = peak.getInt();
      for (Operation &op : program.getBody().front()) {
        ++rank.ops;
        if (auto launch = dyn_cast<LaunchOp>(op)) {
          ++rank.kernels;
          rank.work += workOf(launch);
        } else if (auto send = dyn_cast<SendOp>(op)) {
          ++rank.sends;
          links[{name, rank.rank, static_cast<int64_t>(send.getPeer())}] +=
              send.getBuffer().getSizeInBytes();
        } else if (auto state = dyn_cast<StateBufferOp>(op)) {
          rank.stateBytes += state.getBuffer().getSizeInBytes();
        } else if (isa<RecvOp>(op)) {
          ++rank.recvs;
        } else if (auto c = dyn_cast<CollectiveOp>(op)) {
          ++rank.collectives;
          auto &entry = colls[{name, c.getComm().str(),
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

} // namespace monarch::frontend
