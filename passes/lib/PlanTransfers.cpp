//===- PlanTransfers.cpp - monarch-plan-transfers (in progress)
//----------------------*- C++ -*-===//

#include "monarch/Transforms/Passes.h"

#define DEBUG_TYPE "monarch-plan-transfers"

namespace monarch {
#define GEN_PASS_DEF_MONARCHPLANTRANSFERS
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {
struct MonarchPlanTransfersPass
    : monarch::impl::MonarchPlanTransfersBase<MonarchPlanTransfersPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("monarch-plan-transfers is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
