// A two-stage pipeline of actors over a 1x4 mesh: stage s0 on gpus 0-1,
// stage s1 on gpus 2-3, as traced from the design's `pipeline` example.
//
// Both stages are actor meshes of the same class @Stage (a 4x4 linear layer
// kept as actor state), spawned on two slices of @mesh. @pipeline feeds a
// batch to stage 0, moves stage 0's activation to stage 1's slice with
// monarch.transfer (the pipeline-parallel edge) and fetches stage 1's
// output. @apply_update broadcasts an SGD step to both stages; inside a stage
// the gradient is all-reduced over the stage's two "gpus" first.
#map = affine_map<(d0, d1) -> (d0, d1)>

shard.grid @mesh_grid(shape = 1x4)
shard.grid @half_grid(shape = 1x2)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
monarch.mesh_slice @s1_mesh of @mesh(hosts = 0 to 1, gpus = 2 to 4) grid @half_grid

monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %w = monarch.state_get @w : tensor<4x4xf32>
    %init = tensor.empty() : tensor<8x4xf32>
    %zero = arith.constant 0.0 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.return %y : tensor<8x4xf32>
  }
  // w <- w - lr * mean over the stage's ranks of g.
  monarch.endpoint @update(%g: tensor<4x4xf32>, %lr: f32) {
    %g2 = monarch.all_reduce %g over ["gpus"] avg : tensor<4x4xf32>
    %w = monarch.state_get @w : tensor<4x4xf32>
    %init = tensor.empty() : tensor<4x4xf32>
    %w2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%w, %g2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) {
    ^bb0(%wi: f32, %gi: f32, %out: f32):
      %step = arith.mulf %lr, %gi : f32
      %r = arith.subf %wi, %step : f32
      linalg.yield %r : f32
    } -> tensor<4x4xf32>
    monarch.state_set @w = %w2 : tensor<4x4xf32>
    monarch.return
  }
}
monarch.actor_mesh @s0 = @Stage on @s0_mesh
monarch.actor_mesh @s1 = @Stage on @s1_mesh

func.func @pipeline(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %x = monarch.feed %arg0 to @s0_mesh : tensor<8x4xf32>
  %h = monarch.call @s0::@forward(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %h1 = monarch.transfer %h from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = monarch.call @s1::@forward(%h1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = monarch.fetch %y from @s1_mesh : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @apply_update(%g0: tensor<4x4xf32>, %g1: tensor<4x4xf32>, %lr: f32) {
  %a = monarch.feed %g0 to @s0_mesh : tensor<4x4xf32>
  monarch.broadcast @s0::@update(%a, %lr) : tensor<4x4xf32>, f32
  %b = monarch.feed %g1 to @s1_mesh : tensor<4x4xf32>
  monarch.broadcast @s1::@update(%b, %lr) : tensor<4x4xf32>, f32
  return
}
