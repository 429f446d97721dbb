// RUN: monarch-opt %s --monarch-specialize-ranks=shard-inputs=0 --monarch-plan-transfers --split-input-file | FileCheck %s
// RUN: monarch-opt %s --monarch-specialize-ranks=shard-inputs=0 --monarch-plan-transfers --monarch-verify-plan --split-input-file | monarch-opt --split-input-file
// RUN: monarch-opt %s --split-input-file --monarch-specialize-ranks=shard-inputs=0 --monarch-plan-transfers="group-bytes=0" | FileCheck %s --check-prefix=NOGROUP
// (Inputs are sliced on the ranks here, shard-inputs=0, as a rank does
// when it also needs the whole value; specialize-ranks-shard-outputs.mlir
// covers feeding shards.)
// NOGROUP-NOT: group

// Data parallel, split stage (as produced from a traced step by
// monarch-partition and monarch-split-control-data): every rank computes its
// rows in one kernel, then an all_reduce on the collective stream; rank 0
// returns the result.

// CHECK-LABEL: monarch.communicator @step.worker.mesh.comm0 on @mesh ranks [0, 1, 2, 3] backend gloo
// CHECK:       func.func private @step.worker.mesh.r1.k0(%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<4x4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK:         tensor.extract_slice %{{.*}}[2, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
// CHECK:         linalg.matmul
// CHECK:         linalg.reduce
// CHECK:         bufferization.materialize_in_destination %{{.*}} in restrict writable %[[OUT]]
// CHECK:       monarch.plan @step.worker.mesh on @mesh signature (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    monarch.rank_program rank 0 arena 320
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x4xf32>>
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<128, tensor<4x4xf32>>
// CHECK-NEXT:      %[[K:.*]] = monarch.launch @step.worker.mesh.r0.k0 ins(#monarch.buf<0, tensor<8x4xf32>>, #monarch.buf<128, tensor<4x4xf32>>) outs(#monarch.buf<192, tensor<4xf32>>) stream 0
// CHECK-NEXT:      monarch.wait %[[K]]
// CHECK-NEXT:      %[[C:.*]] = monarch.collective all_reduce sum #monarch.buf<192, tensor<4xf32>> -> #monarch.buf<256, tensor<4xf32>> on @step.worker.mesh.comm0 stream 2
// CHECK-NEXT:      monarch.wait %[[C]]
// CHECK-NEXT:      monarch.fetch_buffer 0 from #monarch.buf<256, tensor<4xf32>>
// CHECK:         monarch.rank_program rank 3 arena 320
// CHECK-NOT:       fetch_buffer
// CHECK:       func.func @step
// CHECK-NEXT:    monarch.control_msg to @mesh invoke [@step.worker.mesh]
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @grid(shape = 4)
  monarch.proc_mesh @mesh(gpus = 4) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%arg0: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}, %arg1: tensor<4x4xf32>) -> tensor<4xf32> {
      %c0 = arith.constant 0 : index
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty() : tensor<2x4xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x4xf32>) -> tensor<2x4xf32>
      %2 = tensor.empty() : tensor<2x4xf32>
      %3 = tensor.empty() : tensor<4xf32>
      %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<4xf32>) -> tensor<4xf32>
      %5 = linalg.matmul ins(%arg0, %arg1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<2x4xf32>) -> tensor<2x4xf32>
      %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<2x4xf32>) outs(%2 : tensor<2x4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %11 = arith.maximumf %in, %cst : f32
        linalg.yield %11 : f32
      } -> tensor<2x4xf32>
      %7 = process_index over ["gpus"] : index
      %8 = arith.cmpi eq, %7, %c0 : index
      %9 = scf.if %8 -> (tensor<4xf32>) {
        scf.yield %4 : tensor<4xf32>
      } else {
        %11 = tensor.empty() : tensor<4xf32>
        %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<4xf32>) -> tensor<4xf32>
        scf.yield %12 : tensor<4xf32>
      }
      %reduced = linalg.reduce ins(%6 : tensor<2x4xf32>) outs(%9 : tensor<4xf32>) dimensions = [0] 
        (%in: f32, %init: f32) {
          %11 = arith.addf %in, %init : f32
          linalg.yield %11 : f32
        }
      %10 = all_reduce %reduced over ["gpus"] sum : tensor<4xf32>
      return %10 : tensor<4xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @step.mesh.0::@run(%arg0, %arg1) : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @step(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4xf32> {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<8x4xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<4x4xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<4xf32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<4xf32>
  }
}


// -----

// A pipeline over two slices of one proc mesh: stage 0 ranks send to the
// matching stage 1 ranks on the point-to-point stream; actor state is bound
// to arena buffers; the stage 1 result is returned by rank 2. Transfers up
// to group-bytes (64 KiB by default) get a group so that back-to-back small
// ones are issued together; with group-bytes=0 none is grouped.

