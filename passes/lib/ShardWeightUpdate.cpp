//===- ShardWeightUpdate.cpp - monarch-shard-weight-update ------*- C++ -*-===//
//
// Data parallelism's weight update, sharded (issue 35; XLA's "automatic
// cross-replica sharding of the weight update", Xu et al. 2020). A
// data-parallel step all-reduces a gradient and then updates the weight
// with it on every rank: each of the G ranks of the group repeats the same
// elementwise update of the whole weight. An all_reduce is a
// reduce_scatter followed by an all_gather, so the update can run between
// the two on each rank's rows only:
//
//   %g = all_reduce %p over D avg           %s = reduce_scatter %p over D
//   %u = generic(%w, %g)  (w - lr * g)  ->  %u = generic(rows of %w, %s)
//   state_set @w = %u                       %f = all_gather %u over D
//                                           state_set @w = %f
//
// The bytes moved are the all_reduce's; the update's reads and writes are
// divided by G. It applies to an endpoint body (actor code, and the
// partitioned step of a function compiled with global semantics, which the
// split stage makes one) where:
//
// - the all_reduce sums or averages over dimensions D of the one mesh the
//   class is spawned on, and its leading extent divides by G;
// - every op that reads its result, transitively, is an elementwise
//   linalg.generic over the same shape (no linalg.index), whose other
//   operands are replicated over D (each rank takes its rows of those that
//   vary along the leading dimension; a row broadcast over the rows is
//   read whole);
// - exactly one value of that chain is used outside it (the new weight):
//   one all_gather replaces the all_reduce's second half. With two (SGD
//   with momentum: the momentum and the weight) the step would move more
//   bytes, and `mc.optim`'s `shard_state` (ZeRO-1) is the way;
// - the gradient is at least `min-bytes` (256 KiB): below, two collectives
//   cost more latency than the update saves.
//
// A value is replicated over D when every rank of a group along D holds the
// same one: constants, arguments without `monarch.dist`, collectives over
// dimensions that include D, state declared without `dist` whose every
// `state_set` in the class stores a replicated value (a fixpoint: state
// updated with a rank's own data is not), and pure ops of replicated
// values. `monarch.process_index` over a dimension of D, channel ends and
// calls are not.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "monarch-shard-weight-update"

