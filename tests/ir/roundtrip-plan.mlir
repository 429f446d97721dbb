// RUN: monarch-opt %s | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --verify-roundtrip | FileCheck %s

// Round trip of the planned stage: communicators (gloo and nccl), a plan of
// rank programs, every plan instruction (launch, send, recv, each collective
// kind, wait, feed_buffer, fetch_buffer, state_buffer), !monarch.event and
// #monarch.buf.
//
// A #monarch.buf written in a single-buffer position (send, recv,
// collective, feed_buffer, fetch_buffer, state_buffer) prints in its short
// form `<offset, type>`; inside the ins/outs lists of monarch.launch and as a
// free-standing attribute it prints as `#monarch.buf<offset, type>`. Both
// spellings parse in either position.

shard.grid @grid(shape = 1x4)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @grid

monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.state @b : tensor<4xbf16>
  monarch.endpoint @forward() {
    monarch.return
  }
}
monarch.actor_mesh @s0 = @Stage on @mesh

// CHECK-LABEL: shard.grid @grid(shape = 1x4)
// CHECK-NEXT:  monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @grid
// CHECK-NEXT:  monarch.actor_class @Stage {
// CHECK-NEXT:    monarch.state @w : tensor<4x4xf32>
// CHECK-NEXT:    monarch.state @b : tensor<4xbf16>
// CHECK-NEXT:    monarch.endpoint @forward() {
// CHECK-NEXT:      {{^ *}}return{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:  }

//===----------------------------------------------------------------------===//
// monarch.communicator
//===----------------------------------------------------------------------===//

// CHECK-NEXT:  monarch.actor_mesh @s0 = @Stage on @mesh
// CHECK-NEXT:  monarch.communicator @world on @mesh ranks [0, 1, 2, 3] backend gloo{{$}}
// CHECK-NEXT:  monarch.communicator @pp on @mesh ranks [1, 0] backend nccl{{$}}
// CHECK-NEXT:  monarch.communicator @pair on @mesh ranks [2, 3] backend nccl {note}{{$}}
monarch.communicator @world on @mesh ranks [0, 1, 2, 3] backend gloo
monarch.communicator @pp on @mesh ranks [1, 0] backend nccl
monarch.communicator @pair on @mesh ranks [2, 3] backend nccl {note}

// Kernels that monarch.launch calls (tensor or memref arguments).
// CHECK-NEXT:  func.func private @k_init(tensor<8x4xf32>)
// CHECK-NEXT:  func.func private @k_mm(tensor<8x4xf32>, tensor<4x4xf32>, memref<8x4xf32>)
// CHECK-NEXT:  func.func private @k_none()
func.func private @k_init(tensor<8x4xf32>)
func.func private @k_mm(tensor<8x4xf32>, tensor<4x4xf32>, memref<8x4xf32>)
func.func private @k_none()

//===----------------------------------------------------------------------===//
// monarch.plan, monarch.rank_program and the plan instructions
//===----------------------------------------------------------------------===//

