//===- PlanTransfers.cpp - monarch-plan-transfers ---------------*- C++ -*-===//
//
// Lowers each worker program (split stage) to a `monarch.plan`: one
// instruction stream per rank.
//
// For every rank of the worker program's proc mesh we first specialize the
// program into per-rank tensor code: endpoint bodies of the actor meshes the
// rank belongs to are inlined with `monarch.process_index` folded to the
// rank's coordinates, split arguments are sliced, split results gathered,
// and actor state threaded through. Communication stays as placeholders
// (mesh collectives and channel ends). We then cut that code at every
// communication point: each run of compute becomes a kernel (`func.func`
// taking its inputs as tensors and writing its outputs into memrefs) called
// by `monarch.launch`; channel ends become `monarch.send`/`monarch.recv`
// pairs on a communicator over the whole mesh, collectives become
// `monarch.collective`s on a communicator per group of ranks. Every rank
// issues communication in the order of the worker program, which is the same
// order on every rank; that is what keeps the plan free of deadlocks (checked
// by monarch-verify-plan). Compute runs on stream 0, point-to-point transfers
// on stream 1 and collectives on stream 2, with waits only where a buffer
// crosses streams, so transfers overlap compute. Buffers get unique offsets
// here; monarch-schedule reorders and packs them.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "LocalCanonicalizer.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <map>

#define DEBUG_TYPE "monarch-plan-transfers"

