// RUN: monarch-opt %s --monarch-to-partitioned --monarch-to-split --monarch-specialize-ranks=classes=1 | FileCheck %s
// RUN: monarch-opt %s --monarch-to-partitioned --monarch-to-split --monarch-specialize-ranks=classes=1 --monarch-bucket-collectives --monarch-hoist-collectives --monarch-plan-transfers -o %t.classes
// RUN: monarch-opt %s --monarch-to-partitioned --monarch-to-split --monarch-specialize-ranks --monarch-bucket-collectives --monarch-hoist-collectives --monarch-plan-transfers=rank-classes=false -o %t.each
// RUN: diff %t.classes %t.each
//
// monarch-specialize-ranks classes=1 specialises the first rank of each class
// and lets a later rank join it when every rank-dependent answer the first
// one's function was built from (membership of each mesh, process_index
// values, slice offsets, which replica returns an output, channel ends to
// itself) is the same for it, asked in the same order (docs/spmd-classes.md).
// A member's groups follow from the mesh named on each collective
// (`plan.group_mesh`), its shards of the inputs and outputs from the tables
// beside `plan.members`. The plan is the one specialising every rank builds
// (the diff).
//
// Here `scale` reads its gpus coordinate, so the ranks of one gpus index
// form a class across the hosts: ranks 0 and 2 (gpus 0, which also return
// their shard of the output) and ranks 1 and 3. Rank 2 is fed and returns
// rows 4-7 where rank 0 has rows 0-3, and its all_reduce is over [0, 2] as
// rank 0's; rank 3's is over [1, 3].

// CHECK-LABEL: func.func private @step.worker.mesh(
// CHECK-SAME:    plan.ranks = [@step.worker.mesh.rank0, @step.worker.mesh.rank1]
// CHECK:       func.func private @step.worker.mesh.rank0(
// CHECK-SAME:    monarch.rank = 0
// CHECK-SAME:    plan.member_input_offsets = {{\[\[}}array<i64: 0, 0>], [array<i64: 4, 0>]]
// CHECK-SAME:    plan.member_output_offsets = {{\[\[}}array<i64: 0, 0>], [array<i64: 4, 0>]]
// CHECK-SAME:    plan.members = array<i64: 0, 2>
// CHECK-SAME:    plan.outputs = array<i64: 0>
// CHECK:         arith.constant 0 : index
// CHECK:         all_reduce {{.*}} over ["hosts"] sum {plan.group = array<i64: 0, 2>, plan.group_mesh = @mesh}
// CHECK:       func.func private @step.worker.mesh.rank1(
// CHECK-SAME:    plan.members = array<i64: 1, 3>
// CHECK-SAME:    plan.outputs = array<i64>
// CHECK:         arith.constant 1 : index
// CHECK:         all_reduce {{.*}} over ["hosts"] sum {plan.group = array<i64: 1, 3>, plan.group_mesh = @mesh}
// CHECK-NOT:   func.func private @step.worker.mesh.rank2

shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
monarch.actor_class @Work {
  monarch.endpoint @scale(%x: tensor<4x8xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) -> (tensor<4x8xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) {
    %i = monarch.process_index over ["gpus"] : index
    %n = arith.index_cast %i : index to i64
    %f = arith.sitofp %n : i64 to f32
    %e = tensor.empty() : tensor<4x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %f : f32
      linalg.yield %m : f32
    } -> tensor<4x8xf32>
    %s = monarch.all_reduce %y over ["hosts"] sum : tensor<4x8xf32>
    monarch.return %s : tensor<4x8xf32>
  }
}
monarch.actor_mesh @work = @Work on @mesh
func.func @step(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = monarch.feed %arg0 to @mesh : tensor<8x8xf32>
  %1 = monarch.call @work::@scale(%0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = monarch.fetch %1 from @mesh : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
