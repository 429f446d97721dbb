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


// An op whose indexing map is not a projected permutation (a sliding
// window, x[i + k] * w[k]) has no rule in the own engine: the segment goes
// to upstream partitioning, and the remark says why (upstream has no rule
// either: the work runs on whole values, as a remark says).

// expected-remark@+1 {{monarch-partition: @window: 0 ops split, 0 retried with replicated inputs, 1 on whole values (1 segment)}}
func.func @window(%x: tensor<5xf32>, %w: tensor<2xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<5xf32>
  %wf = monarch.feed %w to @mesh : tensor<2xf32>
  %e = tensor.empty() : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-remark@+2 {{monarch-partition: the own engine cannot partition the work on @mesh ('linalg.generic' has an indexing map that is not a projected permutation); upstream partitioning instead}}
  // expected-remark@+1 {{monarch-partition: 1 ops on @mesh run on whole values (upstream partitioning failed}}
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%xf, %wf : tensor<5xf32>, tensor<2xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}
