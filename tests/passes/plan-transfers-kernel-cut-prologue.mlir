// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers=cut-at-contractions=1 --monarch-verify-plan | FileCheck %s

// A contraction takes its prologue into its kernel (docs/pipeline.md,
// "Kernel boundaries"): the transpose of %w2t and the zero fill that only
// the second matmul reads move from the first kernel into the second, so
// kernel codegen can read the transpose through the BLAS call's maps and
// the zero init as beta = 0. The transpose of %w3t is also read by an add
// in the first kernel, and the first fill by the max: both stay.

// CHECK:      func.func private @step.worker.mesh.r0.k0(
// CHECK-NOT:    func.func
// CHECK:        linalg.fill
// CHECK-NOT:    func.func
// CHECK:        linalg.matmul
// CHECK-NOT:    func.func
// CHECK:        linalg.transpose ins(%{{.*}} : tensor<2x8xf32>) outs(%{{.*}} : tensor<8x2xf32>) permutation = [1, 0]
// CHECK-NOT:    func.func
// CHECK:        linalg.max
// CHECK-NOT:    func.func
// CHECK:        linalg.add
// CHECK-NOT:    linalg.matmul
// CHECK:      func.func private @step.worker.mesh.r0.k1(
// CHECK-DAG:    linalg.transpose ins(%{{.*}} : tensor<2x8xf32>) outs(%{{.*}} : tensor<8x2xf32>) permutation = [1, 0]
// CHECK-DAG:    linalg.fill
// CHECK:        linalg.matmul
// CHECK-NOT:    linalg.max
// CHECK-NOT:    linalg.add
// CHECK:      monarch.launch @step.worker.mesh.r0.k0
// CHECK:      monarch.launch @step.worker.mesh.r0.k1

module {
  shard.grid @grid(shape = 1)
  monarch.proc_mesh @mesh(gpus = 1) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %w2t: tensor<2x8xf32>, %w3t: tensor<2x8xf32>) -> (tensor<4x2xf32>, tensor<8x2xf32>) {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty() : tensor<4x8xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%1 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %e = tensor.empty() : tensor<8x2xf32>
      %t = linalg.transpose ins(%w2t : tensor<2x8xf32>) outs(%e : tensor<8x2xf32>) permutation = [1, 0]
      %v = linalg.transpose ins(%w3t : tensor<2x8xf32>) outs(%e : tensor<8x2xf32>) permutation = [1, 0]
      %4 = tensor.empty() : tensor<4x2xf32>
      %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<4x2xf32>) -> tensor<4x2xf32>
      %3 = linalg.max ins(%2, %1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %a = linalg.add ins(%v, %v : tensor<8x2xf32>, tensor<8x2xf32>) outs(%e : tensor<8x2xf32>) -> tensor<8x2xf32>
      %6 = linalg.matmul ins(%3, %t : tensor<4x8xf32>, tensor<8x2xf32>) outs(%5 : tensor<4x2xf32>) -> tensor<4x2xf32>
      return %6, %a : tensor<4x2xf32>, tensor<8x2xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<2x8xf32>, %arg3: tensor<2x8xf32>) -> (tensor<4x2xf32>, tensor<8x2xf32>) attributes {monarch.worker_for = @mesh} {
    %0:2 = monarch.call @step.mesh.0::@run(%arg0, %arg1, %arg2, %arg3) : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<4x2xf32>, tensor<8x2xf32>)
    return %0#0, %0#1 : tensor<4x2xf32>, tensor<8x2xf32>
  }
  func.func @step(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<2x8xf32>, %arg3: tensor<2x8xf32>) -> (tensor<4x2xf32>, tensor<8x2xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<4x8xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<8x8xf32>
    monarch.feed_input %arg2 to @step.worker.mesh input 2 : tensor<2x8xf32>
    monarch.feed_input %arg3 to @step.worker.mesh input 3 : tensor<2x8xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<4x2xf32>
    %2 = monarch.fetch_output @step.worker.mesh output 1 : tensor<8x2xf32>
    monarch.await %0 : !monarch.token
    return %1, %2 : tensor<4x2xf32>, tensor<8x2xf32>
  }
}