namespace monarch {
#define GEN_PASS_DEF_MONARCHPLANTRANSFERS
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {

constexpr int64_t kComputeStream = 0;
constexpr int64_t kP2PStream = 1;
constexpr int64_t kCollectiveStream = 2;
constexpr int64_t kAlignment = 64;
/// Attribute on placeholder collectives: the proc-mesh ranks of the group.
constexpr llvm::StringLiteral kGroupAttr = "plan.group";

/// A mesh (proc mesh or slice) resolved to ranks of its proc mesh.
struct MeshRanks {
  MeshOpInterface mesh;
  SmallVector<int64_t> shape;
  SmallVector<StringRef> dims;
  SmallVector<int64_t> roots; // Proc-mesh rank of each mesh rank.

  int64_t localRank(int64_t root) const {
    auto it = llvm::find(roots, root);
    return it == roots.end() ? -1 : it - roots.begin();
  }
  SmallVector<int64_t> coords(int64_t rank) const {
    SmallVector<int64_t> c(shape.size());
    for (int64_t i = shape.size() - 1; i >= 0; --i) {
      c[i] = rank % shape[i];
      rank /= shape[i];
    }
    return c;
  }
};

/// What one rank's specialized program produced besides its ops.
struct RankCode {
  int64_t rank;
  func::FuncOp fn;            // Per-rank tensor code.
  SmallVector<Value> outputs; // Null when not on this rank.
  SmallVector<std::pair<Attribute, Value>> states; // State ref, final value.
  unsigned numWorkerArgs = 0;
};

struct MonarchPlanTransfersPass
    : monarch::impl::MonarchPlanTransfersBase<MonarchPlanTransfersPass> {
  using Base::Base;
  // Clones copy the options only; the caches below are per run.
  MonarchPlanTransfersPass(const MonarchPlanTransfersPass &other)
      : Base(other) {}

  // Per-run caches, reset at the start of every run (a pass manager may
  // run this pass on many modules).
  std::unique_ptr<SymbolTableCollection> tablesPtr;
  SymbolTableCollection &tables() { return *tablesPtr; }
  DenseMap<Operation *, MeshRanks> meshCache;

  void runOnOperation() override {
    tablesPtr = std::make_unique<SymbolTableCollection>();
    meshCache.clear();
    kernels.clear();
    comms.clear();
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

  const MeshRanks *resolve(Operation *from, FlatSymbolRefAttr ref) {
    MeshOpInterface mesh = lookupMesh(from, ref, &tables());
    if (!mesh)
      return nullptr;
    auto it = meshCache.find(mesh.getOperation());
    if (it != meshCache.end())
      return &it->second;
    MeshRanks info{mesh, mesh.getMeshShape(), mesh.getDimNames(), {}};
    for (int64_t r = 0, n = mesh.getNumRanks(); r < n; ++r) {
      int64_t root = r;
      MeshOpInterface m = mesh;
      while (auto slice = dyn_cast<MeshSliceOp>(m.getOperation())) {
        MeshOpInterface parent =
            lookupMesh(slice, slice.getParentAttr(), &tables());
        root = slice.getParentRank(parent.getMeshShape(), root);
        m = parent;
      }
      info.roots.push_back(root);
    }
    return &meshCache.try_emplace(mesh.getOperation(), std::move(info))
                .first->second;
  }

  /// The proc mesh at the root of a mesh's slice chain.
  Operation *rootOf(const MeshRanks &m) {
    MeshOpInterface mesh = m.mesh;
    while (auto slice = dyn_cast<MeshSliceOp>(mesh.getOperation()))
      mesh = lookupMesh(slice, slice.getParentAttr(), &tables());
    return mesh.getOperation();
  }

  /// Proc-mesh ranks that share `local`'s coordinates outside `dims`.
  SmallVector<int64_t> groupOf(const MeshRanks &m, int64_t local,
                               ArrayAttr dims) {
    SmallVector<int64_t> c = m.coords(local);
    llvm::SmallBitVector in(m.shape.size());
    for (Attribute d : dims)
      in.set(llvm::find(m.dims, cast<StringAttr>(d).getValue()) -
             m.dims.begin());
    SmallVector<int64_t> group;
    for (int64_t r = 0, n = m.roots.size(); r < n; ++r) {
      SmallVector<int64_t> rc = m.coords(r);
      bool same = true;
      for (size_t i = 0; i < rc.size(); ++i)
        same &= in.test(i) || rc[i] == c[i];
      if (same)
        group.push_back(m.roots[r]);
    }
    return group;
  }

  /// Index of `local` within the group spanned by `dims` (row-major).
  int64_t indexAlong(const MeshRanks &m, int64_t local,
                     ArrayRef<StringRef> dims) {
    SmallVector<int64_t> c = m.coords(local);
    int64_t index = 0;
    for (StringRef d : dims) {
      int64_t i = llvm::find(m.dims, d) - m.dims.begin();
      index = index * m.shape[i] + c[i];
    }
    return index;
  }

  //===--------------------------------------------------------------------===//
  // Phase 1: per-rank tensor code
  //===--------------------------------------------------------------------===//

  LogicalResult specialize(func::FuncOp worker, const MeshRanks &procMesh,
                           int64_t rank, RankCode &code) {
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(getOperation().getBody());
    code.rank = rank;
    code.numWorkerArgs = worker.getNumArguments();
    code.fn = func::FuncOp::create(b, worker.getLoc(),
                                   (worker.getSymName() + ".rank").str(),
                                   worker.getFunctionType());
    Block *entry = code.fn.addEntryBlock();
    IRMapping map;
    for (auto [a, c] : llvm::zip(worker.getArguments(), entry->getArguments()))
      map.map(a, c);
    b.setInsertionPointToStart(entry);
    // Current value of each piece of state this rank holds.
    llvm::MapVector<Attribute, Value> state;
    pending.clear();

    for (Operation &op : worker.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          code.outputs.push_back(globalValue(b, v, map));
        continue;
      }
      if (auto channelOp = dyn_cast<ChannelSendOp>(op)) {
        auto channel = tables().lookupNearestSymbolFrom<ChannelOp>(
            worker, channelOp.getChannelAttr());
        const MeshRanks *from = resolve(channel, channel.getFromAttr());
        const MeshRanks *to = resolve(channel, channel.getToAttr());
        if (rootOf(*from) != rootOf(procMesh) ||
            rootOf(*to) != rootOf(procMesh))
          return channelOp.emitOpError("channel ")
                 << channelOp.getChannelAttr()
                 << " crosses proc meshes; plans move tensors between slices "
                    "of one proc mesh only for now";
      }
      if (auto send = dyn_cast<ChannelSendOp>(op)) {
        Value v = globalValue(b, send.getValue(), map);
        if (v)
          ChannelSendOp::create(b, send.getLoc(), send.getChannelAttr(), v);
        continue;
      }
      if (auto recv = dyn_cast<ChannelRecvOp>(op)) {
        auto channel = tables().lookupNearestSymbolFrom<ChannelOp>(
            worker, recv.getChannelAttr());
        const MeshRanks *to = resolve(channel, channel.getToAttr());
        const MeshRanks *from = resolve(channel, channel.getFromAttr());
        int64_t j = to->localRank(rank);
        if (j >= 0 && from->roots[j % from->roots.size()] == rank) {
          // Overlapping meshes: this rank sends to itself. The value is
          // already here; a transfer would only copy it (or deadlock).
          Value sent;
          for (auto s : worker.getBody().front().getOps<ChannelSendOp>())
            if (s.getChannelAttr() == recv.getChannelAttr())
              sent = globalValue(b, s.getValue(), map);
          if (!sent)
            return recv.emitOpError("receives from this rank, which sends "
                                    "nothing on the channel");
          map.map(recv.getResult(), sent);
          continue;
        }
        if (j >= 0)
          map.map(recv.getResult(),
                  ChannelRecvOp::create(b, recv.getLoc(), recv.getType(),
                                        recv.getChannelAttr()));
        continue;
      }
      if (isa<CallOp, BroadcastOp>(op)) {
        if (failed(inlineCall(&op, rank, map, state, b)))
          return failure();
        continue;
      }
      if (isScalarArithmetic(&op)) { // Sunk from the controller by split.
        b.clone(op, map);
        continue;
      }
      return op.emitOpError("cannot be planned inside a worker program");
    }
    for (auto &[ref, value] : state)
      code.states.push_back({ref, value});
    // Outputs and state refer to values the rewrite below may replace.
    DenseMap<Value, Value> replaced;
    moveCollectiveAxesToFront(code.fn, replaced);
    for (Value &v : code.outputs)
      v = replaced.lookup(v) ? replaced.lookup(v) : v;
    for (auto &[ref, v] : code.states)
      v = replaced.lookup(v) ? replaced.lookup(v) : v;
    return success();
  }

  /// Plans gather and scatter along dimension 0 (contiguous blocks). A
  /// gather along axis `a` becomes a gather along 0 of `[n*l0, ...]`
  /// followed by a rearrangement (expand, transpose, collapse) that the
  /// next kernel performs; a scatter along `a` is rearranged first.
  void moveCollectiveAxesToFront(func::FuncOp fn,
                                 DenseMap<Value, Value> &replaced) {
    SmallVector<Operation *> todo;
    fn.walk([&](Operation *op) {
      if (auto g = dyn_cast<AllGatherOp>(op); g && g.getAxis() != 0)
        todo.push_back(op);
      if (auto r = dyn_cast<ReduceScatterOp>(op); r && r.getAxis() != 0)
        todo.push_back(op);
      if (auto a = dyn_cast<AllToAllOp>(op);
          a && (a.getSplit() != 0 || a.getConcat() != 0))
        todo.push_back(op);
    });
    for (Operation *op : todo) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto group = op->getAttrOfType<DenseI64ArrayAttr>(kGroupAttr);
      int64_t n = group.size();
      if (auto g = dyn_cast<AllGatherOp>(op)) {
        int64_t a = g.getAxis();
        auto local = g.getInput().getType();
        SmallVector<int64_t> blocks(local.getShape());
        blocks[0] *= n;
        auto gathered = AllGatherOp::create(
            b, loc, RankedTensorType::get(blocks, local.getElementType()),
            g.getInput(), g.getDims(), uint64_t{0});
        gathered->setAttr(kGroupAttr, group);
        // [n*l0, l1..] -> [n, l0, l1..] -> move n before l_a -> merge.
        Value v = rearrange(b, loc, gathered, local, n, a, /*gather=*/true);
        g.getResult().replaceAllUsesWith(v);
        replaced[g.getResult()] = v;
      } else if (auto x = dyn_cast<AllToAllOp>(op)) {
        // Blocks of the split dimension to the front (rank j's block at
        // j), exchanged along 0, then joined along the concat dimension.
        auto in = x.getInput().getType();
        SmallVector<int64_t> blockShape(in.getShape());
        blockShape[x.getSplit()] /= n;
        auto block = RankedTensorType::get(blockShape, in.getElementType());
        Value packed = x.getSplit() == 0
                           ? x.getInput()
                           : rearrange(b, loc, x.getInput(), block, n,
                                       x.getSplit(), /*gather=*/false);
        auto exchanged =
            AllToAllOp::create(b, loc, packed.getType(), packed, x.getDims(),
                               uint64_t{0}, uint64_t{0});
        exchanged->setAttr(kGroupAttr, group);
        Value v = x.getConcat() == 0
                      ? exchanged.getResult()
                      : rearrange(b, loc, exchanged, block, n, x.getConcat(),
                                  /*gather=*/true);
        x.getResult().replaceAllUsesWith(v);
        replaced[x.getResult()] = v;
      } else {
        auto r = cast<ReduceScatterOp>(op);
        int64_t a = r.getAxis();
        auto local = r.getResult().getType();
        Value blocks = rearrange(b, loc, r.getInput(), local, n, a,
                                 /*gather=*/false);
        auto scattered = ReduceScatterOp::create(
            b, loc, local, blocks, r.getDims(), uint64_t{0}, r.getReduction());
        scattered->setAttr(kGroupAttr, group);
        r.getResult().replaceAllUsesWith(scattered.getResult());
        replaced[r.getResult()] = scattered.getResult();
      }
      op->erase();
    }
  }

  /// Converts between `n` blocks of `local` stacked along dimension 0
  /// (`gather`: from, else: to) and the full tensor split along `axis`.
  Value rearrange(OpBuilder &b, Location loc, Value v, RankedTensorType local,
                  int64_t n, int64_t axis, bool gather) {
    int64_t rank = local.getRank();
    Type elt = local.getElementType();
    // Shape with the block index in front: [n, l0, ..., l_{r-1}].
    SmallVector<int64_t> front{n};
    front.append(local.getShape().begin(), local.getShape().end());
    // Shape with the block index just before axis: [l0.., n, l_axis, ..].
    SmallVector<int64_t> inner(local.getShape());
    inner.insert(inner.begin() + axis, n);
    // Reassociation merging the leading pair, or the pair at `axis`.
    auto pairAt = [&](int64_t at) {
      SmallVector<ReassociationIndices> groups;
      for (int64_t i = 0, d = 0; i < rank; ++i) {
        if (i == at) {
          groups.push_back({d, d + 1});
          d += 2;
        } else {
          groups.push_back({d++});
        }
      }
      return groups;
    };
    SmallVector<int64_t> toInner, toFront;
    for (int64_t i = 1; i <= axis; ++i)
      toInner.push_back(i);
    toInner.push_back(0);
    for (int64_t i = axis + 1; i <= rank; ++i)
      toInner.push_back(i);
    toFront.assign(rank + 1, 0);
    for (auto [i, p] : llvm::enumerate(toInner))
      toFront[p] = i;
    if (gather) {
      Value expanded = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get(front, elt), v, pairAt(0));
      Value init = tensor::EmptyOp::create(b, loc, inner, elt);
      Value moved = linalg::TransposeOp::create(b, loc, expanded, init, toInner)
                        .getResult()[0];
      SmallVector<int64_t> full(local.getShape());
      full[axis] *= n;
      return tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get(full, elt), moved, pairAt(axis));
    }
    Value expanded = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(inner, elt), v, pairAt(axis));
    Value init = tensor::EmptyOp::create(b, loc, front, elt);
    Value moved = linalg::TransposeOp::create(b, loc, expanded, init, toFront)
                      .getResult()[0];
    SmallVector<int64_t> blocks(local.getShape());
    blocks[0] *= n;
    return tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(blocks, elt), moved, pairAt(0));
  }

  LogicalResult inlineCall(Operation *op, int64_t rank, IRMapping &map,
                           llvm::MapVector<Attribute, Value> &state,
                           OpBuilder &b) {
    SymbolRefAttr callee = isa<CallOp>(op) ? cast<CallOp>(op).getCallee()
                                           : cast<BroadcastOp>(op).getCallee();
    auto actorMesh = tables().lookupNearestSymbolFrom<ActorMeshOp>(
        op, FlatSymbolRefAttr::get(callee.getRootReference()));
    auto actorClass = tables().lookupNearestSymbolFrom<ActorClassOp>(
        actorMesh, actorMesh.getActorClassAttr());
    auto endpoint = tables().lookupSymbolIn<EndpointOp>(
        actorClass, callee.getLeafReference());
    const MeshRanks *mesh = resolve(actorMesh, actorMesh.getMeshAttr());
    int64_t local = mesh->localRank(rank);
    if (local < 0)
      return success(); // Not on this rank.
    Location loc = op->getLoc();

    // Arguments: this rank's shard of split values.
    IRMapping inner;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      DistAttr dist = endpoint.getArgDist(i);
      // A shard produced with the same distribution on the same ranks is
      // passed as is: no gather to the global value and slice back.
      auto it = pending.find(operand);
      if (dist && it != pending.end() && it->second.dist == dist &&
          it->second.mesh == mesh) {
        inner.map(endpoint.getArgument(i), it->second.local);
        continue;
      }
      Value v = globalValue(b, operand, map);
      if (!v)
        return op->emitOpError("argument #")
               << i << " is not available on rank " << rank;
      if (dist && !dist.isReplicated())
        v = sliceFor(b, loc, v, dist, *mesh, local);
      inner.map(endpoint.getArgument(i), v);
    }
    // Body, with state threaded and rank queries folded.
    SmallVector<Value> results;
    for (Operation &bodyOp : endpoint.getBody().front()) {
      if (auto ret = dyn_cast<ReturnOp>(bodyOp)) {
        for (Value v : ret.getOperands())
          results.push_back(inner.lookupOrDefault(v));
        continue;
      }
      if (auto get = dyn_cast<StateGetOp>(bodyOp)) {
        Attribute ref = SymbolRefAttr::get(actorMesh.getSymNameAttr(),
                                           {get.getStateAttr()});
        Value &current = state[ref];
        if (!current)
          current = b.getBlock()->addArgument(get.getType(), get.getLoc());
        inner.map(get.getResult(), current);
        continue;
      }
      if (auto set = dyn_cast<StateSetOp>(bodyOp)) {
        Attribute ref = SymbolRefAttr::get(actorMesh.getSymNameAttr(),
                                           {set.getStateAttr()});
        if (!state.count(ref))
          state[ref] =
              b.getBlock()->addArgument(set.getValue().getType(), set.getLoc());
        // The first block argument created for `ref` stays the state's
        // buffer; the map tracks the current value.
        state[ref] = inner.lookupOrDefault(set.getValue());
        continue;
      }
      if (auto index = dyn_cast<ProcessIndexOp>(bodyOp)) {
        SmallVector<StringRef> dims;
        for (Attribute d : index.getDims())
          dims.push_back(cast<StringAttr>(d).getValue());
        inner.map(index.getResult(),
                  arith::ConstantIndexOp::create(
                      b, index.getLoc(), indexAlong(*mesh, local, dims)));
        continue;
      }
      Operation *clone = b.clone(bodyOp, inner);
      bool bad = false;
      clone->walk([&](Operation *nested) {
        if (nested != clone &&
            isa<StateGetOp, StateSetOp, ProcessIndexOp, CallOp>(nested))
          bad = true;
      });
      if (bad)
        return bodyOp.emitOpError(
            "uses actor state, rank queries or calls inside a region; "
            "planning supports them only at the top of an endpoint");
      if (auto dims = clone->getAttrOfType<ArrayAttr>("dims"))
        if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, BroadcastFromOp,
                AllToAllOp>(clone))
          clone->setAttr(kGroupAttr,
                         b.getDenseI64ArrayAttr(groupOf(*mesh, local, dims)));
    }
    // Results: split or partial ones are assembled into the global value
    // only when something needs it (globalValue); every rank takes the same
    // decision, so the collectives this inserts stay matched.
    if (auto call = dyn_cast<CallOp>(op)) {
      for (auto [i, r] : llvm::enumerate(results)) {
        DistAttr dist = endpoint.getResultDist(i);
        if (dist && !dist.isReplicated()) {
          pending[call.getResult(i)] = {
              r,
              dist,
              mesh,
              local,
              cast<RankedTensorType>(call.getResult(i).getType()),
              LocationAttr(loc)};
          continue;
        }
        map.map(call.getResult(i), r);
      }
    }
    return success();
  }

  /// A call result still held as this rank's part (shard or partial sum).
  struct PendingResult {
    Value local;
    DistAttr dist;
    const MeshRanks *mesh;
    int64_t localRank;
    RankedTensorType global;
    LocationAttr loc;
  };
  DenseMap<Value, PendingResult> pending;

  /// The global value of `v` on this rank, assembling a pending call result
  /// (all_reduce of partial sums, all_gather of shards) at first use.
  Value globalValue(OpBuilder &b, Value v, IRMapping &map) {
    if (Value mapped = map.lookupOrNull(v))
      return mapped;
    auto it = pending.find(v);
    if (it == pending.end())
      return nullptr;
    PendingResult &p = it->second;
    Value global = assemble(b, Location(p.loc), p.local, p.dist, *p.mesh,
                            p.localRank, p.global);
    map.map(v, global);
    return global;
  }

  Value sliceFor(OpBuilder &b, Location loc, Value global, DistAttr dist,
                 const MeshRanks &mesh, int64_t local) {
    auto type = cast<RankedTensorType>(global.getType());
    SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
        strides(type.getRank(), 1);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      SmallVector<StringRef> dims = dist.getSplitDims(d);
      if (dims.empty())
        continue;
      int64_t parts = 1;
      for (StringRef name : dims)
        parts *= mesh.shape[llvm::find(mesh.dims, name) - mesh.dims.begin()];
      sizes[d] = type.getDimSize(d) / parts;
      offsets[d] = indexAlong(mesh, local, dims) * sizes[d];
    }
    auto folds = [&](ArrayRef<int64_t> values) {
      SmallVector<OpFoldResult> out;
      for (int64_t v : values)
        out.push_back(b.getIndexAttr(v));
      return out;
    };
    return tensor::ExtractSliceOp::create(b, loc, global, folds(offsets),
                                          folds(sizes), folds(strides));
  }

  Value assemble(OpBuilder &b, Location loc, Value v, DistAttr dist,
                 const MeshRanks &mesh, int64_t local,
                 RankedTensorType global) {
    auto stamp = [&](Operation *coll, ArrayAttr dims) {
      coll->setAttr(kGroupAttr,
                    b.getDenseI64ArrayAttr(groupOf(mesh, local, dims)));
    };
    if (dist.getPartial()) {
      SmallVector<Attribute> all;
      for (StringRef d : mesh.dims)
        all.push_back(b.getStringAttr(d));
      auto dims = b.getArrayAttr(all);
      auto ar = AllReduceOp::create(
          b, loc, v, dims,
          ReductionKindAttr::get(b.getContext(), *dist.getPartial()));
      stamp(ar, dims);
      v = ar;
    }
    auto type = cast<RankedTensorType>(v.getType());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      SmallVector<StringRef> names = dist.getSplitDims(d);
      if (names.empty())
        continue;
      SmallVector<Attribute> attrs;
      for (StringRef n : names)
        attrs.push_back(b.getStringAttr(n));
      auto dims = b.getArrayAttr(attrs);
      auto cur = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(cur.getShape());
      shape[d] = global.getDimSize(d);
      auto gather = AllGatherOp::create(
          b, loc, RankedTensorType::get(shape, cur.getElementType()), v, dims,
          static_cast<uint64_t>(d));
      stamp(gather, dims);
      v = gather;
    }
    return v;
  }

  //===--------------------------------------------------------------------===//
  // Phase 2: instruction streams
  //===--------------------------------------------------------------------===//

  /// Emits one rank program; `fetchRank[j]` is the rank that returns output j.
  LogicalResult lower(RankCode &code, PlanOp plan, const MeshRanks &procMesh,
                      ArrayRef<int64_t> fetchRank, StringRef backendName);

  LogicalResult planWorker(func::FuncOp worker);

  CommunicatorOp communicator(OpBuilder &b, Location loc, StringRef planName,
                              FlatSymbolRefAttr mesh, ArrayRef<int64_t> ranks) {
    SmallVector<int64_t> key(ranks);
    auto it = comms.find(key);
    if (it != comms.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(currentPlan);
    std::string name = (planName + ".comm" + Twine(comms.size())).str();
    auto comm = CommunicatorOp::create(
        b, loc, b.getStringAttr(name), mesh, b.getDenseI64ArrayAttr(ranks),
        BackendAttr::get(b.getContext(),
                         backend == "nccl" ? Backend::Nccl : Backend::Gloo));
    comms[key] = comm;
    return comm;
  }

  std::map<SmallVector<int64_t>, CommunicatorOp> comms;
  PlanOp currentPlan;
  SmallVector<func::FuncOp> kernels;
};

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
                                              ArrayRef<int64_t> fetchRank,
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
  // Links of the transfers, when the mesh describes its hosts.
  TopologyOp topology;
  for (auto t : getOperation().getOps<TopologyOp>())
    if (t.getMeshAttr() == world)
      topology = t;
  auto linkBetween = [&](ArrayRef<int64_t> ranks) -> LinkKindAttr {
    if (!topology || ranks.empty())
      return {};
    int64_t host = topology.hostOf(procMesh.dims, procMesh.shape, ranks[0]);
    bool sameHost = llvm::all_of(ranks, [&](int64_t r) {
      return topology.hostOf(procMesh.dims, procMesh.shape, r) == host;
    });
    return LinkKindAttr::get(ctx, sameHost ? topology.getIntra()
                                           : topology.getInter());
  };
  std::string planName = plan.getSymName().str();

  // Inputs and persistent state.
  for (unsigned i = 0; i < code.numWorkerArgs; ++i) {
    Value arg = body.getArgument(i);
    if (arg.use_empty() && !llvm::is_contained(code.outputs, arg))
      continue;
    BufferAttr buf = st.bufferFor(arg);
    FeedBufferOp::create(b, loc, b.getI64IntegerAttr(i), buf);
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
      StateBufferOp::create(b, loc, cast<SymbolRefAttr>(ref),
                            st.bufferFor(arg));
      stateOfArg[arg] = ref;
    }
  }

  // Values needed after the code: outputs fetched here and final state.
  DenseSet<Value> liveOut;
  for (auto [j, v] : llvm::enumerate(code.outputs))
    if (v && fetchRank[j] == code.rank)
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

  auto flush = [&]() -> LogicalResult {
    if (run.empty())
      return success();
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    llvm::SetVector<Value> ins;
    SmallVector<Operation *> sortedClones;
    collectOutlineInputs(run, ins, sortedClones, memo);
    SmallVector<Value> outs;
    for (Operation *op : run)
      for (Value r : op->getResults()) {
        bool usedLater = liveOut.contains(r) ||
                         llvm::any_of(r.getUsers(), [&](Operation *u) {
                           Operation *top = body.findAncestorOpInBlock(*u);
                           return !inRun.contains(top);
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
    kb.setInsertionPoint(plan);
    auto kernel = func::FuncOp::create(kb, runOps.front()->getLoc(), name,
                                       kb.getFunctionType(params, {}));
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
    for (Operation *c : sortedClones)
      kb.clone(*c, map);
    for (Operation *op : runOps)
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
    kernels.push_back(kernel);
    ++numKernels;

    st.sync(inBufs, outBufs, kComputeStream);
    Value e = LaunchOp::create(b, runOps.front()->getLoc(), EventType::get(ctx),
                               FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
                               b.getArrayAttr(inBufs), b.getArrayAttr(outBufs),
                               b.getI64IntegerAttr(kComputeStream));
    st.record(e, inBufs, outBufs, kComputeStream);
    return success();
  };

  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    bool isComm = isa<ChannelSendOp, ChannelRecvOp, AllReduceOp, AllGatherOp,
                      ReduceScatterOp, BroadcastFromOp, AllToAllOp>(op);
    if (!isComm) {
      if (!isCloneable(&op, memo))
        run.push_back(&op);
      continue;
    }
    if (failed(flush()))
      return failure();
    if (auto send = dyn_cast<ChannelSendOp>(op)) {
      auto channel = tables().lookupNearestSymbolFrom<ChannelOp>(
          module, send.getChannelAttr());
      const MeshRanks *from = resolve(channel, channel.getFromAttr());
      const MeshRanks *to = resolve(channel, channel.getToAttr());
      int64_t i = from->localRank(code.rank);
      SmallVector<int64_t> dests;
      for (int64_t j = 0, n = to->roots.size(); j < n; ++j)
        if (j % static_cast<int64_t>(from->roots.size()) == i &&
            to->roots[j] != code.rank) // Self: see specialize().
          dests.push_back(to->roots[j]);
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
            linkBetween({code.rank, d}));
        st.record(e, {buf}, {}, kP2PStream);
        ++numSends;
      }
      closeP2PGroup();
      continue;
    }
    if (auto recv = dyn_cast<ChannelRecvOp>(op)) {
      auto channel = tables().lookupNearestSymbolFrom<ChannelOp>(
          module, recv.getChannelAttr());
      const MeshRanks *from = resolve(channel, channel.getFromAttr());
      const MeshRanks *to = resolve(channel, channel.getToAttr());
      int64_t j = to->localRank(code.rank);
      int64_t src = from->roots[j % from->roots.size()];
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
          linkBetween({src, code.rank}));
      st.record(e, {}, {buf}, kP2PStream);
      closeP2PGroup();
      continue;
    }
    // Collectives.
    auto groupAttr = op.getAttrOfType<DenseI64ArrayAttr>(kGroupAttr);
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
        b.getI64IntegerAttr(kCollectiveStream), IntegerAttr(),
        linkBetween(group));
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
    auto kernel = func::FuncOp::create(
        kb, loc, name, kb.getFunctionType({src.getType(), memref}, {}));
    kernel.setPrivate();
    Block *entry = kernel.addEntryBlock();
    kb.setInsertionPointToStart(entry);
    auto m = bufferization::MaterializeInDestinationOp::create(
        kb, loc, entry->getArgument(0), entry->getArgument(1));
    m.setRestrict(true);
    m.setWritable(true);
    func::ReturnOp::create(kb, loc);
    st.sync({src}, {dst}, kComputeStream);
    Value e = LaunchOp::create(b, loc, EventType::get(ctx),
                               FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
                               b.getArrayAttr({src}), b.getArrayAttr({dst}),
                               b.getI64IntegerAttr(kComputeStream));
    st.record(e, {src}, {dst}, kComputeStream);
    ++numKernels;
  }

  // Outputs this rank returns to the controller.
  for (auto [j, v] : llvm::enumerate(code.outputs)) {
    if (!v || fetchRank[j] != code.rank)
      continue;
    BufferAttr buf = st.bufferFor(v);
    st.sync({buf}, {}, -1);
    FetchBufferOp::create(b, loc, b.getI64IntegerAttr(j), buf);
  }
  if (!st.pending.empty())
    WaitOp::create(b, loc, st.pending.getArrayRef());
  program.setArena(st.next);
  return success();
}

