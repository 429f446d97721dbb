// RUN: monarch-opt %s | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --mlir-print-op-generic | monarch-opt | FileCheck %s

// mc.debug_print: in global code (with the mesh whose ranks print), in an
// endpoint (per-rank, no mesh), without values, and its plan form.

module {
  shard.grid @g(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @g
  // CHECK-LABEL: func.func @global
  // CHECK: monarch.debug_print "step {0} loss {1:.4f} {{[{][{]}}braces{{[}][}]}}" on @mesh %{{.*}}, %{{.*}} : i64, tensor<f32>
  // CHECK: monarch.debug_print "no values"
  func.func @global(%k: i64, %loss: tensor<f32>) {
    monarch.debug_print "step {0} loss {1:.4f} {{braces}}" on @mesh %k, %loss : i64, tensor<f32>
    monarch.debug_print "no values"
    return
  }
  monarch.actor_class @A {
    // CHECK: monarch.endpoint @f
    // CHECK-NEXT: debug_print "x {0}" %{{.*}} : tensor<4xbf16>
    monarch.endpoint @f(%x: tensor<4xbf16>) {
      monarch.debug_print "x {0}" %x : tensor<4xbf16>
      monarch.return
    }
  }
  monarch.communicator @comm on @mesh ranks [0, 1] backend gloo
  monarch.plan @p on @mesh signature (tensor<4xf32>) -> () {
    // CHECK: monarch.print_buffers "x {0} again {0:>8.2f}" [#monarch.buf<0, tensor<4xf32>>]
    monarch.rank_program rank 0 arena 16 {
      monarch.feed_buffer 0 into #monarch.buf<0, tensor<4xf32>>
      monarch.print_buffers "x {0} again {0:>8.2f}" [#monarch.buf<0, tensor<4xf32>>]
    }
  }
}
