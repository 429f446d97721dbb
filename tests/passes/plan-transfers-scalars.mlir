// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers | FileCheck %s

// Scalar arithmetic that monarch-split-control-data sank from the
// controller (`lr * 0.5`) is part of the worker's compute: the scalar
// argument arrives in a buffer and the multiplication runs in the kernel
// that uses it.

// CHECK:       func.func private @upd.worker.mesh.r0.k0(%[[LR:.*]]: tensor<f32>, %{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4x4xf32>, %{{.*}}: memref<4x4xf32>)
// CHECK:         %[[X:.*]] = tensor.extract %[[LR]][] : tensor<f32>
// CHECK:         %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         %[[LR2:.*]] = arith.mulf %[[X]], %[[HALF]] : f32
// CHECK:         linalg.generic
// CHECK:           arith.mulf %[[LR2]]
// CHECK:       monarch.plan @upd.worker.mesh on @mesh signature (tensor<4x4xf32>, f32) -> ()
// CHECK-NEXT:    monarch.rank_program rank 0
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<4x4xf32>>
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<[[B:[0-9]+]], tensor<f32>>
// CHECK:           monarch.launch @upd.worker.mesh.r0.k0 ins(#monarch.buf<[[B]], tensor<f32>>
// CHECK:       func.func @upd(%arg0: tensor<4x4xf32>, %arg1: f32)
// CHECK-NEXT:    monarch.control_msg to @mesh invoke [@upd.worker.mesh] args(%arg1 : f32)
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @mesh_grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @mesh_grid
  monarch.actor_class @Stage {
    monarch.state @w : tensor<4x4xf32>
    monarch.endpoint @update(%arg0: tensor<4x4xf32>, %arg1: f32) {
      %0 = state_get @w : tensor<4x4xf32>
      %1 = tensor.empty() : tensor<4x4xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<4x4xf32>) outs(%1 : tensor<4x4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %5 = arith.mulf %arg1, %in : f32
        linalg.yield %5 : f32
      } -> tensor<4x4xf32>
      %3 = tensor.empty() : tensor<4x4xf32>
      %4 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%3 : tensor<4x4xf32>) {
      ^bb0(%in: f32, %in_0: f32, %out: f32):
        %5 = arith.subf %in, %in_0 : f32
        linalg.yield %5 : f32
      } -> tensor<4x4xf32>
      state_set @w = %4 : tensor<4x4xf32>
      return
    }
  }
  monarch.actor_mesh @s = @Stage on @mesh
  func.func @upd.worker.mesh(%arg0: tensor<4x4xf32>, %arg1: f32) attributes {monarch.worker_for = @mesh} {
    %cst = arith.constant 5.000000e-01 : f32
    %0 = arith.mulf %arg1, %cst : f32
    monarch.broadcast @s::@update(%arg0, %0) : tensor<4x4xf32>, f32
    return
  }
  func.func @upd(%arg0: tensor<4x4xf32>, %arg1: f32) {
    %0 = monarch.control_msg to @mesh invoke [@upd.worker.mesh] args(%arg1 : f32) : !monarch.token
    monarch.feed_input %arg0 to @upd.worker.mesh input 0 : tensor<4x4xf32>
    monarch.await %0 : !monarch.token
    return
  }
}

