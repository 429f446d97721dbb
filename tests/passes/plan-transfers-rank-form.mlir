// RUN: monarch-opt %s --monarch-plan-transfers | FileCheck %s
// RUN: monarch-opt %s --monarch-plan-transfers --monarch-verify-plan | monarch-opt
//
// monarch-plan-transfers alone, on the per-rank form monarch-specialize-ranks
// leaves (here its output for a two-stage pipeline over two one-rank slices,
// the endpoints dropped): rank 0 computes and sends, rank 1 receives,
// computes its output and the new value of its state, which a copy kernel
// writes back into the state buffer. The new state does not read what rank
// 1 receives: it is a kernel of its own, launched before the wait for the
// recv (compute that need not wait goes first, docs/pipeline.md). Rank 1's
// matmul is rank 0's kernel (equal kernels are kept once: its launch names
// r0.k0, and no r1.k1 is made).

// CHECK:       func.func private @step.worker.mesh.r0.k0(%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<4x4xf32>, %{{.*}}: memref<8x4xf32>)
// CHECK:         linalg.matmul
// CHECK:       monarch.communicator @step.worker.mesh.comm0 on @mesh ranks [0, 1] backend gloo
// CHECK:       func.func private @step.worker.mesh.r1.k0(
// CHECK:         arith.subf
// CHECK-NOT:   func.func private @step.worker.mesh.r1.k1(
// CHECK:       func.func private @step.worker.mesh.r1.k2(%[[SRC:.*]]: tensor<4x4xf32>, %[[DST:.*]]: memref<4x4xf32>)
// CHECK-NEXT:    bufferization.materialize_in_destination %[[SRC]] in restrict writable %[[DST]]
// CHECK:       monarch.plan @step.worker.mesh on @mesh signature (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT:    monarch.rank_program rank 0 arena 320 {
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x4xf32>>
// CHECK-NEXT:      monarch.state_buffer @s0::@w at #monarch.buf<128, tensor<4x4xf32>>
// CHECK-NEXT:      %[[K:.*]] = monarch.launch @step.worker.mesh.r0.k0 ins(#monarch.buf<0, tensor<8x4xf32>>, #monarch.buf<128, tensor<4x4xf32>>) outs(#monarch.buf<192, tensor<8x4xf32>>) stream 0
// CHECK-NEXT:      monarch.wait %[[K]]
// CHECK-NEXT:      %[[S:.*]] = monarch.send #monarch.buf<192, tensor<8x4xf32>> to 1 on @step.worker.mesh.comm0 stream 1 group 0
// CHECK-NEXT:      monarch.wait %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    monarch.rank_program rank 1 arena 448 {
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<0, tensor<4x4xf32>>
// CHECK-NEXT:      monarch.state_buffer @s1::@w at #monarch.buf<64, tensor<4x4xf32>>
// CHECK-NEXT:      %[[R:.*]] = monarch.recv #monarch.buf<128, tensor<8x4xf32>> from 0 on @step.worker.mesh.comm0 stream 1 group 0
// CHECK-NEXT:      %[[K0:.*]] = monarch.launch @step.worker.mesh.r1.k0 ins(#monarch.buf<64, tensor<4x4xf32>>, #monarch.buf<0, tensor<4x4xf32>>) outs(#monarch.buf<256, tensor<4x4xf32>>) stream 0
// CHECK-NEXT:      monarch.wait %[[R]]
// CHECK-NEXT:      %[[K1:.*]] = monarch.launch @step.worker.mesh.r0.k0 ins(#monarch.buf<128, tensor<8x4xf32>>, #monarch.buf<64, tensor<4x4xf32>>) outs(#monarch.buf<320, tensor<8x4xf32>>) stream 0
// CHECK-NEXT:      %[[K2:.*]] = monarch.launch @step.worker.mesh.r1.k2 ins(#monarch.buf<256, tensor<4x4xf32>>) outs(#monarch.buf<64, tensor<4x4xf32>>) stream 0
// CHECK-NEXT:      monarch.wait %[[K1]]
// CHECK-NEXT:      monarch.fetch_buffer 0 from #monarch.buf<320, tensor<8x4xf32>>
// CHECK-NEXT:      monarch.wait %[[K0]], %[[K2]]
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   @step.worker.mesh.rank
// CHECK:       func.func @step(
// CHECK-NEXT:    monarch.control_msg to @mesh invoke [@step.worker.mesh]

#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @grid(shape = 2)
  shard.grid @one(shape = 1)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.mesh_slice @s0_mesh of @mesh(gpus = 0 to 1) grid @one
  monarch.mesh_slice @s1_mesh of @mesh(gpus = 1 to 2) grid @one
  monarch.actor_class @Stage {
    monarch.state @w : tensor<4x4xf32>
  }
  monarch.actor_mesh @s0 = @Stage on @s0_mesh
  monarch.actor_mesh @s1 = @Stage on @s1_mesh
  monarch.channel @step.ch0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>
  func.func private @step.worker.mesh(tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@step.worker.mesh.rank0, @step.worker.mesh.rank1]}
  func.func private @step.worker.mesh.rank0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64>, plan.states = [@s0::@w]} {
    %0 = tensor.empty() : tensor<8x4xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x4xf32>) -> tensor<8x4xf32>
    %2 = linalg.matmul ins(%arg0, %arg2 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.channel_send @step.ch0, %2 : tensor<8x4xf32>
    return %arg2 : tensor<4x4xf32>
  }
  func.func private @step.worker.mesh.rank1(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0>, plan.states = [@s1::@w]} {
    %0 = monarch.channel_recv @step.ch0 : tensor<8x4xf32>
    %1 = tensor.empty() : tensor<8x4xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<8x4xf32>) -> tensor<8x4xf32>
    %3 = linalg.matmul ins(%0, %arg2 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%2 : tensor<8x4xf32>) -> tensor<8x4xf32>
    %4 = tensor.empty() : tensor<4x4xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg2, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%4 : tensor<4x4xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %6 = arith.subf %in, %in_0 : f32
      linalg.yield %6 : f32
    } -> tensor<4x4xf32>
    return %3, %5 : tensor<8x4xf32>, tensor<4x4xf32>
  }
  func.func @step(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<8x4xf32> {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<8x4xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<4x4xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<8x4xf32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<8x4xf32>
  }
}

