//===- PartitionUpstream.cpp - Upstream's shard passes on a segment -------===//
//
// monarch-partition's upstream adapter (PartitionUpstream.h): propagation,
// partitioning, the silent-failure bisection and the rewrite of upstream's
// shard ops into ours.
//
//===----------------------------------------------------------------------===//
#include "PartitionUpstream.h"

#include "PartitionPrep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;

namespace monarch::partition {

namespace {

/// Mesh dimension names of grid axes `axes` of `mesh`.
ArrayAttr dimNames(Builder &b, MeshOpInterface mesh,
                   ArrayRef<shard::GridAxis> axes) {
  SmallVector<StringRef> names = mesh.getDimNames();
  SmallVector<Attribute> out;
  for (shard::GridAxis axis : axes)
    out.push_back(b.getStringAttr(names[axis]));
  return b.getArrayAttr(out);
}

/// `#monarch.dist` of a `shard.sharding` on `mesh`, or null when replicated.
DistAttr distFromSharding(Builder &b, MeshOpInterface mesh,
                          shard::ShardingOp sharding, int64_t rank) {
  if (!sharding)
    return {};
  SmallVector<Attribute> split;
  bool any = false;
  auto axes = sharding.getSplitAxes().getAxes();
  for (int64_t d = 0; d < rank; ++d) {
    SmallVector<shard::GridAxis> gridAxes;
    if (d < static_cast<int64_t>(axes.size()))
      gridAxes = llvm::to_vector(axes[d].asArrayRef());
    any |= !gridAxes.empty();
    split.push_back(dimNames(b, mesh, gridAxes));
  }
  if (!any)
    return {};
  return DistAttr::get(b.getContext(), b.getArrayAttr(split), std::nullopt);
}

/// The sharding a `shard.shard` annotation gives to `value`, if any: the
/// annotation that defines it, or one on it for its producer.
shard::ShardingOp annotatedSharding(Value value) {
  if (auto shardOp = value.getDefiningOp<shard::ShardOp>())
    return shardOp.getSharding().getDefiningOp<shard::ShardingOp>();
  shard::ShardingOp forUsers;
  for (Operation *user : value.getUsers())
    if (auto shardOp = dyn_cast<shard::ShardOp>(user)) {
      auto sharding = shardOp.getSharding().getDefiningOp<shard::ShardingOp>();
      if (!shardOp.getAnnotateForUsers())
        return sharding;
      if (!forUsers)
        forUsers = sharding;
    }
  // Propagation may only have annotated the users of an argument.
  return forUsers;
}

/// Our reduction of an upstream one (`ok` false when there is none).
ReductionKind toMonarch(shard::ReductionKind kind, bool &ok) {
  ok = true;
  switch (kind) {
  case shard::ReductionKind::Sum:
    return ReductionKind::Sum;
  case shard::ReductionKind::Max:
    return ReductionKind::Max;
  case shard::ReductionKind::Min:
    return ReductionKind::Min;
  case shard::ReductionKind::Product:
    return ReductionKind::Prod;
  case shard::ReductionKind::Average:
    return ReductionKind::Avg;
  default:
    ok = false;
    return ReductionKind::Sum;
  }
}

/// `shard.shard %arg to <dist>` for the uses of `arg` (a segment input whose
/// layout an earlier segment decided).
void annotateArg(BlockArgument arg, DistAttr dist, MeshOpInterface mesh,
                 shard::GridOp grid) {
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type || type.getRank() == 0 || arg.use_empty())
    return;
  SmallVector<SmallVector<int16_t>> axes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    SmallVector<int16_t> split;
    for (StringRef m : dist.getSplitDims(d))
      if (int64_t i = mesh.getDimIndex(m); i >= 0)
        split.push_back(static_cast<int16_t>(i));
    axes.push_back(split);
  }
  OpBuilder b(arg.getContext());
  b.setInsertionPointToStart(arg.getOwner());
  Location loc = arg.getOwner()->getParentOp()->getLoc();
  auto sharding = shard::ShardingOp::create(
      b, loc, FlatSymbolRefAttr::get(grid.getSymNameAttr()),
      partition::splitAxesAttrs(b.getContext(), axes));
  auto annotated = shard::ShardOp::create(b, loc, arg, sharding,
                                          /*annotate_for_users=*/false);
  arg.replaceAllUsesExcept(annotated, annotated);
}

