//===- ScatterLoops.cpp - Compare-and-add generics as scatter loops -*- C++
//-*-===//
//
// The adjoint of a gather (TraceBuilder::scatterAdd: the backward of
// `emb[tok]`, of take_along_axis and of mc.cross_entropy's pick) reaches
// kernels as one linalg.generic over the rows i of its result and the
// index loops k, summed:
//
//   out[.., i, ..] += select(row(idx[k..]) == coord[i], values[.., k.., ..], 0)
//
// Dense, that compares every value with every row: rows x values work
// (an embedding of 32,000 rows and 1,024 tokens of width 256: 8.4 G
// compare-selects, or as the one-hot product it replaced 8.4 GFLOP and a
// 131 MB one-hot). On the CPU it runs as a scatter instead, one pass over
// the values, each added at the row its index names: tokens x width adds.
//
// The rows' coordinates are data (the tracer's arange, or a rank's slice
// of it once the rows are split), so the lowering reads them: when they
// are consecutive (always, for what the tracer emits) row r holds
// coordinate coord[0] + r and an index j lands at row j - coord[0] if that
// is in range; otherwise the dense loop nest runs, so the rewrite never
// changes a result. The addition order per element is the dense one (the
// index loops in order), so the sums are bit-identical to it.
//
// Matched after fusion, so the values may be any expression of inputs
// that do not depend on the row (a fused elementwise producer), and the
// index any expression of such inputs (the wrap and clamp of the tracer's
// body, a fused cast).
//
//===----------------------------------------------------------------------===//

#include "ScatterLoops.h"

#include "monarch/IR/ScatterAdd.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

constexpr llvm::StringLiteral kScatterAttr = "monarch_scatter_add";

/// The block arguments `v` depends on inside `body` (its backward slice
/// within the region; values from above are constants of the kernel).
void argumentsOf(Value v, Block &body, llvm::SmallSetVector<unsigned, 4> &args,
                 llvm::SmallPtrSetImpl<Operation *> &seen) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() == &body)
      args.insert(arg.getArgNumber());
    return;
  }
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != &body || !seen.insert(def).second)
    return;
  for (Value operand : def->getOperands())
    argumentsOf(operand, body, args, seen);
}

/// Builds the body's values at loop indices `ivs` (null: not yet bound;
/// the maps of the arguments read never name those), reading each input
/// argument from its buffer.
class BodyEmitter {
public:
  BodyEmitter(linalg::GenericOp op, SmallVectorImpl<Value> &ivs)
      : op(op), body(op.getRegion().front()), ivs(ivs),
        maps(op.getIndexingMapsArray()) {}

  Value emit(OpBuilder &b, Value v) {
    if (Value known = mapping.lookupOrNull(v))
      return known;
    Location loc = op.getLoc();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        return v;
      unsigned j = arg.getArgNumber();
      Value loaded = memref::LoadOp::create(b, loc, op->getOperand(j),
                                            indices(b, maps[j]));
      mapping.map(v, loaded);
      return loaded;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      return v;
    for (Value operand : def->getOperands())
      (void)emit(b, operand);
    Operation *copy = b.clone(*def, mapping);
    return copy->getResult(cast<OpResult>(v).getResultNumber());
  }

  /// `map` applied to the loop indices.
  SmallVector<Value> indices(OpBuilder &b, AffineMap map) {
    Location loc = op.getLoc();
    SmallVector<Value> out;
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        out.push_back(ivs[d.getPosition()]);
        continue;
      }
      if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        out.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
        continue;
      }
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      SmallVector<Value> operands;
      for (Value iv : ivs)
        operands.push_back(iv ? iv : zero);
      out.push_back(affine::AffineApplyOp::create(
          b, loc, AffineMap::get(map.getNumDims(), 0, e), operands));
    }
    return out;
  }

  IRMapping mapping;

private:
  linalg::GenericOp op;
  Block &body;
  SmallVectorImpl<Value> &ivs;
  SmallVector<AffineMap> maps;
};

/// Nested scf.for over `dims` (their bounds in `bounds`), binding each
/// induction variable in `ivs`; `inner` builds the innermost body.
void buildNest(OpBuilder &b, Location loc, ArrayRef<unsigned> dims,
               ArrayRef<int64_t> bounds, SmallVectorImpl<Value> &ivs,
               llvm::function_ref<void(OpBuilder &)> inner) {
  if (dims.empty()) {
    inner(b);
    return;
  }
  Value lo = arith::ConstantIndexOp::create(b, loc, 0);
  Value hi = arith::ConstantIndexOp::create(b, loc, bounds[dims.front()]);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, lo, hi, one);
  ivs[dims.front()] = loop.getInductionVar();
  OpBuilder nested(loop.getBody()->getTerminator());
  buildNest(nested, loc, dims.drop_front(), bounds, ivs, inner);
}

