// RUN: monarch-opt %examples/ir/pipeline.mlir | FileCheck %s
// RUN: monarch-opt %examples/ir/pipeline.mlir --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt --verify-roundtrip %examples/ir/pipeline.mlir | FileCheck %s

// examples/ir/pipeline.mlir: a two-stage pipeline of actors on two halves of
// a 1x4 mesh.

// CHECK-LABEL: shard.grid @mesh_grid(shape = 1x4)
// CHECK-NEXT:  shard.grid @half_grid(shape = 1x2)
// CHECK-NEXT:  monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
// CHECK-NEXT:  monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
// CHECK-NEXT:  monarch.mesh_slice @s1_mesh of @mesh(hosts = 0 to 1, gpus = 2 to 4) grid @half_grid

// CHECK-LABEL: monarch.actor_class @Stage {
// CHECK-NEXT:    monarch.state @w : tensor<4x4xf32>
// CHECK-NEXT:    monarch.endpoint @forward(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT:      %[[W:.*]] = state_get @w : tensor<4x4xf32>
// CHECK:           %[[Y:.*]] = linalg.matmul ins(%arg0, %[[W]] : tensor<8x4xf32>, tensor<4x4xf32>) outs(%{{.*}} : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:      {{^ *}}return %[[Y]] : tensor<8x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    monarch.endpoint @update(%arg0: tensor<4x4xf32>, %arg1: f32) {
// CHECK-NEXT:      %[[G:.*]] = all_reduce %arg0 over ["gpus"] avg : tensor<4x4xf32>
// CHECK-NEXT:      %[[W:.*]] = state_get @w : tensor<4x4xf32>
// CHECK:           %[[WN:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[G]] : tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK:           {{^ *}}state_set @w = %[[WN]] : tensor<4x4xf32>
// CHECK-NEXT:      {{^ *}}return{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  monarch.actor_mesh @s0 = @Stage on @s0_mesh
// CHECK-NEXT:  monarch.actor_mesh @s1 = @Stage on @s1_mesh

// CHECK-LABEL: func.func @pipeline(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT:    %[[X:.*]] = monarch.feed %arg0 to @s0_mesh : tensor<8x4xf32>
// CHECK-NEXT:    %[[H:.*]] = monarch.call @s0::@forward(%[[X]]) : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[H1:.*]] = monarch.transfer %[[H]] from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = monarch.call @s1::@forward(%[[H1]]) : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[R:.*]] = monarch.fetch %[[Y]] from @s1_mesh : tensor<8x4xf32>
// CHECK-NEXT:    return %[[R]] : tensor<8x4xf32>

// CHECK-LABEL: func.func @apply_update(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: f32) {
// CHECK-NEXT:    %[[A:.*]] = monarch.feed %arg0 to @s0_mesh : tensor<4x4xf32>
// CHECK-NEXT:    monarch.broadcast @s0::@update(%[[A]], %arg2) : tensor<4x4xf32>, f32
// CHECK-NEXT:    %[[B:.*]] = monarch.feed %arg1 to @s1_mesh : tensor<4x4xf32>
// CHECK-NEXT:    monarch.broadcast @s1::@update(%[[B]], %arg2) : tensor<4x4xf32>, f32
// CHECK-NEXT:    return
