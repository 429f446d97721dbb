// RUN: monarch-opt %s | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --verify-roundtrip | FileCheck %s

// The split stage: a worker program per proc mesh, started by a control
// message, with feeds and fetches as data edges.

shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
    monarch.return %x : tensor<4xf32>
  }
}
monarch.actor_mesh @a = @A on @mesh

// CHECK-LABEL: func.func @step.worker.mesh(%arg0: tensor<4xf32>, %arg1: f32) -> tensor<4xf32> attributes {monarch.worker_for = @mesh}
// CHECK-NEXT:    %0 = monarch.call @a::@f(%arg0, %arg1)
func.func @step.worker.mesh(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
  %y = monarch.call @a::@f(%x, %s) : (tensor<4xf32>, f32) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// The per-rank form of monarch-specialize-ranks: a function marked
// `monarch.rank` is per-rank code, like an endpoint body, so mesh
// collectives may appear in it.
// CHECK-LABEL: func.func private @step.worker.mesh.rank0(%arg0: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64}
// CHECK-NEXT:    monarch.all_reduce %arg0 over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4xf32>
func.func private @step.worker.mesh.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64} {
  %r = monarch.all_reduce %x over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @step
// CHECK-NEXT:    %[[T:.*]] = monarch.control_msg to @mesh invoke [@step.worker.mesh] args(%arg1 : f32) : !monarch.token
// CHECK-NEXT:    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<4xf32>
// CHECK-NEXT:    %[[R:.*]] = monarch.fetch_output @step.worker.mesh output 0 : tensor<4xf32>
// CHECK-NEXT:    monarch.await %[[T]] : !monarch.token
func.func @step(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  %t = monarch.control_msg to @mesh invoke [@step.worker.mesh] args(%s : f32) : !monarch.token
  monarch.feed_input %x to @step.worker.mesh input 0 : tensor<4xf32>
  %r = monarch.fetch_output @step.worker.mesh output 0 : tensor<4xf32>
  monarch.await %t : !monarch.token
  return %r : tensor<4xf32>
}
