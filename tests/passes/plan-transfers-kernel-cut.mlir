// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers | FileCheck %s --check-prefix=COMM
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers=cut-at-contractions=1 --monarch-verify-plan | FileCheck %s --check-prefix=CONTRACT
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers=max-kernel-ops=1 --monarch-verify-plan | FileCheck %s --check-prefix=BOUND

// Kernel boundaries (docs/pipeline.md): one rank, no communication, so by
// default the whole step is one kernel. cut-at-contractions starts a kernel
// at each matmul: relu(x @ w1) is one kernel (the matmul and its epilogue),
// the second matmul another. max-kernel-ops=1 puts every op in a kernel of
// its own (the fills and empties are cloned into the kernels that use them).

// COMM:         func.func private @step.worker.mesh.r0.k0(
// COMM-COUNT-2:   linalg.matmul
// COMM-NOT:     func.func private @step.worker.mesh.r0.k1(

// CONTRACT:     func.func private @step.worker.mesh.r0.k0(
// CONTRACT:       linalg.matmul
// CONTRACT:       linalg.max
// CONTRACT-NOT:   linalg.matmul
// CONTRACT:     func.func private @step.worker.mesh.r0.k1(
// CONTRACT:       linalg.matmul
// CONTRACT-NOT: func.func private @step.worker.mesh.r0.k2(
// CONTRACT:     monarch.launch @step.worker.mesh.r0.k0
// CONTRACT:     monarch.launch @step.worker.mesh.r0.k1

// BOUND:        func.func private @step.worker.mesh.r0.k0(
// BOUND:        func.func private @step.worker.mesh.r0.k1(
// BOUND:        func.func private @step.worker.mesh.r0.k2(
// BOUND:        monarch.launch @step.worker.mesh.r0.k0
// BOUND:        monarch.launch @step.worker.mesh.r0.k1
// BOUND:        monarch.launch @step.worker.mesh.r0.k2

module {
  shard.grid @grid(shape = 1)
  monarch.proc_mesh @mesh(gpus = 1) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x2xf32>) -> tensor<4x2xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty() : tensor<4x8xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%1 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %3 = linalg.max ins(%2, %1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %4 = tensor.empty() : tensor<4x2xf32>
      %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<4x2xf32>) -> tensor<4x2xf32>
      %6 = linalg.matmul ins(%3, %w2 : tensor<4x8xf32>, tensor<8x2xf32>) outs(%5 : tensor<4x2xf32>) -> tensor<4x2xf32>
      return %6 : tensor<4x2xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x2xf32>) -> tensor<4x2xf32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @step.mesh.0::@run(%arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
  func.func @step(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x2xf32>) -> tensor<4x2xf32> {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<4x8xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<8x8xf32>
    monarch.feed_input %arg2 to @step.worker.mesh input 2 : tensor<8x2xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<4x2xf32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<4x2xf32>
  }
}
