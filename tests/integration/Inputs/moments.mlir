// Sum and sum of squares of a row-split x in one linalg.generic with two
// results (tests/integration/monarch-run-multi-result.test).
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @moments(%x: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %xf = monarch.feed %x to @mesh : tensor<8x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #col, #col], iterator_types = ["reduction", "parallel"]} ins(%xs : tensor<8x4xf32>) outs(%f, %f : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %o1: f32, %o2: f32):
    %s1 = arith.addf %a, %o1 : f32
    %sq = arith.mulf %a, %a : f32
    %s2 = arith.addf %sq, %o2 : f32
    linalg.yield %s1, %s2 : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %o1 = monarch.fetch %r#0 from @mesh : tensor<4xf32>
  %o2 = monarch.fetch %r#1 from @mesh : tensor<4xf32>
  return %o1, %o2 : tensor<4xf32>, tensor<4xf32>
}