// CHECK-LABEL: monarch.plan @pipeline.worker.mesh on @mesh
// CHECK:         monarch.rank_program rank 0
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x4xf32>>
// CHECK-NEXT:      monarch.state_buffer @s0::@w at #monarch.buf<128, tensor<4x4xf32>>
// CHECK-NEXT:      %[[K:.*]] = monarch.launch
// CHECK-NEXT:      monarch.wait %[[K]]
// CHECK-NEXT:      %[[S:.*]] = monarch.send #monarch.buf<192, tensor<8x4xf32>> to 2 on @pipeline.worker.mesh.comm0 stream 1 group 0
// CHECK:         monarch.rank_program rank 1
// CHECK:           monarch.send #monarch.buf<192, tensor<8x4xf32>> to 3 on @pipeline.worker.mesh.comm0 stream 1
// CHECK:         monarch.rank_program rank 2
// CHECK-NEXT:      monarch.state_buffer @s1::@w
// CHECK-NEXT:      %[[R:.*]] = monarch.recv #monarch.buf<64, tensor<8x4xf32>> from 0 on @pipeline.worker.mesh.comm0 stream 1
// CHECK-NEXT:      monarch.wait %[[R]]
// CHECK-NEXT:      monarch.launch
// CHECK:           monarch.fetch_buffer 0 from
// CHECK:         monarch.rank_program rank 3
// CHECK:           monarch.recv #monarch.buf<64, tensor<8x4xf32>> from 1
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @mesh_grid(shape = 1x4)
  shard.grid @half_grid(shape = 1x2)
  monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
  monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
  monarch.mesh_slice @s1_mesh of @mesh(hosts = 0 to 1, gpus = 2 to 4) grid @half_grid
  monarch.actor_class @Stage {
    monarch.state @w : tensor<4x4xf32>
    monarch.endpoint @forward(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
      %0 = state_get @w : tensor<4x4xf32>
      %1 = tensor.empty() : tensor<8x4xf32>
      %cst = arith.constant 0.000000e+00 : f32
      %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<8x4xf32>) -> tensor<8x4xf32>
      %3 = linalg.matmul ins(%arg0, %0 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%2 : tensor<8x4xf32>) -> tensor<8x4xf32>
      return %3 : tensor<8x4xf32>
    }
    monarch.endpoint @update(%arg0: tensor<4x4xf32>, %arg1: f32) {
      %0 = all_reduce %arg0 over ["gpus"] avg : tensor<4x4xf32>
      %1 = state_get @w : tensor<4x4xf32>
      %2 = tensor.empty() : tensor<4x4xf32>
      %3 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%2 : tensor<4x4xf32>) {
      ^bb0(%in: f32, %in_0: f32, %out: f32):
        %4 = arith.mulf %arg1, %in_0 : f32
        %5 = arith.subf %in, %4 : f32
        linalg.yield %5 : f32
      } -> tensor<4x4xf32>
      state_set @w = %3 : tensor<4x4xf32>
      return
    }
  }
  monarch.actor_mesh @s0 = @Stage on @s0_mesh
  monarch.actor_mesh @s1 = @Stage on @s1_mesh
  monarch.channel @pipeline.ch0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>
  func.func @pipeline.worker.mesh(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @s0::@forward(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.channel_send @pipeline.ch0, %0 : tensor<8x4xf32>
    %1 = monarch.channel_recv @pipeline.ch0 : tensor<8x4xf32>
    %2 = monarch.call @s1::@forward(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %2 : tensor<8x4xf32>
  }
  func.func @pipeline(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = monarch.control_msg to @mesh invoke [@pipeline.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @pipeline.worker.mesh input 0 : tensor<8x4xf32>
    %1 = monarch.fetch_output @pipeline.worker.mesh output 0 : tensor<8x4xf32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<8x4xf32>
  }
  func.func @apply_update.worker.mesh(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: f32) attributes {monarch.worker_for = @mesh} {
    monarch.broadcast @s0::@update(%arg0, %arg2) : tensor<4x4xf32>, f32
    monarch.broadcast @s1::@update(%arg1, %arg2) : tensor<4x4xf32>, f32
    return
  }
  func.func @apply_update(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: f32) {
    %0 = monarch.control_msg to @mesh invoke [@apply_update.worker.mesh] args(%arg2 : f32) : !monarch.token
    monarch.feed_input %arg0 to @apply_update.worker.mesh input 0 : tensor<4x4xf32>
    monarch.feed_input %arg1 to @apply_update.worker.mesh input 1 : tensor<4x4xf32>
    monarch.await %0 : !monarch.token
    return
  }
}


// -----

// A shard returned by one call and taken with the same distribution by the
// next call on the same ranks stays where it is: no all_gather into the
// global value and slice back. The fetched result is not gathered either:
// each rank returns its shard (twice, as two outputs use it) and the
// controller assembles it.

// CHECK-LABEL: monarch.plan @chain.worker.mesh on @mesh
// CHECK:         monarch.rank_program rank 0
// CHECK-NOT:       monarch.collective
// CHECK:           monarch.fetch_buffer 0 from #monarch.buf<[[B:[0-9]+]], tensor<4x4xf32>> at [0, 0]
// CHECK-NEXT:      monarch.fetch_buffer 1 from #monarch.buf<[[B]], tensor<4x4xf32>> at [0, 0]
// CHECK:         monarch.rank_program rank 1
// CHECK-NOT:       monarch.collective
// CHECK:           monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<4x4xf32>> at [4, 0]
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @Rows {
    monarch.endpoint @scale(%arg0: tensor<4x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) -> (tensor<4x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
      %0 = tensor.empty() : tensor<4x4xf32>
      %1 = linalg.add ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%0 : tensor<4x4xf32>) -> tensor<4x4xf32>
      return %1 : tensor<4x4xf32>
    }
  }
  monarch.actor_mesh @rows = @Rows on @mesh
  func.func @chain.worker.mesh(%arg0: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @rows::@scale(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = monarch.call @rows::@scale(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %1, %1 : tensor<8x4xf32>, tensor<8x4xf32>
  }
  func.func @chain(%arg0: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@chain.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @chain.worker.mesh input 0 : tensor<8x4xf32>
    %1 = monarch.fetch_output @chain.worker.mesh output 0 : tensor<8x4xf32>
    %2 = monarch.fetch_output @chain.worker.mesh output 1 : tensor<8x4xf32>
    monarch.await %0 : !monarch.token
    return %1, %2 : tensor<8x4xf32>, tensor<8x4xf32>
  }
}
