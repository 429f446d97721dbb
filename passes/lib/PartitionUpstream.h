//===- PartitionUpstream.h - Upstream's shard passes on a segment -*- C++
//-*-===//
//
// The upstream adapter of monarch-partition: a segment's scratch function
// (Partition.cpp cuts it out) partitioned by upstream's
// `sharding-propagation` and `shard-partition`, shaped before each by
// PartitionPrep.h, with a named culprit when shard-partition fails without
// a diagnostic, and upstream's shard collectives and index queries
// rewritten into monarch ops over mesh dimension names. The own engine
// (PartitionEngine.h) needs none of it; it hands a segment here only for
// ops it has no rule for.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PASSES_LIB_PARTITIONUPSTREAM_H
#define MONARCH_PASSES_LIB_PARTITIONUPSTREAM_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Pass/PassManager.h"

namespace monarch::partition {

/// Runs `pm` on `op` as the calling pass's own `runPipeline` does (a
/// dynamic pipeline must run through the pass that owns the op).
using PipelineRunner = llvm::function_ref<mlir::LogicalResult(
    mlir::OpPassManager &, mlir::Operation *)>;

/// A segment's scratch function and where it runs.
struct UpstreamSegment {
  mlir::func::FuncOp fn;
  MeshOpInterface mesh;
  mlir::shard::GridOp grid;
  /// The layouts earlier segments left its inputs in (null: unknown).
  llvm::ArrayRef<DistAttr> inDists;
  /// Trailing arguments standing for constants: replicated in every
  /// attempt.
  size_t numLifted = 0;
  /// The segment's first op (where errors point) and its mesh's name.
  mlir::Operation *head = nullptr;
  llvm::StringRef meshName;
};

class UpstreamPartitioner {
public:
  /// Partitions `segment.fn` in place. Propagation picks the layouts of the
  /// inputs from their users (inputs an earlier segment left split start
  /// split), which keeps shards in place between segments;
  /// `replicateInputs` (the retry on a fresh copy) fixes every input to the
  /// replicated layout it has anyway, which upstream handles. On success,
  /// `argDists`/`resDists` are the global arguments' and results'
  /// distributions read off the propagated annotations and `collectives`
  /// counts the collectives made. Errors are emitted (the caller decides
  /// whether to show them).
  mlir::LogicalResult partition(const UpstreamSegment &segment,
                                bool replicateInputs,
                                llvm::SmallVectorImpl<DistAttr> &argDists,
                                llvm::SmallVectorImpl<DistAttr> &resDists,
                                int64_t &collectives, PipelineRunner run);

private:
  /// The two pipelines, built at the first use and reused for every
  /// segment: building them per segment dominated compile time.
  void build();
  /// After shard-partition failed on `fn` without a diagnostic: the op it
  /// stopped at, or null.
  mlir::Operation *findSilentFailure(mlir::func::FuncOp fn, PipelineRunner run);
  /// Rewrites upstream shard collectives and index queries over grid axes
  /// into monarch ops over mesh dimension names; counts the collectives.
  mlir::LogicalResult convertShardOps(mlir::func::FuncOp fn,
                                      MeshOpInterface mesh,
                                      int64_t &collectives);

  mlir::OpPassManager propagatePM{mlir::func::FuncOp::getOperationName()};
  mlir::OpPassManager partitionPM{mlir::func::FuncOp::getOperationName()};
};

} // namespace monarch::partition

#endif // MONARCH_PASSES_LIB_PARTITIONUPSTREAM_H
