//===- PlanTransfers.cpp - monarch-plan-transfers ---------------*- C++ -*-===//
//
// Lowers the per-rank form of monarch-specialize-ranks to a `monarch.plan`
// per worker program: one instruction stream per rank.
//
// Each rank function is cut at every communication point: each run of
// compute becomes a kernel (`func.func` taking its inputs as tensors and
// writing its outputs into memrefs) called by `monarch.launch`; channel ends
// become `monarch.send`/`monarch.recv` pairs on a communicator over the
// whole mesh, collectives become `monarch.collective`s on a communicator per
// group of ranks (`plan.group`). Every rank issues communication in the
// order of the worker program, which is the same order on every rank; that
// is what keeps the plan free of deadlocks (checked by monarch-verify-plan).
// Compute runs on stream 0, point-to-point transfers on stream 1 and
// collectives on stream 2, with waits only where a buffer crosses streams,
// so transfers overlap compute. Buffers get unique offsets here;
// monarch-schedule reorders and packs them.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "LocalCanonicalizer.h"
#include "MeshRanks.h"
#include "PassUtils.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <map>
#include <numeric>

#define DEBUG_TYPE "monarch-plan-transfers"

namespace monarch {
#define GEN_PASS_DEF_MONARCHPLANTRANSFERS
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;
using rankform::kGroupAttr;
using rankform::kShardAttr;

namespace {

constexpr int64_t kComputeStream = 0;
constexpr int64_t kP2PStream = 1;
constexpr int64_t kCollectiveStream = 2;
constexpr int64_t kAlignment = 64;

/// One rank function, read back from the per-rank form.
struct RankCode {
  int64_t rank;
  func::FuncOp fn;            // Per-rank tensor code.
  SmallVector<Value> outputs; // Null when not on this rank.
  /// Per output: where this rank's shard of it starts (empty: whole).
  std::vector<SmallVector<int64_t>> outputOffsets;
  /// Per worker input: where the shard this rank is fed starts (empty:
  /// the whole value).
  std::vector<SmallVector<int64_t>> inputOffsets;
  /// Per output: whether this rank returns it to the controller.
  std::vector<bool> fetches;
  /// Per output: whether it may stay resident on the workers (the worker
  /// program's `monarch.keep` result attribute): every rank holding it then
  /// has a fetch_buffer of it, `keep_only` where it does not return it.
  std::vector<bool> keeps;
  SmallVector<std::pair<Attribute, Value>> states; // State ref, final value.
  unsigned numWorkerArgs = 0;
};

/// Whether `op` only moves or sets data: a transpose, a broadcast or a
/// fill, named or as a linalg.generic.
bool onlyMovesData(Operation *op) {
  if (isa<linalg::TransposeOp, linalg::BroadcastOp, linalg::FillOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic && (linalg::isaTransposeOpInterface(generic) ||
                     linalg::isaBroadcastOpInterface(generic) ||
                     linalg::isaFillOpInterface(generic));
}

/// Takes out of `run` (ops of one block, in order) the data movement whose
/// results only `contraction` uses, directly or through other such ops,
/// and returns it in order. Nothing left in `run` uses what is taken, so
/// it may run after the rest of `run`, just before the contraction.
SmallVector<Operation *> takeContractionPrologue(SmallVector<Operation *> &run,
                                                 Operation *contraction) {
  Block *block = contraction->getBlock();
  llvm::SmallPtrSet<Operation *, 8> taken;
  taken.insert(contraction);
  SmallVector<Operation *> prologue;
  for (Operation *op : llvm::reverse(run)) {
    if (!onlyMovesData(op) || op->getNumResults() == 0)
      continue;
    bool feedsOnly = llvm::all_of(op->getUsers(), [&](Operation *user) {
      return taken.contains(block->findAncestorOpInBlock(*user));
    });
    if (!feedsOnly)
      continue;
    taken.insert(op);
    prologue.push_back(op);
  }
  if (prologue.empty())
    return prologue;
  llvm::erase_if(run, [&](Operation *op) { return taken.contains(op); });
  std::reverse(prologue.begin(), prologue.end());
  return prologue;
}

struct MonarchPlanTransfersPass
    : monarch::impl::MonarchPlanTransfersBase<MonarchPlanTransfersPass> {
  using Base::Base;
  // Clones copy the options only; the caches below are per run.
  MonarchPlanTransfersPass(const MonarchPlanTransfersPass &other)
      : Base(other) {}

  // Per-run caches, reset at the start of every run (a pass manager may
  // run this pass on many modules).
  std::unique_ptr<SymbolTableCollection> tablesPtr;
  std::unique_ptr<MeshResolver> meshesPtr;
  /// The monarch.topology of each proc mesh (null when it has none).
  llvm::DenseMap<Attribute, TopologyOp> topologies;
  SymbolTableCollection &tables() { return *tablesPtr; }
  /// Where this rank's shard of split state `ref` (@actor_mesh::@state,
  /// its declaration carrying a dist) starts in the global value; null for
  /// state held whole.
  DenseI64ArrayAttr stateShard(ModuleOp module, int64_t rank, SymbolRefAttr ref,
                               BufferAttr buf, OpBuilder &b) {
    auto actorMesh = tables().lookupNearestSymbolFrom<ActorMeshOp>(
        module, FlatSymbolRefAttr::get(ref.getRootReference()));
    if (!actorMesh)
      return {};
    auto cls = tables().lookupNearestSymbolFrom<ActorClassOp>(
        actorMesh, actorMesh.getActorClassAttr());
    auto decl =
        cls ? tables().lookupSymbolIn<StateOp>(cls, ref.getLeafReference())
            : StateOp();
    DistAttr dist = decl ? decl.getDistAttr() : DistAttr();
    const MeshRanks *mesh = resolve(actorMesh, actorMesh.getMeshAttr());
    auto type = dyn_cast<RankedTensorType>(buf.getType());
    if (!dist || !mesh || !type ||
        static_cast<int64_t>(dist.getSplit().size()) != type.getRank())
      return {};
    int64_t local = mesh->localRank(rank);
    if (local < 0)
      return {};
    SmallVector<int64_t> offsets;
    for (int64_t d = 0; d < type.getRank(); ++d)
      offsets.push_back(mesh->indexAlong(local, dist.getSplitDims(d)) *
                        type.getDimSize(d));
    return b.getDenseI64ArrayAttr(offsets);
  }
  const ShardRoute &shardRoute(const MeshRanks &from, const MeshRanks &to,
                               DistAttr dist) {
    return meshesPtr->shardRoute(from, to, dist);
  }
  const MeshRanks *resolve(Operation *from, FlatSymbolRefAttr ref) {
    return meshesPtr->resolve(from, ref);
  }

  void runOnOperation() override {
    tablesPtr = std::make_unique<SymbolTableCollection>();
    meshesPtr = std::make_unique<MeshResolver>(*tablesPtr);
    kernels.clear();
    keptByHash.clear();
    runsByHash.clear();
    copyKernels.clear();
    comms.clear();
    commByName.clear();
    commOfGroup.clear();
    groupCache.clear();
    topologies.clear();
    if (backend != "gloo" && backend != "nccl") {
      getOperation().emitError("monarch-plan-transfers: unknown backend '")
          << backend << "' (expected gloo or nccl)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> workers;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr(MonarchDialect::getWorkerForAttrName()))
        workers.push_back(fn);
    for (func::FuncOp worker : workers)
      if (failed(planWorker(worker)))
        return signalPassFailure();
    // Rank coordinates are constants now: fold them out of the kernels.
    LocalCanonicalizer canonicalizer;
    SmallVector<Operation *> roots(kernels.begin(), kernels.end());
    if (failed(canonicalizer.run(roots)))
      return signalPassFailure();
    OpPassManager cse(func::FuncOp::getOperationName());
    cse.addPass(createCSEPass());
    for (func::FuncOp kernel : kernels)
      if (failed(runPipeline(cse, kernel)))
        return signalPassFailure();
  }

  /// Reads the rank functions of `worker` (the declaration left by
  /// monarch-specialize-ranks) back into `codes`.
  LogicalResult readRanks(func::FuncOp worker, const MeshRanks &procMesh,
                          SmallVectorImpl<RankCode> &codes);

  /// Emits one rank program (`code.fetches[j]`: it returns output j).
  LogicalResult lower(RankCode &code, PlanOp plan, const MeshRanks &procMesh,
                      StringRef backendName);

  LogicalResult planWorker(func::FuncOp worker);

  /// The ranks that `rank` sends the value of `send` to (itself excluded:
  /// monarch-specialize-ranks made that a local value).
  SmallVector<int64_t> sendDests(ChannelSendOp send, int64_t rank);
  /// The rank that `rank` receives the value of `recv` from.
  int64_t recvSource(ChannelRecvOp recv, int64_t rank);
  /// The interconnect between `ranks` of `procMesh` (which `world` names),
  /// when the mesh describes its hosts; null otherwise.
  LinkKindAttr linkBetween(FlatSymbolRefAttr world, const MeshRanks &procMesh,
                           ArrayRef<int64_t> ranks);
  /// `program` (lowered for `from`, the first rank of its class) copied for
  /// `to`, whose function is equal to `from`'s but for its groups: its own
  /// peers, communicators, links and offsets. With `classPrograms`, where
  /// its links and communicator sizes are `program`'s, a monarch.rank_member
  /// of `program` with those tables instead (and `program` is returned).
  /// Null, with nothing built, when a channel end gives `to` another number
  /// of transfers than `from` (then `to` is lowered on its own).
  RankProgramOp copyProgram(RankProgramOp program, RankCode &from, RankCode &to,
                            PlanOp plan, const MeshRanks &procMesh);

  /// Each collective's group of ranks (its `plan.group`, taken off the op
  /// so that the functions of a class compare equal).
  DenseMap<Operation *, DenseI64ArrayAttr> groups;
  /// The group of collective `op` on `rank`: its `plan.group` on the rank
  /// of its function, and on another member of a class function (one
  /// function for the ranks of a class, monarch-specialize-ranks classes=1)
  /// the group of that member through the mesh `plan.group_mesh` names.
  DenseI64ArrayAttr groupFor(Operation *op, int64_t rank);
  /// groupFor's answers per collective and group (its leader): the members
  /// of one group ask for the same list, which was built and uniqued once
  /// per member (at 4,096 ranks, 16,000 lists of 256 ranks).
  DenseMap<std::pair<Operation *, int64_t>, DenseI64ArrayAttr> groupCache;
  /// The communicator of each group list (uniqued, so keyed by the
  /// attribute instead of hashing its ranks once per member).
  DenseMap<Attribute, CommunicatorOp> commOfGroup;

  CommunicatorOp communicator(OpBuilder &b, Location loc, StringRef planName,
                              FlatSymbolRefAttr mesh, ArrayRef<int64_t> ranks) {
    // Looked up by the members themselves (hashed, not copied: a world
    // communicator's key is every rank, asked for by every rank's sends).
    auto it = comms.find(ranks);
    if (it != comms.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(currentPlan);
    std::string name = (planName + ".comm" + Twine(comms.size())).str();
    auto comm = CommunicatorOp::create(
        b, loc, b.getStringAttr(name), mesh, b.getDenseI64ArrayAttr(ranks),
        BackendAttr::get(b.getContext(),
                         backend == "nccl" ? Backend::Nccl : Backend::Gloo));
    // The key views the members stored in the op's attribute (uniqued in
    // the context: they live as long as it).
    comms[comm.getRanks()] = comm;
    commByName[comm.getSymNameAttr()] = comm;
    return comm;
  }
  /// The communicators built, by name.
  DenseMap<StringAttr, CommunicatorOp> commByName;

  /// Ranks of a class run the same code, so most kernels outlined for one
  /// rank equal another rank's (the GPT step on 64x4: 19,744 kernels, 159
  /// bodies). Each set of equal kernels is kept once: `kernel` (just
  /// outlined) is kept and returned, or it is erased at once and the equal
  /// kernel outlined before it returned, which its launch names. The
  /// per-kernel clean-ups below then run once per body instead of once per
  /// rank (and codegen groups bodies, not copies). Until session 27 the
  /// copies stayed in the module to the end of the pass (at 4,096 ranks
  /// some 20,000 functions built, walked and erased there).
  func::FuncOp keepOrShare(func::FuncOp kernel);

  /// Outlines `ops` (reading `ins`, writing `outs`) as kernel `name` of
  /// `type`, located `at`, at the builder's place; the kernel kept
  /// (keepOrShare).
  func::FuncOp outlineKernel(OpBuilder &kb, Location at, StringRef name,
                             FunctionType type, ArrayRef<Value> ins,
                             ArrayRef<Operation *> ops, ArrayRef<Value> outs,
                             Location loc) {
    auto kernel = func::FuncOp::create(kb, at, name, type);
    kernel.setPrivate();
    Block *entry = kernel.addEntryBlock();
    kb.setInsertionPointToStart(entry);
    IRMapping map;
    for (auto [v, arg] :
         llvm::zip(ins, entry->getArguments().take_front(ins.size()))) {
      Value in = arg;
      if (!isa<RankedTensorType>(v.getType()))
        in = tensor::ExtractOp::create(kb, loc, arg, ValueRange{});
      map.map(v, in);
    }
    for (Operation *op : ops)
      kb.clone(*op, map);
    for (auto [v, arg] :
         llvm::zip(outs, entry->getArguments().drop_front(ins.size()))) {
      Value out = map.lookup(v);
      if (!isa<RankedTensorType>(out.getType()))
        out = tensor::FromElementsOp::create(
            kb, loc, RankedTensorType::get({}, out.getType()), out);
      auto m =
          bufferization::MaterializeInDestinationOp::create(kb, loc, out, arg);
      m.setRestrict(true);
      m.setWritable(true);
    }
    func::ReturnOp::create(kb, loc);
    return keepOrShare(kernel);
  }

  /// The kernels kept so far, by bodyHash (keepOrShare).
  DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> keptByHash;

  /// A run of a rank function that was outlined as `kernel`: its inputs,
  /// ops (clones first, as the kernel holds them) and outputs, in the order
  /// the kernel takes them. A later rank's run equal to it launches `kernel`
  /// without outlining a copy first (most of a 4,096-rank step's kernels).
  /// Valid while the worker's rank functions exist: planWorker clears it.
  struct OutlinedRun {
    func::FuncOp kernel;
    func::FuncOp source;
    SmallVector<Value> ins, outs;
    SmallVector<Operation *> ops;
  };
  DenseMap<llvm::hash_code, SmallVector<OutlinedRun, 1>> runsByHash;
  /// The kernel an earlier rank outlined from a run equal to this one (same
  /// kernel type, ops equal up to the values they read, inputs and outputs
  /// in the same places), or null.
  func::FuncOp outlinedBefore(llvm::hash_code hash, FunctionType type,
                              func::FuncOp source, ArrayRef<Value> ins,
                              ArrayRef<Operation *> ops, ArrayRef<Value> outs);
  DenseMap<ArrayRef<int64_t>, CommunicatorOp> comms;
  /// The state write-back copy kernel of each type.
  DenseMap<FunctionType, func::FuncOp> copyKernels;
  PlanOp currentPlan;
  SmallVector<func::FuncOp> kernels;
};

/// A hash of `kernel`'s signature and body that equal kernels share: per op
/// its name, attributes, properties and types, in order (not its location
/// nor which values it reads; OperationEquivalence decides collisions).
/// `h` combined with the hash of each op under `root` (itself included)
/// that equal ops share: name, attributes, properties and types, not the
/// values read nor the location.
llvm::hash_code combineShapes(llvm::hash_code h, Operation *root) {
  root->walk([&](Operation *op) {
    h = llvm::hash_combine(h, OperationEquivalence::computeHash(
                                  op, OperationEquivalence::ignoreHashValue,
                                  OperationEquivalence::ignoreHashValue,
                                  OperationEquivalence::IgnoreLocations));
  });
  return h;
}

llvm::hash_code bodyHash(func::FuncOp kernel) {
  llvm::hash_code h = hash_value(kernel.getFunctionType());
  for (Operation &op : kernel.getBody().front())
    h = combineShapes(h, &op);
  return h;
}

/// A hash that equal runs share (the kernel's type, then each op and the
/// ops nested in it as combineShapes hashes them, then where each output is
/// made).
llvm::hash_code runHash(FunctionType type, ArrayRef<Operation *> ops,
                        ArrayRef<Value> outs) {
  llvm::hash_code h = hash_value(type);
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(ops)) {
    position[op] = i;
    h = combineShapes(h, op);
  }
  for (Value v : outs)
    if (auto r = dyn_cast<OpResult>(v))
      h = llvm::hash_combine(h, position.lookup(r.getOwner()),
                             r.getResultNumber());
  return h;
}

func::FuncOp MonarchPlanTransfersPass::outlinedBefore(
    llvm::hash_code hash, FunctionType type, func::FuncOp source,
    ArrayRef<Value> ins, ArrayRef<Operation *> ops, ArrayRef<Value> outs) {
  auto it = runsByHash.find(hash);
  if (it == runsByHash.end())
    return {};
  for (OutlinedRun &run : it->second) {
    // Another rank's function only: values of one function may be read by
    // two runs in different places, which the comparison below would take
    // for equal.
    if (run.source == source || run.kernel.getFunctionType() != type ||
        run.ins.size() != ins.size() || run.ops.size() != ops.size() ||
        run.outs.size() != outs.size())
      continue;
    DenseMap<Value, Value> map;
    for (auto [mine, theirs] : llvm::zip(ins, run.ins))
      map[mine] = theirs;
    auto check = [&](Value mine, Value theirs) {
      auto m = map.find(mine);
      return success(m != map.end() && m->second == theirs);
    };
    auto mark = [&](Value mine, Value theirs) { map[mine] = theirs; };
    bool equal = llvm::all_of(llvm::zip(ops, run.ops), [&](auto pair) {
      return OperationEquivalence::isEquivalentTo(
          std::get<0>(pair), std::get<1>(pair), check, mark,
          OperationEquivalence::IgnoreLocations);
    });
    equal = equal && llvm::all_of(llvm::zip(outs, run.outs), [&](auto pair) {
              return map.lookup(std::get<0>(pair)) == std::get<1>(pair);
            });
    if (equal)
      return run.kernel;
  }
  return {};
}

func::FuncOp MonarchPlanTransfersPass::keepOrShare(func::FuncOp kernel) {
  SmallVector<func::FuncOp, 1> &same = keptByHash[bodyHash(kernel)];
  auto equal = llvm::find_if(same, [&](func::FuncOp other) {
    return other.getFunctionType() == kernel.getFunctionType() &&
           OperationEquivalence::isRegionEquivalentTo(
               &other.getBody(), &kernel.getBody(),
               OperationEquivalence::IgnoreLocations);
  });
  if (equal == same.end()) {
    same.push_back(kernel);
    kernels.push_back(kernel);
    return kernel;
  }
  func::FuncOp kept = *equal;
  kernel.erase();
  return kept;
}

/// Buffers, events and waits of one rank program under construction.
struct StreamState {
  StreamState(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  OpBuilder &b;
  Location loc;
  int64_t next = 0;
  DenseMap<Value, BufferAttr> buffers;
  struct Access {
    Value event;
    int64_t stream;
  };
  DenseMap<Attribute, Access> lastWrite;
  DenseMap<Attribute, SmallVector<Access>> readers;
  llvm::SetVector<Value> pending; // Events not waited for yet.

  BufferAttr bufferFor(Value v) {
    auto it = buffers.find(v);
    if (it != buffers.end())
      return it->second;
    Type t = v.getType();
    auto type = dyn_cast<RankedTensorType>(t);
    if (!type)
      type = RankedTensorType::get({}, t);
    BufferAttr buf = BufferAttr::get(b.getContext(), next, type);
    next = llvm::alignTo(next + buf.getSizeInBytes(), kAlignment);
    buffers[v] = buf;
    return buf;
  }

  /// Waits for whatever on another stream still touches `reads`/`writes`.
  void sync(ArrayRef<Attribute> reads, ArrayRef<Attribute> writes,
            int64_t stream) {
    llvm::SetVector<Value> events;
    auto need = [&](const Access &a) {
      if (a.event && a.stream != stream && pending.contains(a.event))
        events.insert(a.event);
    };
    for (Attribute r : reads)
      if (lastWrite.count(r))
        need(lastWrite[r]);
    for (Attribute w : writes) {
      if (lastWrite.count(w))
        need(lastWrite[w]);
      for (const Access &a : readers[w])
        need(a);
    }
    if (events.empty())
      return;
    WaitOp::create(b, loc, events.getArrayRef());
    for (Value e : events)
      pending.remove(e);
  }

  void record(Value event, ArrayRef<Attribute> reads,
              ArrayRef<Attribute> writes, int64_t stream) {
    if (event)
      pending.insert(event);
    for (Attribute r : reads)
      readers[r].push_back({event, stream});
    for (Attribute w : writes) {
      lastWrite[w] = {event, stream};
      readers[w].clear();
    }
  }
};

LogicalResult MonarchPlanTransfersPass::lower(RankCode &code, PlanOp plan,
                                              const MeshRanks &procMesh,
                                              StringRef) {
  MLIRContext *ctx = &getContext();
  ModuleOp module = getOperation();
  OpBuilder b(ctx);
  Block &body = code.fn.getBody().front();
  Location loc = code.fn.getLoc();
  b.setInsertionPointToEnd(&plan.getBody().front());
  auto program = RankProgramOp::create(b, loc, code.rank, 0);
  b.setInsertionPointToStart(&program.getBody().front());
  StreamState st(b, loc);
  auto world = FlatSymbolRefAttr::get(plan.getMeshAttr().getAttr());
  auto link = [&](ArrayRef<int64_t> ranks) {
    return linkBetween(world, procMesh, ranks);
  };
  std::string planName = plan.getSymName().str();

  // Inputs and persistent state. An input only the return uses is fed
  // when it is an output or the final value of a state (`self.w = x`: the
  // copy into the state's buffer reads it).
  auto onlyReturned = [](Value v) {
    return llvm::all_of(v.getUsers(), llvm::IsaPred<func::ReturnOp>);
  };
  auto isFinalState = [&](Value v) {
    return llvm::any_of(code.states,
                        [&](const auto &state) { return state.second == v; });
  };
  for (unsigned i = 0; i < code.numWorkerArgs; ++i) {
    Value arg = body.getArgument(i);
    if (onlyReturned(arg) && !llvm::is_contained(code.outputs, arg) &&
        !isFinalState(arg))
      continue;
    BufferAttr buf = st.bufferFor(arg);
    FeedBufferOp::create(b, loc, b.getI64IntegerAttr(i), buf,
                         code.inputOffsets[i].empty()
                             ? DenseI64ArrayAttr()
                             : b.getDenseI64ArrayAttr(code.inputOffsets[i]));
    st.record({}, {}, {buf}, -1);
  }
  // State arguments were created in the order the state was first used,
  // which is the order of `code.states`.
  DenseMap<Value, Attribute> stateOfArg;
  {
    unsigned i = code.numWorkerArgs;
    for (auto &[ref, finalValue] : code.states) {
      if (i >= body.getNumArguments())
        break;
      Value arg = body.getArgument(i++);
      BufferAttr buf = st.bufferFor(arg);
      StateBufferOp::create(
          b, loc, cast<SymbolRefAttr>(ref), buf,
          stateShard(module, code.rank, cast<SymbolRefAttr>(ref), buf, b));
      stateOfArg[arg] = ref;
    }
  }

  // Values needed after the code: outputs fetched here and final state.
  DenseSet<Value> liveOut;
  for (auto [j, v] : llvm::enumerate(code.outputs))
    if (code.fetches[j] || (v && j < code.keeps.size() && code.keeps[j]))
      liveOut.insert(v);
  for (auto &[ref, v] : code.states)
    liveOut.insert(v);

  unsigned kernelIndex = 0;
  int64_t groupIndex = 0;
  // Small transfers issued back to back share one group (one NCCL launch):
  // the group of the last point-to-point batch, if still open.
  std::optional<int64_t> openGroup;
  Operation *openGroupEnd = nullptr; // Last instruction of that batch.
  SmallVector<Attribute> openGroupBuffers;
  Block &stream = program.getBody().front();
  auto lastInstruction = [&]() -> Operation * {
    return stream.empty() ? nullptr : &stream.back();
  };
  auto p2pGroup = [&](BufferAttr buf, size_t count) -> std::optional<int64_t> {
    bool small = buf.getSizeInBytes() <= groupBytes;
    // Members of a group are unordered, so a transfer never joins a group
    // that already touches its buffer (a recv and the send forwarding it).
    if (small && openGroup && openGroupEnd == lastInstruction() &&
        !llvm::is_contained(openGroupBuffers, buf)) {
      openGroupBuffers.push_back(buf);
      return openGroup; // Join the batch just issued.
    }
    std::optional<int64_t> group;
    if (small || count > 1) // One sender's copies always go together.
      group = groupIndex++;
    openGroup = small ? group : std::nullopt;
    openGroupBuffers.assign({buf});
    return group;
  };
  auto closeP2PGroup = [&] {
    if (openGroup)
      openGroupEnd = lastInstruction();
  };
  SmallVector<Operation *> run;
  DenseMap<Operation *, bool> memo;
  // Results of the communication issued since the last kernel: compute
  // that does not read them may run while it is in flight.
  DenseSet<Value> recentComm;

  auto emitRun = [&]() -> LogicalResult {
    if (run.empty())
      return success();
    recentComm.clear();
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    llvm::SetVector<Value> ins;
    SmallVector<Operation *> sortedClones;
    collectOutlineInputs(run, ins, sortedClones, memo);
    SmallVector<Value> outs;
    for (Operation *op : run)
      for (Value r : op->getResults()) {
        // The return counts only through liveOut: an output fetched from
        // another rank is dead here.
        bool usedLater =
            liveOut.contains(r) ||
            llvm::any_of(r.getUsers(), [&](Operation *u) {
              Operation *top = body.findAncestorOpInBlock(*u);
              return !inRun.contains(top) && !isa<func::ReturnOp>(top);
            });
        if (usedLater)
          outs.push_back(r);
      }
    SmallVector<Operation *> runOps(run);
    run.clear();
    if (outs.empty())
      return success(); // Nothing observable: dead compute.

    // The kernel: ins as tensors, outs written into memrefs.
    SmallVector<Type> params;
    SmallVector<Attribute> inBufs, outBufs;
    for (Value v : ins) {
      BufferAttr buf = st.bufferFor(v);
      inBufs.push_back(buf);
      params.push_back(buf.getType());
    }
    for (Value v : outs) {
      BufferAttr buf = st.bufferFor(v);
      outBufs.push_back(buf);
      params.push_back(MemRefType::get(buf.getType().getShape(),
                                       buf.getType().getElementType()));
    }
    std::string name =
        (planName + ".r" + Twine(code.rank) + ".k" + Twine(kernelIndex++))
            .str();
    OpBuilder kb(ctx);
    FunctionType type = kb.getFunctionType(params, {});
    SmallVector<Operation *> kernelOps(sortedClones);
    kernelOps.append(runOps.begin(), runOps.end());
    llvm::hash_code hash = runHash(type, kernelOps, outs);
    func::FuncOp kernel =
        outlinedBefore(hash, type, code.fn, ins.getArrayRef(), kernelOps, outs);
    if (!kernel) {
      kb.setInsertionPoint(plan);
      kernel = outlineKernel(kb, runOps.front()->getLoc(), name, type,
                             ins.getArrayRef(), kernelOps, outs, loc);
      runsByHash[hash].push_back(
          {kernel, code.fn, SmallVector<Value>(ins.begin(), ins.end()),
           SmallVector<Value>(outs.begin(), outs.end()), kernelOps});
    }
    ++numKernels;

    st.sync(inBufs, outBufs, kComputeStream);
    Value e = LaunchOp::create(b, runOps.front()->getLoc(), EventType::get(ctx),
                               FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
                               b.getArrayAttr(inBufs), b.getArrayAttr(outBufs),
                               b.getI64IntegerAttr(kComputeStream));
    st.record(e, inBufs, outBufs, kComputeStream);
    return success();
  };

  // Emits `run` as a kernel, or as two when part of it does not wait for
  // the communication just issued and shares nothing with the rest: that
  // part first, so that it runs while the communication is in flight (the
  // second layer's weight update of a data-parallel step during the first
  // layer's gradient all_reduce; docs/pipeline.md, "Kernel boundaries").
  auto flush = [&]() -> LogicalResult {
    if (recentComm.empty() || run.size() < 2)
      return emitRun();
    // In program order: an op waits when it reads a recent result or an op
    // that waits; a waiting op reading a free one shares with it.
    llvm::SmallPtrSet<Operation *, 16> waits, frees;
    SmallVector<Operation *> free, waiting;
    bool shares = false;
    for (Operation *op : run) {
      bool wait = false, readsFree = false;
      op->walk([&](Operation *nested) {
        for (Value v : nested->getOperands()) {
          Operation *def = v.getDefiningOp();
          wait |= recentComm.contains(v) || (def && waits.contains(def));
          readsFree |= def && frees.contains(def);
        }
      });
      if (wait) {
        waits.insert(op);
        waiting.push_back(op);
        shares |= readsFree;
      } else {
        frees.insert(op);
        free.push_back(op);
      }
    }
    bool work = llvm::any_of(
        free, [](Operation *op) { return isa<linalg::LinalgOp>(op); });
    if (free.empty() || waiting.empty() || shares || !work)
      return emitRun();
    run.assign(free.begin(), free.end());
    if (failed(emitRun()))
      return failure();
    run.assign(waiting.begin(), waiting.end());
    return emitRun();
  };

  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto print = dyn_cast<DebugPrintOp>(op)) {
      // A host instruction reading the printed values' buffers once their
      // writers are done. Values no kernel stores (constants, which
      // kernels clone) are computed by a kernel of their own first.
      if (failed(flush()))
        return failure();
      for (Value v : print.getValues())
        if (Operation *def = v.getDefiningOp();
            def && isCloneable(def, memo) && !llvm::is_contained(run, def))
          run.push_back(def);
      llvm::sort(run, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      if (failed(flush()))
        return failure();
      SmallVector<Attribute> bufs;
      for (Value v : print.getValues())
        bufs.push_back(st.bufferFor(v));
      st.sync(bufs, {}, -1);
      PrintBuffersOp::create(b, print.getLoc(), print.getFormatAttr(),
                             b.getArrayAttr(bufs));
      continue;
    }
    bool isComm = isa<ChannelSendOp, ChannelRecvOp, AllReduceOp, AllGatherOp,
                      ReduceScatterOp, BroadcastFromOp, AllToAllOp>(op);
    if (!isComm) {
      if (isCloneable(&op, memo))
        continue;
      // cut-at-contractions: a contraction starts a kernel of its own; the
      // compute before it (its prologue, the previous epilogue) is one.
      // max-kernel-ops bounds the rest.
      bool atContraction = false;
      if (cutAtContractions && !run.empty())
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
          atContraction = linalg::isaContractionOpInterface(linalgOp);
      bool cut =
          atContraction || (maxKernelOps > 0 &&
                            static_cast<int64_t>(run.size()) >= maxKernelOps);
      if (!cut) {
        run.push_back(&op);
        continue;
      }
      // The contraction's own prologue moves with it: kernel codegen reads
      // a transpose or broadcast feeding a BLAS call through its maps, and
      // a zero fill as beta = 0, only when they are in the same kernel
      // (left behind, the transpose was materialised: 46 us a call on a
      // 8x16x256 tensor, and the fill written and read back).
      SmallVector<Operation *> prologue =
          atContraction ? takeContractionPrologue(run, &op)
                        : SmallVector<Operation *>();
      if (failed(flush()))
        return failure();
      run.assign(prologue.begin(), prologue.end());
      run.push_back(&op);
      continue;
    }
    if (failed(flush()))
      return failure();
    for (Value r : op.getResults())
      recentComm.insert(r);
    if (auto send = dyn_cast<ChannelSendOp>(op)) {
      SmallVector<int64_t> dests = sendDests(send, code.rank);
      if (dests.empty())
        continue;
      BufferAttr buf = st.bufferFor(send.getValue());
      st.sync({buf}, {}, kP2PStream);
      std::optional<int64_t> group = p2pGroup(buf, dests.size());
      CommunicatorOp comm =
          communicator(b, loc, planName, world, procMesh.roots);
      for (int64_t d : dests) {
        Value e = SendOp::create(
            b, send.getLoc(), EventType::get(ctx), buf, b.getI64IntegerAttr(d),
            FlatSymbolRefAttr::get(comm.getSymNameAttr()),
            b.getI64IntegerAttr(kP2PStream),
            group ? b.getI64IntegerAttr(*group) : IntegerAttr(),
            link({code.rank, d}));
        st.record(e, {buf}, {}, kP2PStream);
        ++numSends;
      }
      closeP2PGroup();
      continue;
    }
    if (auto recv = dyn_cast<ChannelRecvOp>(op)) {
      int64_t src = recvSource(recv, code.rank);
      BufferAttr buf = st.bufferFor(recv.getResult());
      st.sync({}, {buf}, kP2PStream);
      CommunicatorOp comm =
          communicator(b, loc, planName, world, procMesh.roots);
      std::optional<int64_t> group = p2pGroup(buf, 1);
      Value e = RecvOp::create(
          b, recv.getLoc(), EventType::get(ctx), buf, b.getI64IntegerAttr(src),
          FlatSymbolRefAttr::get(comm.getSymNameAttr()),
          b.getI64IntegerAttr(kP2PStream),
          group ? b.getI64IntegerAttr(*group) : IntegerAttr(),
          link({src, code.rank}));
      st.record(e, {}, {buf}, kP2PStream);
      closeP2PGroup();
      continue;
    }
    // Collectives.
    DenseI64ArrayAttr groupAttr = groupFor(&op, code.rank);
    if (!groupAttr)
      return op.emitOpError("needs its group of ranks ('")
             << kGroupAttr << "', set by monarch-specialize-ranks)";
    SmallVector<int64_t> group(groupAttr.asArrayRef());
    Value input = op.getOperand(0), output = op.getResult(0);
    BufferAttr in = st.bufferFor(input), out = st.bufferFor(output);
    CollectiveKind kind;
    ReductionKindAttr reduction;
    IntegerAttr root;
    if (auto ar = dyn_cast<AllReduceOp>(op)) {
      kind = CollectiveKind::AllReduce;
      reduction = ar.getReductionAttr();
    } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
      kind = CollectiveKind::AllGather;
      if (ag.getAxis() != 0)
        return op.emitOpError("gathers along axis ")
               << ag.getAxis()
               << "; plans gather along axis 0 only (transpose first)";
    } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
      kind = CollectiveKind::ReduceScatter;
      reduction = rs.getReductionAttr();
      if (rs.getAxis() != 0)
        return op.emitOpError("scatters along axis ")
               << rs.getAxis()
               << "; plans scatter along axis 0 only (transpose first)";
    } else if (auto a = dyn_cast<AllToAllOp>(op)) {
      kind = CollectiveKind::AllToAll;
      if (a.getSplit() != 0 || a.getConcat() != 0)
        return op.emitOpError("exchanges along dimensions ")
               << a.getSplit() << " and " << a.getConcat()
               << "; plans exchange along dimension 0 only (transpose first)";
    } else {
      auto bf = cast<BroadcastFromOp>(op);
      kind = CollectiveKind::Broadcast;
      root = b.getI64IntegerAttr(bf.getRoot());
    }
    st.sync({in}, {out}, kCollectiveStream);
    CommunicatorOp comm = communicator(b, loc, planName, world, group);
    Value e = CollectiveOp::create(
        b, op.getLoc(), EventType::get(ctx), CollectiveKindAttr::get(ctx, kind),
        reduction, in, out, FlatSymbolRefAttr::get(comm.getSymNameAttr()), root,
        b.getI64IntegerAttr(kCollectiveStream), IntegerAttr(), link(group));
    st.record(e, {in}, {out}, kCollectiveStream);
    ++numCollectives;
  }
  if (failed(flush()))
    return failure();

  // Final state goes back into the state buffers (a copy kernel each).
  for (auto [ref, finalValue] : code.states) {
    Value initial;
    for (auto &[arg, r] : stateOfArg)
      if (r == ref)
        initial = arg;
    if (!initial || initial == finalValue)
      continue;
    BufferAttr src = st.bufferFor(finalValue), dst = st.bufferFor(initial);
    std::string name =
        (planName + ".r" + Twine(code.rank) + ".k" + Twine(kernelIndex++))
            .str();
    OpBuilder kb(ctx);
    kb.setInsertionPoint(plan);
    auto memref = MemRefType::get(dst.getType().getShape(),
                                  dst.getType().getElementType());
    // A copy kernel is its type: one per type for the whole module (every
    // rank of a 4,096-rank step wrote its state back through its own,
    // 8,192 kernels that reached codegen).
    FunctionType type = kb.getFunctionType({src.getType(), memref}, {});
    func::FuncOp &kernel = copyKernels[type];
    if (!kernel) {
      kernel = func::FuncOp::create(kb, loc, name, type);
      kernel.setPrivate();
      Block *entry = kernel.addEntryBlock();
      kb.setInsertionPointToStart(entry);
      auto m = bufferization::MaterializeInDestinationOp::create(
          kb, loc, entry->getArgument(0), entry->getArgument(1));
      m.setRestrict(true);
      m.setWritable(true);
      func::ReturnOp::create(kb, loc);
      kernels.push_back(kernel);
    }
    st.sync({src}, {dst}, kComputeStream);
    Value e = LaunchOp::create(b, loc, EventType::get(ctx),
                               FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
                               b.getArrayAttr({src}), b.getArrayAttr({dst}),
                               b.getI64IntegerAttr(kComputeStream));
    st.record(e, {src}, {dst}, kComputeStream);
    ++numKernels;
  }

  // Outputs this rank returns to the controller, and its copies of the
  // outputs that may stay resident.
  for (auto [j, v] : llvm::enumerate(code.outputs)) {
    bool keepOnly =
        !code.fetches[j] && v && j < code.keeps.size() && code.keeps[j];
    if (!code.fetches[j] && !keepOnly)
      continue;
    BufferAttr buf = st.bufferFor(v);
    st.sync({buf}, {}, -1);
    FetchBufferOp::create(b, loc, b.getI64IntegerAttr(j), buf,
                          code.outputOffsets[j].empty()
                              ? DenseI64ArrayAttr()
                              : b.getDenseI64ArrayAttr(code.outputOffsets[j]),
                          keepOnly ? b.getUnitAttr() : UnitAttr());
  }
  if (!st.pending.empty())
    WaitOp::create(b, loc, st.pending.getArrayRef());
  program.setArena(st.next);
  return success();
}

DenseI64ArrayAttr MonarchPlanTransfersPass::groupFor(Operation *op,
                                                     int64_t rank) {
  DenseI64ArrayAttr own = groups.lookup(op);
  auto fn = op->getParentOfType<func::FuncOp>();
  auto fnRank =
      fn ? fn->getAttrOfType<IntegerAttr>(MonarchDialect::getRankAttrName())
         : IntegerAttr();
  if (!own || !fnRank || fnRank.getInt() == rank)
    return own;
  auto meshRef = op->getAttrOfType<FlatSymbolRefAttr>(rankform::kGroupMeshAttr);
  auto dims = op->getAttrOfType<ArrayAttr>("dims");
  const MeshRanks *mesh = meshRef ? resolve(op, meshRef) : nullptr;
  int64_t local = mesh ? mesh->localRank(rank) : -1;
  if (!dims || local < 0)
    return {};
  auto [it, fresh] =
      groupCache.try_emplace({op, mesh->groupLeader(local, dims)});
  if (fresh)
    it->second =
        DenseI64ArrayAttr::get(&getContext(), mesh->groupOf(local, dims));
  return it->second;
}

SmallVector<int64_t> MonarchPlanTransfersPass::sendDests(ChannelSendOp send,
                                                         int64_t rank) {
  auto channel = tables().lookupNearestSymbolFrom<ChannelOp>(
      getOperation(), send.getChannelAttr());
  const MeshRanks *from = resolve(channel, channel.getFromAttr());
  const MeshRanks *to = resolve(channel, channel.getToAttr());
  int64_t i = from->localRank(rank);
  SmallVector<int64_t> dests;
  if (auto dist = send->getAttrOfType<DistAttr>(kShardAttr)) {
    // Its shard, to the ranks that take it from this one.
    for (int64_t d : shardRoute(*from, *to, dist).receiversOf[i])
      if (d != rank) // Self: monarch-specialize-ranks.
        dests.push_back(d);
    return dests;
  }
  for (int64_t j = 0, n = to->roots.size(); j < n; ++j)
    if (j % static_cast<int64_t>(from->roots.size()) == i &&
        to->roots[j] != rank) // Self: monarch-specialize-ranks.
      dests.push_back(to->roots[j]);
  return dests;
}

int64_t MonarchPlanTransfersPass::recvSource(ChannelRecvOp recv, int64_t rank) {
  auto channel = tables().lookupNearestSymbolFrom<ChannelOp>(
      getOperation(), recv.getChannelAttr());
  const MeshRanks *from = resolve(channel, channel.getFromAttr());
  const MeshRanks *to = resolve(channel, channel.getToAttr());
  int64_t j = to->localRank(rank);
  auto dist = recv->getAttrOfType<DistAttr>(kShardAttr);
  return dist ? shardRoute(*from, *to, dist).senderOf[j]
              : from->roots[j % from->roots.size()];
}

LinkKindAttr MonarchPlanTransfersPass::linkBetween(FlatSymbolRefAttr world,
                                                   const MeshRanks &procMesh,
                                                   ArrayRef<int64_t> ranks) {
  // Looked up once per mesh: a scan of the module per rank is quadratic.
  auto [found, inserted] = topologies.try_emplace(world, TopologyOp());
  if (inserted)
    for (auto t : getOperation().getOps<TopologyOp>())
      if (t.getMeshAttr() == world)
        found->second = t;
  TopologyOp topology = found->second;
  if (!topology || ranks.empty())
    return {};
  int64_t host = topology.hostOf(procMesh.dims, procMesh.shape, ranks[0]);
  bool sameHost = llvm::all_of(ranks, [&](int64_t r) {
    return topology.hostOf(procMesh.dims, procMesh.shape, r) == host;
  });
  return LinkKindAttr::get(&getContext(), sameHost ? topology.getIntra()
                                                   : topology.getInter());
}

RankProgramOp MonarchPlanTransfersPass::copyProgram(RankProgramOp program,
                                                    RankCode &from,
                                                    RankCode &to, PlanOp plan,
                                                    const MeshRanks &procMesh) {
  // The transfers of `to`, in the order `lower` issues them: the functions
  // are equal, so their ops correspond one to one.
  SmallVector<int64_t> sends, recvs;
  SmallVector<DenseI64ArrayAttr> colls;
  for (auto [mine, theirs] :
       llvm::zip(to.fn.getBody().front(), from.fn.getBody().front())) {
    if (auto send = dyn_cast<ChannelSendOp>(mine)) {
      SmallVector<int64_t> dests = sendDests(send, to.rank);
      if (dests.size() !=
          sendDests(cast<ChannelSendOp>(theirs), from.rank).size())
        return {};
      sends.append(dests);
    } else if (auto recv = dyn_cast<ChannelRecvOp>(mine)) {
      recvs.push_back(recvSource(recv, to.rank));
    } else if (isMeshCollective(&mine)) {
      DenseI64ArrayAttr group = groupFor(&mine, to.rank);
      if (!group)
        return {};
      colls.push_back(group);
    }
  }
  size_t numSend = 0, numRecv = 0, numColl = 0, numLaunch = 0;
  for (Operation &op : program.getBody().front()) {
    numSend += isa<SendOp>(op);
    numRecv += isa<RecvOp>(op);
    numColl += isa<CollectiveOp>(op);
    numLaunch += isa<LaunchOp>(op);
  }
  if (numSend != sends.size() || numRecv != recvs.size() ||
      numColl != colls.size())
    return {};

  OpBuilder b(&getContext());
  b.setInsertionPointToEnd(&plan.getBody().front());
  auto world = FlatSymbolRefAttr::get(plan.getMeshAttr().getAttr());
  std::string planName = plan.getSymName().str();
  auto offsets = [&](ArrayRef<int64_t> at) {
    return at.empty() ? DenseI64ArrayAttr() : b.getDenseI64ArrayAttr(at);
  };
  auto commOf = [&](DenseI64ArrayAttr groupAttr, Location loc) {
    CommunicatorOp &comm = commOfGroup[groupAttr];
    if (!comm)
      comm = communicator(b, loc, planName, world, groupAttr.asArrayRef());
    return comm;
  };
  // The member's tables in the program's order (monarch.rank_member: its
  // own peers, communicators and offsets), and the links its transfers
  // cross. It stays a member where its links and communicator sizes are the
  // program's (what monarch-schedule reads of a program is then equal,
  // docs/spmd-classes.md); otherwise it is written out as a copy.
  SmallVector<int64_t> peers;
  SmallVector<Attribute> commRefs, offsetList;
  SmallVector<LinkKindAttr> links;
  auto s = sends.begin(), r = recvs.begin();
  auto c = colls.begin();
  bool same = true;
  Attribute none = b.getUnitAttr();
  auto orNone = [&](DenseI64ArrayAttr a) -> Attribute {
    return a ? Attribute(a) : none;
  };
  for (Operation &op : program.getBody().front()) {
    if (auto feed = dyn_cast<FeedBufferOp>(op)) {
      offsetList.push_back(orNone(offsets(to.inputOffsets[feed.getIndex()])));
    } else if (auto fetch = dyn_cast<FetchBufferOp>(op)) {
      offsetList.push_back(orNone(offsets(to.outputOffsets[fetch.getIndex()])));
    } else if (auto state = dyn_cast<StateBufferOp>(op)) {
      offsetList.push_back(orNone(stateShard(
          getOperation(), to.rank, state.getState(), state.getBuffer(), b)));
    } else if (auto send = dyn_cast<SendOp>(op)) {
      int64_t peer = *s++;
      peers.push_back(peer);
      links.push_back(linkBetween(world, procMesh, {to.rank, peer}));
      same &= links.back() == send.getLinkAttr();
    } else if (auto recv = dyn_cast<RecvOp>(op)) {
      int64_t peer = *r++;
      peers.push_back(peer);
      links.push_back(linkBetween(world, procMesh, {peer, to.rank}));
      same &= links.back() == recv.getLinkAttr();
    } else if (auto coll = dyn_cast<CollectiveOp>(op)) {
      DenseI64ArrayAttr groupAttr = *c++;
      CommunicatorOp comm = commOf(groupAttr, program.getLoc());
      CommunicatorOp theirs = commByName.lookup(coll.getCommAttr().getAttr());
      links.push_back(linkBetween(world, procMesh, groupAttr.asArrayRef()));
      same &= theirs && theirs.getRanks().size() == comm.getRanks().size() &&
              links.back() == coll.getLinkAttr();
      commRefs.push_back(FlatSymbolRefAttr::get(comm.getSymNameAttr()));
    }
  }
  auto member = RankMemberOp::create(
      b, program.getLoc(), to.rank, program.getRank(),
      b.getDenseI64ArrayAttr(peers), b.getArrayAttr(commRefs),
      b.getArrayAttr(offsetList));
  numKernels += numLaunch;
  numSends += numSend;
  numCollectives += numColl;
  ++numCopied;
  if (classPrograms && same)
    return program;
  // The copy is the member written out (what monarch-expand-rank-members
  // writes), with the links of its own transfers.
  RankProgramOp copy = member.materialize(program);
  member.erase();
  auto link = links.begin();
  for (Operation &op : copy.getBody().front()) {
    if (auto send = dyn_cast<SendOp>(op))
      send.setLinkAttr(*link++);
    else if (auto recv = dyn_cast<RecvOp>(op))
      recv.setLinkAttr(*link++);
    else if (auto coll = dyn_cast<CollectiveOp>(op))
      coll.setLinkAttr(*link++);
  }
  return copy;
}

LogicalResult
MonarchPlanTransfersPass::readRanks(func::FuncOp worker,
                                    const MeshRanks &procMesh,
                                    SmallVectorImpl<RankCode> &codes) {
  auto refs = worker->getAttrOfType<ArrayAttr>(rankform::kRanksAttr);
  if (!refs)
    return worker.emitOpError("is not specialized per rank; "
                              "monarch-specialize-ranks comes first");
  FunctionType signature = worker.getFunctionType();
  llvm::SmallBitVector seen(procMesh.roots.size());
  for (Attribute a : refs) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    auto fn = ref ? tables().lookupNearestSymbolFrom<func::FuncOp>(worker, ref)
                  : func::FuncOp();
    auto rank =
        fn ? fn->getAttrOfType<IntegerAttr>(MonarchDialect::getRankAttrName())
           : IntegerAttr();
    if (!rank || !fn.getBody().hasOneBlock())
      return worker.emitOpError("lists ")
             << a << " among its ranks, which is not a rank function (a "
             << "func.func with a body of one block and '"
             << MonarchDialect::getRankAttrName() << "')";
    int64_t r = rank.getInt();
    // A class function stands for its members (the first is `r`).
    SmallVector<int64_t> members{r};
    if (auto list =
            fn->getAttrOfType<DenseI64ArrayAttr>(rankform::kMembersAttr))
      members.assign(list.asArrayRef().begin(), list.asArrayRef().end());
    if (members.empty() || members.front() != r)
      return fn.emitOpError("lists its own rank first among '")
             << rankform::kMembersAttr << "'";
    for (int64_t m : members) {
      if (m < 0 || m >= static_cast<int64_t>(seen.size()) || seen.test(m))
        return worker.emitOpError("lists ")
               << a << " for rank " << m << ", which "
               << (m < 0 || m >= static_cast<int64_t>(seen.size())
                       ? "is not a rank of its mesh"
                       : "has another rank function");
      seen.set(m);
    }
    auto outputs = fn->getAttrOfType<DenseI64ArrayAttr>(rankform::kOutputsAttr);
    auto states = fn->getAttrOfType<ArrayAttr>(rankform::kStatesAttr);
    if (!outputs || !states ||
        !llvm::all_of(states, llvm::IsaPred<SymbolRefAttr>))
      return fn.emitOpError("needs '")
             << rankform::kOutputsAttr << "' (worker output indices) and '"
             << rankform::kStatesAttr << "' (actor state references)";
    // Arguments: the worker's, then one per state; results: the outputs
    // held, then one per state.
    FunctionType type = fn.getFunctionType();
    size_t numStates = states.size(), numOutputs = outputs.size();
    // Per worker input and per returned output: where this rank's shard
    // starts (empty for the whole value; the attribute is absent when
    // nothing is a shard).
    auto shardOffsets =
        [&](StringRef attr, size_t count,
            StringRef what) -> FailureOr<std::vector<SmallVector<int64_t>>> {
      std::vector<SmallVector<int64_t>> out(count);
      auto arrays = fn->getAttrOfType<ArrayAttr>(attr);
      if (!arrays)
        return out;
      if (arrays.size() != count ||
          !llvm::all_of(arrays, llvm::IsaPred<DenseI64ArrayAttr>))
        return fn.emitOpError("needs one offsets array per ")
               << what << " in '" << attr << "'";
      for (auto [i, a] : llvm::enumerate(arrays))
        out[i].assign(cast<DenseI64ArrayAttr>(a).asArrayRef().begin(),
                      cast<DenseI64ArrayAttr>(a).asArrayRef().end());
      return out;
    };
    FailureOr<std::vector<SmallVector<int64_t>>> inputOffsets = shardOffsets(
        rankform::kInputOffsetsAttr, signature.getNumInputs(), "worker input");
    FailureOr<std::vector<SmallVector<int64_t>>> outputOffsets =
        shardOffsets(rankform::kOutputOffsetsAttr, numOutputs, "output");
    if (failed(inputOffsets) || failed(outputOffsets))
      return failure();
    // A shard of `whole` starting at `offsets`, of its element type.
    auto isShard = [](Type part, Type global, ArrayRef<int64_t> offsets) {
      auto shard = dyn_cast<RankedTensorType>(part);
      auto whole = dyn_cast<RankedTensorType>(global);
      bool ok = shard && whole && shard.hasStaticShape() &&
                whole.hasStaticShape() &&
                shard.getElementType() == whole.getElementType() &&
                shard.getRank() == whole.getRank() &&
                static_cast<int64_t>(offsets.size()) == whole.getRank();
      for (int64_t d = 0; ok && d < whole.getRank(); ++d)
        ok = offsets[d] >= 0 &&
             offsets[d] + shard.getDimSize(d) <= whole.getDimSize(d);
      return ok;
    };
    bool inputsMatch =
        type.getNumInputs() == signature.getNumInputs() + numStates;
    for (unsigned i = 0; inputsMatch && i < signature.getNumInputs(); ++i)
      inputsMatch = (*inputOffsets)[i].empty()
                        ? type.getInput(i) == signature.getInput(i)
                        : isShard(type.getInput(i), signature.getInput(i),
                                  (*inputOffsets)[i]);
    if (!inputsMatch || type.getNumResults() != numOutputs + numStates)
      return fn.emitOpError("takes the inputs of ")
             << FlatSymbolRefAttr::get(worker.getSymNameAttr())
             << " and one value per state, and returns the outputs it "
                "holds and one value per state";
    for (auto [k, j] : llvm::enumerate(outputs.asArrayRef())) {
      ArrayRef<int64_t> at = (*outputOffsets)[k];
      bool ok = j >= 0 && j < signature.getNumResults();
      if (ok && at.empty()) {
        ok = type.getResult(k) == signature.getResult(j);
      } else if (ok) {
        ok = isShard(type.getResult(k), signature.getResult(j), at);
      }
      if (!ok)
        return fn.emitOpError("result #")
               << k << " is not output #" << j << " of "
               << FlatSymbolRefAttr::get(worker.getSymNameAttr())
               << (at.empty() ? "" : " or a shard of it");
    }

    // Each member's offsets: the class function's tables (one array of
    // offsets per member, as the function's own), the member's own shard
    // of the same type.
    auto memberOffsets =
        [&](StringRef attr, size_t count, StringRef what,
            std::vector<std::vector<SmallVector<int64_t>>> &out)
        -> LogicalResult {
      auto table = fn->getAttrOfType<ArrayAttr>(attr);
      if (!table)
        return success();
      if (table.size() != members.size())
        return fn.emitOpError("needs one entry per member in '") << attr << "'";
      for (Attribute entry : table) {
        auto arrays = dyn_cast<ArrayAttr>(entry);
        if (!arrays || arrays.size() != count ||
            !llvm::all_of(arrays, llvm::IsaPred<DenseI64ArrayAttr>))
          return fn.emitOpError("needs one offsets array per ")
                 << what << " and member in '" << attr << "'";
        std::vector<SmallVector<int64_t>> &mine = out.emplace_back();
        for (Attribute a : arrays)
          mine.emplace_back(cast<DenseI64ArrayAttr>(a).asArrayRef());
      }
      return success();
    };
    std::vector<std::vector<SmallVector<int64_t>>> memberInputs, memberOutputs;
    if (members.size() > 1 &&
        (failed(memberOffsets(rankform::kMemberInputOffsetsAttr,
                              signature.getNumInputs(), "worker input",
                              memberInputs)) ||
         failed(memberOffsets(rankform::kMemberOutputOffsetsAttr, numOutputs,
                              "output", memberOutputs))))
      return failure();
    for (auto [i, m] : llvm::enumerate(members)) {
      RankCode &code = codes.emplace_back();
      code.rank = m;
      code.fn = fn;
      code.numWorkerArgs = signature.getNumInputs();
      code.outputs.assign(signature.getNumResults(), Value());
      code.outputOffsets.assign(signature.getNumResults(), {});
      code.inputOffsets = *inputOffsets;
      if (!memberInputs.empty()) {
        for (unsigned k = 0; k < signature.getNumInputs(); ++k)
          if ((*inputOffsets)[k].empty() != memberInputs[i][k].empty() ||
              (!memberInputs[i][k].empty() &&
               !isShard(type.getInput(k), signature.getInput(k),
                        memberInputs[i][k])))
            return fn.emitOpError("member ")
                   << m << " is fed input #" << k
                   << " otherwise than the class's first rank";
        code.inputOffsets = memberInputs[i];
      }
      Operation *ret = fn.getBody().front().getTerminator();
      for (auto [k, j] : llvm::enumerate(outputs.asArrayRef())) {
        code.outputs[j] = ret->getOperand(k);
        code.outputOffsets[j] = (*outputOffsets)[k];
        if (!memberOutputs.empty()) {
          ArrayRef<int64_t> at = memberOutputs[i][k];
          if (at.empty() != (*outputOffsets)[k].empty() ||
              (!at.empty() &&
               !isShard(type.getResult(k), signature.getResult(j), at)))
            return fn.emitOpError("member ")
                   << m << " returns output #" << j
                   << " otherwise than the class's first rank";
          code.outputOffsets[j].assign(at.begin(), at.end());
        }
      }
      for (auto [s, ref] : llvm::enumerate(states))
        code.states.push_back({ref, ret->getOperand(numOutputs + s)});
    }
  }
  // In rank order (a class function's members are listed together): an
  // order of indices is sorted and each code moved once, not swapped about
  // by the sort (8M instructions at 4,096 ranks).
  SmallVector<unsigned> order(codes.size());
  std::iota(order.begin(), order.end(), 0u);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return codes[a].rank < codes[b].rank;
  });
  if (!llvm::is_sorted(order)) {
    std::vector<RankCode> sorted;
    sorted.reserve(codes.size());
    for (unsigned i : order)
      sorted.push_back(std::move(codes[i]));
    codes.clear();
    codes.append(std::make_move_iterator(sorted.begin()),
                 std::make_move_iterator(sorted.end()));
  }
  return success();
}

