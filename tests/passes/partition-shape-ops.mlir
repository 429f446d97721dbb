// RUN: monarch-opt %s --split-input-file --monarch-partition=engine=upstream | FileCheck %s

// Slices and concatenations of shards run on each rank's shard when the
// split dimensions pass through whole: RoPE's halves of a head-split `q`
// (`q[..., :d/2]`, `q[..., d/2:]`, joined again on the last axis) stay
// split over "gpus" between the matmul before them and the sum after, with
// no gather around them.

// CHECK-LABEL: monarch.actor_class @rope.mesh.1.class
// CHECK:         monarch.endpoint @run(%[[Q:.*]]: tensor<4x1x8xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\], \[\]\]}}>}) -> (tensor<4x1x4xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\], \[\]\]}}>}, tensor<4x1x4xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\], \[\]\]}}>})
// CHECK-NEXT:      %[[LO:.*]] = tensor.extract_slice %[[Q]][0, 0, 0] [4, 1, 4] [1, 1, 1] : tensor<4x1x8xf32> to tensor<4x1x4xf32>
// CHECK-NEXT:      %[[HI:.*]] = tensor.extract_slice %[[Q]][0, 0, 4] [4, 1, 4] [1, 1, 1] : tensor<4x1x8xf32> to tensor<4x1x4xf32>
// CHECK-NEXT:      return %[[LO]], %[[HI]]
// CHECK-LABEL: monarch.actor_class @rope.mesh.3.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<4x1x4xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\], \[\]\]}}>}, %{{.*}}: tensor<4x1x4xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\], \[\]\]}}>}) -> (tensor<4x1x8xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\], \[\]\]}}>})
// CHECK-NEXT:      tensor.concat dim(2) %{{.*}}, %{{.*}} : (tensor<4x1x4xf32>, tensor<4x1x4xf32>) -> tensor<4x1x8xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @rope(%q: tensor<4x2x8xf32>) -> tensor<4x2x8xf32> {
  %qf = monarch.feed %q to @mesh : tensor<4x2x8xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %qs = shard.shard %qf to %s : tensor<4x2x8xf32>
  %e = tensor.empty() : tensor<4x2x8xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%qs : tensor<4x2x8xf32>) outs(%e : tensor<4x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x2x8xf32>
  %lo = tensor.extract_slice %x[0, 0, 0] [4, 2, 4] [1, 1, 1] : tensor<4x2x8xf32> to tensor<4x2x4xf32>
  %hi = tensor.extract_slice %x[0, 0, 4] [4, 2, 4] [1, 1, 1] : tensor<4x2x8xf32> to tensor<4x2x4xf32>
  %e2 = tensor.empty() : tensor<4x2x4xf32>
  %n = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%hi : tensor<4x2x4xf32>) outs(%e2 : tensor<4x2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<4x2x4xf32>
  %c = tensor.concat dim(2) %n, %lo : (tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<4x2x8xf32>
  %e3 = tensor.empty() : tensor<4x2x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%c : tensor<4x2x8xf32>) outs(%e3 : tensor<4x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x2x8xf32>
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %yr = shard.shard %y to %r annotate_for_users : tensor<4x2x8xf32>
  %out = monarch.fetch %yr from @mesh : tensor<4x2x8xf32>
  return %out : tensor<4x2x8xf32>
}

// -----

// A rank-reducing slice of a batch-split value (`x[:, 0]`) keeps the batch
// split; a slice along the split dimension (`x[:2]`) is not local: it runs
// on whole values.

// CHECK-LABEL: monarch.actor_class @cols.mesh.1.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> (tensor<2xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\]\]}}>})
// CHECK-NEXT:      tensor.extract_slice %[[X]][0, 0] [2, 1] [1, 1] : tensor<2x4xf32> to tensor<2xf32>
// CHECK-LABEL: monarch.actor_class @rows.mesh.1.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<4x4xf32>) -> tensor<2x4xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @cols(%x: tensor<4x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %c = tensor.extract_slice %y[0, 0] [4, 1] [1, 1] : tensor<4x4xf32> to tensor<4xf32>
  %out = monarch.fetch %c from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}
func.func @rows(%x: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %c = tensor.extract_slice %y[0, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
  %out = monarch.fetch %c from @mesh : tensor<2x4xf32>
  return %out : tensor<2x4xf32>
}
