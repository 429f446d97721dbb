// RUN: monarch-opt %s --monarch-partition=engine=upstream --split-input-file --verify-diagnostics

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.proc_mesh @b(gpus = 2) grid @g
func.func @mixed(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %yb = monarch.feed %y to @b : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.add' op uses values on meshes @a and @b; move one with monarch.transfer first}}
  %s = linalg.add ins(%xa, %yb : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %s from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
func.func @unfed(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.add' op uses tensor argument #1 of @unfed on mesh @a without monarch.feed}}
  %s = linalg.add ins(%xa, %y : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %s from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// One tensor dimension over two mesh dimensions crashes upstream
// shard-partition; it is refused with a diagnostic instead.
shard.grid @mesh_grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @mesh_grid
func.func @both(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
  // expected-error @+1 {{splits one tensor dimension over 2 mesh dimensions; monarch-partition supports one mesh dimension per tensor dimension with engine=upstream (engine=own splits it)}}
  %s = shard.sharding @mesh_grid split_axes = [[0, 1]] : !shard.sharding
  %a = shard.shard %0 to %s : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %g = linalg.add ins(%a, %a : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %f = monarch.fetch %g from @mesh : tensor<8x4xf32>
  return %f : tensor<8x4xf32>
}

// -----

// A grid axis the grid does not have (upstream accepts it; partitioning read
// the mesh's dimension names out of bounds).
shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
func.func @axis_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.sharding' op splits tensor dimension 0 over grid axis 1, but @g has 1 axes}}
  %s = shard.sharding @g split_axes = [[1]] : !shard.sharding
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %xs = shard.shard %xa to %s : tensor<4xf32>
  %r = monarch.fetch %xs from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// More split entries than the tensor has dimensions.
shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
func.func @too_many_entries(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %s = shard.sharding @g split_axes = [[], [], [], [0]] : !shard.sharding
  %xa = monarch.feed %x to @a : tensor<4x4xf32>
  // expected-error @+1 {{'shard.shard' op annotates a tensor of rank 2 with 4 split_axes entries (one per dimension at most)}}
  %xs = shard.shard %xa to %s : tensor<4x4xf32>
  %r = monarch.fetch %xs from @a : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
