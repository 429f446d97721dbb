// RUN: monarch-opt %s --monarch-specialize-ranks=shard-inputs=0 --split-input-file | FileCheck %s
// The per-rank form verifies and parses back.
// RUN: monarch-opt %s --monarch-specialize-ranks=shard-inputs=0 --split-input-file | monarch-opt --split-input-file
// And monarch-plan-transfers takes it from there.
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers --monarch-verify-plan --split-input-file | FileCheck %s --check-prefix=PLAN
// (Inputs are sliced on the ranks here, shard-inputs=0, as a rank does
// when it also needs the whole value; specialize-ranks-shard-outputs.mlir
// covers feeding shards.)

// Data parallel on two ranks, split stage (from a traced step by
// monarch-partition and monarch-split-control-data): each rank slices its
// rows, `process_index` becomes the rank's index, and the partial sums meet
// in an all_reduce over both ranks. The worker program stays as the
// declaration of its rank functions, which the controller still refers to.

// CHECK-LABEL: func.func private @step.worker.mesh(tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-SAME:    attributes {monarch.worker_for = @mesh, plan.ranks = [@step.worker.mesh.rank0, @step.worker.mesh.rank1]}
// CHECK-NOT:     monarch.call
// CHECK:       func.func private @step.worker.mesh.rank0(%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-SAME:    attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []}
// CHECK-NEXT:    %[[S:.*]] = tensor.extract_slice %[[X]][0, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
// CHECK:         linalg.matmul ins(%[[S]], %[[W]] :
// CHECK:         %[[I:.*]] = arith.constant 0 : index
// CHECK-NEXT:    arith.cmpi eq, %[[I]],
// CHECK:         %[[R:.*]] = monarch.all_reduce %{{.*}} over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4xf32>
// CHECK:       func.func private @step.worker.mesh.rank1(
// CHECK-SAME:    attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0>, plan.states = []}
// CHECK-NEXT:    tensor.extract_slice %{{.*}}[2, 0] [2, 4] [1, 1]
// CHECK:         %[[I1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    arith.cmpi eq, %[[I1]],
// CHECK:         monarch.all_reduce %{{.*}} over ["gpus"] sum {plan.group = array<i64: 0, 1>}
// CHECK:       func.func @step(
// CHECK-NEXT:    monarch.control_msg to @mesh invoke [@step.worker.mesh]

