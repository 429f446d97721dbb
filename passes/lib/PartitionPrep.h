//===- PartitionPrep.h - Shaping a segment -------------------- -*- C++ -*-===//
//
// monarch-partition hands every segment of tensor work to the upstream
// `sharding-propagation` and `shard-partition` passes. Those passes crash or
// fail silently on some inputs that traced programs produce routinely (see
// the PipelineBugTest reproducers in tests/unit/PipelinePropertyTest.cpp).
// The rewrites here put a segment's scratch function into a form they
// handle, without changing what it computes: annotations only move data.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_PASSES_LIB_PARTITIONPREP_H
#define MONARCH_PASSES_LIB_PARTITIONPREP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace monarch::partition {

/// `axes` (per tensor dimension, its grid axes) as a sharding's split axes:
/// trailing empty entries dropped, but one kept (`[[]]` is replicated; an
/// empty list stays `[]`, the 0-d form).
llvm::SmallVector<mlir::shard::GridAxesAttr>
splitAxesAttrs(mlir::MLIRContext *ctx,
               llvm::ArrayRef<llvm::SmallVector<int16_t>> axes);

/// Before propagation: drops dead ops (shard-partition dereferences the
/// missing sharding of unused results), annotates unused inputs (all inputs
/// with `replicateInputs`) as replicated, turns a for-users annotation of an
/// otherwise unannotated value into the value's own, moves an annotation
/// written after some uses of its value to the value's definition, gives
/// each repeated operand of a contraction its own annotated value, and
/// routes a reshard between two different splits through the replicated
/// layout. The last `replicatedTail` arguments (constants lifted into
/// inputs) are annotated replicated in every attempt.
void prepareForPropagation(mlir::func::FuncOp fn, bool replicateInputs,
                           unsigned replicatedTail = 0);

/// After propagation: annotates as replicated every tensor value of a
/// shardable op that propagation left without a sharding (an independent
/// chain next to an annotated one, rank-0 values). Returns true when it
/// added annotations, after which propagation must run again.
bool annotateRemainingAsReplicated(mlir::func::FuncOp fn);

/// After propagation, before upstream shard-partition: drops splits over
/// grid axes of extent 1 (upstream crashes resharding over them), and since
/// upstream reshards in one step (it gathers or slices one grid axis, or
/// moves one) and silently builds ill-typed IR for a pair of annotations
/// further apart (split over both axes of a 2-D grid, then replicated),
/// inserts annotations between such pairs so that each step removes or adds
/// one grid axis.
void prepareForPartition(mlir::func::FuncOp fn);

/// The first shardable op whose tensor results still have no sharding, or
/// null: partitioning it would crash upstream.
mlir::Operation *findUnannotatedOp(mlir::func::FuncOp fn);

} // namespace monarch::partition

#endif // MONARCH_PASSES_LIB_PARTITIONPREP_H
