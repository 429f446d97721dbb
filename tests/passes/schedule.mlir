// RUN: monarch-opt %s --monarch-schedule | FileCheck %s
// RUN: monarch-opt %s --monarch-schedule | monarch-opt | FileCheck %s

// monarch-schedule: each rank program is reordered so that communication and
// its producers are issued first (never reordering communication, never
// moving it below a wait, keeping groups together), its critical path is
// estimated, and its arena is replanned over the new order.
//
// Buffers of tensor<16xf32> are 64 bytes; a launch of @k touches 128 bytes
// (0.0128 us at 10 GB/s); a send or recv of 64 bytes costs 20.032 us
// (20 us + 64 B at 2 GB/s).

shard.grid @grid(shape = 1x4)
monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @grid
monarch.actor_class @Stage {
  monarch.state @w : tensor<16xf32>
  monarch.endpoint @forward() {
    monarch.return
  }
}
monarch.actor_mesh @s0 = @Stage on @mesh
monarch.communicator @world on @mesh ranks [0, 1, 2, 3] backend nccl
monarch.communicator @pp on @mesh ranks [0, 1] backend nccl
func.func private @k(tensor<16xf32>, tensor<16xf32>)
func.func private @big(tensor<65536xf32>, tensor<65536xf32>)
func.func private @k2(tensor<16xf32>, tensor<32xf32>)

//===----------------------------------------------------------------------===//
// A send of the fed input is hoisted above independent compute and above a
// wait it does not need, and %b above that wait too: the send starts at 0
// instead of after `wait %a`, and the critical path drops from 20.0448 us to
// 20.032 us (the send alone). Every buffer is fed or fetched, so all stay
// live for the whole program; packed, they need 192 of the 256 bytes.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @hoist
// CHECK-NEXT:    monarch.rank_program rank 0 arena 192 attributes {monarch.critical_path_us = 2.003200e+01 : f64, monarch.peak_bytes = 192 : i64} {
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      %[[S:.*]] = monarch.send #monarch.buf<0, tensor<16xf32>> to 1 on @pp stream 1 : !monarch.event
// CHECK-NEXT:      %[[A:.*]] = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0
// CHECK-NEXT:      %[[B:.*]] = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<128, tensor<16xf32>>) stream 0
// CHECK-NEXT:      monarch.wait %[[A]] :
// CHECK-NEXT:      monarch.fetch_buffer 0 from #monarch.buf<64, tensor<16xf32>>
// CHECK-NEXT:      monarch.wait %[[B]], %[[S]] :
// CHECK-NEXT:      monarch.fetch_buffer 1 from #monarch.buf<128, tensor<16xf32>>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
monarch.plan @hoist on @mesh {
  monarch.rank_program rank 0 arena 256 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    monarch.wait %a : !monarch.event
    monarch.fetch_buffer 0 from <64, tensor<16xf32>>
    %b = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<128, tensor<16xf32>>) stream 0 : !monarch.event
    %s = monarch.send <0, tensor<16xf32>> to 1 on @pp stream 1 : !monarch.event
    monarch.wait %b, %s : !monarch.event, !monarch.event
    monarch.fetch_buffer 1 from <128, tensor<16xf32>>
  }
}

//===----------------------------------------------------------------------===//
// Communication keeps its issue order: the send needs nothing, but it stays
// behind the collective, which waits for the launch it reduces.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @comm_order
// CHECK-NEXT:    monarch.rank_program rank 0 arena 128 attributes {monarch.critical_path_us = 2.006100e+01 : f64, monarch.peak_bytes = 128 : i64} {
// CHECK-NEXT:      monarch.feed_buffer 0
// CHECK-NEXT:      %[[L:.*]] = monarch.launch @k
// CHECK-NEXT:      monarch.wait %[[L]] :
// CHECK-NEXT:      %[[C:.*]] = monarch.collective all_reduce sum
// CHECK-NEXT:      %[[S:.*]] = monarch.send
// CHECK-NEXT:      monarch.wait %[[C]], %[[S]] :
// CHECK-NEXT:      monarch.fetch_buffer 0
// CHECK-NEXT:    }
monarch.plan @comm_order on @mesh {
  monarch.rank_program rank 0 arena 128 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %l = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    monarch.wait %l : !monarch.event
    %c = monarch.collective all_reduce sum <64, tensor<16xf32>> -> <64, tensor<16xf32>> on @world stream 1 : !monarch.event
    %s = monarch.send <0, tensor<16xf32>> to 1 on @pp stream 2 : !monarch.event
    monarch.wait %c, %s : !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <64, tensor<16xf32>>
  }
}