// PLAN-LABEL:  monarch.plan @step.worker.mesh on @mesh signature (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
// PLAN:          monarch.collective all_reduce sum
// PLAN:          monarch.fetch_buffer 0
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%arg0: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}, %arg1: tensor<4x4xf32>) -> tensor<4xf32> {
      %c0 = arith.constant 0 : index
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty() : tensor<2x4xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x4xf32>) -> tensor<2x4xf32>
      %2 = tensor.empty() : tensor<4xf32>
      %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4xf32>) -> tensor<4xf32>
      %4 = linalg.matmul ins(%arg0, %arg1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<2x4xf32>) -> tensor<2x4xf32>
      %5 = process_index over ["gpus"] : index
      %6 = arith.cmpi eq, %5, %c0 : index
      %7 = scf.if %6 -> (tensor<4xf32>) {
        scf.yield %3 : tensor<4xf32>
      } else {
        %9 = tensor.empty() : tensor<4xf32>
        %10 = linalg.fill ins(%cst : f32) outs(%9 : tensor<4xf32>) -> tensor<4xf32>
        scf.yield %10 : tensor<4xf32>
      }
      %reduced = linalg.reduce ins(%4 : tensor<2x4xf32>) outs(%7 : tensor<4xf32>) dimensions = [0]
        (%in: f32, %init: f32) {
          %9 = arith.addf %in, %init : f32
          linalg.yield %9 : f32
        }
      %8 = all_reduce %reduced over ["gpus"] sum : tensor<4xf32>
      return %8 : tensor<4xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @step.mesh.0::@run(%arg0, %arg1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @step(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4xf32> {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<4x4xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<4x4xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<4xf32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<4xf32>
  }
}


// -----

// A pipeline over two one-rank slices: rank 0 runs stage 0 and sends, rank 1
// receives, runs stage 1, updates its state and holds the output. Each rank
// takes its stage's state as an argument and returns its final value
// (`plan.states`); only rank 1 returns output 0 (`plan.outputs`).

// CHECK-LABEL: func.func private @step.worker.mesh(tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK-SAME:    plan.ranks = [@step.worker.mesh.rank0, @step.worker.mesh.rank1]
// CHECK:       func.func private @step.worker.mesh.rank0(%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<4x4xf32>, %[[W0:.*]]: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-SAME:    attributes {monarch.rank = 0 : i64, plan.outputs = array<i64>, plan.states = [@s0::@w]}
// CHECK:         %[[H:.*]] = linalg.matmul ins(%{{.*}}, %[[W0]] :
// CHECK-NEXT:    monarch.channel_send @step.ch0, %[[H]] : tensor<8x4xf32>
// CHECK-NEXT:    return %[[W0]] : tensor<4x4xf32>
// CHECK:       func.func private @step.worker.mesh.rank1(%{{.*}}: tensor<8x4xf32>, %[[G:.*]]: tensor<4x4xf32>, %[[W1:.*]]: tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>)
// CHECK-SAME:    attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0>, plan.states = [@s1::@w]}
// CHECK-NEXT:    %[[IN:.*]] = monarch.channel_recv @step.ch0 : tensor<8x4xf32>
// CHECK:         %[[Y:.*]] = linalg.matmul ins(%[[IN]], %[[W1]] :
// CHECK:         %[[NEW:.*]] = linalg.generic {{.*}} ins(%[[W1]], %[[G]] :
// CHECK:         return %[[Y]], %[[NEW]] : tensor<8x4xf32>, tensor<4x4xf32>

// PLAN-LABEL:  monarch.plan @step.worker.mesh on @mesh
// PLAN:          monarch.rank_program rank 0
// PLAN:            monarch.state_buffer @s0::@w
// PLAN:            monarch.send
// PLAN:          monarch.rank_program rank 1
// PLAN:            monarch.state_buffer @s1::@w
// PLAN:            monarch.recv
// PLAN:            monarch.fetch_buffer 0
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @grid(shape = 2)
  shard.grid @one(shape = 1)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.mesh_slice @s0_mesh of @mesh(gpus = 0 to 1) grid @one
  monarch.mesh_slice @s1_mesh of @mesh(gpus = 1 to 2) grid @one
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
    monarch.endpoint @update(%arg0: tensor<4x4xf32>) {
      %0 = state_get @w : tensor<4x4xf32>
      %1 = tensor.empty() : tensor<4x4xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<4x4xf32>) {
      ^bb0(%in: f32, %in_0: f32, %out: f32):
        %3 = arith.subf %in, %in_0 : f32
        linalg.yield %3 : f32
      } -> tensor<4x4xf32>
      state_set @w = %2 : tensor<4x4xf32>
      return
    }
  }
  monarch.actor_mesh @s0 = @Stage on @s0_mesh
  monarch.actor_mesh @s1 = @Stage on @s1_mesh
  monarch.channel @step.ch0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>
  func.func @step.worker.mesh(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<8x4xf32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @s0::@forward(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.channel_send @step.ch0, %0 : tensor<8x4xf32>
    %1 = monarch.channel_recv @step.ch0 : tensor<8x4xf32>
    %2 = monarch.call @s1::@forward(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.broadcast @s1::@update(%arg1) : tensor<4x4xf32>
    return %2 : tensor<8x4xf32>
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

// -----

// Over a group of one rank a collective is its input: the all_reduce over
// "gpus" (one rank along it) is dropped, with its communicator; the one
// over "hosts" (two) stays, and the plan has one collective.

// CHECK-LABEL: func.func private @one.worker.mesh.rank0(
// CHECK-SAME:    %[[G:[^:]*]]: tensor<8xf32>
// CHECK-NOT:     over ["gpus"]
// CHECK:         %[[H:.*]] = monarch.all_reduce %[[G]] over ["hosts"] sum {plan.group = array<i64: 0, 1>} : tensor<8xf32>
// CHECK-NEXT:    return %[[H]] : tensor<8xf32>
// CHECK-LABEL: func.func private @one.worker.mesh.rank1(
// CHECK-NOT:     over ["gpus"]
// CHECK:         monarch.all_reduce %{{.*}} over ["hosts"] sum {plan.group = array<i64: 0, 1>}

// PLAN-LABEL:  monarch.plan @one.worker.mesh on @mesh
// PLAN-COUNT-1:  monarch.collective
// PLAN-NOT:      monarch.collective
// PLAN:          monarch.fetch_buffer 0
module {
  shard.grid @grid(shape = 2x1)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 1) grid @grid
  monarch.actor_class @one.mesh.0.class {
    monarch.endpoint @run(%arg0: tensor<8xf32>) -> tensor<8xf32> {
      %0 = all_reduce %arg0 over ["gpus"] avg : tensor<8xf32>
      %1 = all_reduce %0 over ["hosts"] sum : tensor<8xf32>
      return %1 : tensor<8xf32>
    }
  }
  monarch.actor_mesh @one.mesh.0 = @one.mesh.0.class on @mesh
  func.func @one.worker.mesh(%arg0: tensor<8xf32>) -> tensor<8xf32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @one.mesh.0::@run(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
  func.func @one(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = monarch.control_msg to @mesh invoke [@one.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @one.worker.mesh input 0 : tensor<8xf32>
    %1 = monarch.fetch_output @one.worker.mesh output 0 : tensor<8xf32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<8xf32>
  }
}