LogicalResult MonarchPlanTransfersPass::planWorker(func::FuncOp worker) {
  MLIRContext *ctx = &getContext();
  auto meshRef = worker->getAttrOfType<FlatSymbolRefAttr>(
      MonarchDialect::getWorkerForAttrName());
  const MeshRanks *procMesh = resolve(worker, meshRef);
  if (!procMesh)
    return worker.emitOpError("runs on an unknown mesh");

  // Phase 1 for every rank.
  SmallVector<RankCode> codes(procMesh->roots.size());
  for (int64_t r = 0, n = codes.size(); r < n; ++r)
    if (failed(specialize(worker, *procMesh, r, codes[r]))) {
      for (RankCode &c : codes)
        if (c.fn)
          c.fn.erase();
      return failure();
    }
  // Each output is returned by the lowest rank that has it.
  SmallVector<int64_t> fetchRank(worker.getNumResults(), -1);
  for (RankCode &c : codes)
    for (auto [j, v] : llvm::enumerate(c.outputs))
      if (v && fetchRank[j] < 0)
        fetchRank[j] = c.rank;
  for (auto [j, r] : llvm::enumerate(fetchRank))
    if (r < 0)
      return worker.emitOpError("output #") << j << " is on no rank";

  // Phase 2: the plan replaces the worker program under the same name.
  std::string name = worker.getSymName().str();
  FunctionType signature = worker.getFunctionType();
  OpBuilder b(ctx);
  b.setInsertionPoint(worker);
  Location loc = worker.getLoc();
  worker.setSymName(name + ".split");
  currentPlan = PlanOp::create(b, loc, name, meshRef.getValue(), signature);
  comms.clear();
  LogicalResult result = success();
  for (RankCode &c : codes)
    if (failed(lower(c, currentPlan, *procMesh, fetchRank, backend))) {
      result = failure();
      break;
    }
  for (RankCode &c : codes)
    c.fn.erase();
  worker.erase();
  return result;
}

} // namespace