LogicalResult lowerOne(RewriterBase &rewriter, linalg::GenericOp op,
                       const ScatterAddMatch &m) {
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  if (llvm::any_of(bounds, ShapedType::isDynamic))
    return success(); // left to the dense loops
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  OpBuilder &b = rewriter;
  Value coords = op->getOperand(m.coordInput);
  Type coordType = getElementTypeOrSelf(coords.getType());
  int64_t n = bounds[m.rowLoop];
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = arith::ConstantIndexOp::create(b, loc, n);
  Value first = memref::LoadOp::create(b, loc, coords, ValueRange{zero});
  Value firstIndex =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), first);
  // Whether coord[r] == coord[0] + r for every row r.
  Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto check = scf::ForOp::create(
      b, loc, one, rows, one, ValueRange{yes},
      [&](OpBuilder &lb, Location ll, Value r, ValueRange acc) {
        Value at = memref::LoadOp::create(lb, ll, coords, ValueRange{r});
        Value want = arith::AddIOp::create(
            lb, ll, first, arith::IndexCastOp::create(lb, ll, coordType, r));
        Value same =
            arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::eq, at, want);
        scf::YieldOp::create(
            lb, ll, arith::AndIOp::create(lb, ll, acc[0], same).getResult());
      });
  auto consecutive =
      scf::IfOp::create(b, loc, check.getResult(0), /*withElseRegion=*/true);
  {
    OpBuilder dense = consecutive.getElseBodyBuilder();
    Operation *copy = dense.clone(*op);
    copy->removeAttr(kScatterAttr);
  }
  // The loops the index depends on go outside (the row is found once per
  // index), the others inside, each group in its original order.
  Block &body = op.getRegion().front();
  llvm::SmallSetVector<unsigned, 4> indexArgs;
  llvm::SmallPtrSet<Operation *, 16> seen;
  argumentsOf(m.index, body, indexArgs, seen);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::SmallBitVector indexLoops(bounds.size());
  for (unsigned j : indexArgs)
    for (unsigned d = 0; d < bounds.size(); ++d)
      if (maps[j].isFunctionOfDim(d))
        indexLoops.set(d);
  SmallVector<unsigned> outer, inner;
  for (unsigned d = 0; d < bounds.size(); ++d)
    if (d != m.rowLoop)
      (indexLoops.test(d) ? outer : inner).push_back(d);
  SmallVector<Value> ivs(bounds.size());
  BodyEmitter emitter(op, ivs);
  Value out = op.getDpsInitOperand(0)->get();
  AffineMap outMap = maps.back();
  OpBuilder scatter = consecutive.getThenBodyBuilder();
  buildNest(scatter, loc, outer, bounds, ivs, [&](OpBuilder &ob) {
    Value index = emitter.emit(ob, m.index);
    Value row = arith::SubIOp::create(
        ob, loc, arith::IndexCastOp::create(ob, loc, ob.getIndexType(), index),
        firstIndex);
    Value inRange = arith::AndIOp::create(
        ob, loc,
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::sge, row, zero),
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::slt, row, rows));
    auto hit = scf::IfOp::create(ob, loc, inRange, /*withElseRegion=*/false);
    OpBuilder hb = hit.getThenBodyBuilder();
    ivs[m.rowLoop] = row;
    buildNest(hb, loc, inner, bounds, ivs, [&](OpBuilder &ib) {
      Value addend = emitter.emit(ib, m.addend);
      SmallVector<Value> at = emitter.indices(ib, outMap);
      Value old = memref::LoadOp::create(ib, loc, out, at);
      IRMapping combine;
      combine.map(op.getRegionOutputArgs()[0], old);
      combine.map(m.picked, addend);
      Operation *sum = ib.clone(*m.combiner, combine);
      memref::StoreOp::create(ib, loc, sum->getResult(0), out, at);
    });
  });
  rewriter.eraseOp(op);
  return success();
}

} // namespace

void markScatterAdds(ModuleOp scratch) {
  MLIRContext *ctx = scratch.getContext();
  scratch.walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && matchScatterAdd(op))
      op->setAttr(kScatterAttr, UnitAttr::get(ctx));
  });
}

bool isMarkedScatterAdd(Operation *op) { return op->hasAttr(kScatterAttr); }

LogicalResult lowerScatterAdds(ModuleOp scratch) {
  SmallVector<linalg::GenericOp> marked;
  scratch.walk([&](linalg::GenericOp op) {
    if (isMarkedScatterAdd(op) && op.hasPureBufferSemantics())
      marked.push_back(op);
  });
  IRRewriter rewriter(scratch.getContext());
  for (linalg::GenericOp op : marked) {
    std::optional<ScatterAddMatch> m = matchScatterAdd(op);
    if (!m) {
      op->removeAttr(kScatterAttr);
      continue;
    }
    if (failed(lowerOne(rewriter, op, *m)))
      return failure();
  }
  return success();
}

} // namespace monarch::codegen::detail
