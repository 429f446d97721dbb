// A two-stage pipeline of actors over a 1x4 mesh: stage s0 on gpus 0-1,
// stage s1 on gpus 2-3, as traced from the design's `pipeline` example.
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
  monarch.endpoint @update(%g: tensor<4x4xf32>, %lr: f32) {
    %g2 = monarch.all_reduce %g over ["gpus"] sum : tensor<4x4xf32>
    %w = monarch.state_get @w : tensor<4x4xf32>
    monarch.state_set @w = %w : tensor<4x4xf32>
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
