// RUN: monarch-opt %s --monarch-split-control-data --monarch-specialize-ranks | FileCheck %s
// RUN: monarch-opt %s --monarch-split-control-data --monarch-specialize-ranks | monarch-opt
// RUN: monarch-opt %s --monarch-split-control-data --monarch-specialize-ranks --monarch-plan-transfers --monarch-verify-plan | FileCheck %s --check-prefix=PLAN
//
// A pipeline edge of a data-parallel program: a value split over "hosts"
// on stage 0 (the slice stages = 0) crosses to stage 1, where "hosts" has
// the same size. It crosses as shards (a shard channel, monarch.shard):
// rank (h, 0) sends its 2x4 rows to rank (h, 1) only, with no all_gather
// to the whole value before the send and no slice after the receive; stage
// 1's call takes the received shard as is. The whole 4x4 value never
// exists on any rank.

shard.grid @g(shape = 2x2)
shard.grid @s(shape = 2x1)
monarch.proc_mesh @mesh(hosts = 2, stages = 2) grid @g
monarch.mesh_slice @a of @mesh(hosts = 0 to 2, stages = 0 to 1) grid @s
monarch.mesh_slice @b of @mesh(hosts = 0 to 2, stages = 1 to 2) grid @s
monarch.actor_class @Stage {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) -> (tensor<2x4xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) {
    monarch.return %x : tensor<2x4xf32>
  }
}
monarch.actor_mesh @p = @Stage on @a
monarch.actor_mesh @q = @Stage on @b

// Rank 0 is (hosts 0, stage 0), rank 1 (0, 1), rank 2 (1, 0), rank 3 (1, 1).
// CHECK-LABEL: func.func private @step.worker.mesh.rank0
// CHECK:         monarch.channel_send @step.ch0, %{{.*}} {monarch.shard = #monarch.dist<{{\[\["hosts"\], \[\]\]}}>} : tensor<2x4xf32>
// CHECK-NOT:     all_gather
// CHECK-LABEL: func.func private @step.worker.mesh.rank1
// CHECK-NOT:     all_gather
// CHECK:         %[[R:.*]] = monarch.channel_recv @step.ch0 {monarch.shard = #monarch.dist<{{\[\["hosts"\], \[\]\]}}>} : tensor<2x4xf32>
// CHECK-NOT:     extract_slice
// CHECK:         return %[[R]]

// PLAN-LABEL: monarch.rank_program rank 0
// PLAN:         monarch.send #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> to 1 on
// PLAN-NOT:     monarch.send
// PLAN-LABEL: monarch.rank_program rank 1
// PLAN:         monarch.recv #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> from 0 on
// PLAN:         monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> at [0, 0]
// PLAN-LABEL: monarch.rank_program rank 2
// PLAN:         monarch.send #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> to 3 on
// PLAN-LABEL: monarch.rank_program rank 3
// PLAN:         monarch.recv #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> from 2 on
// PLAN:         monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<2x4xf32>> at [2, 0]
func.func @step(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %xf = monarch.feed %x to @a : tensor<4x4xf32>
  %h = monarch.call @p::@f(%xf) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %h1 = monarch.transfer %h from @a to @b : tensor<4x4xf32> -> tensor<4x4xf32>
  %y = monarch.call @q::@f(%h1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %out = monarch.fetch %y from @b : tensor<4x4xf32>
  return %out : tensor<4x4xf32>
}
