//===- SpecializeRanks.cpp - monarch-specialize-ranks -----------*- C++ -*-===//
//
// Specializes each worker program (split stage) into per-rank tensor code,
// the input of monarch-plan-transfers. For every rank of the worker
// program's proc mesh, one function: endpoint bodies of the actor meshes the
// rank belongs to are inlined with `monarch.process_index` folded to the
// rank's coordinates, split arguments are sliced, split results gathered
// (only where something uses the global value), and actor state is threaded
// through as arguments and results. Communication stays as placeholders:
// channel ends, and mesh collectives whose group of ranks is resolved
// (`plan.group`). The worker program keeps its name and signature as a
// declaration that lists its rank functions. The form is described in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "MeshRanks.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "monarch-specialize-ranks"

namespace monarch {
#define GEN_PASS_DEF_MONARCHSPECIALIZERANKS
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;
using rankform::kGroupAttr;

namespace {

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

/// Plans gather and scatter along dimension 0 (contiguous blocks). A
/// gather along axis `a` becomes a gather along 0 of `[n*l0, ...]`
/// followed by a rearrangement (expand, transpose, collapse) that the
/// next kernel performs; a scatter along `a` is rearranged first.
void moveCollectiveAxesToFront(func::FuncOp fn) {
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
    Attribute groupMesh = op->getAttr(rankform::kGroupMeshAttr);
    auto stamp = [&](Operation *coll) {
      coll->setAttr(kGroupAttr, group);
      if (groupMesh)
        coll->setAttr(rankform::kGroupMeshAttr, groupMesh);
    };
    int64_t n = group.size();
    if (auto g = dyn_cast<AllGatherOp>(op)) {
      int64_t a = g.getAxis();
      auto local = g.getInput().getType();
      SmallVector<int64_t> blocks(local.getShape());
      blocks[0] *= n;
      auto gathered = AllGatherOp::create(
          b, loc, RankedTensorType::get(blocks, local.getElementType()),
          g.getInput(), g.getDims(), uint64_t{0});
      stamp(gathered);
      // [n*l0, l1..] -> [n, l0, l1..] -> move n before l_a -> merge.
      Value v = rearrange(b, loc, gathered, local, n, a, /*gather=*/true);
      g.getResult().replaceAllUsesWith(v);
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
      stamp(exchanged);
      Value v = x.getConcat() == 0
                    ? exchanged.getResult()
                    : rearrange(b, loc, exchanged, block, n, x.getConcat(),
                                /*gather=*/true);
      x.getResult().replaceAllUsesWith(v);
    } else {
      auto r = cast<ReduceScatterOp>(op);
      int64_t a = r.getAxis();
      auto local = r.getResult().getType();
      Value blocks =
          rearrange(b, loc, r.getInput(), local, n, a, /*gather=*/false);
      auto scattered = ReduceScatterOp::create(
          b, loc, local, blocks, r.getDims(), uint64_t{0}, r.getReduction());
      stamp(scattered);
      r.getResult().replaceAllUsesWith(scattered.getResult());
    }
    op->erase();
  }
}

/// Where the shard of a `shape` value split as `dist` that mesh rank
/// `local` holds starts and how large it is, per dimension.
std::pair<SmallVector<int64_t>, SmallVector<int64_t>>
shardBox(ArrayRef<int64_t> shape, DistAttr dist, const MeshRanks &mesh,
         int64_t local) {
  SmallVector<int64_t> offsets(shape.size(), 0), sizes(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    SmallVector<StringRef> dims = dist.getSplitDims(d);
    if (dims.empty())
      continue;
    int64_t parts = 1;
    for (StringRef name : dims)
      parts *= mesh.shape[llvm::find(mesh.dims, name) - mesh.dims.begin()];
    sizes[d] = shape[d] / parts;
    offsets[d] = mesh.indexAlong(local, dims) * sizes[d];
  }
  return {offsets, sizes};
}

/// The rank-dependent answers one rank's function was built from, each as a
/// function of the rank and its answer (docs/spmd-classes.md). The
/// specialisation is deterministic given them: another rank giving the same
/// answers, asked in the same order (each question is only asked when the
/// ones before it matched), would build the same function but for what is
/// not asked here, its collectives' groups and its input and output
/// offsets, which follow from the mesh.
struct RankQueries {
  struct Query {
    std::function<int64_t(int64_t)> ask;
    int64_t answer;
  };
  std::vector<Query> queries;

