// The start of examples/ir/pipeline.mlir, cut off in the middle of an
// endpoint body (used by ../bad-input-truncated.mlir; not a test itself).
shard.grid @mesh_grid(shape = 1x4)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %w = monarch.state_get @w : tensor<4x4xf32>