namespace monarch {
#define GEN_PASS_DEF_MONARCHSHARDWEIGHTUPDATE
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {

/// Whether `dims` (a collective's) includes every name of `of`.
bool covers(ArrayAttr dims, ArrayAttr of) {
  for (Attribute d : of)
    if (!llvm::is_contained(dims.getValue(), d))
      return false;
  return true;
}

/// Whether `a` and `b` name a common dimension.
bool meets(ArrayAttr a, ArrayAttr b) {
  for (Attribute d : a)
    if (llvm::is_contained(b.getValue(), d))
      return true;
  return false;
}

/// Which values of one actor class are replicated over dimensions `dims`
/// (see the file comment), memoized per value.
class Replication {
public:
  Replication(ActorClassOp cls, ArrayAttr dims) : dims(dims) {
    // Optimistic fixpoint over the state: every state without `dist` is
    // replicated until one of its state_sets stores a value that is not.
    for (auto state : cls.getBody().getOps<StateOp>())
      if (!state.getDist())
        replicatedState.insert(state.getSymName());
    bool changed = true;
    while (changed) {
      changed = false;
      memo.clear();
      cls.walk([&](StateSetOp set) {
        StringRef name = set.getState();
        if (replicatedState.contains(name) && !replicated(set.getValue())) {
          replicatedState.erase(name);
          changed = true;
        }
      });
    }
    memo.clear();
  }

  /// Whether every rank of a group along `dims` holds the same `v`.
  bool replicated(Value v) {
    auto [it, fresh] = memo.try_emplace(v, false);
    if (!fresh)
      return it->second;
    bool r = compute(v);
    memo[v] = r;
    return r;
  }

private:
  bool compute(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto endpoint = dyn_cast<EndpointOp>(arg.getOwner()->getParentOp());
      return endpoint && arg.getOwner()->isEntryBlock() &&
             !endpoint.getArgDist(arg.getArgNumber());
    }
    Operation *op = v.getDefiningOp();
    if (!op)
      return false;
    if (auto get = dyn_cast<StateGetOp>(op))
      return replicatedState.contains(get.getState());
    if (auto ar = dyn_cast<AllReduceOp>(op))
      return covers(ar.getDims(), dims);
    if (auto ag = dyn_cast<AllGatherOp>(op))
      return covers(ag.getDims(), dims) && replicated(ag.getInput());
    if (auto bc = dyn_cast<BroadcastFromOp>(op))
      return covers(bc.getDims(), dims);
    if (auto index = dyn_cast<ProcessIndexOp>(op))
      return !meets(index.getDims(), dims);
    if (isa<MonarchDialect>(op->getDialect()) || !isMemoryEffectFree(op))
      return false;
    // Pure compute: replicated when everything it reads is, inside its
    // regions included.
    for (Value operand : op->getOperands())
      if (!replicated(operand))
        return false;
    return readsReplicatedInside(op);
  }

public:
  /// Whether the ops inside `op`'s regions are pure compute and every
  /// value they read from outside `op` is replicated.
  bool readsReplicatedInside(Operation *op) {
    WalkResult r = op->walk([&](Operation *nested) {
      if (nested == op)
        return WalkResult::advance();
      if (isa<MonarchDialect>(nested->getDialect()) ||
          !isMemoryEffectFree(nested))
        return WalkResult::interrupt();
      for (Value operand : nested->getOperands())
        if (!op->isAncestor(operand.getParentRegion()->getParentOp()) &&
            !replicated(operand))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return !r.wasInterrupted();
  }

private:
  ArrayAttr dims;
  llvm::StringSet<> replicatedState;
  llvm::DenseMap<Value, bool> memo;
};

/// The elementwise ops that read an all_reduce's result, transitively, and
/// the one value of them used elsewhere; empty when the pattern does not
/// hold.
struct Chain {
  SmallVector<linalg::GenericOp> ops; // in block order
  Value sink;
};

/// Whether `map` reads along the leading loop (d0).
bool usesLeading(AffineMap map) { return map.isFunctionOfDim(0); }

/// Whether `generic` is an elementwise op over `shape` that the chain can
/// take: all loops parallel, identity maps for `shape`-typed operands and
/// its results, other operands not reading along d0 (broadcasts), no
/// linalg.index.
bool elementwise(linalg::GenericOp generic, RankedTensorType shape) {
  if (generic.getNumLoops() != static_cast<unsigned>(shape.getRank()) ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  if (!generic.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  for (OpOperand &operand : generic->getOpOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(&operand);
    if (map.isIdentity())
      continue;
    if (generic.isDpsInit(&operand) || usesLeading(map))
      return false;
  }
  for (Type t : generic->getResultTypes())
    if (cast<RankedTensorType>(t).getShape() != shape.getShape())
      return false;
  return true;
}

/// The chain of `reduce` (empty `ops` where there is none to shard).
Chain chainOf(AllReduceOp reduce, Replication &replication) {
  Chain chain;
  auto shape = cast<RankedTensorType>(reduce.getType());
  Block *block = reduce->getBlock();
  llvm::SetVector<Operation *> members;
  llvm::DenseSet<Value> inChain{reduce.getResult()};
  SmallVector<Value> work{reduce.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (!generic || generic->getBlock() != block || members.contains(user) ||
          !elementwise(generic, shape))
        continue;
      members.insert(user);
      for (Value r : generic->getResults())
        if (inChain.insert(r).second)
          work.push_back(r);
    }
  }
  if (members.empty())
    return {};
  // Every other operand a member reads (inside its body too) is
  // replicated, broadcasts along the other loops included: a rank's own
  // row added to its rows would make each rank's rows from a different
  // row. An init the body reads is an input.
  for (Operation *op : members) {
    auto generic = cast<linalg::GenericOp>(op);
    for (OpOperand &operand : generic->getOpOperands()) {
      Value v = operand.get();
      if (inChain.contains(v))
        continue;
      bool read = !generic.isDpsInit(&operand) ||
                  generic.payloadUsesValueFromOperand(&operand);
      if (read && !replication.replicated(v))
        return {};
    }
    if (!replication.readsReplicatedInside(generic))
      return {};
  }
  // The one value used outside the chain.
  for (Value v : inChain)
    for (Operation *user : v.getUsers())
      if (!members.contains(user)) {
        if (chain.sink && chain.sink != v)
          return {};
        chain.sink = v;
      }
  if (!chain.sink || chain.sink == reduce.getResult())
    return {};
  for (Operation *op : members)
    chain.ops.push_back(cast<linalg::GenericOp>(op));
  llvm::sort(chain.ops, [](linalg::GenericOp a, linalg::GenericOp b) {
    return a->isBeforeInBlock(b);
  });
  return chain;
}

/// Rewrites `reduce` and its chain: reduce_scatter, the chain on this
/// rank's rows, one all_gather of the sink.
void shard(AllReduceOp reduce, const Chain &chain, int64_t groupSize) {
  auto shape = cast<RankedTensorType>(reduce.getType());
  int64_t rows = shape.getDimSize(0) / groupSize;
  SmallVector<int64_t> part(shape.getShape());
  part[0] = rows;
  auto partType = RankedTensorType::get(part, shape.getElementType());
  OpBuilder b(reduce);
  Location loc = reduce.getLoc();
  MLIRContext *ctx = b.getContext();
  auto scattered = ReduceScatterOp::create(
      b, loc, partType, reduce.getInput(), reduce.getDims(),
      b.getI64IntegerAttr(0), reduce.getReductionAttr());
  // This rank's first row: its index along the dims times the rows.
  Value index =
      ProcessIndexOp::create(b, loc, b.getIndexType(), reduce.getDims());
  Value first = arith::MulIOp::create(
      b, loc, index, arith::ConstantIndexOp::create(b, loc, rows));
  IRMapping shards;
  shards.map(reduce.getResult(), scattered.getResult());
  auto rowsOf = [&](OpBuilder &at, Value whole) -> Value {
    auto type = cast<RankedTensorType>(whole.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), at.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes,
        strides(type.getRank(), at.getIndexAttr(1));
    offsets[0] = first;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(at.getIndexAttr(d ? type.getDimSize(d) : rows));
    return tensor::ExtractSliceOp::create(at, whole.getLoc(), whole, offsets,
                                          sizes, strides);
  };
  for (linalg::GenericOp generic : chain.ops) {
    OpBuilder at(generic);
    SmallVector<Value> inputs, inits;
    for (OpOperand &operand : generic->getOpOperands()) {
      Value v = operand.get();
      Value mapped;
      if (Value s = shards.lookupOrNull(v))
        mapped = s;
      else if (!generic.getMatchingIndexingMap(&operand).isIdentity())
        mapped = v; // a broadcast along the other loops
      else if (generic.isDpsInit(&operand) &&
               !generic.payloadUsesValueFromOperand(&operand))
        mapped = tensor::EmptyOp::create(
            at, v.getLoc(), part,
            cast<RankedTensorType>(v.getType()).getElementType());
      else
        mapped = rowsOf(at, v);
      (generic.isDpsInit(&operand) ? inits : inputs).push_back(mapped);
    }
    SmallVector<Type> types;
    for (Value init : inits)
      types.push_back(init.getType());
    auto rowsOp = linalg::GenericOp::create(
        at, generic.getLoc(), types, inputs, inits,
        generic.getIndexingMapsArray(), generic.getIteratorTypesArray());
    rowsOp->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
    IRMapping body;
    generic.getRegion().cloneInto(&rowsOp.getRegion(), body);
    for (auto [whole, rowsResult] :
         llvm::zip(generic->getResults(), rowsOp->getResults()))
      shards.map(whole, rowsResult);
  }
  // The sink, gathered once, where its rows are ready.
  Value sinkRows = shards.lookup(chain.sink);
  OpBuilder after(ctx);
  after.setInsertionPointAfterValue(sinkRows);
  auto gathered = AllGatherOp::create(
      after, chain.sink.getLoc(), chain.sink.getType(), sinkRows,
      reduce.getDims(), after.getI64IntegerAttr(0));
  llvm::SmallPtrSet<Operation *, 8> inChain;
  for (linalg::GenericOp generic : chain.ops)
    inChain.insert(generic);
  Value sink = chain.sink;
  sink.replaceUsesWithIf(gathered.getResult(), [&](OpOperand &use) {
    return !inChain.contains(use.getOwner());
  });
  llvm::SetVector<Operation *> inits;
  for (linalg::GenericOp generic : llvm::reverse(chain.ops)) {
    for (Value init : generic.getDpsInits())
      if (auto empty = init.getDefiningOp<tensor::EmptyOp>())
        inits.insert(empty);
    generic->erase();
  }
  reduce->erase();
  for (Operation *empty : inits)
    if (empty->use_empty())
      empty->erase();
}

/// G: the size of the group along `dims` of the one mesh `cls` is spawned
/// on, or 0 (spawned on none, several, or a mesh without those dims).
int64_t groupSize(ActorClassOp cls, ArrayAttr dims, ModuleOp module,
                  SymbolTableCollection &tables) {
  int64_t size = 0;
  for (auto spawn : module.getOps<ActorMeshOp>()) {
    if (spawn.getActorClass() != cls.getSymName())
      continue;
    MeshOpInterface mesh = lookupMesh(spawn, spawn.getMeshAttr(), &tables);
    if (!mesh)
      return 0;
    SmallVector<StringRef> names = mesh.getDimNames();
    SmallVector<int64_t> shape = mesh.getMeshShape();
    // The dims in the mesh's order: then a rank's process_index over them
    // is its place in the collective's group.
    int64_t g = 1, last = -1;
    for (Attribute d : dims) {
      auto at = llvm::find(names, cast<StringAttr>(d).getValue());
      if (at == names.end() || at - names.begin() <= last)
        return 0;
      last = at - names.begin();
      g *= shape[last];
    }
    if (size && size != g)
      return 0;
    size = g;
  }
  return size;
}

struct ShardWeightUpdatePass
    : monarch::impl::MonarchShardWeightUpdateBase<ShardWeightUpdatePass> {
  using MonarchShardWeightUpdateBase::MonarchShardWeightUpdateBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection tables;
    for (auto cls : module.getOps<ActorClassOp>()) {
      SmallVector<AllReduceOp> reduces;
      cls.walk([&](AllReduceOp op) { reduces.push_back(op); });
      // One analysis per set of dims, rebuilt only after a rewrite (the
      // values it knew are gone; the new weight's all_gather is
      // replicated).
      std::optional<Replication> replication;
      ArrayAttr analysed;
      for (AllReduceOp reduce : reduces) {
        auto shape = dyn_cast<RankedTensorType>(reduce.getType());
        ReductionKind kind = reduce.getReduction();
        if (!shape || !shape.hasStaticShape() || shape.getRank() == 0 ||
            (kind != ReductionKind::Sum && kind != ReductionKind::Avg) ||
            !isa<EndpointOp>(reduce->getParentOp()) ||
            !shape.getElementType().isIntOrFloat())
          continue;
        // Small gradients stay one all_reduce (bucketed with the others):
        // two collectives would cost more latency than the update saves.
        int64_t bytes =
            shape.getNumElements() * ((shape.getElementTypeBitWidth() + 7) / 8);
        if (bytes < minBytes)
          continue;
        int64_t g = groupSize(cls, reduce.getDims(), module, tables);
        if (g < 2 || shape.getDimSize(0) % g)
          continue;
        if (!replication || analysed != reduce.getDims()) {
          replication.emplace(cls, reduce.getDims());
          analysed = reduce.getDims();
        }
        Chain chain = chainOf(reduce, *replication);
        if (chain.ops.empty())
          continue;
        shard(reduce, chain, g);
        replication.reset();
      }
    }
  }
};

} // namespace
