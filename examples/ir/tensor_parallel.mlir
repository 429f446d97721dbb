// Tensor (Megatron-style) parallelism over a 1x4 mesh: a two-layer MLP
// y = relu(x @ w1) @ w2 whose first matmul is column-parallel and whose
// second is row-parallel across "gpus".
//
// Globally w1 is 16x64 and w2 is 64x8. Each rank keeps columns
// [16r, 16r+16) of w1 and the matching rows of w2 as actor state, loaded by
// @load_weights from global tensors split by #monarch.dist. The input batch x
// is replicated. @forward computes the local hidden slice relu(x @ w1_r)
// (8x16, no communication needed thanks to the column split), multiplies it
// by w2_r into a partial 8x8 product and sums the partials with
// monarch.all_reduce. @hidden instead reassembles the full 8x64 hidden
// activation on every rank with monarch.all_gather. @forward_partial leaves
// the partial sums unreduced and says so in its result's #monarch.dist
// (`partial sum`): they are added up when the call's global result is formed.
#map = affine_map<(d0, d1) -> (d0, d1)>

shard.grid @tp_grid(shape = 1x4)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @tp_grid

monarch.actor_class @TPMLP {
  monarch.state @w1 : tensor<16x16xf32> dist #monarch.dist<[[], ["gpus"]]>  // columns of the 16x64 w1
  monarch.state @w2 : tensor<16x8xf32> dist #monarch.dist<[["gpus"], []]>   // rows of the 64x8 w2

  monarch.endpoint @load_weights(
      %w1: tensor<16x16xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>},
      %w2: tensor<16x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.state_set @w1 = %w1 : tensor<16x16xf32>
    monarch.state_set @w2 = %w2 : tensor<16x8xf32>
    monarch.return
  }

  // Column-parallel: this rank's 16 hidden units, relu applied locally.
  monarch.endpoint @hidden(%x: tensor<8x16xf32>) -> tensor<8x64xf32> {
    %zero = arith.constant 0.0 : f32
    %w1 = monarch.state_get @w1 : tensor<16x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h0 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%h0 : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    %full = monarch.all_gather %h over ["gpus"] axis 1 : tensor<8x16xf32> -> tensor<8x64xf32>
    monarch.return %full : tensor<8x64xf32>
  }

  // Column-parallel then row-parallel: one all-reduce per MLP.
  monarch.endpoint @forward(%x: tensor<8x16xf32>) -> tensor<8x8xf32> {
    %zero = arith.constant 0.0 : f32
    %w1 = monarch.state_get @w1 : tensor<16x16xf32>
    %w2 = monarch.state_get @w2 : tensor<16x8xf32>
    %e_h = tensor.empty() : tensor<8x16xf32>
    %z_h = linalg.fill ins(%zero : f32) outs(%e_h : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h0 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z_h : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%h0 : tensor<8x16xf32>) outs(%e_h : tensor<8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    %e_y = tensor.empty() : tensor<8x8xf32>
    %z_y = linalg.fill ins(%zero : f32) outs(%e_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    %partial = linalg.matmul ins(%h, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    %y = monarch.all_reduce %partial over ["gpus"] sum : tensor<8x8xf32>
    monarch.return %y : tensor<8x8xf32>
  }

  // The same computation, returning each rank's partial sum unreduced.
  monarch.endpoint @forward_partial(%x: tensor<8x16xf32>)
      -> (tensor<8x8xf32> {monarch.dist = #monarch.dist<[[], []] partial sum>}) {
    %zero = arith.constant 0.0 : f32
    %w1 = monarch.state_get @w1 : tensor<16x16xf32>
    %w2 = monarch.state_get @w2 : tensor<16x8xf32>
    %e_h = tensor.empty() : tensor<8x16xf32>
    %z_h = linalg.fill ins(%zero : f32) outs(%e_h : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h0 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z_h : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%h0 : tensor<8x16xf32>) outs(%e_h : tensor<8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    %e_y = tensor.empty() : tensor<8x8xf32>
    %z_y = linalg.fill ins(%zero : f32) outs(%e_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    %partial = linalg.matmul ins(%h, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    monarch.return %partial : tensor<8x8xf32>
  }
}

monarch.actor_mesh @tp = @TPMLP on @mesh

// The controller: global shapes throughout.
func.func @setup(%w1: tensor<16x64xf32>, %w2: tensor<64x8xf32>) {
  // Columns of w1 and rows of w2 over "gpus" (axis 1 of the 1x4 grid).
  %cols = shard.sharding @tp_grid split_axes = [[], [1]] : !shard.sharding
  %rows = shard.sharding @tp_grid split_axes = [[1]] : !shard.sharding
  %w1f = monarch.feed %w1 to @mesh : tensor<16x64xf32>
  %w1m = shard.shard %w1f to %cols : tensor<16x64xf32>
  %w2f = monarch.feed %w2 to @mesh : tensor<64x8xf32>
  %w2m = shard.shard %w2f to %rows : tensor<64x8xf32>
  monarch.broadcast @tp::@load_weights(%w1m, %w2m) : tensor<16x64xf32>, tensor<64x8xf32>
  return
}

func.func @mlp(%x: tensor<8x16xf32>) -> (tensor<8x8xf32>, tensor<8x64xf32>, tensor<8x8xf32>) {
  %xm = monarch.feed %x to @mesh : tensor<8x16xf32>
  %y = monarch.call @tp::@forward(%xm) : (tensor<8x16xf32>) -> tensor<8x8xf32>
  %h = monarch.call @tp::@hidden(%xm) : (tensor<8x16xf32>) -> tensor<8x64xf32>
  %p = monarch.call @tp::@forward_partial(%xm) : (tensor<8x16xf32>) -> tensor<8x8xf32>
  %yr = monarch.fetch %y from @mesh : tensor<8x8xf32>
  %hr = monarch.fetch %h from @mesh : tensor<8x64xf32>
  %pr = monarch.fetch %p from @mesh : tensor<8x8xf32>
  return %yr, %hr, %pr : tensor<8x8xf32>, tensor<8x64xf32>, tensor<8x8xf32>
}
