// Split worker outputs are returned as shards (plan.output_offsets) and
// fetched with their offsets: the controller assembles them (issue 31, item
// 4). Split inputs are fed as each rank's shard (plan.input_offsets): the
// controller cuts them out, no rank slices its rows out of the whole value.
// shard-outputs=0 and shard-inputs=0 gather and slice on the ranks instead.
// RUN: monarch-opt %s --monarch-specialize-ranks --split-input-file | FileCheck %s
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers --monarch-verify-plan --split-input-file | FileCheck %s --check-prefix=PLAN
// RUN: monarch-opt %s --monarch-specialize-ranks="shard-outputs=0 shard-inputs=0" --split-input-file | FileCheck %s --check-prefix=GATHER
// RUN: monarch-opt %s --monarch-specialize-ranks="shard-outputs=0 shard-inputs=0" --monarch-plan-transfers --monarch-verify-plan --split-input-file | FileCheck %s --check-prefix=GPLAN

// CHECK-LABEL: func.func private @step.worker.mesh.rank0(%{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-SAME:    plan.input_offsets = [array<i64: 0, 0>], plan.output_offsets = [array<i64: 0, 0>], plan.outputs = array<i64: 0>
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     monarch.all_gather
// CHECK:         return %{{.*}} : tensor<2x4xf32>
// CHECK-LABEL: func.func private @step.worker.mesh.rank1(%{{.*}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-SAME:    plan.input_offsets = [array<i64: 0, 4>], plan.output_offsets = [array<i64: 0, 4>], plan.outputs = array<i64: 0>

// PLAN-LABEL:  monarch.plan @step.worker.mesh on @mesh
// PLAN:          monarch.rank_program rank 0
// PLAN:          monarch.feed_buffer 0 into #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> at [0, 0]
// PLAN-NOT:      monarch.collective
// PLAN:          monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> at [0, 0]
// PLAN:          monarch.rank_program rank 1
// PLAN:          monarch.feed_buffer 0 into #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> at [0, 4]
// PLAN:          monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> at [0, 4]

// With shard-outputs=0, a result split along dimension 1 is gathered along
// 0, where plan collectives move contiguous blocks, then rearranged into
// place.

// GATHER-LABEL: func.func private @step.worker.mesh.rank0(%{{.*}}: tensor<2x8xf32>) -> tensor<2x8xf32>
// GATHER-NEXT:    tensor.extract_slice %{{.*}}[0, 0] [2, 4] [1, 1] : tensor<2x8xf32> to tensor<2x4xf32>
// GATHER:         %[[P:.*]] = linalg.negf
// GATHER-NEXT:    %[[G:.*]] = monarch.all_gather %[[P]] over ["gpus"] axis 0 {plan.group = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<4x4xf32>
// GATHER-NEXT:    %[[E:.*]] = tensor.expand_shape %[[G]] {{\[}}[0, 1], [2]] output_shape [2, 2, 4] : tensor<4x4xf32> into tensor<2x2x4xf32>
// GATHER:         %[[T:.*]] = linalg.transpose ins(%[[E]] : tensor<2x2x4xf32>) {{.*}} permutation = [1, 0, 2]
// GATHER-NEXT:    %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2]] : tensor<2x2x4xf32> into tensor<2x8xf32>
// GATHER-NEXT:    return %[[C]] : tensor<2x8xf32>
// GATHER:       func.func private @step.worker.mesh.rank1(
// GATHER-NEXT:    tensor.extract_slice %{{.*}}[0, 4] [2, 4] [1, 1]