/// The layouts upstream partitioning was asked to give `op`'s operands
/// and results, in mesh dimension names: `operands ([["gpus"], []],
/// replicated) -> results (partial)`.
std::string describeLayouts(Operation *op, MeshOpInterface mesh) {
  SmallVector<StringRef> names = mesh.getDimNames();
  auto layout = [&](shard::ShardOp s) -> std::string {
    auto sharding =
        s ? s.getSharding().getDefiningOp<shard::ShardingOp>() : nullptr;
    if (!sharding)
      return "unannotated";
    std::string out;
    bool any = false;
    for (shard::GridAxesAttr axes : sharding.getSplitAxes().getAxes()) {
      out += out.empty() ? "[" : ", ";
      out += "[";
      for (auto [k, axis] : llvm::enumerate(axes.asArrayRef())) {
        out += k ? ", " : "";
        out += axis >= 0 && axis < static_cast<int64_t>(names.size())
                   ? ("\"" + names[axis] + "\"").str()
                   : std::to_string(axis);
        any = true;
      }
      out += "]";
    }
    return any ? out + "]" : "replicated";
  };
  std::string text = "operands (";
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    text += i ? ", " : "";
    text += !type || type.getRank() == 0
                ? "scalar"
                : layout(v.getDefiningOp<shard::ShardOp>());
  }
  text += ") -> results (";
  for (auto [i, r] : llvm::enumerate(op->getResults())) {
    shard::ShardOp s;
    for (Operation *user : r.getUsers())
      if (auto a = dyn_cast<shard::ShardOp>(user); a && !s)
        s = a;
    text += i ? ", " : "";
    text += layout(s);
  }
  return text + ")";
}

} // namespace

void UpstreamPartitioner::build() {
  if (propagatePM.size() != 0)
    return;
  shard::ShardingPropagationOptions propagation;
  propagation.traversal = shard::TraversalOrder::ForwardBackward;
  propagatePM.addPass(shard::createShardingPropagation(propagation));
  partitionPM.addPass(shard::createPartition());
}

LogicalResult
UpstreamPartitioner::partition(const UpstreamSegment &sf, bool replicateInputs,
                               SmallVectorImpl<DistAttr> &argDists,
                               SmallVectorImpl<DistAttr> &resDists,
                               int64_t &collectives, PipelineRunner run) {
  build();
  func::FuncOp tmp = sf.fn;
  MLIRContext *ctx = tmp.getContext();
  Builder b(ctx);
  // Inputs that earlier segments left split start split, so the shards
  // stay where they are (propagation would otherwise pick the inputs'
  // layouts from their users alone).
  if (!replicateInputs)
    for (auto [arg, dist] : llvm::zip(tmp.getArguments(), sf.inDists))
      if (dist && !dist.getPartial())
        annotateArg(arg, dist, sf.mesh, sf.grid);
  prepareForPropagation(tmp, replicateInputs, sf.numLifted);
  if (failed(run(propagatePM, tmp)))
    return failure();
  // What propagation could not reach is replicated; propagate again so
  // that its neighbours agree.
  if (annotateRemainingAsReplicated(tmp) && failed(run(propagatePM, tmp)))
    return failure();
  if (Operation *bad = findUnannotatedOp(tmp)) {
    InFlightDiagnostic diag = bad->emitOpError(
        "cannot be partitioned: sharding propagation found no layout for "
        "its result");
    diag.attachNote(sf.head->getLoc())
        << "in the work on @" << sf.meshName << " starting here";
    return failure();
  }

  // Distributions of the global arguments and results, read off the
  // propagated annotations before partitioning rewrites the types.
  argDists.clear();
  resDists.clear();
  for (BlockArgument arg : tmp.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    argDists.push_back(
        t ? distFromSharding(b, sf.mesh, annotatedSharding(arg), t.getRank())
          : DistAttr());
  }
  auto ret = cast<func::ReturnOp>(tmp.getBody().front().getTerminator());
  for (Value v : ret.getOperands()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    resDists.push_back(
        t ? distFromSharding(b, sf.mesh, annotatedSharding(v), t.getRank())
          : DistAttr());
  }

  prepareForPartition(tmp);
  {
    // shard-partition may fail without saying why; never fail silently.
    bool reported = false;
    ScopedDiagnosticHandler watch(ctx, [&](Diagnostic &d) {
      reported |= d.getSeverity() == DiagnosticSeverity::Error;
      return failure(); // Let it through to the outer handler.
    });
    if (failed(run(partitionPM, tmp))) {
      if (!reported) {
        // Name the op it stopped at, with the layouts it was given.
        Operation *culprit = findSilentFailure(tmp, run);
        if (culprit)
          culprit->emitOpError("has no upstream partitioning rule for ")
              << describeLayouts(culprit, sf.mesh);
        else
          sf.head->emitOpError(
              "upstream shard-partition failed on the work on @")
              << sf.meshName
              << " without a diagnostic; simplify its sharding "
                 "annotations";
      }
      return failure();
    }
  }
  {
    RewritePatternSet patterns(ctx);
    SymbolTableCollection scratchTables;
    shard::populateAllSliceOpLoweringPatterns(patterns, scratchTables);
    shard::populateProcessMultiIndexOpLoweringPatterns(patterns, scratchTables);
    if (failed(applyPatternsGreedily(tmp, std::move(patterns))))
      return tmp.emitOpError("could not lower shard slicing ops");
  }
  return convertShardOps(tmp, sf.mesh, collectives);
}

