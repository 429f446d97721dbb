// RUN: monarch-opt %s --monarch-partition --split-input-file --verify-diagnostics

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