// GPLAN-LABEL:  monarch.plan @step.worker.mesh on @mesh
// GPLAN:          monarch.collective all_gather #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> -> #monarch.buf<{{[0-9]+}}, tensor<4x4xf32>>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
monarch.actor_class @C {
  monarch.endpoint @neg(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}) -> (tensor<2x4xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}) {
    %e = tensor.empty() : tensor<2x4xf32>
    %n = linalg.negf ins(%x : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    monarch.return %n : tensor<2x4xf32>
  }
}
monarch.actor_mesh @a = @C on @mesh
func.func @step.worker.mesh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {monarch.worker_for = @mesh} {
  %y = monarch.call @a::@neg(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// On 2x2, a result split over "gpus" only, as output 1: it is returned by
// the replicas at "hosts" index 1 modulo 2 (ranks 2 and 3; output 0 would
// be hosts 0), which spreads what only outputs need over the replicas. A
// partial result is reduced and fetched whole from the lowest rank.

// CHECK-LABEL: func.func private @step.worker.mesh.rank0(
// CHECK-SAME:    -> tensor<4xf32>
// CHECK-SAME:    plan.outputs = array<i64: 0>
// CHECK:         monarch.all_reduce
// CHECK-LABEL: func.func private @step.worker.mesh.rank1(
// CHECK-SAME:    plan.outputs = array<i64: 0>
// CHECK-LABEL: func.func private @step.worker.mesh.rank2(
// CHECK-SAME:    -> (tensor<4xf32>, tensor<4x2xf32>)
// CHECK-SAME:    plan.output_offsets = [array<i64>, array<i64: 0, 0>], plan.outputs = array<i64: 0, 1>
// CHECK-LABEL: func.func private @step.worker.mesh.rank3(%{{.*}}: tensor<4x2xf32>)
// CHECK-SAME:    plan.input_offsets = [array<i64: 0, 2>], plan.output_offsets = [array<i64>, array<i64: 0, 2>], plan.outputs = array<i64: 0, 1>

// PLAN-LABEL:  monarch.plan @step.worker.mesh on @mesh
// PLAN:          monarch.rank_program rank 0
// PLAN:          monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<4xf32>>{{$}}
// PLAN:          monarch.rank_program rank 1
// PLAN-NOT:      monarch.fetch_buffer
// PLAN:          monarch.rank_program rank 2
// PLAN:          monarch.fetch_buffer 1 from #monarch.buf<{{[0-9]+}}, tensor<4x2xf32>> at [0, 0]
// PLAN:          monarch.rank_program rank 3
// PLAN:          monarch.fetch_buffer 1 from #monarch.buf<{{[0-9]+}}, tensor<4x2xf32>> at [0, 2]

// GATHER-LABEL: func.func private @step.worker.mesh.rank0(
// GATHER-SAME:    -> (tensor<4xf32>, tensor<4x4xf32>)
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
monarch.actor_class @C {
  monarch.endpoint @f(%x: tensor<4x2xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}) -> (tensor<4x2xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}, tensor<4xf32> {monarch.dist = #monarch.dist<[[]] partial sum>}) {
    %e = tensor.empty() : tensor<4x2xf32>
    %n = linalg.negf ins(%x : tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
    %z = arith.constant 0.0 : f32
    %i = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%z : f32) outs(%i : tensor<4xf32>) -> tensor<4xf32>
    %r = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
      (%a: f32, %b: f32) {
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      }
    monarch.return %n, %r : tensor<4x2xf32>, tensor<4xf32>
  }
}
monarch.actor_mesh @a = @C on @mesh
func.func @step.worker.mesh(%x: tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4x4xf32>) attributes {monarch.worker_for = @mesh} {
  %y, %s = monarch.call @a::@f(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
  return %s, %y : tensor<4xf32>, tensor<4x4xf32>
}

// -----

// A split result that a call on a slice (rank 0 only) also takes whole is
// returned whole, gathered on every rank: had rank 1 returned its shard, it
// would skip the all_gather rank 0 joins for the call.

// CHECK-LABEL: func.func private @step.worker.mesh.rank0(
// CHECK:         monarch.all_gather
// CHECK-NOT:     plan.output_offsets
// CHECK-LABEL: func.func private @step.worker.mesh.rank1(
// CHECK-SAME:    -> tensor<2x8xf32>
// CHECK-NOT:     plan.output_offsets
// CHECK:         monarch.all_gather
shard.grid @grid(shape = 2)
shard.grid @one(shape = 1)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
monarch.mesh_slice @first of @mesh(gpus = 0 to 1) grid @one
monarch.actor_class @C {
  monarch.endpoint @neg(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}) -> (tensor<2x4xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}) {
    %e = tensor.empty() : tensor<2x4xf32>
    %n = linalg.negf ins(%x : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    monarch.return %n : tensor<2x4xf32>
  }
}
monarch.actor_class @D {
  monarch.endpoint @abs(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %e = tensor.empty() : tensor<2x8xf32>
    %n = linalg.abs ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
    monarch.return %n : tensor<2x8xf32>
  }
}
monarch.actor_mesh @a = @C on @mesh
monarch.actor_mesh @d = @D on @first
func.func @step.worker.mesh(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) attributes {monarch.worker_for = @mesh} {
  %y = monarch.call @a::@neg(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %z = monarch.call @d::@abs(%y) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %z : tensor<2x8xf32>, tensor<2x8xf32>
}
