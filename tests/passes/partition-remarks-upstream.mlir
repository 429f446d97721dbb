// RUN: monarch-opt %s --monarch-partition="engine=upstream remarks=1 lift-constants=0" --verify-diagnostics -o /dev/null

// When upstream shard-partition fails without a diagnostic, the remark
// names the op it stopped at (found by bisection over prefixes of the
// segment), its line and the layouts it was asked for, not the segment's
// first op. With lift-constants=0 a non-splat constant shows it: upstream
// partitions splat constants only.

shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
// expected-remark@+1 {{monarch-partition: @f: 0 ops split, 0 retried with replicated inputs, 2 on whole values (1 segment)}}
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-remark@+1 {{2 ops on @mesh run on whole values (upstream partitioning failed: 'arith.constant' op has no upstream partitioning rule for operands () -> results ([["gpus"]]) (at }}
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%xs, %c : tensor<4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %r = monarch.fetch %y from @mesh : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