// CHECK-NEXT:  monarch.plan @step on @mesh {
// CHECK-NEXT:    monarch.rank_program rank 0 arena 512 {
// CHECK-NEXT:      monarch.state_buffer @s0::@w at #monarch.buf<0, tensor<4x4xf32>>{{$}}
// CHECK-NEXT:      monarch.state_buffer @s0::@b at #monarch.buf<504, tensor<4xbf16>> {note}{{$}}
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<64, tensor<8x4xf32>>{{$}}
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<448, tensor<2x4xi8>> {note}{{$}}
// CHECK-NEXT:      %0 = monarch.launch @k_init ins() outs(#monarch.buf<192, tensor<8x4xf32>>) stream 0 : !monarch.event
// CHECK-NEXT:      %1 = monarch.launch @k_mm ins(#monarch.buf<64, tensor<8x4xf32>>, #monarch.buf<0, tensor<4x4xf32>>) outs(#monarch.buf<192, tensor<8x4xf32>>) stream 0 : !monarch.event
// CHECK-NEXT:      %2 = monarch.launch @k_none ins() outs() stream 3 {note} : !monarch.event
// CHECK-NEXT:      %3 = monarch.send #monarch.buf<192, tensor<8x4xf32>> to 1 on @pp stream 1 group 0 : !monarch.event
// CHECK-NEXT:      %4 = monarch.recv #monarch.buf<320, tensor<8x4xf32>> from 1 on @pp stream 1 group 0 : !monarch.event
// CHECK-NEXT:      %5 = monarch.send #monarch.buf<192, tensor<8x4xf32>> to 1 on @pp stream 2 : !monarch.event
// CHECK-NEXT:      %6 = monarch.recv #monarch.buf<320, tensor<8x4xf32>> from 1 on @pp stream 2 {note} : !monarch.event
// CHECK-NEXT:      %7 = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
// CHECK-NEXT:      %8 = monarch.collective all_reduce avg #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<256, tensor<4x4xf32>> on @world stream 1 group 3 : !monarch.event
// CHECK-NEXT:      %9 = monarch.collective all_gather #monarch.buf<0, tensor<2x4xf32>> -> #monarch.buf<64, tensor<8x4xf32>> on @world stream 1 : !monarch.event
// CHECK-NEXT:      %10 = monarch.collective reduce_scatter max #monarch.buf<64, tensor<8x4xf32>> -> #monarch.buf<0, tensor<2x4xf32>> on @world stream 1 group 2 : !monarch.event
// CHECK-NEXT:      %11 = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world root 2 stream 0 : !monarch.event
// CHECK-NEXT:      %12 = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @pp root 0 stream 0 group 1 {note} : !monarch.event
// CHECK-NEXT:      %13 = monarch.collective all_to_all #monarch.buf<64, tensor<8x4xf32>> -> #monarch.buf<192, tensor<8x4xf32>> on @world stream 2 : !monarch.event
// CHECK-NEXT:      monarch.wait %0 : !monarch.event{{$}}
// CHECK-NEXT:      monarch.wait %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13 {note} : !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event{{$}}
// CHECK-NEXT:      monarch.fetch_buffer 0 from #monarch.buf<192, tensor<8x4xf32>>{{$}}
// CHECK-NEXT:      monarch.fetch_buffer 1 from #monarch.buf<0, tensor<4x4xf32>> {note}{{$}}
// CHECK-NEXT:    }
monarch.plan @step on @mesh {
  monarch.rank_program rank 0 arena 512 {
    monarch.state_buffer @s0::@w at #monarch.buf<0, tensor<4x4xf32>>
    monarch.state_buffer @s0::@b at <504, tensor<4xbf16>> {note}
    monarch.feed_buffer 0 into #monarch.buf<64, tensor<8x4xf32>>
    monarch.feed_buffer 1 into #monarch.buf<448, tensor<2x4xi8>> {note}
    %e0 = monarch.launch @k_init ins() outs(#monarch.buf<192, tensor<8x4xf32>>) stream 0 : !monarch.event
    %e1 = monarch.launch @k_mm ins(#monarch.buf<64, tensor<8x4xf32>>, #monarch.buf<0, tensor<4x4xf32>>) outs(#monarch.buf<192, tensor<8x4xf32>>) stream 0 : !monarch.event
    %e2 = monarch.launch @k_none ins() outs() stream 3 {note} : !monarch.event
    %e3 = monarch.send #monarch.buf<192, tensor<8x4xf32>> to 1 on @pp stream 1 group 0 : !monarch.event
    %e4 = monarch.recv #monarch.buf<320, tensor<8x4xf32>> from 1 on @pp stream 1 group 0 : !monarch.event
    %e5 = monarch.send <192, tensor<8x4xf32>> to 1 on @pp stream 2 : !monarch.event
    %e6 = monarch.recv <320, tensor<8x4xf32>> from 1 on @pp stream 2 {note} : !monarch.event
    %e7 = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
    %e8 = monarch.collective all_reduce avg #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<256, tensor<4x4xf32>> on @world stream 1 group 3 : !monarch.event
    %e9 = monarch.collective all_gather #monarch.buf<0, tensor<2x4xf32>> -> #monarch.buf<64, tensor<8x4xf32>> on @world stream 1 : !monarch.event
    %e10 = monarch.collective reduce_scatter max #monarch.buf<64, tensor<8x4xf32>> -> #monarch.buf<0, tensor<2x4xf32>> on @world stream 1 group 2 : !monarch.event
    %e11 = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world root 2 stream 0 : !monarch.event
    %e12 = monarch.collective broadcast <0, tensor<4x4xf32>> -> <0, tensor<4x4xf32>> on @pp root 0 stream 0 group 1 {note} : !monarch.event
    %e13 = monarch.collective all_to_all #monarch.buf<64, tensor<8x4xf32>> -> #monarch.buf<192, tensor<8x4xf32>> on @world stream 2 : !monarch.event
    monarch.wait %e0 : !monarch.event
    monarch.wait %e1, %e2, %e3, %e4, %e5, %e6, %e7, %e8, %e9, %e10, %e11, %e12, %e13 {note} : !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from #monarch.buf<192, tensor<8x4xf32>>
    monarch.fetch_buffer 1 from <0, tensor<4x4xf32>> {note}
  }

  // CHECK-NEXT:    monarch.rank_program rank 1 arena 128 {
  // CHECK-NEXT:      %0 = monarch.recv #monarch.buf<0, tensor<8x4xf32>> from 0 on @pp stream 1 group 0 : !monarch.event
  // CHECK-NEXT:      %1 = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 0 on @pp stream 2 : !monarch.event
  // CHECK-NEXT:      monarch.wait %0, %1 : !monarch.event, !monarch.event
  // CHECK-NEXT:    }
  monarch.rank_program rank 1 arena 128 {
    %r = monarch.recv #monarch.buf<0, tensor<8x4xf32>> from 0 on @pp stream 1 group 0 : !monarch.event
    %s = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 0 on @pp stream 2 : !monarch.event
    monarch.wait %r, %s : !monarch.event, !monarch.event
  }

  // A rank program with no instructions and an attribute dictionary.
  // CHECK-NEXT:    monarch.rank_program rank 3 arena 0 attributes {note} {
  // CHECK-NEXT:    }
  // CHECK-NEXT:  }
  monarch.rank_program rank 3 arena 0 attributes {note} {
  }
}

// A second plan, with its own attributes and no programs.
// CHECK-NEXT:  monarch.plan @empty on @mesh attributes {note} {
// CHECK-NEXT:  }
monarch.plan @empty on @mesh attributes {note} {
}

// The attributes and types on their own (outside a monarch op): the full
// spelling of #monarch.buf and #monarch.dist.
// CHECK-LABEL: func.func private @attrs(!monarch.token, !monarch.event) -> (!monarch.event, !monarch.token)
// CHECK-SAME:    attributes {buf = #monarch.buf<16, tensor<2x3xi32>>, dist = #monarch.dist<{{\[\["x", "y"\], \[\]\]}} partial prod>, dist_min = #monarch.dist<[] partial min>, dist_rep = #monarch.dist<{{\[\[\]\]}}>}
func.func private @attrs(!monarch.token, !monarch.event) -> (!monarch.event, !monarch.token)
    attributes {buf = #monarch.buf<16, tensor<2x3xi32>>,
                dist = #monarch.dist<[["x", "y"], []] partial prod>,
                dist_min = #monarch.dist<[] partial min>,
                dist_rep = #monarch.dist<[[]]>}
