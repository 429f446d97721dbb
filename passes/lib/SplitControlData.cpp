//===- SplitControlData.cpp - monarch-split-control-data (in progress) ----------------------*- C++ -*-===//

#include "monarch/Transforms/Passes.h"

#define DEBUG_TYPE "monarch-split-control-data"

namespace monarch {
#define GEN_PASS_DEF_MONARCHSPLITCONTROLDATA
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {
struct MonarchSplitControlDataPass : monarch::impl::MonarchSplitControlDataBase<MonarchSplitControlDataPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("monarch-split-control-data is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
