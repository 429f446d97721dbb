//===- VerifyPlan.cpp - monarch-verify-plan (in progress)
//----------------------*- C++ -*-===//

#include "monarch/Transforms/Passes.h"

#define DEBUG_TYPE "monarch-verify-plan"

namespace monarch {
#define GEN_PASS_DEF_MONARCHVERIFYPLAN
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {
struct MonarchVerifyPlanPass
    : monarch::impl::MonarchVerifyPlanBase<MonarchVerifyPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("monarch-verify-plan is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
