//===- SplitControlData.cpp - monarch-split-control-data --------*- C++ -*-===//
//
// Separates what the controller says to the workers from the tensor bytes
// that move between ranks.
//
// A partitioned program is a sequence of feeds, endpoint calls and
// broadcasts, transfers and fetches. For every proc mesh the program uses we
// build one worker program (`func.func` marked `monarch.worker_for`): the
// calls on that mesh's actor meshes in program order, with transfers turned
// into `monarch.channel` sends and receives. Its arguments are the values fed
// to the mesh followed by the scalars the calls need; its results are the
// values fetched from it. The controller program then sends one
// `monarch.control_msg` per proc mesh (the scalars ride along), sends feeds
// and receives fetches as data (`monarch.feed_input`, `monarch.fetch_output`)
// and awaits completion. Because every worker program follows the order of
// the original program, channels cannot deadlock.
//
// Scalar arithmetic of the controller (arith and math ops on scalars, such
// as `lr * 0.5`) that feeds a call is sunk into the worker programs: the
// message carries its leaves (controller arguments and constants) and each
// worker program recomputes the value, so the controller stays a sequence of
// messages.
//
//===----------------------------------------------------------------------===//

#include "PassUtils.h"
#include "monarch/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

#define DEBUG_TYPE "monarch-split-control-data"

