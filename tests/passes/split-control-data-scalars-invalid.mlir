// RUN: monarch-opt %s --monarch-split-control-data --verify-diagnostics

// Arithmetic on a value fetched in the same step cannot be sunk: it is
// still an error at the call.
shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @get(%x: tensor<4xf32>) -> tensor<f32> {
    %c = arith.constant dense<1.0> : tensor<f32>
    monarch.return %c : tensor<f32>
  }
  monarch.endpoint @set(%s: f32) {
    monarch.return
  }
}
monarch.actor_mesh @on_a = @A on @a
func.func @feedback(%x: tensor<4xf32>) {
  %xa = monarch.feed %x to @a : tensor<4xf32>
  %l = monarch.call @on_a::@get(%xa) : (tensor<4xf32>) -> tensor<f32>
  %lf = monarch.fetch %l from @a : tensor<f32>
  %v = tensor.extract %lf[] : tensor<f32>
  %w = arith.mulf %v, %v : f32
  // expected-error @+1 {{'monarch.broadcast' op depends on a value fetched in the same step; split the step in two}}
  monarch.broadcast @on_a::@set(%w) : f32
  return
}
