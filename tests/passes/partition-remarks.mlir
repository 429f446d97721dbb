// RUN: monarch-opt %s --monarch-partition="engine=upstream remarks=1" --verify-diagnostics -o /dev/null

// With `remarks` (MONARCH_PARTITION_REMARKS=1 in the pipelines), every
// segment of work says how it was partitioned.

shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
// expected-remark@+1 {{monarch-partition: @f: 2 ops split, 0 retried with replicated inputs, 1 on whole values (2 segments)}}
func.func @f(%x: tensor<4x2xf32>) -> tensor<8x2xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x2xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-remark@+1 {{monarch-partition: 2 ops on @mesh partitioned as annotated}}
  %xs = shard.shard %xf to %s : tensor<4x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x2xf32>
  // expected-remark@+1 {{monarch-partition: 'tensor.concat' on @mesh runs on whole values (no sharding rule for it)}}
  %c = tensor.concat dim(0) %y, %y : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %r = monarch.fetch %c from @mesh : tensor<8x2xf32>
  return %r : tensor<8x2xf32>
}

// A reduction whose combiner has no known kind (`acc - x`): upstream
// partitioning aborted on it with the reduced loop split; it runs on whole
// values, with the rest of the function split.
// expected-remark@+1 {{monarch-partition: @g: 2 ops split, 0 retried with replicated inputs, 1 on whole values (2 segments)}}
func.func @g(%x: tensor<4x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  // expected-remark@+1 {{monarch-partition: 2 ops on @mesh partitioned as annotated}}
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  // expected-remark@+1 {{monarch-partition: 'linalg.generic' on @mesh runs on whole values (no sharding rule for it)}}
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<4x4xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.subf %o, %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %out = monarch.fetch %r from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}
