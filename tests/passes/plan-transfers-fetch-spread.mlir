// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers --monarch-verify-plan | FileCheck %s

// A replicated output j is returned by the (j mod min(holders, 8))-th rank
// holding it: on 16 ranks, output 1 by rank 1 and output 9 by rank 1 too
// (not rank 9), so that ranks 8-15 run one program and the plan stores a
// handful of distinct streams however many replicas the mesh has.

// CHECK-LABEL: monarch.plan @step.worker.mesh on @mesh
// CHECK:         monarch.rank_program rank 0
// CHECK:           monarch.fetch_buffer 0 from
// CHECK:           monarch.fetch_buffer 8 from
// CHECK:         monarch.rank_program rank 1
// CHECK:           monarch.fetch_buffer 1 from
// CHECK:           monarch.fetch_buffer 9 from
// CHECK:         monarch.rank_program rank 2
// CHECK-NOT:     monarch.fetch_buffer 9
// CHECK:         monarch.rank_program rank 8
// CHECK-NOT:       monarch.fetch_buffer
// CHECK:         monarch.rank_program rank 9
// CHECK-NOT:       monarch.fetch_buffer
// CHECK:         monarch.rank_program rank 10
shard.grid @grid(shape = 16)
monarch.proc_mesh @mesh(gpus = 16) grid @grid
monarch.actor_class @C {
  monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %n = linalg.negf ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    monarch.return %n : tensor<4xf32>
  }
}
monarch.actor_mesh @a = @C on @mesh
func.func @step.worker.mesh(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {monarch.worker_for = @mesh} {
  %y = monarch.call @a::@f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y, %y, %y, %y, %y, %y, %y, %y, %y, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