LogicalResult MonarchPlanTransfersPass::planWorker(func::FuncOp worker) {
  MLIRContext *ctx = &getContext();
  auto meshRef = worker->getAttrOfType<FlatSymbolRefAttr>(
      MonarchDialect::getWorkerForAttrName());
  const MeshRanks *procMesh = resolve(worker, meshRef);
  if (!procMesh)
    return worker.emitOpError("runs on an unknown mesh");

  SmallVector<RankCode, 4> codes;
  if (failed(readRanks(worker, *procMesh, codes)))
    return failure();
  // Each output is returned as shards by every rank that returns one, or
  // whole by one of the ranks that have it: the (j mod holders)-th for
  // output j, among the first rankform::kFetchSpread of them, so that the
  // fetches of replicated outputs (a data-parallel step's new parameters), and
  // the compute only they need, spread over the ranks instead of all falling on
  // the lowest.
  SmallVector<SmallVector<int64_t>> holders(worker.getNumResults());
  SmallVector<bool> sharded(worker.getNumResults(), false);
  for (RankCode &c : codes)
    for (auto [j, v] : llvm::enumerate(c.outputs)) {
      if (v)
        holders[j].push_back(c.rank);
      if (v && !c.outputOffsets[j].empty())
        sharded[j] = true;
    }
  // Over at most the first rankform::kFetchSpread holders.
  auto spread = [&](ArrayRef<int64_t> ranks, size_t j) {
    return ranks[j % std::min<size_t>(ranks.size(), rankform::kFetchSpread)];
  };
  SmallVector<int64_t> fetchRank(worker.getNumResults(), -1);
  for (auto [j, ranks] : llvm::enumerate(holders)) {
    if (ranks.empty())
      return worker.emitOpError("output #") << j << " is on no rank";
    llvm::sort(ranks);
    fetchRank[j] = spread(ranks, j);
  }
  // Of the ranks holding the same shard of a split output (replicas kept
  // resident), one returns it: the (j mod copies)-th, as for whole outputs.
  SmallVector<DenseSet<int64_t>> shardFetchers(worker.getNumResults());
  for (auto [j, ranks] : llvm::enumerate(holders)) {
    if (!sharded[j])
      continue;
    std::map<SmallVector<int64_t>, SmallVector<int64_t>> byOffsets;
    for (RankCode &c : codes)
      if (c.outputs[j])
        byOffsets[c.outputOffsets[j]].push_back(c.rank);
    for (auto &[at, copies] : byOffsets) {
      llvm::sort(copies);
      shardFetchers[j].insert(spread(copies, j));
    }
  }
  for (RankCode &c : codes) {
    c.fetches.assign(c.outputs.size(), false);
    c.keeps.assign(c.outputs.size(), false);
    for (unsigned j = 0; j < c.outputs.size(); ++j)
      c.keeps[j] = static_cast<bool>(
          worker.getResultAttr(j, MonarchDialect::getKeepAttrName()));
    for (auto [j, v] : llvm::enumerate(c.outputs)) {
      if (v && sharded[j] != !c.outputOffsets[j].empty())
        return worker.emitOpError("output #")
               << j << " is returned whole by one rank and as a shard by "
               << "another";
      c.fetches[j] = v && (sharded[j] ? shardFetchers[j].contains(c.rank)
                                      : fetchRank[j] == c.rank);
    }
  }

  // The plan replaces the worker program under the same name.
  std::string name = worker.getSymName().str();
  FunctionType signature = worker.getFunctionType();
  OpBuilder b(ctx);
  b.setInsertionPoint(worker);
  Location loc = worker.getLoc();
  worker.setSymName(name + ".split");
  currentPlan = PlanOp::create(b, loc, name, meshRef.getValue(), signature);
  comms.clear();
  commByName.clear();
  commOfGroup.clear();
  groupCache.clear();

  // Each collective's group, off its op: the functions of the ranks of a
  // class then compare equal.
  groups.clear();
  for (RankCode &c : codes)
    for (Operation &op : c.fn.getBody().front())
      if (auto group = op.getAttrOfType<DenseI64ArrayAttr>(kGroupAttr)) {
        groups[&op] = group;
        op.removeAttr(kGroupAttr);
      }
  // Ranks whose functions are equal but for their groups, and that return
  // the same outputs, form a class (docs/spmd-classes.md): the first is
  // lowered and the others get a copy of its program with their own peers,
  // communicators and offsets (copyProgram), the program that lowering them
  // would build. A data x tensor x pipeline step at 4,096 ranks lowers 4
  // ranks. Classes are looked for among functions of equal shape (a hash).
  SmallVector<int64_t> firstOf(codes.size(), -1);
  if (rankClasses) {
    auto sameClass = [](RankCode &a, RankCode &c) {
      return a.fn.getFunctionType() == c.fn.getFunctionType() &&
             a.fetches == c.fetches &&
             a.fn->getAttr(rankform::kOutputsAttr) ==
                 c.fn->getAttr(rankform::kOutputsAttr) &&
             a.fn->getAttr(rankform::kStatesAttr) ==
                 c.fn->getAttr(rankform::kStatesAttr) &&
             OperationEquivalence::isRegionEquivalentTo(
                 &a.fn.getBody(), &c.fn.getBody(),
                 OperationEquivalence::IgnoreLocations);
    };
    DenseMap<llvm::hash_code, SmallVector<int64_t, 1>> firsts;
    // The members of a class function share it: per function, each set of
    // outputs returned by its members (the first code that returns them)
    // and the rank they are copied from. The first member of a function is
    // that rank for the members returning what it returns; the others
    // share the class the first code returning theirs found (a class
    // function's members that return another output than its first were
    // each hashed and compared with the candidates: at 4,096 ranks half
    // the ranks, a tenth of the compile).
    struct Head {
      int64_t code, first;
    };
    DenseMap<Operation *, SmallVector<Head, 2>> headsOfFn;
    // The hash of each function's body, computed once.
    DenseMap<Operation *, llvm::hash_code> bodyHashes;
    for (auto [i, c] : llvm::enumerate(codes)) {
      SmallVector<Head, 2> &heads = headsOfFn[c.fn];
      for (const Head &head : heads)
        if (codes[head.code].fetches == c.fetches) {
          firstOf[i] = head.first;
          break;
        }
      if (firstOf[i] >= 0)
        continue;
      if (heads.empty()) {
        // The first member of its function: found by its shape below, and
        // the rank its function's members returning the same are copied
        // from.
        heads.push_back({static_cast<int64_t>(i), static_cast<int64_t>(i)});
      }
      auto [body, fresh] = bodyHashes.try_emplace(c.fn, llvm::hash_code(0));
      if (fresh)
        for (Operation &op : c.fn.getBody().front())
          body->second = combineShapes(body->second, &op);
      llvm::hash_code h = hash_value(c.fn.getFunctionType());
      for (bool f : c.fetches)
        h = llvm::hash_combine(h, f);
      h = llvm::hash_combine(h, body->second);
      SmallVector<int64_t, 1> &candidates = firsts[h];
      for (int64_t f : candidates)
        if (sameClass(codes[f], c)) {
          firstOf[i] = f;
          break;
        }
      if (firstOf[i] < 0)
        candidates.push_back(i);
      if (heads.front().code != static_cast<int64_t>(i))
        heads.push_back(
            {static_cast<int64_t>(i),
             firstOf[i] >= 0 ? firstOf[i] : static_cast<int64_t>(i)});
    }
  }
  LogicalResult result = success();
  SmallVector<RankProgramOp> programs(codes.size());
  // Per class (its first rank): the ranks lowered, the first and those a
  // copy of it did not fit (a channel end with another number of peers),
  // which later members are copied from in turn.
  DenseMap<int64_t, SmallVector<int64_t, 1>> lowered;
  for (auto [i, c] : llvm::enumerate(codes)) {
    int64_t first = firstOf[i] >= 0 ? firstOf[i] : static_cast<int64_t>(i);
    SmallVector<int64_t, 1> &sources = lowered[first];
    for (int64_t from : sources)
      if ((programs[i] = copyProgram(programs[from], codes[from], c,
                                     currentPlan, *procMesh)))
        break;
    if (programs[i])
      continue;
    if (failed(lower(c, currentPlan, *procMesh, backend))) {
      result = failure();
      break;
    }
    programs[i] = cast<RankProgramOp>(currentPlan.getBody().front().back());
    sources.push_back(i);
  }
  // The runs recorded point into the rank functions.
  runsByHash.clear();
  llvm::SmallPtrSet<Operation *, 8> erased;
  for (RankCode &c : codes)
    if (erased.insert(c.fn).second)
      c.fn.erase();
  worker.erase();
  return result;
}

} // namespace
