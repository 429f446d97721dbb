// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-plan-transfers | FileCheck %s

// `self.w = x` in an endpoint, x used nowhere else: the argument is the
// state's final value, so every rank must be fed it before the copy into
// the state's buffer (it was skipped as "only returned", and the state
// kept its old value: a silent wrong number, tests/python/runtime/
// test_numerics.py::test_state_set_straight_from_an_argument).

// CHECK-LABEL: monarch.rank_program rank 0
// CHECK:         monarch.feed_buffer 0 into #monarch.buf<[[IN:[0-9]+]], tensor<4xf32>>
// CHECK:         monarch.state_buffer @a::@w at #monarch.buf<[[W:[0-9]+]], tensor<4xf32>>
// CHECK:         monarch.launch {{.*}} ins(#monarch.buf<[[IN]], tensor<4xf32>>) outs(#monarch.buf<[[W]], tensor<4xf32>>)
// CHECK-LABEL: monarch.rank_program rank 1
// CHECK:         monarch.feed_buffer 0 into
module {
  shard.grid @mesh_grid(shape = 1x2)
  monarch.proc_mesh @mesh(hosts = 1, gpus = 2) grid @mesh_grid
  monarch.actor_class @A {
    monarch.state @w : tensor<4xf32>
    monarch.endpoint @set(%arg0: tensor<4xf32>) {
      state_set @w = %arg0 : tensor<4xf32>
      return
    }
  }
  monarch.actor_mesh @a = @A on @mesh
  func.func @setw.worker.mesh(%arg0: tensor<4xf32>) attributes {monarch.worker_for = @mesh} {
    monarch.broadcast @a::@set(%arg0) : tensor<4xf32>
    return
  }
  func.func @setw(%arg0: tensor<4xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@setw.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @setw.worker.mesh input 0 : tensor<4xf32>
    monarch.await %0 : !monarch.token
    return
  }
}

