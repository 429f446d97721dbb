// RUN: monarch-opt %s --monarch-partition="engine=own remarks=1" --verify-diagnostics -o /dev/null

// With remarks, every segment says which engine partitioned it.

shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
// expected-remark@+1 {{monarch-partition: @f: 2 ops split, 0 retried with replicated inputs, 0 on whole values (1 segment)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-remark@+1 {{monarch-partition: 2 ops on @mesh partitioned by the own engine}}
  %xs = shard.shard %xf to %s : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%xs : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}


// An op with two results has no rule in the own engine: the segment goes
// to upstream partitioning, and the remark says why (here upstream cannot
// either, and the work runs on whole values).

// expected-remark@+1 {{monarch-partition: @two: 0 ops split, 0 retried with replicated inputs, 2 on whole values (1 segment)}}
func.func @two(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-remark@+2 {{monarch-partition: the own engine cannot partition the work on @mesh ('linalg.generic' has no rule (it does not make one tensor)); upstream partitioning instead}}
  // expected-remark@+1 {{monarch-partition: 2 ops on @mesh run on whole values (upstream partitioning failed}}
  %xs = shard.shard %xf to %s : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %y:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%xs : tensor<4xf32>) outs(%e, %e2 : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32, %o2: f32):
    %m = math.exp %a : f32
    linalg.yield %m, %a : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %out = monarch.fetch %y#0 from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}
