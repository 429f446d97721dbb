// RUN: monarch-opt %s --monarch-verify-plan | FileCheck %s

// Plans that monarch-verify-plan accepts; the pass leaves them unchanged.

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.communicator @ring on @m ranks [0, 1, 2, 3] backend nccl
monarch.communicator @pp on @m ranks [0, 1] backend gloo
monarch.communicator @lo on @m ranks [0, 1] backend nccl
monarch.communicator @hi on @m ranks [3, 2] backend nccl
func.func private @k(tensor<4xf32>, tensor<4xf32>)
func.func private @k_init(tensor<4xf32>)

//===----------------------------------------------------------------------===//
// A ring: every rank sends to its right neighbour and receives from its
// left one. Each rank posts both in one group, so the cyclic pattern cannot
// deadlock.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @ring_step
// CHECK:         monarch.rank_program rank 0
// CHECK-NEXT:      monarch.send {{.*}} to 1 on @ring stream 1 group 0
// CHECK-NEXT:      monarch.recv {{.*}} from 3 on @ring stream 1 group 0
monarch.plan @ring_step on @m {
  monarch.rank_program rank 0 arena 32 {
    %s = monarch.send <0, tensor<4xf32>> to 1 on @ring stream 1 group 0 : !monarch.event
    %r = monarch.recv <16, tensor<4xf32>> from 3 on @ring stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %s = monarch.send <0, tensor<4xf32>> to 2 on @ring stream 1 group 0 : !monarch.event
    %r = monarch.recv <16, tensor<4xf32>> from 0 on @ring stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 2 arena 32 {
    // Members of a group may be listed in any order.
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @ring stream 1 group 0 : !monarch.event
    %s = monarch.send <0, tensor<4xf32>> to 3 on @ring stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 3 arena 32 {
    %s = monarch.send <0, tensor<4xf32>> to 0 on @ring stream 1 group 0 : !monarch.event
    %r = monarch.recv <16, tensor<4xf32>> from 2 on @ring stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

//===----------------------------------------------------------------------===//
// A pipeline 0 -> 1 -> 2 -> 3: each stage receives, computes on stream 0
// after waiting for the receive, and sends on.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @pipeline
// CHECK:         monarch.rank_program rank 3
// CHECK:           monarch.fetch_buffer 0 from #monarch.buf<16, tensor<4xf32>>
monarch.plan @pipeline on @m {
  monarch.rank_program rank 0 arena 32 {
    monarch.feed_buffer 0 into <0, tensor<4xf32>>
    %k = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %k : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 1 on @world stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @world stream 1 : !monarch.event
    monarch.wait %r : !monarch.event
    %k = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %k : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 2 on @world stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  monarch.rank_program rank 2 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 1 on @world stream 1 : !monarch.event
    // The kernel runs on the receiving stream: stream order suffices.
    %k = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 1 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 3 on @world stream 1 : !monarch.event
    monarch.wait %r, %k, %s : !monarch.event, !monarch.event, !monarch.event
  }
  monarch.rank_program rank 3 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 2 on @world stream 1 : !monarch.event
    monarch.wait %r : !monarch.event
    %k = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %k : !monarch.event
    monarch.fetch_buffer 0 from <16, tensor<4xf32>>
  }
}

//===----------------------------------------------------------------------===//
// Collectives on two disjoint communicators, plus one on all ranks. The pairs
// {0, 1} and {2, 3} each run their own sequence; communicator order (@hi
// lists 3 before 2) does not matter.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @collectives
// CHECK:         monarch.collective all_gather #monarch.buf<0, tensor<2x4xf32>> -> #monarch.buf<32, tensor<4x4xf32>> on @hi
monarch.plan @collectives on @m {
  monarch.rank_program rank 0 arena 128 {
    %a = monarch.collective all_reduce sum <0, tensor<2x4xf32>> -> <0, tensor<2x4xf32>> on @lo stream 1 : !monarch.event
    %b = monarch.collective broadcast <32, tensor<4x4xf32>> -> <32, tensor<4x4xf32>> on @lo root 1 stream 1 : !monarch.event
    %c = monarch.collective reduce_scatter max <32, tensor<4x4xf32>> -> <96, tensor<1x4xf32>> on @world stream 1 : !monarch.event
    monarch.wait %a, %b, %c : !monarch.event, !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 128 {
    %a = monarch.collective all_reduce sum <0, tensor<2x4xf32>> -> <0, tensor<2x4xf32>> on @lo stream 1 : !monarch.event
    %b = monarch.collective broadcast <32, tensor<4x4xf32>> -> <32, tensor<4x4xf32>> on @lo root 1 stream 1 : !monarch.event
    // The broadcast wrote the input of the reduce_scatter on another stream.
    monarch.wait %b : !monarch.event
    %c = monarch.collective reduce_scatter max <32, tensor<4x4xf32>> -> <96, tensor<1x4xf32>> on @world stream 2 : !monarch.event
    monarch.wait %a, %c : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 2 arena 128 {
    %a = monarch.collective all_gather <0, tensor<2x4xf32>> -> <32, tensor<4x4xf32>> on @hi stream 1 : !monarch.event
    %c = monarch.collective reduce_scatter max <32, tensor<4x4xf32>> -> <96, tensor<1x4xf32>> on @world stream 1 : !monarch.event
    monarch.wait %a, %c : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 3 arena 128 {
    %a = monarch.collective all_gather <0, tensor<2x4xf32>> -> <32, tensor<4x4xf32>> on @hi stream 3 : !monarch.event
    monarch.wait %a : !monarch.event
    %c = monarch.collective reduce_scatter max <32, tensor<4x4xf32>> -> <96, tensor<1x4xf32>> on @world stream 3 : !monarch.event
    monarch.wait %c : !monarch.event
  }
}

//===----------------------------------------------------------------------===//
// Waits: a send and receive pair in both directions on separate streams.
// Rank 0 waits for its send before posting its receive; that is safe
// because rank 1 posts its receive first.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @waits
// CHECK:         monarch.wait %{{.*}} : !monarch.event
monarch.plan @waits on @m {
  monarch.rank_program rank 0 arena 64 {
    monarch.feed_buffer 0 into <0, tensor<4xf32>>
    %s = monarch.send <0, tensor<4xf32>> to 1 on @pp stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @pp stream 2 : !monarch.event
    %i = monarch.launch @k_init ins() outs(#monarch.buf<32, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %r, %i : !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <16, tensor<4xf32>>
  }
  monarch.rank_program rank 1 arena 64 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @pp stream 1 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 0 on @pp stream 2 : !monarch.event
    monarch.wait %r, %s : !monarch.event, !monarch.event
  }
}

//===----------------------------------------------------------------------===//
// Start and completion are kept apart: rank 1 groups the partners of rank
// 0's send and later receive, so the send completes as soon as the group is
// posted and the receive behind it on stream 1 can start. Merging whole
// instructions would see a cycle here.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @split_start_completion
monarch.plan @split_start_completion on @m {
  monarch.rank_program rank 0 arena 32 {
    %s = monarch.send <0, tensor<4xf32>> to 1 on @pp stream 1 : !monarch.event
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @pp stream 1 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @pp stream 1 group 7 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 0 on @pp stream 1 group 7 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

// An empty plan and a plan with a single rank program are trivially safe.
// CHECK-LABEL: monarch.plan @empty
monarch.plan @empty on @m {
}
