// Values and attributes of the wrong type are errors at their position, with
// a non-zero exit and no crash.
//
// RUN: not monarch-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK-NOT: PLEASE submit a bug report
shard.grid @g(shape = 1x4)
// A proc_mesh size that is a float.
// CHECK: bad-input-wrong-type.mlir:[[@LINE+1]]:30: error: custom op 'monarch.proc_mesh' expected integer value
monarch.proc_mesh @m(hosts = 1.5, gpus = 4) grid @g

// -----

shard.grid @g(shape = 1x4)
// A size that is a string.
// CHECK: bad-input-wrong-type.mlir:[[@LINE+1]]:30: error: custom op 'monarch.proc_mesh' expected integer value
monarch.proc_mesh @m(hosts = "1", gpus = 4) grid @g

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    monarch.return %x : tensor<8x4xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: f32) -> tensor<8x4xf32> {
  // A call with a non-tensor where the endpoint takes a tensor.
  // CHECK: bad-input-wrong-type.mlir:[[@LINE+1]]:8: error: 'monarch.call' op argument #0 has type 'f32' but endpoint @f expects 'tensor<8x4xf32>'
  %y = monarch.call @a::@f(%x) : (f32) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
func.func @main(%x: f32) -> f32 {
  // A transfer of a non-tensor.
  // CHECK: bad-input-wrong-type.mlir:[[@LINE+1]]:46: error: custom op 'monarch.transfer' invalid kind of type specified: expected builtin.tensor, but found 'f32'
  %y = monarch.transfer %x from @s0 to @s1 : f32 -> f32
  return %y : f32
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // An SSA value used with a type other than its own.
  // CHECK: bad-input-wrong-type.mlir:[[@LINE+1]]:21: error: use of value '%x' expects different type than prior uses: 'tensor<8xf32>' vs 'tensor<4xf32>'
  %y = monarch.feed %x to @m : tensor<8xf32>
  return %y : tensor<4xf32>
}

// -----

// A #monarch.buf offset that is not an integer.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // CHECK: bad-input-wrong-type.mlir:[[@LINE+1]]:45: error: failed to parse Monarch_BufferAttr parameter 'offset'
    monarch.feed_buffer 0 into #monarch.buf<0.5, tensor<4xf32>>
  }
}
// CHECK-NOT: Stack dump