/// After upstream shard-partition failed on `tmp` without a diagnostic:
/// the op it stopped at. Upstream partitions op by op into a new block
/// appended to the body and stops at the first op whose rule fails,
/// leaving the original block intact; the extra blocks are dropped, and
/// the op is the one that ends the shortest failing prefix of the body
/// (each prefix ends after a compute op and the annotations that follow
/// it), found by bisection over copies.
Operation *UpstreamPartitioner::findSilentFailure(func::FuncOp tmp,
                                                  PipelineRunner run) {
  Region &region = tmp.getBody();
  while (region.getBlocks().size() > 1)
    region.back().erase();
  Block &block = region.front();
  SmallVector<Operation *> ops;
  SmallVector<size_t> compute; // Indices in `ops` of non-shard ops.
  for (Operation &op : block.without_terminator()) {
    if (!isa<shard::ShardOp, shard::ShardingOp>(op))
      compute.push_back(ops.size());
    ops.push_back(&op);
  }
  // Whether partitioning the body up to compute op `k` (and the
  // annotations after it) fails.
  auto fails = [&](size_t k) {
    size_t end = k + 1 < compute.size() ? compute[k + 1] : ops.size();
    OpBuilder b(tmp);
    b.setInsertionPointAfter(tmp);
    auto copy = cast<func::FuncOp>(b.clone(*tmp));
    llvm::scope_exit eraseCopy([&] { copy.erase(); });
    Block &body = copy.getBody().front();
    SmallVector<Operation *> copied;
    for (Operation &op : body)
      copied.push_back(&op);
    // Past the prefix only the annotations upstream needs stay: the
    // shardings, and each argument's one annotation.
    for (size_t i = copied.size(); i-- > end;) {
      Operation *op = copied[i];
      auto s = dyn_cast<shard::ShardOp>(op);
      if (isa<shard::ShardingOp>(op) || (s && isa<BlockArgument>(s.getSrc())))
        continue;
      op->dropAllUses();
      op->erase();
    }
    b.setInsertionPointToEnd(&body);
    func::ReturnOp::create(b, copy.getLoc());
    copy.setType(
        FunctionType::get(copy.getContext(), body.getArgumentTypes(), {}));
    ScopedDiagnosticHandler quiet(copy.getContext(),
                                  [](Diagnostic &) { return success(); });
    return failed(run(partitionPM, copy));
  };
  if (compute.empty() || !fails(compute.size() - 1))
    return nullptr;
  size_t lo = 0, hi = compute.size() - 1; // fails(hi) holds.
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (fails(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return ops[compute[lo]];
}

/// Rewrites upstream shard collectives and index queries over grid axes
/// into monarch ops over mesh dimension names.
LogicalResult UpstreamPartitioner::convertShardOps(func::FuncOp fn,
                                                   MeshOpInterface mesh,
                                                   int64_t &collectives) {
  OpBuilder b(fn.getContext());
  WalkResult result = fn.walk([&](Operation *op) -> WalkResult {
    b.setInsertionPoint(op);
    Value replacement;
    if (auto ar = dyn_cast<shard::AllReduceOp>(op)) {
      bool ok;
      ReductionKind kind = toMonarch(ar.getReduction(), ok);
      if (!ok || ar.getInput().getType() != ar.getResult().getType())
        return op->emitOpError("cannot be expressed as a monarch.all_reduce"),
               WalkResult::interrupt();
      replacement = AllReduceOp::create(
          b, op->getLoc(), ar.getInput(), dimNames(b, mesh, ar.getGridAxes()),
          ReductionKindAttr::get(b.getContext(), kind));
    } else if (auto ag = dyn_cast<shard::AllGatherOp>(op)) {
      replacement = AllGatherOp::create(b, op->getLoc(),
                                        ag.getResult().getType(), ag.getInput(),
                                        dimNames(b, mesh, ag.getGridAxes()),
                                        ag.getGatherAxis().getZExtValue());
    } else if (auto rs = dyn_cast<shard::ReduceScatterOp>(op)) {
      bool ok;
      ReductionKind kind = toMonarch(rs.getReduction(), ok);
      if (!ok)
        return op->emitOpError("reduction cannot be expressed in monarch"),
               WalkResult::interrupt();
      replacement = ReduceScatterOp::create(
          b, op->getLoc(), rs.getResult().getType(), rs.getInput(),
          dimNames(b, mesh, rs.getGridAxes()),
          rs.getScatterAxis().getZExtValue(), kind);
    } else if (auto a2a = dyn_cast<shard::AllToAllOp>(op)) {
      replacement = AllToAllOp::create(
          b, op->getLoc(), a2a.getResult().getType(), a2a.getInput(),
          dimNames(b, mesh, a2a.getGridAxes()),
          a2a.getSplitAxis().getZExtValue(),
          a2a.getConcatAxis().getZExtValue());
    } else if (auto li = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
      SmallVector<shard::GridAxis> all;
      for (int64_t i = 0, e = mesh.getMeshShape().size(); i < e; ++i)
        all.push_back(i);
      replacement =
          ProcessIndexOp::create(b, op->getLoc(), dimNames(b, mesh, all));
    } else if (auto shape = dyn_cast<shard::GridShapeOp>(op)) {
      // Static mesh: the grid's extents are constants.
      SmallVector<int64_t> extents = mesh.getMeshShape();
      SmallVector<shard::GridAxis> axes(shape.getAxes());
      if (axes.empty())
        for (int64_t i = 0, e = extents.size(); i < e; ++i)
          axes.push_back(i);
      for (auto [result, axis] : llvm::zip(shape.getResults(), axes))
        result.replaceAllUsesWith(
            arith::ConstantIndexOp::create(b, op->getLoc(), extents[axis]));
      op->erase();
      return WalkResult::advance();
    } else if (isa<shard::ShardOp, shard::ShardingOp>(op)) {
      return WalkResult::advance();
    } else if (op->getDialect() &&
               op->getDialect()->getNamespace() == "shard") {
      return op->emitOpError("is not supported inside a monarch endpoint "
                             "yet (produced by shard-partition)"),
             WalkResult::interrupt();
    } else {
      return WalkResult::advance();
    }
    ++collectives;
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  // Leftover annotations are dead after partitioning.
  fn.walk([](shard::ShardOp op) {
    op.getResult().replaceAllUsesWith(op.getSrc());
    op.erase();
  });
  fn.walk([](shard::ShardingOp op) {
    if (op->use_empty())
      op.erase();
  });
  return success();
}

} // namespace monarch::partition
