// A split moving from tensor dimension 0 to 1 over the same mesh dimension
// is one all_to_all: monarch-partition keeps upstream's shard.all_to_all as
// monarch.all_to_all, monarch-specialize-ranks packs the blocks of the
// split dimension to the front (a transpose in the kernel before) for an
// exchange along dimension 0 and joins them along the concat dimension (in
// the kernel after), and monarch-plan-transfers plans the exchange. Each rank moves 3/4 of its 2x16 shard, where an all_gather
// and a slice would move three times it.
// RUN: monarch-opt %s --monarch-partition | FileCheck %s --check-prefix=PART
// RUN: monarch-opt %s --monarch-partition --monarch-split-control-data --monarch-specialize-ranks --monarch-plan-transfers --monarch-verify-plan | FileCheck %s --check-prefix=PLAN

// PART:      monarch.endpoint @run(%arg0: tensor<2x16xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>})
// PART:        all_to_all %{{.*}} over ["gpus"] split 1 concat 0 : tensor<2x16xf32> -> tensor<8x4xf32>
// PART-NOT:    all_gather {{.*}} axis 1 : tensor<2x16xf32>

// Rank 0's kernel before the exchange: 2x16 -> [2, 4 blocks, 4] -> blocks
// first -> 8x4.
// PLAN-LABEL: func.func private @f.worker.m.r0.k0(
// PLAN:         tensor.expand_shape {{.*}} into tensor<2x4x4xf32>
// PLAN:         linalg.transpose ins(%{{.*}} : tensor<2x4x4xf32>) outs(%{{.*}} : tensor<4x2x4xf32>) permutation = [1, 0, 2]
// PLAN:         tensor.collapse_shape {{.*}} into tensor<8x4xf32>
// PLAN:       monarch.rank_program rank 0
// PLAN:         monarch.launch @f.worker.m.r0.k0
// PLAN-NEXT:    monarch.wait
// PLAN-NEXT:    monarch.collective all_to_all #monarch.buf<[[IN:[0-9]+]], tensor<8x4xf32>> -> #monarch.buf<{{[0-9]+}}, tensor<8x4xf32>> on @[[COMM:.*]] stream 2
// PLAN-NOT:     monarch.collective
// PLAN:         monarch.launch @f.worker.m.r0.k1
// PLAN:       monarch.rank_program rank 3
// PLAN:         monarch.collective all_to_all {{.*}} on @[[COMM]] stream 2
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xf = monarch.feed %x to @m : tensor<8x16xf32>
  %rows = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %xs = shard.shard %xf to %rows : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %y = linalg.add ins(%xs, %xs : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %ys = shard.shard %y to %rows : tensor<8x16xf32>
  %yc = shard.shard %ys to %cols annotate_for_users : tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z = linalg.mul ins(%yc, %yc : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %zc = shard.shard %z to %cols : tensor<8x16xf32>
  %zr = shard.shard %zc to %rep annotate_for_users : tensor<8x16xf32>
  %r = monarch.fetch %zr from @m : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
