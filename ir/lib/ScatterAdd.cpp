//===- ScatterAdd.cpp - The adjoint of a gather, recognised --*- C++ -*-===//
//
// See ScatterAdd.h.
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/ScatterAdd.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace monarch {

std::optional<ScatterAddMatch> matchScatterAdd(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumDpsInputs() < 2)
    return std::nullopt;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  Operation *combiner = yield.getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      !isa<arith::AddFOp, arith::AddIOp>(combiner) ||
      !combiner->getResult(0).hasOneUse())
    return std::nullopt;
  BlockArgument acc = op.getRegionOutputArgs()[0];
  if (!acc.hasOneUse())
    return std::nullopt;
  Value picked = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                : combiner->getOperand(0);
  if (picked == acc || !llvm::is_contained(combiner->getOperands(), acc))
    return std::nullopt;
  auto select = picked.getDefiningOp<arith::SelectOp>();
  if (!select || select->getBlock() != &body || !picked.hasOneUse())
    return std::nullopt;
  Value none = select.getFalseValue();
  if (!matchPattern(none, m_AnyZeroFloat()) && !matchPattern(none, m_Zero()))
    return std::nullopt;
  auto equal = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!equal || equal->getBlock() != &body ||
      equal.getPredicate() != arith::CmpIPredicate::eq ||
      !equal->getResult(0).hasOneUse())
    return std::nullopt;
  // The yield's shape first (most generics fail it), then the whole body.
  for (Operation &inner : body.without_terminator())
    if (isa<linalg::IndexOp>(inner) || !isMemoryEffectFree(&inner) ||
        inner.getNumRegions())
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  AffineMap outMap = maps.back();
  if (!outMap.isProjectedPermutation())
    return std::nullopt;
  unsigned numInputs = op.getNumDpsInputs();
  for (int side = 0; side < 2; ++side) {
    auto coord = dyn_cast<BlockArgument>(equal->getOperand(side));
    Value index = equal->getOperand(1 - side);
    if (!coord || coord.getOwner() != &body ||
        coord.getArgNumber() >= numInputs || !coord.hasOneUse())
      continue;
    AffineMap coordMap = maps[coord.getArgNumber()];
    if (coordMap.getNumResults() != 1)
      continue;
    auto row = dyn_cast<AffineDimExpr>(coordMap.getResult(0));
    if (!row || iterators[row.getPosition()] != utils::IteratorType::parallel ||
        !outMap.isFunctionOfDim(row.getPosition()))
      continue;
    unsigned i = row.getPosition();
    // No other input may depend on the row: the index and the value must
    // be the same for every row (that is what makes it a scatter).
    bool rowFree = true;
    for (unsigned j = 0; j < numInputs && rowFree; ++j)
      rowFree = j == coord.getArgNumber() || !maps[j].isFunctionOfDim(i);
    if (!rowFree)
      continue;
    ScatterAddMatch m;
    m.rowLoop = i;
    m.coordInput = coord.getArgNumber();
    m.index = index;
    m.addend = select.getTrueValue();
    m.picked = picked;
    m.combiner = combiner;
    return m;
  }
  return std::nullopt;
}

std::optional<unsigned> scatterRowLoop(linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    if (std::optional<ScatterAddMatch> m = matchScatterAdd(generic))
      return m->rowLoop;
  return std::nullopt;
}

} // namespace monarch
