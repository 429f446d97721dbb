// RUN: monarch-opt %s --monarch-split-control-data --split-input-file | FileCheck %s
// RUN: monarch-opt %s --monarch-split-control-data --split-input-file | monarch-opt --split-input-file

// A two-stage pipeline on slices of one proc mesh plus a loss on a second
// proc mesh. Each proc mesh gets one worker program and one control message;
// the learning rate rides on the control message (squared on the workers:
// controller scalar arithmetic is sunk); tensors cross meshes on
// channels; the loss is fetched and post-processed on the controller after
// it arrives.

shard.grid @g(shape = 4)
shard.grid @half(shape = 2)
shard.grid @g2(shape = 2)
monarch.proc_mesh @mesh(gpus = 4) grid @g
monarch.mesh_slice @s0_mesh of @mesh(gpus = 0 to 2) grid @half
monarch.mesh_slice @s1_mesh of @mesh(gpus = 2 to 4) grid @half
monarch.proc_mesh @aux(gpus = 2) grid @g2
monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    monarch.return %x : tensor<8x4xf32>
  }
  monarch.endpoint @update(%lr: f32) {
    monarch.return
  }
}
monarch.actor_class @Loss {
  monarch.endpoint @mse(%y: tensor<8x4xf32>) -> tensor<f32> {
    %c = arith.constant dense<1.0> : tensor<f32>
    monarch.return %c : tensor<f32>
  }
}
monarch.actor_mesh @s0 = @Stage on @s0_mesh
monarch.actor_mesh @s1 = @Stage on @s1_mesh
monarch.actor_mesh @loss = @Loss on @aux

// CHECK-DAG:   monarch.channel @step.ch0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>
// CHECK-DAG:   monarch.channel @step.ch1 from @s1_mesh to @aux : tensor<8x4xf32>
// CHECK-LABEL: func.func @step.worker.mesh(%arg0: tensor<8x4xf32>, %arg1: f32) attributes {monarch.worker_for = @mesh}
// CHECK-NEXT:    %[[LRW:.*]] = arith.mulf %arg1, %arg1 : f32
// CHECK-NEXT:    %[[H:.*]] = monarch.call @s0::@forward(%arg0)
// CHECK-NEXT:    monarch.channel_send @step.ch0, %[[H]] : tensor<8x4xf32>
// CHECK-NEXT:    %[[H1:.*]] = monarch.channel_recv @step.ch0 : tensor<8x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = monarch.call @s1::@forward(%[[H1]])
// CHECK-NEXT:    monarch.channel_send @step.ch1, %[[Y]] : tensor<8x4xf32>
// CHECK-NEXT:    monarch.broadcast @s0::@update(%[[LRW]]) : f32
// CHECK-NEXT:    monarch.broadcast @s1::@update(%[[LRW]]) : f32
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @step.worker.aux() -> tensor<f32> attributes {monarch.worker_for = @aux}
// CHECK-NEXT:    %[[Y1:.*]] = monarch.channel_recv @step.ch1 : tensor<8x4xf32>
// CHECK-NEXT:    %[[L:.*]] = monarch.call @loss::@mse(%[[Y1]])
// CHECK-NEXT:    return %[[L]] : tensor<f32>
// CHECK-LABEL: func.func @step(%arg0: tensor<8x4xf32>, %arg1: f32) -> tensor<f32>
// CHECK-NEXT:    %[[T0:.*]] = monarch.control_msg to @mesh invoke [@step.worker.mesh] args(%arg1 : f32) : !monarch.token
// CHECK-NEXT:    %[[T1:.*]] = monarch.control_msg to @aux invoke [@step.worker.aux] : !monarch.token
// CHECK-NEXT:    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<8x4xf32>
// CHECK-NEXT:    %[[OUT:.*]] = monarch.fetch_output @step.worker.aux output 0 : tensor<f32>
// CHECK-NEXT:    monarch.await %[[T0]], %[[T1]] : !monarch.token, !monarch.token
// CHECK-NEXT:    %[[NEG:.*]] = arith.negf %[[OUT]] : tensor<f32>
// CHECK-NEXT:    return %[[NEG]] : tensor<f32>
// CHECK-NOT:   monarch.feed
// CHECK-NOT:   monarch.fetch
func.func @step(%x: tensor<8x4xf32>, %lr0: f32) -> tensor<f32> {
  %xf = monarch.feed %x to @s0_mesh : tensor<8x4xf32>
  %h = monarch.call @s0::@forward(%xf) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %h1 = monarch.transfer %h from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = monarch.call @s1::@forward(%h1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %y1 = monarch.transfer %y from @s1_mesh to @aux : tensor<8x4xf32> -> tensor<8x4xf32>
  %l = monarch.call @loss::@mse(%y1) : (tensor<8x4xf32>) -> tensor<f32>
  %out = monarch.fetch %l from @aux : tensor<f32>
  %neg = arith.negf %out : tensor<f32>
  %lr = arith.mulf %lr0, %lr0 : f32
  monarch.broadcast @s0::@update(%lr) : f32
  monarch.broadcast @s1::@update(%lr) : f32
  return %neg : tensor<f32>
}

// -----

// A program without mesh work is left alone.
// CHECK-LABEL: func.func @host_only
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    return
func.func @host_only(%a: f32) -> f32 {
  %b = arith.addf %a, %a : f32
  return %b : f32
}

// -----

// A transfer of a fed value is a feed to its destination: the controller
// sends the ranks of @s1_mesh what they need (their shard, when split)
// instead of the whole value to every rank of @mesh and a hop between
// workers. The feed nothing else uses goes; no channel remains.
shard.grid @g(shape = 4)
shard.grid @half(shape = 2)
monarch.proc_mesh @mesh(gpus = 4) grid @g
monarch.mesh_slice @s1_mesh of @mesh(gpus = 2 to 4) grid @half
monarch.actor_class @Stage {
  monarch.endpoint @forward(%x: tensor<4x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) -> (tensor<4x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.return %x : tensor<4x4xf32>
  }
}
monarch.actor_mesh @s1 = @Stage on @s1_mesh

// CHECK-NOT:   monarch.channel
// CHECK-LABEL: func.func @fed.worker.mesh(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {monarch.worker_for = @mesh}
// CHECK-NEXT:    %[[Y:.*]] = monarch.call @s1::@forward(%arg0)
// CHECK-NEXT:    return %[[Y]]
// CHECK-LABEL: func.func @fed(
// CHECK:         monarch.feed_input %arg0 to @fed.worker.mesh input 0
func.func @fed(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x4xf32>
  %x1 = monarch.transfer %xf from @mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = monarch.call @s1::@forward(%x1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %out = monarch.fetch %y from @s1_mesh : tensor<8x4xf32>
  return %out : tensor<8x4xf32>
}
