//===- SamplePlan.h - A hand-built plan using every field -------*- C++ -*-===//
//
// Two ranks on a 1x2 mesh with a slice, a communicator, two kernels, every
// instruction kind, optional fields both set and unset, a controller program
// and a kernel library: the round-trip tests compare it field by field.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_TESTS_UNIT_CODEGEN_PLAN_SAMPLEPLAN_H
#define MONARCH_TESTS_UNIT_CODEGEN_PLAN_SAMPLEPLAN_H

#include "monarch/Plan/Plan.h"

namespace monarch::plan::testing {

inline Buffer buf(int64_t offset, std::vector<int64_t> shape,
                  DType dtype = DType::F32) {
  return Buffer{offset, dtype, std::move(shape)};
}

inline SourceLoc loc(int32_t line, const char *op) {
  return SourceLoc{"model.py", line, 5, op};
}

inline ExecutionPlan samplePlan() {
  ExecutionPlan p;
  p.compilerVersion = "test";
  p.source = "model.py";
  p.meshes.push_back(ProcMesh{
      "mesh", {{"hosts", 1}, {"gpus", 2}}, std::nullopt, {}, {}, {0, 1}});
  p.meshes.push_back(ProcMesh{
      "half", {{"hosts", 1}, {"gpus", 1}}, "mesh", {0, 1}, {1, 2}, {1}});
  p.topology.push_back(MeshTopology{"mesh", {Host{"localhost", {0, 1}}}});
  p.communicators.push_back(
      Communicator{"world", "mesh", {0, 1}, Backend::Nccl});
  p.kernels.push_back(Kernel{"k0", 2, 1});
  p.kernels.push_back(Kernel{"k1", 1, 1});

  StepPlan step;
  step.symbol = "step";
  step.mesh = "mesh";
  step.inputs = {ValueType{DType::F32, {4, 4}, true},
                 ValueType{DType::BF16, {}, false}};
  step.outputs = {ValueType{DType::F32, {4}, true}};
  step.loc = loc(1, "monarch.plan");
  for (int64_t rank = 0; rank < 2; ++rank) {
    RankProgram prog;
    prog.rank = rank;
    prog.arenaBytes = 256;
    prog.peakBytes = 200;
    prog.criticalPathUs = 12.5;
    auto add = [&](Instruction in) { prog.instructions.push_back(in); };
    Instruction feed;
    feed.kind = InstrKind::FeedBuffer;
    feed.io = IOInstr{0, buf(0, {4, 4}), {}};
    feed.loc = loc(10, "monarch.feed");
    add(feed);
    Instruction state;
    state.kind = InstrKind::StateBuffer;
    state.stateBuffer = StateBufferInstr{"s0", "w", buf(64, {4, 4}), {}};
    state.loc = loc(11, "monarch.state_get");
    add(state);
    Instruction launch;
    launch.kind = InstrKind::Launch;
    launch.launch = LaunchInstr{
        0, {buf(0, {4, 4}), buf(64, {4, 4})}, {buf(128, {4, 4})}, 0};
    launch.loc = loc(12, "linalg.matmul");
    add(launch);
    Instruction send;
    send.kind = rank == 0 ? InstrKind::Send : InstrKind::Recv;
    send.p2p = P2PInstr{buf(192, {4}, DType::F64), 1 - rank, 0, 1, int64_t{3}};
    send.loc = loc(13, "monarch.transfer");
    add(send);
    Instruction coll;
    coll.kind = InstrKind::Collective;
    coll.collective.kind = CollectiveKind::AllReduce;
    coll.collective.reduction = ReductionKind::Avg;
    coll.collective.communicator = 0;
    coll.collective.input = buf(128, {4, 4});
    coll.collective.output = buf(128, {4, 4});
    coll.collective.stream = 2;
    coll.loc = loc(14, "monarch.all_reduce");
    add(coll);
    Instruction bcast;
    bcast.kind = InstrKind::Collective;
    bcast.collective.kind = CollectiveKind::Broadcast;
    bcast.collective.root = 1;
    bcast.collective.input = buf(224, {2}, DType::I32);
    bcast.collective.output = buf(224, {2}, DType::I32);
    bcast.collective.stream = 2;
    bcast.collective.group = 0;
    bcast.loc = loc(15, "monarch.broadcast_from");
    add(bcast);
    Instruction wait;
    wait.kind = InstrKind::Wait;
    wait.wait.events = {2, 3, 4, 5};
    wait.loc = loc(16, "monarch.wait");
    add(wait);
    Instruction print;
    print.kind = InstrKind::PrintBuffers;
    print.print = PrintInstr{"sum {0:.3f} {{}}", {buf(128, {4, 4})}};
    print.loc = loc(18, "monarch.debug_print");
    add(print);
    Instruction launch2;
    launch2.kind = InstrKind::Launch;
    launch2.launch =
        LaunchInstr{1, {buf(128, {4, 4})}, {buf(232, {4}, DType::F16)}, 0};
    launch2.loc = loc(17, "linalg.reduce");
    add(launch2);
    Instruction fetch;
    fetch.kind = InstrKind::FetchBuffer;
    fetch.io = IOInstr{0, buf(232, {4}, DType::F16), {}};
    fetch.loc = SourceLoc{}; // an instruction without a known location
    add(fetch);
    step.programs.push_back(prog);
  }
  p.plans.push_back(step);

  ControllerProgram c;
  c.name = "train";
  c.inputs = {ValueType{DType::F32, {4, 4}, true},
              ValueType{DType::BF16, {}, false}};
  c.outputs = {ValueType{DType::F32, {4}, true}};
  c.loc = loc(30, "func.func");
  ControlStep msg;
  msg.kind = ControlStepKind::ControlMsg;
  msg.mesh = "mesh";
  msg.plans = {0};
  msg.scalars = {ScalarArg{ValueRef{ValueKind::Argument, 1, 0},
                           ValueType{DType::BF16, {}, false}, 0, 1},
                 ScalarArg{ValueRef{ValueKind::Constant, 0, 0.5},
                           ValueType{DType::F32, {}, false}, 0, 1}};
  msg.loc = loc(31, "monarch.control_msg");
  c.steps.push_back(msg);
  ControlStep feedStep;
  feedStep.kind = ControlStepKind::FeedInput;
  feedStep.plan = 0;
  feedStep.index = 0;
  feedStep.value = ValueRef{ValueKind::Argument, 0, 0};
  feedStep.type = ValueType{DType::F32, {4, 4}, true};
  c.steps.push_back(feedStep);
  ControlStep fetchStep;
  fetchStep.kind = ControlStepKind::FetchOutput;
  fetchStep.plan = 0;
  fetchStep.index = 0;
  fetchStep.type = ValueType{DType::F32, {4}, true};
  c.steps.push_back(fetchStep);
  ControlStep await;
  await.kind = ControlStepKind::Await;
  await.tokens = {0};
  c.steps.push_back(await);
  c.results = {ValueRef{ValueKind::Fetched, 2, 0}};
  p.controllers.push_back(c);

  p.libraries.push_back(KernelLibraryBlob{PlanTarget::Cpu,
                                          std::string("\x7f"
                                                      "ELF\0\1\2",
                                                      7),
                                          {{0, "k0_impl", {}, {4, -2}}}});
  // A CUDA library whose kernel k0 is one cuBLAS call (every GemmCall field
  // set to a distinct value, so the round trip checks each).
  GemmCall gemm{true,       false, 4,   8,    2,       5,          3,
                6,          0,     0,   0,    1,       DType::F16, DType::F16,
                DType::F32, 1.5,   0.0, "a1", "a0+64", "a2"};
  p.libraries.push_back(KernelLibraryBlob{
      PlanTarget::Cuda,
      "// monarch.ptx-module k0_cuda\n// monarch.kernel k0_cuda args=3\n"
      "// monarch.gemm k0_cuda 0 operands=a1,a0+64,a2\n",
      {{0, "k0_cuda", {gemm}}}});
  return p;
}

} // namespace monarch::plan::testing

#endif // MONARCH_TESTS_UNIT_CODEGEN_PLAN_SAMPLEPLAN_H
