//===- Schedule.cpp - monarch-schedule (in progress) ------------*- C++ -*-===//

#include "monarch/Transforms/Passes.h"

#define DEBUG_TYPE "monarch-schedule"

namespace monarch {
#define GEN_PASS_DEF_MONARCHSCHEDULE
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;

namespace {
struct MonarchSchedulePass
    : monarch::impl::MonarchScheduleBase<MonarchSchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("monarch-schedule is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
