// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers=cut-at-contractions=1 --monarch-verify-plan | FileCheck %s

// Compute that need not wait goes first (docs/pipeline.md, "Kernel
// boundaries"): the end of a data-parallel step on two ranks, the second
// layer's gradient reduced during the backward, the first layer's last.
// After the first layer's all_reduce, the second layer's update does not
// read it and shares nothing with the first layer's: it is a kernel of its
// own, launched before the wait for that all_reduce, so it runs while the
// all_reduce is in flight; the first layer's update waits and follows.
// (Both weights are kept, donated, so every rank computes both.)

// CHECK-LABEL: monarch.rank_program rank 0
// CHECK:         %[[G2:.*]] = monarch.collective all_reduce sum
// CHECK:         monarch.launch @step.worker.mesh.r0.k{{[0-9]+}}
// CHECK:         %[[G1:.*]] = monarch.collective all_reduce sum
// CHECK-NOT:     monarch.launch
// CHECK:         monarch.wait %[[G2]]
// CHECK-NEXT:    %[[U2:.*]] = monarch.launch @step.worker.mesh.r0.k[[K2:[0-9]+]] ins(#monarch.buf<{{[0-9]+}}, tensor<4x4xf32>>, #monarch.buf<{{[0-9]+}}, tensor<4x4xf32>>)
// CHECK-NEXT:    monarch.wait %[[G1]]
// CHECK-NEXT:    %[[U1:.*]] = monarch.launch @step.worker.mesh.r0.k{{[0-9]+}}
// CHECK-LABEL: monarch.rank_program rank 1

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%x: tensor<4x4xf32>, %g2: tensor<4x4xf32>, %w1: tensor<4x4xf32>, %w2: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
      %a = all_reduce %g2 over ["gpus"] sum : tensor<4x4xf32>
      %cst = arith.constant 0.000000e+00 : f32
      %e = tensor.empty() : tensor<4x4xf32>
      %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
      %g1 = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
      %b = all_reduce %g1 over ["gpus"] sum : tensor<4x4xf32>
      %u1 = linalg.sub ins(%w1, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
      %u2 = linalg.sub ins(%w2, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
      return %u1, %u2 : tensor<4x4xf32>, tensor<4x4xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>, %arg3: tensor<4x4xf32>) -> (tensor<4x4xf32> {monarch.keep}, tensor<4x4xf32> {monarch.keep}) attributes {monarch.worker_for = @mesh} {
    %0:2 = monarch.call @step.mesh.0::@run(%arg0, %arg1, %arg2, %arg3) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    return %0#0, %0#1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func @step(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>, %arg3: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<4x4xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<4x4xf32>
    monarch.feed_input %arg2 to @step.worker.mesh input 2 : tensor<4x4xf32>
    monarch.feed_input %arg3 to @step.worker.mesh input 3 : tensor<4x4xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<4x4xf32>
    %2 = monarch.fetch_output @step.worker.mesh output 1 : tensor<4x4xf32>
    monarch.await %0 : !monarch.token
    return %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}