//===----------------------------------------------------------------------===//
// Waits stay after the ops they wait for, and communication never sinks
// below a wait it was issued before. `wait %l` gates two 52 us kernels and
// a 151 us send, so it outranks the small send %s; but moving %s below it
// would make %s wait for %l, a new happens-before edge that can close a
// cycle across ranks. The arena cannot shrink (the fed buffers and the
// intermediate at 262208 are live together), so its layout is kept.
// Critical path: %l ends at 52.43 us, %m at 104.86 us, %s2 at 255.93 us.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @wait_order
// CHECK-NEXT:    monarch.rank_program rank 0 arena 524352 attributes {monarch.critical_path_us = 2.559300e+02 : f64, monarch.peak_bytes = 524352 : i64} {
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<64, tensor<65536xf32>>
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      %[[L:.*]] = monarch.launch @big ins(#monarch.buf<64, tensor<65536xf32>>) outs(#monarch.buf<262208, tensor<65536xf32>>) stream 0
// CHECK-NEXT:      %[[S:.*]] = monarch.send #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      monarch.wait %[[L]] :
// CHECK-NEXT:      %[[M:.*]] = monarch.launch @big ins(#monarch.buf<262208, tensor<65536xf32>>) outs(#monarch.buf<64, tensor<65536xf32>>) stream 2
// CHECK-NEXT:      monarch.wait %[[M]] :
// CHECK-NEXT:      %[[S2:.*]] = monarch.send #monarch.buf<64, tensor<65536xf32>>
// CHECK-NEXT:      monarch.wait %[[S]], %[[S2]] :
// CHECK-NEXT:    }
monarch.plan @wait_order on @mesh {
  monarch.rank_program rank 0 arena 524352 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    monarch.feed_buffer 1 into <64, tensor<65536xf32>>
    %l = monarch.launch @big ins(#monarch.buf<64, tensor<65536xf32>>) outs(#monarch.buf<262208, tensor<65536xf32>>) stream 0 : !monarch.event
    %s = monarch.send <0, tensor<16xf32>> to 1 on @pp stream 1 : !monarch.event
    monarch.wait %l : !monarch.event
    %m = monarch.launch @big ins(#monarch.buf<262208, tensor<65536xf32>>) outs(#monarch.buf<64, tensor<65536xf32>>) stream 2 : !monarch.event
    monarch.wait %m : !monarch.event
    %s2 = monarch.send <64, tensor<65536xf32>> to 1 on @pp stream 1 : !monarch.event
    monarch.wait %s, %s2 : !monarch.event, !monarch.event
  }
}

//===----------------------------------------------------------------------===//
// A group (one stream entry) moves as a whole and stays adjacent.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @group
// CHECK-NEXT:    monarch.rank_program rank 0 arena 256 attributes {monarch.critical_path_us = 2.006400e+01 : f64, monarch.peak_bytes = 256 : i64} {
// CHECK-NEXT:      monarch.feed_buffer 1 into #monarch.buf<128, tensor<16xf32>>
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      %[[S:.*]] = monarch.send #monarch.buf<128, tensor<16xf32>> to 1 on @pp stream 1 group 0
// CHECK-NEXT:      %[[R:.*]] = monarch.recv #monarch.buf<192, tensor<16xf32>> from 1 on @pp stream 1 group 0
// CHECK-NEXT:      %[[L:.*]] = monarch.launch @k
// CHECK-NEXT:      monarch.wait %[[L]], %[[S]], %[[R]] :
// CHECK-NEXT:      monarch.fetch_buffer 0
// CHECK-NEXT:      monarch.fetch_buffer 1
// CHECK-NEXT:    }
monarch.plan @group on @mesh {
  monarch.rank_program rank 0 arena 256 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    monarch.feed_buffer 1 into <128, tensor<16xf32>>
    %l = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    %s = monarch.send <128, tensor<16xf32>> to 1 on @pp stream 1 group 0 : !monarch.event
    %r = monarch.recv <192, tensor<16xf32>> from 1 on @pp stream 1 group 0 : !monarch.event
    monarch.wait %l, %s, %r : !monarch.event, !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <64, tensor<16xf32>>
    monarch.fetch_buffer 1 from <192, tensor<16xf32>>
  }
}

//===----------------------------------------------------------------------===//
// Buffer reuse. T1 (64) is dead once `wait %l1, %l2` has returned; T2 (256)
// is first written by %l3, which reads the received Z and so comes after
// `wait %r`, itself after `wait %l1, %l2` (waits keep their order). T1 and
// T2 share an offset and the arena shrinks from 384 to 320 bytes. X, Y and
// W are fed or fetched (live throughout, packed first); Z lives from the
// recv to `wait %l3, %l4`.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @reuse
// CHECK-NEXT:    monarch.rank_program rank 0 arena 320 attributes {monarch.critical_path_us = 2.005800e+01 : f64, monarch.peak_bytes = 320 : i64} {
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      %[[R:.*]] = monarch.recv #monarch.buf<[[Z:192]], tensor<16xf32>> from 1
// CHECK-NEXT:      %[[L1:.*]] = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<[[T:256]], tensor<16xf32>>)
// CHECK-NEXT:      %[[L2:.*]] = monarch.launch @k ins(#monarch.buf<[[T]], tensor<16xf32>>) outs(#monarch.buf<[[Y:64]], tensor<16xf32>>)
// CHECK-NEXT:      monarch.wait %[[L1]], %[[L2]] :
// CHECK-NEXT:      monarch.wait %[[R]] :
// CHECK-NEXT:      %[[L3:.*]] = monarch.launch @k ins(#monarch.buf<[[Z]], tensor<16xf32>>) outs(#monarch.buf<[[T]], tensor<16xf32>>)
// CHECK-NEXT:      %[[L4:.*]] = monarch.launch @k ins(#monarch.buf<[[T]], tensor<16xf32>>) outs(#monarch.buf<[[W:128]], tensor<16xf32>>)
// CHECK-NEXT:      monarch.wait %[[L3]], %[[L4]] :
// CHECK-NEXT:      monarch.fetch_buffer 0 from #monarch.buf<[[Y]], tensor<16xf32>>
// CHECK-NEXT:      monarch.fetch_buffer 1 from #monarch.buf<[[W]], tensor<16xf32>>
// CHECK-NEXT:    }
monarch.plan @reuse on @mesh {
  monarch.rank_program rank 0 arena 384 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %l1 = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    %l2 = monarch.launch @k ins(#monarch.buf<64, tensor<16xf32>>) outs(#monarch.buf<128, tensor<16xf32>>) stream 0 : !monarch.event
    monarch.wait %l1, %l2 : !monarch.event, !monarch.event
    %r = monarch.recv <192, tensor<16xf32>> from 1 on @pp stream 1 : !monarch.event
    monarch.wait %r : !monarch.event
    %l3 = monarch.launch @k ins(#monarch.buf<192, tensor<16xf32>>) outs(#monarch.buf<256, tensor<16xf32>>) stream 0 : !monarch.event
    %l4 = monarch.launch @k ins(#monarch.buf<256, tensor<16xf32>>) outs(#monarch.buf<320, tensor<16xf32>>) stream 0 : !monarch.event
    monarch.wait %l3, %l4 : !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <128, tensor<16xf32>>
    monarch.fetch_buffer 1 from <320, tensor<16xf32>>
  }
}

//===----------------------------------------------------------------------===//
// State persists across steps: the state buffer S keeps offset 0 for itself
// although this step last touches it in %a, and is never shared. The
// temporaries T1 (64) and T2 (192) share offset 128; U (128) lives across
// both; the fetched output O is packed beside S. 320 -> 256 bytes.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @state
// CHECK-NEXT:    monarch.rank_program rank 0 arena 256 attributes {monarch.critical_path_us = 5.100000e-02 : f64, monarch.peak_bytes = 256 : i64} {
// CHECK-NEXT:      monarch.state_buffer @s0::@w at #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<[[T:128]], tensor<16xf32>>) stream 0
// CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<[[T]], tensor<16xf32>>) outs(#monarch.buf<[[U:192]], tensor<16xf32>>) stream 0
// CHECK-NEXT:      monarch.wait
// CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<[[U]], tensor<16xf32>>) outs(#monarch.buf<[[T]], tensor<16xf32>>) stream 1
// CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<[[T]], tensor<16xf32>>) outs(#monarch.buf<[[O:64]], tensor<16xf32>>) stream 1
// CHECK-NEXT:      monarch.wait
// CHECK-NEXT:      monarch.fetch_buffer 0 from #monarch.buf<[[O]], tensor<16xf32>>
// CHECK-NEXT:    }
monarch.plan @state on @mesh {
  monarch.rank_program rank 0 arena 320 {
    monarch.state_buffer @s0::@w at <0, tensor<16xf32>>
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    %b = monarch.launch @k ins(#monarch.buf<64, tensor<16xf32>>) outs(#monarch.buf<128, tensor<16xf32>>) stream 0 : !monarch.event
    monarch.wait %a, %b : !monarch.event, !monarch.event
    %c = monarch.launch @k ins(#monarch.buf<128, tensor<16xf32>>) outs(#monarch.buf<192, tensor<16xf32>>) stream 1 : !monarch.event
    %d = monarch.launch @k ins(#monarch.buf<192, tensor<16xf32>>) outs(#monarch.buf<256, tensor<16xf32>>) stream 1 : !monarch.event
    monarch.wait %c, %d : !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <256, tensor<16xf32>>
  }
}

//===----------------------------------------------------------------------===//
// Views: %v writes 128 bytes at 128 and the send reads their second half
// through another (offset, type). The two alias, so they move together and
// keep their relative layout.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @view
// CHECK-NEXT:    monarch.rank_program rank 0 arena 192 attributes {monarch.critical_path_us = 2.005100e+01 : f64, monarch.peak_bytes = 192 : i64} {
// CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>>
// CHECK-NEXT:      monarch.launch @k2 ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<32xf32>>) stream 0
// CHECK-NEXT:      monarch.wait
// CHECK-NEXT:      monarch.send #monarch.buf<128, tensor<16xf32>> to 1
// CHECK-NEXT:      monarch.wait
// CHECK-NEXT:    }
monarch.plan @view on @mesh {
  monarch.rank_program rank 0 arena 320 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %v = monarch.launch @k2 ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<128, tensor<32xf32>>) stream 0 : !monarch.event
    monarch.wait %v : !monarch.event
    %s = monarch.send <192, tensor<16xf32>> to 1 on @pp stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
}

//===----------------------------------------------------------------------===//
// A stream that carries communication keeps its whole order. On rank 0 the
// send outranks the launch %e queued before it on stream 1; issued first,
// it would hold %e behind it (FIFO), so `wait %e`, and with it the recv
// (which overwrites %e's output), would need the send to complete, which
// needs rank 1's recv, which rank 1 issues only after its own send has
// completed, which needs rank 0's recv: a deadlock the input does not have.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @comm_stream
monarch.plan @comm_stream on @mesh {
  // CHECK-NEXT:    monarch.rank_program rank 0
  // CHECK-NEXT:      monarch.feed_buffer 0
  // CHECK-NEXT:      %[[E:.*]] = monarch.launch @k {{.*}} stream 1
  // CHECK-NEXT:      %[[A:.*]] = monarch.send {{.*}} to 1 on @pp stream 1
  // CHECK-NEXT:      monarch.wait %[[E]] :
  // CHECK-NEXT:      monarch.fetch_buffer 0
  // CHECK-NEXT:      %[[B:.*]] = monarch.recv {{.*}} from 1 on @pp stream 2
  // CHECK-NEXT:      monarch.wait %[[A]], %[[B]] :
  // CHECK-NEXT:      monarch.fetch_buffer 1
  // CHECK-NEXT:    }
  monarch.rank_program rank 0 arena 128 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 1 : !monarch.event
    %a = monarch.send <0, tensor<16xf32>> to 1 on @pp stream 1 : !monarch.event
    monarch.wait %e : !monarch.event
    monarch.fetch_buffer 0 from <64, tensor<16xf32>>
    %b = monarch.recv <64, tensor<16xf32>> from 1 on @pp stream 2 : !monarch.event
    monarch.wait %a, %b : !monarch.event, !monarch.event
    monarch.fetch_buffer 1 from <64, tensor<16xf32>>
  }
  // CHECK-NEXT:    monarch.rank_program rank 1
  // Communication may move above a wait: the recv still follows the send
  // on stream 1.
  // CHECK-NEXT:      %[[S:.*]] = monarch.send {{.*}} to 0 on @pp stream 1
  // CHECK-NEXT:      %[[R:.*]] = monarch.recv {{.*}} from 0 on @pp stream 1
  // CHECK-NEXT:      monarch.wait %[[S]] :
  // CHECK-NEXT:      monarch.wait %[[R]] :
  // CHECK-NEXT:    }
  monarch.rank_program rank 1 arena 128 {
    %s = monarch.send <0, tensor<16xf32>> to 0 on @pp stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
    %r = monarch.recv <64, tensor<16xf32>> from 0 on @pp stream 1 : !monarch.event
    monarch.wait %r : !monarch.event
  }
}

//===----------------------------------------------------------------------===//
// Live ranges end at the wait that proves the last user complete, not at
// its issue. T1's users %a and %b run on stream 0 and are issued before
// %c, T2's first user, on stream 1; but until `wait %b2, %d` returns they
// may all run at the same time, so T1 (64) and T2 (192) get different
// bytes. (By issue order alone they could share.)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @streams
monarch.plan @streams on @mesh {
  // CHECK-NEXT:    monarch.rank_program rank 0 arena 384
  // CHECK-NEXT:      monarch.feed_buffer 0 into #monarch.buf<0, tensor<16xf32>>
  // CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<[[T1:192]], tensor<16xf32>>) stream 0
  // CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<[[T1]], tensor<16xf32>>) outs(#monarch.buf<[[U:256]], tensor<16xf32>>) stream 0
  // CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<[[T2:320]], tensor<16xf32>>) stream 1
  // CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<[[U]], tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0
  // CHECK-NEXT:      monarch.launch @k ins(#monarch.buf<[[T2]], tensor<16xf32>>) outs(#monarch.buf<128, tensor<16xf32>>) stream 1
  monarch.rank_program rank 0 arena 448 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    %b = monarch.launch @k ins(#monarch.buf<64, tensor<16xf32>>) outs(#monarch.buf<128, tensor<16xf32>>) stream 0 : !monarch.event
    %b2 = monarch.launch @k ins(#monarch.buf<128, tensor<16xf32>>) outs(#monarch.buf<192, tensor<16xf32>>) stream 0 : !monarch.event
    %c = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<256, tensor<16xf32>>) stream 1 : !monarch.event
    %d = monarch.launch @k ins(#monarch.buf<256, tensor<16xf32>>) outs(#monarch.buf<384, tensor<16xf32>>) stream 1 : !monarch.event
    monarch.wait %b2, %d : !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <192, tensor<16xf32>>
    monarch.fetch_buffer 1 from <384, tensor<16xf32>>
  }
}

//===----------------------------------------------------------------------===//
// Two sends with the same group id on one stream but with a launch between
// them: reusing a group id is an error for monarch-verify-plan, but should
// such a plan reach this pass, the launch stays between them so that they
// never become one group.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.plan @group_split
monarch.plan @group_split on @mesh {
  // CHECK-NEXT:    monarch.rank_program rank 0
  // CHECK-NEXT:      monarch.feed_buffer 0
  // CHECK-NEXT:      monarch.send {{.*}} stream 1 group 0
  // CHECK-NEXT:      monarch.launch @k
  // CHECK-NEXT:      monarch.send {{.*}} stream 1 group 0
  monarch.rank_program rank 0 arena 128 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
    %s1 = monarch.send <0, tensor<16xf32>> to 1 on @pp stream 1 group 0 : !monarch.event
    %l = monarch.launch @k ins(#monarch.buf<0, tensor<16xf32>>) outs(#monarch.buf<64, tensor<16xf32>>) stream 0 : !monarch.event
    %s2 = monarch.send <0, tensor<16xf32>> to 1 on @pp stream 1 group 0 : !monarch.event
    monarch.wait %s1, %l, %s2 : !monarch.event, !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <64, tensor<16xf32>>
  }
}