  int64_t ask(std::function<int64_t(int64_t)> f, int64_t rank) {
    int64_t answer = f(rank);
    queries.push_back({std::move(f), answer});
    return answer;
  }
  /// Records `f` with `answer`, which the caller computed for the rank.
  void answered(std::function<int64_t(int64_t)> f, int64_t answer) {
    queries.push_back({std::move(f), answer});
  }
  bool sameFor(int64_t rank) const {
    return llvm::all_of(
        queries, [&](const Query &q) { return q.ask(rank) == q.answer; });
  }
};

/// The symbol of `mesh`'s op (a proc mesh or a slice).
FlatSymbolRefAttr symbolOf(const MeshRanks &mesh) {
  return FlatSymbolRefAttr::get(
      SymbolTable::getSymbolName(MeshOpInterface(mesh.mesh).getOperation()));
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

/// Specializes one worker program for one rank of its proc mesh.
class RankSpecializer {
public:
  RankSpecializer(func::FuncOp worker, const MeshRanks &procMesh, int64_t rank,
                  SymbolTableCollection &tables, MeshResolver &meshes,
                  bool shardOutputs, bool shardInputs)
      : worker(worker), procMesh(procMesh), rank(rank), tables(tables),
        meshes(meshes), shardOutputs(shardOutputs), shardInputs(shardInputs) {}

  /// Builds the rank function at `b`'s insertion point; null after a
  /// diagnostic.
  func::FuncOp run(OpBuilder &b);

private:
  LogicalResult inlineCall(Operation *op, OpBuilder &b);
  Value globalValue(OpBuilder &b, Value v);
  /// The distribution the value of `send`'s channel crosses in when it
  /// crosses as shards: it is a call result split (not partial) on the
  /// channel's source mesh, and every splitting mesh dimension has the same
  /// size on the destination, so each destination rank needs one shard
  /// that some source rank holds. Null when it crosses whole.
  DistAttr shardChannelDist(ChannelSendOp send);
  Value sliceFor(OpBuilder &b, Location loc, Value global, DistAttr dist,
                 const MeshRanks &mesh, int64_t local);
  Value assemble(OpBuilder &b, Location loc, Value v, DistAttr dist,
                 const MeshRanks &mesh, int64_t local, RankedTensorType global);

  func::FuncOp worker;
  const MeshRanks &procMesh;
  int64_t rank;
  SymbolTableCollection &tables;
  MeshResolver &meshes;
  bool shardOutputs, shardInputs;

  /// Where this rank's shard of a split pending result starts, and whether
  /// this rank is the one that returns it as worker output `output`: among
  /// the ranks holding the same shard (along the mesh dimensions that do
  /// not split it), the one at index `output` modulo their number (at most
  /// rankform::kFetchSpread), so that the work that only outputs need is
  /// spread over the replicas; nullopt
  /// when the result is partial or not split.
  static std::optional<std::pair<SmallVector<int64_t>, bool>>
  shardOf(const PendingResult &p, int64_t output);

public:
  /// Records this rank's rank-dependent answers (classes); null otherwise.
  RankQueries *queries = nullptr;
  /// Per returned output (in the order of plan.outputs): the pending result
  /// it is a shard of, so that a member of the class finds its offsets;
  /// nullopt for a whole value.
  SmallVector<std::optional<PendingResult>> outputShards;
  /// Stamp each collective with the mesh its group comes from (classes).
  bool stampMeshes = false;

private:
  /// `f(rank)`, recorded among the queries.
  int64_t bound(std::function<int64_t(int64_t)> f) {
    return queries ? queries->ask(std::move(f), rank) : f(rank);
  }

public:
  /// The shard of worker argument `arg` this rank can be fed instead of
  /// the whole value: every use on this rank is a call operand split the
  /// same way (offsets and type); nullopt otherwise.
  std::optional<std::pair<SmallVector<int64_t>, RankedTensorType>>
  feedShardOf(BlockArgument arg);

private:
  /// Worker arguments this rank is fed only its shard of.
  DenseSet<Value> shardedArgs;

  /// What a monarch.call or monarch.broadcast calls (the module verified
  /// its symbols): the actor mesh, the endpoint and the mesh's ranks.
  struct Callee {
    ActorMeshOp actorMesh;
    EndpointOp endpoint;
    const MeshRanks *mesh;
  };
  Callee calleeOf(Operation *call);

  /// Worker program values available on this rank, as rank values.
  IRMapping map;
  /// Current value of each piece of state this rank holds, in the order of
  /// first use (the order of the state arguments).
  llvm::MapVector<Attribute, Value> state;
  DenseMap<Value, PendingResult> pending;
};

func::FuncOp RankSpecializer::run(OpBuilder &b) {
  auto fn = func::FuncOp::create(
      b, worker.getLoc(), (worker.getSymName() + ".rank" + Twine(rank)).str(),
      worker.getFunctionType());
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  for (auto [a, c] : llvm::zip(worker.getArguments(), entry->getArguments()))
    map.map(a, c);
  // Split inputs: fed as this rank's shard where nothing here needs more.
  SmallVector<Attribute> inputOffsets;
  bool anyShard = false;
  for (auto [a, c] : llvm::zip(worker.getArguments(), entry->getArguments())) {
    auto shard = shardInputs ? feedShardOf(a) : std::nullopt;
    if (shardInputs && queries) {
      // Whether this rank is fed a shard of `a` (its offsets are not asked:
      // they are the member's own).
      func::FuncOp w = worker;
      const MeshRanks *proc = &procMesh;
      SymbolTableCollection *t = &tables;
      MeshResolver *m = &meshes;
      bool so = shardOutputs, si = shardInputs;
      // (Answered by the call above: asking again walked every use of
      // every input once more per rank.)
      queries->answered(
          [=](int64_t r) -> int64_t {
            return RankSpecializer(w, *proc, r, *t, *m, so, si)
                .feedShardOf(a)
                .has_value();
          },
          shard.has_value());
    }
    inputOffsets.push_back(b.getDenseI64ArrayAttr(
        shard ? ArrayRef<int64_t>(shard->first) : ArrayRef<int64_t>()));
    if (!shard)
      continue;
    c.setType(shard->second);
    shardedArgs.insert(a);
    anyShard = true;
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  auto fail = [&] {
    fn.erase();
    return func::FuncOp();
  };

  SmallVector<Value> results;
  SmallVector<int64_t> outputs;
  SmallVector<Attribute> offsets;
  for (Operation &op : worker.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
        auto it = pending.find(v);
        // Only a value nothing else in the worker program uses: whether a
        // rank assembled it for another use depends on the rank (a call on
        // a slice), and every rank must decide alike (the gather is a
        // collective).
        bool onlyReturned = llvm::all_of(v.getUsers(), [](Operation *user) {
          return isa<func::ReturnOp>(user);
        });
        if (shardOutputs && onlyReturned && it != pending.end() && queries) {
          PendingResult p = it->second;
          int64_t output = j;
          bound([p, output](int64_t r) -> int64_t {
            PendingResult mine = p;
            mine.localRank = p.mesh->localRank(r);
            auto shard = shardOf(mine, output);
            return shard ? shard->second : -1;
          });
        }
        if (shardOutputs && onlyReturned && it != pending.end())
          if (auto shard = shardOf(it->second, j)) {
            // The controller assembles it from the shards. A replica keeps
            // its copy of an output that may stay resident (a donated
            // parameter), so that every rank reading it next is fed in
            // place; plan-transfers fetches one copy of each shard.
            if (shard->second ||
                worker.getResultAttr(j, MonarchDialect::getKeepAttrName())) {
              results.push_back(it->second.local);
              outputs.push_back(j);
              offsets.push_back(b.getDenseI64ArrayAttr(shard->first));
              outputShards.push_back(it->second);
            }
            continue;
          }
        if (Value local = globalValue(b, v)) {
          results.push_back(local);
          outputs.push_back(j);
          offsets.push_back(b.getDenseI64ArrayAttr({}));
          outputShards.push_back(std::nullopt);
        }
      }
      continue;
    }
    if (auto channelOp = dyn_cast<ChannelSendOp>(op)) {
      auto channel = tables.lookupNearestSymbolFrom<ChannelOp>(
          worker, channelOp.getChannelAttr());
      const MeshRanks *from = meshes.resolve(channel, channel.getFromAttr());
      const MeshRanks *to = meshes.resolve(channel, channel.getToAttr());
      if (meshes.rootOf(*from) != meshes.rootOf(procMesh) ||
          meshes.rootOf(*to) != meshes.rootOf(procMesh)) {
        channelOp.emitOpError("channel ")
            << channelOp.getChannelAttr()
            << " crosses proc meshes; plans move tensors between slices "
               "of one proc mesh only for now";
        return fail();
      }
    }
    if (auto send = dyn_cast<ChannelSendOp>(op)) {
      if (DistAttr dist = shardChannelDist(send)) {
        // This rank's shard, to the ranks of the destination that need it.
        auto it = pending.find(send.getValue());
        if (it == pending.end())
          continue; // Not on this rank.
        auto shard = ChannelSendOp::create(
            b, send.getLoc(), send.getChannelAttr(), it->second.local);
        shard->setAttr(rankform::kShardAttr, dist);
        continue;
      }
      Value v = globalValue(b, send.getValue());
      if (v)
        ChannelSendOp::create(b, send.getLoc(), send.getChannelAttr(), v);
      continue;
    }
    if (auto recv = dyn_cast<ChannelRecvOp>(op)) {
      auto channel = tables.lookupNearestSymbolFrom<ChannelOp>(
          worker, recv.getChannelAttr());
      const MeshRanks *to = meshes.resolve(channel, channel.getToAttr());
      const MeshRanks *from = meshes.resolve(channel, channel.getFromAttr());
      bound([to](int64_t r) -> int64_t { return to->localRank(r) >= 0; });
      int64_t j = to->localRank(rank);
      ChannelSendOp send;
      for (auto s : worker.getBody().front().getOps<ChannelSendOp>())
        if (s.getChannelAttr() == recv.getChannelAttr())
          send = s;
      if (DistAttr dist = send ? shardChannelDist(send) : DistAttr()) {
        if (j < 0)
          continue;
        // This rank's shard, from a rank holding it; held as a pending
        // result of the destination mesh, so a call there split the same
        // way takes it as is and any other use assembles the whole value.
        auto global = cast<RankedTensorType>(recv.getType());
        MeshResolver *m = &meshes;
        bound([=](int64_t r) -> int64_t {
          return m->shardRoute(*from, *to, dist).senderOf[to->localRank(r)] ==
                 r;
        });
        int64_t sender = meshes.shardRoute(*from, *to, dist).senderOf[j];
        Value local;
        if (sender == rank) {
          // Overlapping meshes: this rank holds the shard already.
          auto it = pending.find(send.getValue());
          if (it == pending.end()) {
            recv.emitOpError("receives its shard from this rank, which "
                             "does not hold it");
            return fail();
          }
          local = it->second.local;
        } else {
          auto [offsets, sizes] = shardBox(global.getShape(), dist, *to, j);
          auto shardRecv = ChannelRecvOp::create(
              b, recv.getLoc(),
              RankedTensorType::get(sizes, global.getElementType()),
              recv.getChannelAttr());
          shardRecv->setAttr(rankform::kShardAttr, dist);
          local = shardRecv;
        }
        pending[recv.getResult()] = {
            local, dist, to, j, global, LocationAttr(recv.getLoc())};
        continue;
      }
      bound([=](int64_t r) -> int64_t {
        int64_t at = to->localRank(r);
        return at >= 0 && from->roots[at % from->roots.size()] == r;
      });
      if (j >= 0 && from->roots[j % from->roots.size()] == rank) {
        // Overlapping meshes: this rank sends to itself. The value is
        // already here; a transfer would only copy it (or deadlock).
        Value sent;
        for (auto s : worker.getBody().front().getOps<ChannelSendOp>())
          if (s.getChannelAttr() == recv.getChannelAttr())
            sent = globalValue(b, s.getValue());
        if (!sent) {
          recv.emitOpError("receives from this rank, which sends "
                           "nothing on the channel");
          return fail();
        }
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
      if (failed(inlineCall(&op, b)))
        return fail();
      continue;
    }
    if (isScalarArithmetic(&op)) { // Sunk from the controller by split.
      b.clone(op, map);
      continue;
    }
    op.emitOpError("cannot be planned inside a worker program");
    return fail();
  }

  // Outputs this rank holds, then the final value of each state.
  SmallVector<Attribute> states;
  for (auto &[ref, value] : state) {
    states.push_back(ref);
    results.push_back(value);
  }
  func::ReturnOp::create(b, worker.getLoc(), results);
  fn.setFunctionType(b.getFunctionType(entry->getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  fn->setAttr(MonarchDialect::getRankAttrName(), b.getI64IntegerAttr(rank));
  fn->setAttr(rankform::kOutputsAttr, b.getDenseI64ArrayAttr(outputs));
  if (llvm::any_of(offsets, [](Attribute a) {
        return !cast<DenseI64ArrayAttr>(a).empty();
      }))
    fn->setAttr(rankform::kOutputOffsetsAttr, b.getArrayAttr(offsets));
  fn->setAttr(rankform::kStatesAttr, b.getArrayAttr(states));
  if (anyShard)
    fn->setAttr(rankform::kInputOffsetsAttr, b.getArrayAttr(inputOffsets));
  // After the return exists: the rewrite replaces uses, outputs included.
  moveCollectiveAxesToFront(fn);
  return fn;
}

RankSpecializer::Callee RankSpecializer::calleeOf(Operation *call) {
  SymbolRefAttr callee = isa<CallOp>(call)
                             ? cast<CallOp>(call).getCallee()
                             : cast<BroadcastOp>(call).getCallee();
  auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
      call, FlatSymbolRefAttr::get(callee.getRootReference()));
  auto actorClass = tables.lookupNearestSymbolFrom<ActorClassOp>(
      actorMesh, actorMesh.getActorClassAttr());
  auto endpoint =
      tables.lookupSymbolIn<EndpointOp>(actorClass, callee.getLeafReference());
  return {actorMesh, endpoint,
          meshes.resolve(actorMesh, actorMesh.getMeshAttr())};
}

LogicalResult RankSpecializer::inlineCall(Operation *op, OpBuilder &b) {
  auto [actorMesh, endpoint, mesh] = calleeOf(op);
  const MeshRanks *callee = mesh;
  if (!bound(
          [callee](int64_t r) -> int64_t { return callee->localRank(r) >= 0; }))
    return success(); // Not on this rank.
  int64_t local = mesh->localRank(rank);
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
    // An input fed as this rank's shard (feedShardOf checked this use).
    if (shardedArgs.contains(operand)) {
      inner.map(endpoint.getArgument(i), map.lookup(operand));
      continue;
    }
    Value v = globalValue(b, operand);
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
      Attribute ref =
          SymbolRefAttr::get(actorMesh.getSymNameAttr(), {get.getStateAttr()});
      Value &current = state[ref];
      if (!current)
        current = b.getBlock()->addArgument(get.getType(), get.getLoc());
      inner.map(get.getResult(), current);
      continue;
    }
    if (auto set = dyn_cast<StateSetOp>(bodyOp)) {
      Attribute ref =
          SymbolRefAttr::get(actorMesh.getSymNameAttr(), {set.getStateAttr()});
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
      const MeshRanks *callee = mesh;
      int64_t at = bound([callee, dims](int64_t r) {
        return callee->indexAlong(callee->localRank(r), dims);
      });
      inner.map(index.getResult(),
                arith::ConstantIndexOp::create(b, index.getLoc(), at));
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
      if (isMeshCollective(clone)) {
        SmallVector<int64_t> group = mesh->groupOf(local, dims);
        // Over a group of one rank every collective is its input (a sum,
        // average, max or min of one value; a gather, scatter or exchange
        // of one block): XLA drops such all-reduces too. No communicator,
        // no copy, no averaging pass.
        if (group.size() == 1 && clone->getNumOperands() == 1 &&
            clone->getNumResults() == 1 &&
            clone->getOperand(0).getType() == clone->getResult(0).getType()) {
          inner.map(bodyOp.getResult(0), clone->getOperand(0));
          clone->erase();
          continue;
        }
        clone->setAttr(kGroupAttr, b.getDenseI64ArrayAttr(group));
        if (stampMeshes)
          clone->setAttr(rankform::kGroupMeshAttr, symbolOf(*mesh));
      }
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

DistAttr RankSpecializer::shardChannelDist(ChannelSendOp send) {
  auto call = send.getValue().getDefiningOp<CallOp>();
  if (!call)
    return {};
  auto channel =
      tables.lookupNearestSymbolFrom<ChannelOp>(worker, send.getChannelAttr());
  const MeshRanks *from = meshes.resolve(channel, channel.getFromAttr());
  const MeshRanks *to = meshes.resolve(channel, channel.getToAttr());
  auto [actorMesh, endpoint, mesh] = calleeOf(call);
  DistAttr dist =
      endpoint.getResultDist(cast<OpResult>(send.getValue()).getResultNumber());
  auto global = dyn_cast<RankedTensorType>(send.getValue().getType());
  if (!dist || dist.isReplicated() || dist.getPartial() || !global ||
      !global.hasStaticShape() || mesh != from || !from || !to)
    return {};
  for (StringRef name : splittingDims(dist, global.getRank()))
    if (to->sizeOf(name) != from->sizeOf(name))
      return {};
  return dist;
}

std::optional<std::pair<SmallVector<int64_t>, RankedTensorType>>
RankSpecializer::feedShardOf(BlockArgument arg) {
  auto global = dyn_cast<RankedTensorType>(arg.getType());
  if (!global || !global.hasStaticShape())
    return std::nullopt;
  std::optional<std::pair<SmallVector<int64_t>, RankedTensorType>> shard;
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (!isa<CallOp, BroadcastOp>(user))
      return std::nullopt; // sent, returned, ...: needs the whole value
    auto [actorMesh, endpoint, mesh] = calleeOf(user);
    int64_t local = mesh->localRank(rank);
    if (local < 0)
      continue; // not on this rank
    DistAttr dist = endpoint.getArgDist(use.getOperandNumber());
    if (!dist || dist.isReplicated() || dist.getPartial())
      return std::nullopt;
    auto [offsets, sizes] = shardBox(global.getShape(), dist, *mesh, local);
    auto type = RankedTensorType::get(sizes, global.getElementType());
    if (shard && (shard->first != offsets || shard->second != type))
      return std::nullopt; // two different slices here
    shard = std::make_pair(offsets, type);
  }
  if (shard && shard->second == global)
    return std::nullopt; // the "shard" is the whole value
  return shard;
}

std::optional<std::pair<SmallVector<int64_t>, bool>>
RankSpecializer::shardOf(const PendingResult &p, int64_t output) {
  if (p.dist.getPartial())
    return std::nullopt;
  const MeshRanks &mesh = *p.mesh;
  auto [offsets, sizes] =
      shardBox(p.global.getShape(), p.dist, mesh, p.localRank);
  if (ArrayRef<int64_t>(sizes) == p.global.getShape())
    return std::nullopt; // not split (or only over unit mesh dimensions)
  llvm::StringSet<> splitting;
  for (int64_t d = 0; d < p.global.getRank(); ++d)
    for (StringRef name : p.dist.getSplitDims(d))
      splitting.insert(name);
  SmallVector<StringRef> replicas;
  int64_t copies = 1;
  for (auto [name, size] : llvm::zip(mesh.dims, mesh.shape))
    if (!splitting.contains(name)) {
      replicas.push_back(name);
      copies *= size;
    }
  bool owner =
      replicas.empty() || mesh.indexAlong(p.localRank, replicas) ==
                              output % std::min(copies, rankform::kFetchSpread);
  return std::make_pair(offsets, owner);
}

/// The global value of `v` on this rank, assembling a pending call result
/// (all_reduce of partial sums, all_gather of shards) at first use; null
/// when this rank does not have it.
Value RankSpecializer::globalValue(OpBuilder &b, Value v) {
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

Value RankSpecializer::sliceFor(OpBuilder &b, Location loc, Value global,
                                DistAttr dist, const MeshRanks &mesh,
                                int64_t local) {
  auto type = cast<RankedTensorType>(global.getType());
  auto [offsets, sizes] = shardBox(type.getShape(), dist, mesh, local);
  if (queries) {
    // The slice's offsets are constants of the function.
    const MeshRanks *m = &mesh;
    SmallVector<int64_t> shape(type.getShape());
    for (size_t d = 0; d < offsets.size(); ++d)
      bound([m, shape, dist, d](int64_t r) {
        return shardBox(shape, dist, *m, m->localRank(r)).first[d];
      });
  }
  SmallVector<int64_t> strides(type.getRank(), 1);
  auto folds = [&](ArrayRef<int64_t> values) {
    SmallVector<OpFoldResult> out;
    for (int64_t v : values)
      out.push_back(b.getIndexAttr(v));
    return out;
  };
  return tensor::ExtractSliceOp::create(b, loc, global, folds(offsets),
                                        folds(sizes), folds(strides));
}

Value RankSpecializer::assemble(OpBuilder &b, Location loc, Value v,
                                DistAttr dist, const MeshRanks &mesh,
                                int64_t local, RankedTensorType global) {
  auto stamp = [&](Operation *coll, ArrayAttr dims) {
    coll->setAttr(kGroupAttr,
                  b.getDenseI64ArrayAttr(mesh.groupOf(local, dims)));
    if (stampMeshes)
      coll->setAttr(rankform::kGroupMeshAttr, symbolOf(mesh));
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

struct MonarchSpecializeRanksPass
    : monarch::impl::MonarchSpecializeRanksBase<MonarchSpecializeRanksPass> {
  using Base::Base;

  void runOnOperation() override {
    // Per run: a pass manager may run this pass on many modules.
    SymbolTableCollection tables;
    MeshResolver meshes(tables);
    SmallVector<func::FuncOp> workers;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr(MonarchDialect::getWorkerForAttrName()) &&
          !fn.isDeclaration())
        workers.push_back(fn);
    for (func::FuncOp worker : workers)
      if (failed(specializeWorker(worker, tables, meshes)))
        return signalPassFailure();
  }

  LogicalResult specializeWorker(func::FuncOp worker,
                                 SymbolTableCollection &tables,
                                 MeshResolver &meshes) {
    // Built before the rank functions exist, so that inserting them below
    // renames any that take a name already used.
    SymbolTable &symbols = tables.getSymbolTable(getOperation());
    auto meshRef = worker->getAttrOfType<FlatSymbolRefAttr>(
        MonarchDialect::getWorkerForAttrName());
    const MeshRanks *procMesh = meshes.resolve(worker, meshRef);
    if (!procMesh)
      return worker.emitOpError("runs on an unknown mesh");

    OpBuilder b(&getContext());
    b.setInsertionPointAfter(worker);
    SmallVector<func::FuncOp> ranks;
    auto eraseRanks = [&] {
      for (func::FuncOp fn : ranks)
        fn.erase();
    };
    // Every output must be held by some rank.
    llvm::SmallBitVector held(worker.getNumResults());
    // classes=1: the ranks of each class (the first is the function's),
    // what the first's specialisation asked, and its shard outputs.
    struct Class {
      std::unique_ptr<RankQueries> queries;
      SmallVector<std::optional<PendingResult>> outputShards;
      SmallVector<int64_t> members;
    };
    std::vector<Class> found;
    // The classes a rank is tried against: the last few matched or made,
    // most recent first. Where every rank is a class of its own (a GPT
    // whose ranks slice their rows of the batch), trying all of them would
    // be quadratic in the ranks; a rank whose class is not among them
    // starts another class (a class split in two is the same plan).
    constexpr size_t kTried = 8;
    SmallVector<size_t> recent;
    for (int64_t r = 0, n = procMesh->roots.size(); r < n; ++r) {
      if (classes) {
        auto same = llvm::find_if(
            recent, [&](size_t c) { return found[c].queries->sameFor(r); });
        if (same != recent.end()) {
          size_t c = *same;
          found[c].members.push_back(r);
          recent.erase(same);
          recent.insert(recent.begin(), c);
          continue;
        }
      }
      RankSpecializer specializer(worker, *procMesh, r, tables, meshes,
                                  shardOutputs, shardInputs);
      auto queries = std::make_unique<RankQueries>();
      if (classes) {
        specializer.queries = queries.get();
        specializer.stampMeshes = true;
      }
      func::FuncOp fn = specializer.run(b);
      if (!fn) {
        eraseRanks();
        return failure();
      }
      if (classes) {
        recent.insert(recent.begin(), found.size());
        if (recent.size() > kTried)
          recent.pop_back();
        found.push_back({std::move(queries), specializer.outputShards, {r}});
      }
      ranks.push_back(fn);
      b.setInsertionPointAfter(fn);
      for (int64_t j :
           fn->getAttrOfType<DenseI64ArrayAttr>(rankform::kOutputsAttr)
               .asArrayRef())
        held.set(j);
    }
    // Each class function lists its members and, where it has offsets,
    // theirs.
    for (auto [fn, c] : llvm::zip(
             classes ? ArrayRef(ranks) : ArrayRef<func::FuncOp>(), found)) {
      fn->setAttr(rankform::kMembersAttr, b.getDenseI64ArrayAttr(c.members));
      if (fn->hasAttr(rankform::kInputOffsetsAttr)) {
        SmallVector<Attribute> perMember;
        for (int64_t m : c.members) {
          RankSpecializer member(worker, *procMesh, m, tables, meshes,
                                 shardOutputs, shardInputs);
          SmallVector<Attribute> perInput;
          for (BlockArgument a : worker.getArguments()) {
            auto shard = member.feedShardOf(a);
            perInput.push_back(b.getDenseI64ArrayAttr(
                shard ? ArrayRef<int64_t>(shard->first) : ArrayRef<int64_t>()));
          }
          perMember.push_back(b.getArrayAttr(perInput));
        }
        fn->setAttr(rankform::kMemberInputOffsetsAttr,
                    b.getArrayAttr(perMember));
      }
      if (fn->hasAttr(rankform::kOutputOffsetsAttr)) {
        SmallVector<Attribute> perMember;
        for (int64_t m : c.members) {
          SmallVector<Attribute> perOutput;
          for (const std::optional<PendingResult> &p : c.outputShards) {
            SmallVector<int64_t> at;
            if (p)
              at = shardBox(p->global.getShape(), p->dist, *p->mesh,
                            p->mesh->localRank(m))
                       .first;
            perOutput.push_back(b.getDenseI64ArrayAttr(at));
          }
          perMember.push_back(b.getArrayAttr(perOutput));
        }
        fn->setAttr(rankform::kMemberOutputOffsetsAttr,
                    b.getArrayAttr(perMember));
      }
    }
    for (unsigned j = 0, e = held.size(); j < e; ++j)
      if (!held.test(j)) {
        eraseRanks();
        return worker.emitOpError("output #") << j << " is on no rank";
      }

    // The worker program stays, as the declaration of its rank functions:
    // the controller's control message, feeds and fetches refer to it.
    SmallVector<Attribute> refs;
    for (func::FuncOp fn : ranks) {
      symbols.insert(fn, Block::iterator(fn));
      refs.push_back(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
    }
    worker.eraseBody();
    worker.setPrivate();
    worker->setAttr(rankform::kRanksAttr, b.getArrayAttr(refs));
    return success();
  }
};

} // namespace
