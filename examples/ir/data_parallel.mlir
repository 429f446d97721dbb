// Data parallelism over a 1x4 mesh: one training step of a two-layer MLP
// (relu(x @ w1) @ w2, mean-squared-error loss, plain SGD).
//
// The controller feeds a global batch of 32 rows and shards it over "gpus"
// with the upstream shard dialect (split_axes = [[1]]: tensor dimension 0 over
// axis 1 of the 1x4 grid, i.e. "gpus"), so each of the 4 ranks holds 8 rows.
// The actor mesh @mlp keeps a full replica of the weights on every rank;
// @train_step runs forward and backward on the local rows, all-reduces
// (averages) the weight gradients over "gpus", updates its state and returns
// the loss, averaged over the ranks, which the controller fetches.
// @sync_weights makes every rank start from rank 0's weights.
#map = affine_map<(d0, d1) -> (d0, d1)>

shard.grid @dp_grid(shape = 1x4)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @dp_grid

monarch.actor_class @MLP {
  monarch.state @w1 : tensor<16x32xf32>
  monarch.state @w2 : tensor<32x8xf32>

  monarch.endpoint @sync_weights() {
    %w1 = monarch.state_get @w1 : tensor<16x32xf32>
    %w2 = monarch.state_get @w2 : tensor<32x8xf32>
    %w1b = monarch.broadcast_from %w1 over ["gpus"] root 0 : tensor<16x32xf32>
    %w2b = monarch.broadcast_from %w2 over ["gpus"] root 0 : tensor<32x8xf32>
    monarch.state_set @w1 = %w1b : tensor<16x32xf32>
    monarch.state_set @w2 = %w2b : tensor<32x8xf32>
    monarch.return
  }

  // Per-rank shapes: %x and %t are this rank's 8 rows of the global batch.
  monarch.endpoint @train_step(
      %x: tensor<8x16xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>},
      %t: tensor<8x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>},
      %lr: f32) -> tensor<f32> {
    %zero = arith.constant 0.0 : f32
    %inv_n = arith.constant 1.562500e-02 : f32  // 1 / (8 * 8) local elements
    %w1 = monarch.state_get @w1 : tensor<16x32xf32>
    %w2 = monarch.state_get @w2 : tensor<32x8xf32>

    // Forward: h = relu(x @ w1), y = h @ w2.
    %e_h = tensor.empty() : tensor<8x32xf32>
    %z_h = linalg.fill ins(%zero : f32) outs(%e_h : tensor<8x32xf32>) -> tensor<8x32xf32>
    %h0 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z_h : tensor<8x32xf32>) -> tensor<8x32xf32>
    %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%h0 : tensor<8x32xf32>) outs(%e_h : tensor<8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<8x32xf32>
    %e_y = tensor.empty() : tensor<8x8xf32>
    %z_y = linalg.fill ins(%zero : f32) outs(%e_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    %y = linalg.matmul ins(%h, %w2 : tensor<8x32xf32>, tensor<32x8xf32>) outs(%z_y : tensor<8x8xf32>) -> tensor<8x8xf32>

    // Loss: mean of (y - t)^2 over the local rows, then averaged over ranks.
    %d = linalg.sub ins(%y, %t : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    %sq = linalg.mul ins(%d, %d : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e_y : tensor<8x8xf32>) -> tensor<8x8xf32>
    %e_l = tensor.empty() : tensor<f32>
    %z_l = linalg.fill ins(%zero : f32) outs(%e_l : tensor<f32>) -> tensor<f32>
    %sum = linalg.reduce ins(%sq : tensor<8x8xf32>) outs(%z_l : tensor<f32>) dimensions = [0, 1]
      (%in: f32, %acc: f32) {
        %s = arith.addf %in, %acc : f32
        linalg.yield %s : f32
      }
    %mean = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%sum : tensor<f32>) outs(%e_l : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %inv_n : f32
      linalg.yield %m : f32
    } -> tensor<f32>
    %loss = monarch.all_reduce %mean over ["gpus"] avg : tensor<f32>

    // Backward (dL/dy taken as y - t; the constant factor is folded into lr).
    %e_hT = tensor.empty() : tensor<32x8xf32>
    %hT = linalg.transpose ins(%h : tensor<8x32xf32>) outs(%e_hT : tensor<32x8xf32>) permutation = [1, 0]
    %z_g2 = linalg.fill ins(%zero : f32) outs(%e_hT : tensor<32x8xf32>) -> tensor<32x8xf32>
    %g2 = linalg.matmul ins(%hT, %d : tensor<32x8xf32>, tensor<8x8xf32>) outs(%z_g2 : tensor<32x8xf32>) -> tensor<32x8xf32>
    %e_w2T = tensor.empty() : tensor<8x32xf32>
    %w2T = linalg.transpose ins(%w2 : tensor<32x8xf32>) outs(%e_w2T : tensor<8x32xf32>) permutation = [1, 0]
    %dh = linalg.matmul ins(%d, %w2T : tensor<8x8xf32>, tensor<8x32xf32>) outs(%z_h : tensor<8x32xf32>) -> tensor<8x32xf32>
    %dh0 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%h0, %dh : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e_h : tensor<8x32xf32>) {
    ^bb0(%pre: f32, %grad: f32, %out: f32):
      %pos = arith.cmpf ogt, %pre, %zero : f32
      %r = arith.select %pos, %grad, %zero : f32
      linalg.yield %r : f32
    } -> tensor<8x32xf32>
    %e_xT = tensor.empty() : tensor<16x8xf32>
    %xT = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e_xT : tensor<16x8xf32>) permutation = [1, 0]
    %e_g1 = tensor.empty() : tensor<16x32xf32>
    %z_g1 = linalg.fill ins(%zero : f32) outs(%e_g1 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %g1 = linalg.matmul ins(%xT, %dh0 : tensor<16x8xf32>, tensor<8x32xf32>) outs(%z_g1 : tensor<16x32xf32>) -> tensor<16x32xf32>

    // Data-parallel gradient all-reduce, then SGD: w <- w - lr * g.
    %g1r = monarch.all_reduce %g1 over ["gpus"] avg : tensor<16x32xf32>
    %g2r = monarch.all_reduce %g2 over ["gpus"] avg : tensor<32x8xf32>
    %w1n = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%w1, %g1r : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e_g1 : tensor<16x32xf32>) {
    ^bb0(%w: f32, %g: f32, %out: f32):
      %step = arith.mulf %lr, %g : f32
      %r = arith.subf %w, %step : f32
      linalg.yield %r : f32
    } -> tensor<16x32xf32>
    %w2n = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%w2, %g2r : tensor<32x8xf32>, tensor<32x8xf32>) outs(%e_hT : tensor<32x8xf32>) {
    ^bb0(%w: f32, %g: f32, %out: f32):
      %step = arith.mulf %lr, %g : f32
      %r = arith.subf %w, %step : f32
      linalg.yield %r : f32
    } -> tensor<32x8xf32>
    monarch.state_set @w1 = %w1n : tensor<16x32xf32>
    monarch.state_set @w2 = %w2n : tensor<32x8xf32>
    monarch.return %loss : tensor<f32>
  }
}

monarch.actor_mesh @mlp = @MLP on @mesh

// The controller: global shapes throughout.
func.func @train_step(%batch: tensor<32x16xf32>, %target: tensor<32x8xf32>, %lr: f32) -> tensor<f32> {
  monarch.broadcast @mlp::@sync_weights()
  %rows = shard.sharding @dp_grid split_axes = [[1]] : !shard.sharding
  %x0 = monarch.feed %batch to @mesh : tensor<32x16xf32>
  %x = shard.shard %x0 to %rows : tensor<32x16xf32>
  %t0 = monarch.feed %target to @mesh : tensor<32x8xf32>
  %t = shard.shard %t0 to %rows : tensor<32x8xf32>
  %loss = monarch.call @mlp::@train_step(%x, %t, %lr) : (tensor<32x16xf32>, tensor<32x8xf32>, f32) -> tensor<f32>
  %l = monarch.fetch %loss from @mesh : tensor<f32>
  return %l : tensor<f32>
}
