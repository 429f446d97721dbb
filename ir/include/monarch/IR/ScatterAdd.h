//===- ScatterAdd.h - The adjoint of a gather, recognised ----*- C++ -*-===//
//
// The frontend's scatter-add (TraceBuilder::scatterAdd, the backward of a
// gather) is one linalg.generic over the rows i of its result and the
// index loops, summed:
//
//   out[.., i, ..] += select(row(idx) == coord[i], values, 0)
//
// Its loop nest counts rows x values iterations, but what it does is one
// add per value: CPU kernels run it as a scatter loop
// (codegen/lib/kernels/ScatterLoops.cpp) and the cost of a plan counts it
// so (OpCost.h). Matched after fusion: the values may be any expression of
// inputs that do not depend on the row, the index likewise.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_IR_SCATTERADD_H
#define MONARCH_IR_SCATTERADD_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace monarch {

/// The parts of a matched scatter-add's body.
struct ScatterAddMatch {
  unsigned rowLoop = 0;    // i: the result's row loop
  unsigned coordInput = 0; // the input holding the rows' coordinates
  mlir::Value index;       // the body value compared with coord[i]
  mlir::Value addend;      // what is added where they are equal
  mlir::Value picked;      // select(equal, addend, 0)
  mlir::Operation *combiner = nullptr; // acc + picked
};

/// The parts of `op` when it is a scatter-add (any element types, any
/// number of index loops; nothing but the coordinates may depend on the
/// row loop).
std::optional<ScatterAddMatch> matchScatterAdd(mlir::linalg::GenericOp op);
/// The row loop of `op` when it is a scatter-add: the loop whose iterations
/// the op does not do (a cost counts the other loops' iterations).
std::optional<unsigned> scatterRowLoop(mlir::linalg::LinalgOp op);

} // namespace monarch

#endif // MONARCH_IR_SCATTERADD_H
