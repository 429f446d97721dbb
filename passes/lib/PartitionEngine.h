//===- PartitionEngine.h - monarch's own partitioner ----------*- C++ -*-===//
//
// `monarch-partition{engine=own}`: sharding propagation and SPMD expansion
// of one segment of tensor work, written for monarch instead of handing the
// segment to upstream `sharding-propagation` and `shard-partition`
// (docs/pipeline.md, "The own engine").
//
// A layout gives each tensor dimension an ordered list of mesh axes (major
// first, so one dimension may split over several) and a set of partial-sum
// axes with their reduction. Every structured op's loops get mesh axes from
// its operands' layouts through its indexing maps (reduction loops split
// leave a partial result), shape ops pass split dimensions through or gather
// just the ones they cannot, and wherever a consumer needs another layout
// than its producer left, one reshard moves the data: partial -> replicated
// an all_reduce, partial -> split a reduce_scatter, split -> replicated an
// all_gather of that dimension, replicated -> split a local slice at the
// process index.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_PASSES_LIB_PARTITIONENGINE_H
#define MONARCH_PASSES_LIB_PARTITIONENGINE_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace monarch::partition {

/// Partitions `fn` (a segment's scratch function: global types, `shard.shard`
/// annotations on the grid of `mesh`) into per-rank code with monarch
/// collectives. `inDists` are the layouts earlier segments left the
/// arguments in (null: replicated, free to be sliced); the last
/// `lifted.size()` arguments are those constants (non-splat, lifted out of
/// the segment) and stay replicated. On success `fn` has per-rank
/// types and `argDists`/`resDists` the layouts of its arguments and results
/// (results are never partial). On failure `why` names the op without a rule
/// and `fn` may be half rewritten: the caller rebuilds it.
mlir::LogicalResult
partitionWithOwnEngine(mlir::func::FuncOp fn, MeshOpInterface mesh,
                       llvm::ArrayRef<DistAttr> inDists,
                       llvm::ArrayRef<mlir::arith::ConstantOp> lifted,
                       llvm::SmallVectorImpl<DistAttr> &argDists,
                       llvm::SmallVectorImpl<DistAttr> &resDists,
                       std::string &why);

} // namespace monarch::partition

#endif // MONARCH_PASSES_LIB_PARTITIONENGINE_H
