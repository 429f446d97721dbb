// RUN: monarch-opt %s --monarch-split-control-data --split-input-file --verify-diagnostics

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.proc_mesh @b(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    monarch.return %x : tensor<4xf32>
  }
}
monarch.actor_mesh @on_a = @A on @a
monarch.actor_mesh @on_b = @A on @b
func.func @no_transfer(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  // expected-error @+1 {{'monarch.call' op uses a value on @a while running on @b; move it with monarch.transfer}}
  %y = monarch.call @on_b::@f(%xa) : (tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %y from @b : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    monarch.return %x : tensor<4xf32>
  }
}
monarch.actor_mesh @on_a = @A on @a
func.func @unfed(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'monarch.call' op passes a controller tensor to the mesh without monarch.feed}}
  %y = monarch.call @on_a::@f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %y from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    monarch.return %x : tensor<4xf32>
  }
}
monarch.actor_mesh @on_a = @A on @a
func.func @feedback(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %y = monarch.call @on_a::@f(%xa) : (tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %y from @a : tensor<4xf32>
  // expected-error @+1 {{'monarch.feed' op feeds a value fetched in the same step; split the step in two}}
  %again = monarch.feed %r to @a : tensor<4xf32>
  %z = monarch.call @on_a::@f(%again) : (tensor<4xf32>) -> tensor<4xf32>
  %r2 = monarch.fetch %z from @a : tensor<4xf32>
  return %r2 : tensor<4xf32>
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
func.func @unpartitioned(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{'linalg.add' op computes on a value that lives on @a; run monarch-partition first}}
  %s = linalg.add ins(%xa, %xa : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %s from @a : tensor<4xf32>
  return %r : tensor<4xf32>
}
