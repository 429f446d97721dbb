// RUN: monarch-opt %s --monarch-split-control-data --split-input-file | FileCheck %s
// RUN: monarch-opt %s --monarch-split-control-data --split-input-file | monarch-opt --split-input-file

// Controller scalar arithmetic on the arguments is sunk into the worker
// programs: the control message carries the leaves (arguments; a constant
// passed directly stays an argument; two meshes get a copy each), each worker program recomputes the
// values before its calls, and the controller keeps no arithmetic.

shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.proc_mesh @b(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @set(%x: tensor<4xf32>, %s: f32, %t: f32) {
    monarch.return
  }
}
monarch.actor_mesh @on_a = @A on @a
monarch.actor_mesh @on_b = @A on @b

// CHECK-LABEL: func.func @step.worker.a(%arg0: tensor<4xf32>, %arg1: f32, %arg2: i32, %arg3: f32) attributes {monarch.worker_for = @a}
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    %[[LR2:.*]] = arith.mulf %arg1, %[[HALF]] : f32
// CHECK-NEXT:    %[[KF:.*]] = arith.sitofp %arg2 : i32 to f32
// CHECK-NEXT:    %[[Q:.*]] = arith.divf %[[LR2]], %[[KF]] : f32
// CHECK-NEXT:    %[[E:.*]] = arith.maximumf %[[Q]], %[[KF]] : f32
// CHECK-NEXT:    monarch.broadcast @on_a::@set(%arg0, %[[LR2]], %[[E]])
// CHECK-NEXT:    monarch.broadcast @on_a::@set(%arg0, %arg3, %[[LR2]])
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @step.worker.b(%arg0: tensor<4xf32>, %arg1: f32) attributes {monarch.worker_for = @b}
// CHECK-NEXT:    %[[HALFB:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    %[[LR2B:.*]] = arith.mulf %arg1, %[[HALFB]] : f32
// CHECK-NEXT:    %[[NEG:.*]] = arith.negf %[[LR2B]] : f32
// CHECK-NEXT:    monarch.broadcast @on_b::@set(%arg0, %[[NEG]], %arg1)
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @step(%arg0: tensor<4xf32>, %arg1: f32, %arg2: i32)
// CHECK-NEXT:    %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    monarch.control_msg to @a invoke [@step.worker.a] args(%arg1, %arg2, %[[C]] : f32, i32, f32)
// CHECK-NEXT:    monarch.control_msg to @b invoke [@step.worker.b] args(%arg1 : f32)
// CHECK-NOT:     arith.
// CHECK:         return
func.func @step(%x: tensor<4xf32>, %lr: f32, %k: i32) {
  %half = arith.constant 0.5 : f32
  %two = arith.constant 2.0 : f32
  %lr2 = arith.mulf %lr, %half : f32
  %kf = arith.sitofp %k : i32 to f32
  %q = arith.divf %lr2, %kf : f32
  %e = arith.maximumf %q, %kf : f32
  %xa = monarch.feed %x to @a : tensor<4xf32>
  monarch.broadcast @on_a::@set(%xa, %lr2, %e) : tensor<4xf32>, f32, f32
  monarch.broadcast @on_a::@set(%xa, %two, %lr2) : tensor<4xf32>, f32, f32
  %xb = monarch.feed %x to @b : tensor<4xf32>
  %neg = arith.negf %lr2 : f32
  monarch.broadcast @on_b::@set(%xb, %neg, %lr) : tensor<4xf32>, f32, f32
  return
}

// -----

// Arithmetic the controller itself still uses (here: returns) stays there
// as well; the worker program gets its own copy.
shard.grid @g(shape = 2)
monarch.proc_mesh @a(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @set(%s: f32) {
    monarch.return
  }
}
monarch.actor_mesh @on_a = @A on @a

// CHECK-LABEL: func.func @kept.worker.a(%arg0: f32)
// CHECK-NEXT:    %[[W:.*]] = arith.addf %arg0, %arg0 : f32
// CHECK-NEXT:    monarch.broadcast @on_a::@set(%[[W]]) : f32
// CHECK-LABEL: func.func @kept(%arg0: f32) -> f32
// CHECK-NEXT:    monarch.control_msg to @a invoke [@kept.worker.a] args(%arg0 : f32)
// CHECK-NEXT:    %[[D:.*]] = arith.addf %arg0, %arg0 : f32
// CHECK:         return %[[D]] : f32
func.func @kept(%lr: f32) -> f32 {
  %d = arith.addf %lr, %lr : f32
  monarch.broadcast @on_a::@set(%d) : f32
  return %d : f32
}

