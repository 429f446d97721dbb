// RUN: monarch-opt %s | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --verify-roundtrip | FileCheck %s

// Round trip of the split stage: control messages (with and without scalar
// arguments) and their !monarch.token, monarch.await, data channels and their
// send and receive sides.
//
// Channel sends and receives live outside actor classes here: a
// monarch.actor_class is a symbol table, and the channel ops resolve their
// channel with a lookup that stops at the nearest symbol table, so a
// module-level @c0 is not found from inside an endpoint (see the report).

shard.grid @grid(shape = 1x4)
shard.grid @half_grid(shape = 1x2)
shard.grid @one_grid(shape = 1x1)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @grid
monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
monarch.mesh_slice @s1_mesh of @mesh(hosts = 0 to 1, gpus = 2 to 4) grid @half_grid
monarch.mesh_slice @s11_mesh of @s1_mesh(hosts = 0 to 1, gpus = 1 to 2) grid @one_grid

monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @forward() {
    monarch.return
  }
  monarch.endpoint @update(%lr: f32, %step: i32, %i: index) {
    monarch.return
  }
}
monarch.actor_mesh @s0 = @Stage on @s0_mesh
monarch.actor_mesh @s1 = @Stage on @s1_mesh
monarch.actor_mesh @s11 = @Stage on @s11_mesh

// CHECK-LABEL: shard.grid @grid(shape = 1x4)
// CHECK-NEXT:  shard.grid @half_grid(shape = 1x2)
// CHECK-NEXT:  shard.grid @one_grid(shape = 1x1)
// CHECK-NEXT:  monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @grid
// CHECK-NEXT:  monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
// CHECK-NEXT:  monarch.mesh_slice @s1_mesh of @mesh(hosts = 0 to 1, gpus = 2 to 4) grid @half_grid
// CHECK-NEXT:  monarch.mesh_slice @s11_mesh of @s1_mesh(hosts = 0 to 1, gpus = 1 to 2) grid @one_grid
// CHECK-NEXT:  monarch.actor_class @Stage {
// CHECK-NEXT:    monarch.state @w : tensor<4x4xf32>
// CHECK-NEXT:    monarch.endpoint @forward() {
// CHECK-NEXT:      {{^ *}}return{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    monarch.endpoint @update(%arg0: f32, %arg1: i32, %arg2: index) {
// CHECK-NEXT:      {{^ *}}return{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  monarch.actor_mesh @s0 = @Stage on @s0_mesh
// CHECK-NEXT:  monarch.actor_mesh @s1 = @Stage on @s1_mesh

//===----------------------------------------------------------------------===//
// monarch.channel
//===----------------------------------------------------------------------===//

// CHECK-NEXT:  monarch.actor_mesh @s11 = @Stage on @s11_mesh
// CHECK-NEXT:  monarch.channel @c_in from @mesh to @s0_mesh : tensor<8x4xf32>{{$}}
// CHECK-NEXT:  monarch.channel @c0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>{{$}}
// CHECK-NEXT:  monarch.channel @c_back from @s11_mesh to @s0_mesh : tensor<2x2xbf16> {note}{{$}}
// CHECK-NEXT:  monarch.channel @c_self from @s1_mesh to @s1_mesh : tensor<i32>{{$}}
monarch.channel @c_in from @mesh to @s0_mesh : tensor<8x4xf32>
monarch.channel @c0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>
monarch.channel @c_back from @s11_mesh to @s0_mesh : tensor<2x2xbf16> {note}
monarch.channel @c_self from @s1_mesh to @s1_mesh : tensor<i32>

//===----------------------------------------------------------------------===//
// monarch.control_msg, monarch.await
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @step(%arg0: f32, %arg1: i32, %arg2: index) -> !monarch.token {
// CHECK-NEXT:    %0 = monarch.control_msg to @mesh invoke [@s0::@forward, @s1::@forward, @s11::@forward] : !monarch.token
// CHECK-NEXT:    %1 = monarch.control_msg to @mesh invoke [@s0::@update, @s1::@update] args(%arg0, %arg1, %arg2 : f32, i32, index) : !monarch.token
// CHECK-NEXT:    %2 = monarch.control_msg to @s1_mesh invoke [@s11::@update] args(%arg0, %arg1, %arg2 : f32, i32, index) {note} : !monarch.token
// CHECK-NEXT:    %3 = monarch.control_msg to @s0_mesh invoke [@s0::@forward] : !monarch.token
// CHECK-NEXT:    monarch.await %0 : !monarch.token{{$}}
// CHECK-NEXT:    monarch.await %1, %2 {note} : !monarch.token, !monarch.token{{$}}
// CHECK-NEXT:    return %3 : !monarch.token
// CHECK-NEXT:  }
func.func @step(%lr: f32, %n: i32, %i: index) -> !monarch.token {
  %t0 = monarch.control_msg to @mesh invoke [@s0::@forward, @s1::@forward, @s11::@forward] : !monarch.token
  %t1 = monarch.control_msg to @mesh invoke [@s0::@update, @s1::@update] args(%lr, %n, %i : f32, i32, index) : !monarch.token
  // An actor mesh on a slice of a slice of the addressed mesh.
  %t2 = monarch.control_msg to @s1_mesh invoke [@s11::@update] args(%lr, %n, %i : f32, i32, index) {note} : !monarch.token
  %t3 = monarch.control_msg to @s0_mesh invoke [@s0::@forward] : !monarch.token
  monarch.await %t0 : !monarch.token
  monarch.await %t1, %t2 {note} : !monarch.token, !monarch.token
  return %t3 : !monarch.token
}

//===----------------------------------------------------------------------===//
// monarch.channel_send, monarch.channel_recv
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @channels(%arg0: tensor<8x4xf32>, %arg1: tensor<2x2xbf16>) -> tensor<i32> {
// CHECK-NEXT:    {{^ *}}monarch.channel_send @c_in, %arg0 : tensor<8x4xf32>{{$}}
// CHECK-NEXT:    %0 = monarch.channel_recv @c_in : tensor<8x4xf32>
// CHECK-NEXT:    {{^ *}}monarch.channel_send @c0, %0 {note} : tensor<8x4xf32>{{$}}
// CHECK-NEXT:    %1 = monarch.channel_recv @c0 {note} : tensor<8x4xf32>
// CHECK-NEXT:    {{^ *}}monarch.channel_send @c_back, %arg1 : tensor<2x2xbf16>{{$}}
// CHECK-NEXT:    %2 = monarch.channel_recv @c_back : tensor<2x2xbf16>
// CHECK-NEXT:    %3 = monarch.channel_recv @c_self : tensor<i32>
// CHECK-NEXT:    return %3 : tensor<i32>
// CHECK-NEXT:  }
func.func @channels(%x: tensor<8x4xf32>, %b: tensor<2x2xbf16>) -> tensor<i32> {
  monarch.channel_send @c_in, %x : tensor<8x4xf32>
  %y = monarch.channel_recv @c_in : tensor<8x4xf32>
  monarch.channel_send @c0, %y {note} : tensor<8x4xf32>
  %z = monarch.channel_recv @c0 {note} : tensor<8x4xf32>
  monarch.channel_send @c_back, %b : tensor<2x2xbf16>
  %c = monarch.channel_recv @c_back : tensor<2x2xbf16>
  %s = monarch.channel_recv @c_self : tensor<i32>
  return %s : tensor<i32>
}
