// RUN: monarch-opt %s --monarch-schedule --monarch-verify-plan | FileCheck %s
// RUN: monarch-opt %s --monarch-schedule --monarch-expand-rank-members -o %t.after
// RUN: monarch-opt %s --monarch-expand-rank-members --monarch-schedule -o %t.before
// RUN: diff %t.after %t.before
// RUN: monarch-opt %s --monarch-expand-rank-members | FileCheck %s --check-prefix=EXPAND
// RUN: monarch-opt %s --verify-roundtrip -o %t.roundtrip
//
// A class of ranks as one rank program and a monarch.rank_member per other
// member (docs/spmd-classes.md): monarch-schedule schedules the program once
// and puts each member's tables (peers, comms, offsets) in its new order,
// monarch-verify-plan checks every member as the rank it stands for, and
// monarch-expand-rank-members writes each member as its own program:
// scheduling then expanding equals expanding then scheduling (the diff).
//
// Rank 0's program feeds input 1 before input 0 and sends before it
// receives once scheduled (as in schedule.mlir's @group): rank 2, which runs
// it with peer 3 and its own offsets, gets its tables swapped alike. Ranks
// 1 and 3 run rank 1's program, the other ends of the exchange, and reduce
// with their partner on @lo or @hi.

shard.grid @grid(shape = 1x4)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @grid
monarch.communicator @pp on @mesh ranks [0, 1, 2, 3] backend nccl
monarch.communicator @lo on @mesh ranks [0, 1] backend nccl
monarch.communicator @hi on @mesh ranks [2, 3] backend nccl
func.func private @k(tensor<16xf32>, tensor<16xf32>)

// CHECK-LABEL: monarch.plan @step
// CHECK:         monarch.rank_program rank 0 arena 256
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<128, tensor<16xf32>> at [16]
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>> at [0]
// CHECK-NEXT:      monarch.send #monarch.buf<128, tensor<16xf32>> to 1 on @pp stream 1 group 0
// CHECK-NEXT:      monarch.recv #monarch.buf<192, tensor<16xf32>> from 1 on @pp stream 1 group 0
// CHECK:         monarch.rank_program rank 1
// CHECK:         monarch.rank_member rank 2 of 0 peers [3, 3] comms [@hi] offsets [array<i64: 48>, array<i64: 32>, unit, unit]
// CHECK-NEXT:    monarch.rank_member rank 3 of 1 peers [2, 2] comms [@hi] offsets []

// EXPAND:        monarch.rank_program rank 2 arena 256 {
// EXPAND-NEXT:     monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>> at [32]
// EXPAND-NEXT:     monarch.feed_buffer 1 into #monarch.buf<128, tensor<16xf32>> at [48]
// EXPAND:          monarch.send #monarch.buf<128, tensor<16xf32>> to 3 on @pp
// EXPAND-NEXT:     monarch.recv #monarch.buf<192, tensor<16xf32>> from 3 on @pp
// EXPAND:          monarch.collective all_reduce sum {{.*}} on @hi
// EXPAND:        monarch.rank_program rank 3 arena 128 {
// EXPAND:          monarch.recv {{.*}} from 2 on @pp
// EXPAND-NEXT:     monarch.send {{.*}} to 2 on @pp
// EXPAND:          monarch.collective all_reduce sum {{.*}} on @hi
monarch.plan @step on @mesh {
  monarch.rank_program rank 0 arena 256 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>> at [0]
    monarch.feed_buffer 1 into <128, tensor<16xf32>> at [16]
    %l = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    %s = monarch.send <128, tensor<16xf32>> to 1 on @pp stream 1 group 0 : !monarch.event
    %r = monarch.recv <192, tensor<16xf32>> from 1 on @pp stream 1 group 0 : !monarch.event
    monarch.wait %l, %s, %r : !monarch.event, !monarch.event, !monarch.event
    %c = monarch.collective all_reduce sum <64, tensor<16xf32>> -> <64, tensor<16xf32>> on @lo stream 2 : !monarch.event
    monarch.wait %c : !monarch.event
    monarch.fetch_buffer 0 from <64, tensor<16xf32>>
    monarch.fetch_buffer 1 from <192, tensor<16xf32>>
  }
  monarch.rank_program rank 1 arena 128 {
    %r = monarch.recv <0, tensor<16xf32>> from 0 on @pp stream 1 group 0 : !monarch.event
    %s = monarch.send <64, tensor<16xf32>> to 0 on @pp stream 1 group 0 : !monarch.event
    monarch.wait %r, %s : !monarch.event, !monarch.event
    %c = monarch.collective all_reduce sum <64, tensor<16xf32>> -> <64, tensor<16xf32>> on @lo stream 2 : !monarch.event
    monarch.wait %c : !monarch.event
  }
  monarch.rank_member rank 2 of 0 peers [3, 3] comms [@hi] offsets [array<i64: 32>, array<i64: 48>, unit, unit]
  monarch.rank_member rank 3 of 1 peers [2, 2] comms [@hi] offsets []
}
