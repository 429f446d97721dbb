// RUN: monarch-opt %s --split-input-file --verify-diagnostics

// `monarch.keep` (donate_argnums) marks a monarch.fetch and the worker
// program result it becomes; anywhere else it is refused.

shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
func.func @on_a_feed(%x: tensor<4xf32>) {
  // expected-error @+1 {{'monarch.keep' is a unit attribute of monarch.fetch}}
  %0 = monarch.feed %x to @mesh {monarch.keep} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'monarch.keep' is a unit attribute of worker program results}}
func.func @not_a_worker(%x: tensor<4xf32>) -> (tensor<4xf32> {monarch.keep}) {
  return %x : tensor<4xf32>
}
