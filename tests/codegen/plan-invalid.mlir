// What an ExecutionPlan cannot express is a diagnostic at the operation.
// RUN: split-file %s %t
// RUN: env MONARCH_DISABLE_CACHE=1 not monarch-compile %t/dtype.mlir --compile-to=plan 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: env MONARCH_DISABLE_CACHE=1 not monarch-compile %t/controller.mlir --compile-to=plan 2>&1 | FileCheck %s --check-prefix=CTL
// RUN: env MONARCH_DISABLE_CACHE=1 not monarch-compile %t/noplan.mlir --compile-to=plan 2>&1 | FileCheck %s --check-prefix=NOPLAN

// DTYPE: dtype.mlir:3:1: error: 'monarch.plan' op element type 'f8E4M3FN' has no ExecutionPlan dtype
// DTYPE: monarch-compile: error: cannot build the ExecutionPlan of '{{.*}}dtype.mlir'
// CTL: controller.mlir:9:8: error: 'arith.addf' op in controller function @ctl cannot be expressed in an ExecutionPlan
// NOPLAN: noplan.mlir:0:0: error: module has no monarch.plan and no controller program: compile it to the 'planned' stage first

//--- dtype.mlir
shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
monarch.plan @p on @mesh signature (tensor<4xf8E4M3FN>) -> () {
  monarch.rank_program rank 0 arena 64 {
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<4xf8E4M3FN>>
  }
}

//--- controller.mlir
shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
monarch.plan @p on @mesh signature (f32) -> () {
  monarch.rank_program rank 0 arena 64 {
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<f32>>
  }
}
func.func @ctl(%x: f32) {
  %y = arith.addf %x, %x : f32
  %t = monarch.control_msg to @mesh invoke [@p] args(%y : f32) : !monarch.token
  monarch.await %t : !monarch.token
  return
}

//--- noplan.mlir
shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
