//===- Partition.cpp - monarch-partition (in progress) ----------------------*- C++ -*-===//

#include "monarch/Transforms/Passes.h"

#define DEBUG_TYPE "monarch-partition"

namespace monarch {
#define GEN_PASS_DEF_MONARCHPARTITION
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {
struct MonarchPartitionPass : monarch::impl::MonarchPartitionBase<MonarchPartitionPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("monarch-partition is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
