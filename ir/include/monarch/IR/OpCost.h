//===- OpCost.h - Arithmetic of structured ops ------------------*- C++ -*-===//
//
// How much arithmetic a linalg op does, read off its loops and body: the
// kernel profile's table (MONARCH_KERNEL_PROFILE) and the plan's per-kernel
// flops (the simulator's roofline) count the same way.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_IR_OPCOST_H
#define MONARCH_IR_OPCOST_H

#include "monarch/IR/ScatterAdd.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace monarch {

/// Arithmetic ops per loop iteration: 2 for a contraction (multiply, add),
/// else the arith and math ops of the body (constants and index
/// bookkeeping excluded).
inline int64_t opsPerIteration(mlir::linalg::LinalgOp op) {
  if (mlir::linalg::isaContractionOpInterface(op))
    return 2;
  int64_t n = 0;
  for (mlir::Operation &inner : op.getBlock()->without_terminator()) {
    if (mlir::isa<mlir::arith::ConstantOp, mlir::arith::IndexCastOp,
                  mlir::linalg::IndexOp>(inner))
      continue;
    if (mlir::isa<mlir::arith::ArithDialect, mlir::math::MathDialect>(
            inner.getDialect()))
      ++n;
  }
  return n;
}

/// Iterations of the op's loop nest (dynamic extents count as 1).
inline int64_t loopIterations(mlir::linalg::LinalgOp op) {
  int64_t iterations = 1;
  for (int64_t range : op.getStaticLoopRanges())
    iterations *= mlir::ShapedType::isDynamic(range) ? 1 : range;
  return iterations;
}

/// Arithmetic ops of `op`: its iterations times its ops per iteration,
/// except a scatter-add (ScatterAdd.h), which does one add per value, not
/// one compare per value and row.
inline int64_t arithmeticOps(mlir::linalg::LinalgOp op) {
  if (std::optional<unsigned> row = scatterRowLoop(op)) {
    int64_t rows = op.getStaticLoopRanges()[*row];
    return loopIterations(op) /
           (mlir::ShapedType::isDynamic(rows) || rows < 1 ? 1 : rows);
  }
  return loopIterations(op) * opsPerIteration(op);
}

/// Arithmetic ops of every structured op in `root` (a kernel function).
inline int64_t structuredFlops(mlir::Operation *root) {
  int64_t flops = 0;
  root->walk([&](mlir::linalg::LinalgOp op) { flops += arithmeticOps(op); });
  return flops;
}

} // namespace monarch

#endif // MONARCH_IR_OPCOST_H
