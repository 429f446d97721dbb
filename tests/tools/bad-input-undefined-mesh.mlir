// References to a mesh that is not defined are errors at the referencing op,
// with a non-zero exit and no crash.
//
// RUN: not monarch-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK-NOT: PLEASE submit a bug report
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK: bad-input-undefined-mesh.mlir:[[@LINE+1]]:8: error: 'monarch.feed' op @mesh does not name a monarch.proc_mesh or monarch.mesh_slice
  %y = monarch.feed %x to @mesh : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

monarch.actor_class @Stage {
  monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    monarch.return %x : tensor<8x4xf32>
  }
}
// CHECK: bad-input-undefined-mesh.mlir:[[@LINE+1]]:1: error: 'monarch.actor_mesh' op @s0_mesh does not name a monarch.proc_mesh or monarch.mesh_slice
monarch.actor_mesh @s0 = @Stage on @s0_mesh

// -----

shard.grid @half_grid(shape = 1x2)
// CHECK: bad-input-undefined-mesh.mlir:[[@LINE+1]]:1: error: 'monarch.mesh_slice' op @mesh does not name a monarch.proc_mesh or monarch.mesh_slice
monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid

// -----

// CHECK: bad-input-undefined-mesh.mlir:[[@LINE+1]]:1: error: 'monarch.plan' op @mesh does not name a monarch.proc_mesh or monarch.mesh_slice
monarch.plan @step on @mesh {
  monarch.rank_program rank 0 arena 0 {
  }
}
// CHECK-NOT: Stack dump