namespace monarch {
#define GEN_PASS_DEF_MONARCHSPLITCONTROLDATA
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {

/// Everything that goes into the worker program of one proc mesh.
struct WorkerProgram {
  ProcMeshOp mesh;
  SmallVector<FeedOp> feeds;
  SmallVector<Value> scalars;        // Controller values the calls use.
  llvm::SetVector<Operation *> sunk; // Scalar ops recomputed, in order.
  SmallVector<Operation *> ops;      // Calls, broadcasts, transfer ends.
  SmallVector<FetchOp> fetches;
  func::FuncOp func;
  IRMapping map;
};

struct MonarchSplitControlDataPass
    : monarch::impl::MonarchSplitControlDataBase<MonarchSplitControlDataPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection tables;
    SmallVector<func::FuncOp> programs;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() &&
          !fn->hasAttr(MonarchDialect::getWorkerForAttrName()) &&
          llvm::any_of(fn.getBody().front(), [](Operation &op) {
            return isa<FeedOp, FetchOp, CallOp, BroadcastOp, TransferOp>(op);
          }))
        programs.push_back(fn);
    for (func::FuncOp fn : programs)
      if (failed(split(fn, tables)))
        return signalPassFailure();
  }

  /// The proc mesh at the root of `ref`'s slice chain.
  ProcMeshOp rootMesh(Operation *from, FlatSymbolRefAttr ref,
                      SymbolTableCollection &tables) {
    return getRootMesh(lookupMesh(from, ref, &tables), &tables);
  }

  /// A transfer of a fed value becomes a feed to its destination: the
  /// controller holds the value, so it sends each destination rank what
  /// that rank needs (its shard, when every use there is split) instead of
  /// the whole value to every rank of the source mesh and a worker-to-worker
  /// hop after it. A feed nothing else uses is dropped.
  static void feedThroughTransfers(func::FuncOp fn) {
    SmallVector<TransferOp> transfers;
    for (auto transfer : fn.getBody().front().getOps<TransferOp>())
      if (transfer.getInput().getDefiningOp<FeedOp>())
        transfers.push_back(transfer);
    for (TransferOp transfer : transfers) {
      auto feed = transfer.getInput().getDefiningOp<FeedOp>();
      OpBuilder b(transfer);
      auto direct = FeedOp::create(b, transfer.getLoc(), feed.getInput(),
                                   transfer.getToAttr());
      direct->setDiscardableAttrs(feed->getDiscardableAttrDictionary());
      transfer.getResult().replaceAllUsesWith(direct.getResult());
      transfer.erase();
      if (feed->use_empty())
        feed.erase();
    }
  }

  LogicalResult split(func::FuncOp fn, SymbolTableCollection &tables) {
    MLIRContext *ctx = &getContext();
    feedThroughTransfers(fn);
    llvm::MapVector<Operation *, WorkerProgram> workers;
    DenseMap<Value, ProcMeshOp> meshOf;  // Values that live on a mesh.
    DenseSet<Value> fetched;             // Controller values from fetches.
    SmallVector<Operation *> dependents; // Controller ops using them.

    auto workerFor = [&](ProcMeshOp mesh) -> WorkerProgram & {
      WorkerProgram &w = workers[mesh.getOperation()];
      w.mesh = mesh;
      return w;
    };
    auto meshOfActor = [&](Operation *op, StringAttr actor) -> ProcMeshOp {
      auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
          op, FlatSymbolRefAttr::get(actor));
      return actorMesh ? rootMesh(actorMesh, actorMesh.getMeshAttr(), tables)
                       : ProcMeshOp();
    };
    // A controller scalar `v` used by `op` on worker `w`: an argument of the
    // worker program, or (sinkable arithmetic) recomputed there from its
    // operands. A constant passed directly stays an argument; constants
    // under sunk arithmetic are sunk with it.
    std::function<LogicalResult(Operation *, Value, WorkerProgram &, bool)>
        addScalar = [&](Operation *op, Value v, WorkerProgram &w,
                        bool topLevel) -> LogicalResult {
      if (fetched.contains(v))
        return op->emitOpError("depends on a value fetched in the same "
                               "step; split the step in two");
      Operation *def = v.getDefiningOp();
      if (def && isScalarArithmetic(def) &&
          !(topLevel && def->hasTrait<OpTrait::ConstantLike>())) {
        if (w.sunk.contains(def))
          return success();
        for (Value operand : def->getOperands())
          if (failed(addScalar(op, operand, w, /*topLevel=*/false)))
            return failure();
        w.sunk.insert(def);
        return success();
      }
      if (!llvm::is_contained(w.scalars, v))
        w.scalars.push_back(v);
      return success();
    };
    // Operands of an invocation: mesh values must live on `mesh`; controller
    // values become scalar arguments of the worker program.
    auto addOperands = [&](Operation *op, WorkerProgram &w) -> LogicalResult {
      for (Value v : op->getOperands()) {
        auto it = meshOf.find(v);
        if (it != meshOf.end()) {
          if (it->second != w.mesh)
            return op->emitOpError("uses a value on @")
                   << it->second.getSymName() << " while running on @"
                   << w.mesh.getSymName() << "; move it with monarch.transfer";
          continue;
        }
        if (isa<ShapedType>(v.getType()))
          return op->emitOpError("passes a controller tensor to the mesh "
                                 "without monarch.feed");
        if (failed(addScalar(op, v, w, /*topLevel=*/true)))
          return failure();
      }
      return success();
    };

    // 1. Sort the program's ops into worker programs.
    for (Operation &op : fn.getBody().front()) {
      if (auto feed = dyn_cast<FeedOp>(op)) {
        ProcMeshOp mesh = rootMesh(feed, feed.getMeshAttr(), tables);
        if (!mesh)
          return feed.emitOpError("feeds an unknown mesh");
        if (fetched.contains(feed.getInput()))
          return feed.emitOpError("feeds a value fetched in the same step; "
                                  "split the step in two");
        workerFor(mesh).feeds.push_back(feed);
        meshOf[feed.getResult()] = mesh;
      } else if (isa<CallOp, BroadcastOp>(op)) {
        StringAttr actor = isa<CallOp>(op)
                               ? cast<CallOp>(op).getActorMeshName()
                               : cast<BroadcastOp>(op).getActorMeshName();
        ProcMeshOp mesh = meshOfActor(&op, actor);
        if (!mesh)
          return op.emitOpError("invokes an actor mesh on an unknown mesh");
        WorkerProgram &w = workerFor(mesh);
        if (failed(addOperands(&op, w)))
          return failure();
        w.ops.push_back(&op);
        for (Value r : op.getResults())
          meshOf[r] = mesh;
      } else if (auto transfer = dyn_cast<TransferOp>(op)) {
        ProcMeshOp from = rootMesh(transfer, transfer.getFromAttr(), tables);
        ProcMeshOp to = rootMesh(transfer, transfer.getToAttr(), tables);
        if (!from || !to)
          return transfer.emitOpError("transfers between unknown meshes");
        if (meshOf.lookup(transfer.getInput()) != from)
          return transfer.emitOpError("moves a value that does not live on ")
                 << transfer.getFromAttr();
        workerFor(from).ops.push_back(&op);
        if (to != from)
          workerFor(to).ops.push_back(&op);
        meshOf[transfer.getResult()] = to;
      } else if (auto fetch = dyn_cast<FetchOp>(op)) {
        ProcMeshOp mesh = rootMesh(fetch, fetch.getMeshAttr(), tables);
        if (!mesh || meshOf.lookup(fetch.getInput()) != mesh)
          return fetch.emitOpError("fetches a value that does not live on ")
                 << fetch.getMeshAttr();
        workerFor(mesh).fetches.push_back(fetch);
        fetched.insert(fetch.getResult());
      } else if (!op.hasTrait<OpTrait::IsTerminator>()) {
        // Controller-side scalar work; it must not touch mesh values.
        for (Value v : op.getOperands())
          if (meshOf.count(v))
            return op.emitOpError("computes on a value that lives on @")
                   << meshOf.lookup(v).getSymName()
                   << "; run monarch-partition first";
        if (llvm::any_of(op.getOperands(),
                         [&](Value v) { return fetched.contains(v); })) {
          dependents.push_back(&op);
          for (Value r : op.getResults())
            fetched.insert(r);
        }
      }
    }

    // 2. Channels for transfers and the worker programs themselves.
    OpBuilder b(ctx);
    DenseMap<Operation *, StringAttr> channelOf;
    unsigned channelIndex = 0;
    b.setInsertionPoint(fn);
    for (Operation &op : fn.getBody().front())
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        std::string name =
            (fn.getSymName() + ".ch" + std::to_string(channelIndex++)).str();
        auto channel = ChannelOp::create(
            b, transfer.getLoc(), b.getStringAttr(name), transfer.getFromAttr(),
            transfer.getToAttr(), TypeAttr::get(transfer.getInput().getType()));
        channelOf[transfer] = channel.getSymNameAttr();
        ++numChannels;
      }

    for (auto &[key, w] : workers) {
      SmallVector<Type> inputs, outputs;
      for (FeedOp feed : w.feeds)
        inputs.push_back(feed.getType());
      for (Value v : w.scalars)
        inputs.push_back(v.getType());
      for (FetchOp fetch : w.fetches)
        outputs.push_back(fetch.getType());
      std::string name =
          (fn.getSymName() + ".worker." + w.mesh.getSymName()).str();
      b.setInsertionPoint(fn);
      w.func = func::FuncOp::create(b, fn.getLoc(), name,
                                    b.getFunctionType(inputs, outputs));
      w.func->setAttr(MonarchDialect::getWorkerForAttrName(),
                      FlatSymbolRefAttr::get(w.mesh.getSymNameAttr()));
      Block *entry = w.func.addEntryBlock();
      unsigned arg = 0;
      for (FeedOp feed : w.feeds)
        w.map.map(feed.getResult(), entry->getArgument(arg++));
      for (Value v : w.scalars)
        w.map.map(v, entry->getArgument(arg++));
      b.setInsertionPointToStart(entry);
      for (Operation *op : w.sunk)
        b.clone(*op, w.map);
      for (Operation *op : w.ops) {
        auto transfer = dyn_cast<TransferOp>(op);
        if (!transfer) {
          b.clone(*op, w.map);
          continue;
        }
        ProcMeshOp from = rootMesh(transfer, transfer.getFromAttr(), tables);
        ProcMeshOp to = rootMesh(transfer, transfer.getToAttr(), tables);
        auto channel = FlatSymbolRefAttr::get(channelOf.lookup(transfer));
        if (from == w.mesh)
          ChannelSendOp::create(b, transfer.getLoc(), channel,
                                w.map.lookup(transfer.getInput()));
        if (to == w.mesh) {
          Value received = ChannelRecvOp::create(b, transfer.getLoc(),
                                                 transfer.getType(), channel);
          w.map.map(transfer.getResult(), received);
        }
      }
      SmallVector<Value> results;
      for (auto [i, fetch] : llvm::enumerate(w.fetches)) {
        results.push_back(w.map.lookup(fetch.getInput()));
        // A result that may stay resident on the workers (donation).
        if (fetch->hasAttr(MonarchDialect::getKeepAttrName()))
          w.func.setResultAttr(i, MonarchDialect::getKeepAttrName(),
                               b.getUnitAttr());
      }
      func::ReturnOp::create(b, fn.getLoc(), results);
    }

    // 3. The controller: one control message per proc mesh, feeds and
    // fetches as data, then completion.
    Block &body = fn.getBody().front();
    Operation *after = nullptr; // Last definition the messages need.
    auto noteDef = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (def && (!after || after->isBeforeInBlock(def)))
        after = def;
    };
    for (auto &[key, w] : workers) {
      for (Value v : w.scalars)
        noteDef(v);
      for (FeedOp feed : w.feeds)
        noteDef(feed.getInput());
    }
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(&body);
    SmallVector<Value> tokens;
    for (auto &[key, w] : workers) {
      auto invoke =
          b.getArrayAttr({FlatSymbolRefAttr::get(w.func.getSymNameAttr())});
      SmallVector<Location> locs;
      for (Operation *op : w.ops)
        locs.push_back(op->getLoc());
      Location loc = locs.empty() ? fn.getLoc() : FusedLoc::get(ctx, locs);
      tokens.push_back(ControlMsgOp::create(
          b, loc, TokenType::get(ctx),
          FlatSymbolRefAttr::get(w.mesh.getSymNameAttr()), invoke, w.scalars));
      ++numControlMsgs;
    }
    for (auto &[key, w] : workers)
      for (auto [i, feed] : llvm::enumerate(w.feeds))
        FeedInputOp::create(b, feed.getLoc(), feed.getInput(),
                            FlatSymbolRefAttr::get(w.func.getSymNameAttr()),
                            b.getI64IntegerAttr(i));
    Operation *terminator = body.getTerminator();
    b.setInsertionPoint(terminator);
    for (auto &[key, w] : workers)
      for (auto [i, fetch] : llvm::enumerate(w.fetches)) {
        Value out = FetchOutputOp::create(
            b, fetch.getLoc(), fetch.getType(),
            FlatSymbolRefAttr::get(w.func.getSymNameAttr()),
            b.getI64IntegerAttr(i));
        fetch.getResult().replaceAllUsesWith(out);
      }
    if (!tokens.empty())
      AwaitOp::create(b, fn.getLoc(), tokens);

    // Controller work on fetched values runs once they have arrived.
    for (Operation *op : dependents)
      op->moveBefore(terminator);
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<FeedOp, FetchOp, CallOp, BroadcastOp, TransferOp>(op)) {
        if (!op.use_empty())
          return op.emitOpError("is still used after splitting");
        op.erase();
      }
    // Sunk arithmetic the controller no longer uses goes (users first).
    llvm::SmallPtrSet<Operation *, 8> sunk;
    for (auto &[key, w] : workers)
      sunk.insert(w.sunk.begin(), w.sunk.end());
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (sunk.contains(&op) && op.use_empty())
        op.erase();
    return success();
  }
};

} // namespace
