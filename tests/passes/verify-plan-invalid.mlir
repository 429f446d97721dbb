// RUN: monarch-opt %s --monarch-verify-plan --split-input-file --verify-diagnostics

// Plans that monarch-verify-plan rejects, one problem per case: unmatched and
// mismatched transfers, collectives that disagree across ranks, groups that
// are not adjacent, deadlocks (cycles of the happens-before graph) and data
// races between streams.

shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    %a = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    // expected-error @+1 {{send #2 from rank 0 to rank 1 on @c has no matching recv: rank 0 posts 2 sends to rank 1 but rank 1 posts 1 recv from rank 0}}
    %b = monarch.send <16, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %a, %b : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %a = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    monarch.wait %a : !monarch.event
  }
}

// -----

// A receive from a rank that has no program in the plan.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 1 arena 32 {
    // expected-error @+1 {{recv #1 on rank 1 from rank 0 on @c has no matching send: rank 1 posts 1 recv from rank 0 but rank 0 posts 0 sends to rank 1}}
    %a = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    monarch.wait %a : !monarch.event
  }
}

// -----

// Matching is per communicator: a send on @c does not match a recv on @d.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.communicator @d on @m ranks [0, 1] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-error @+1 {{send #1 from rank 0 to rank 1 on @c has no matching recv}}
    %a = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    // expected-error @+1 {{recv #1 on rank 1 from rank 0 on @d has no matching send}}
    %a = monarch.recv <0, tensor<4xf32>> from 0 on @d stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %a = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    // expected-error @+1 {{send #2 from rank 0 to rank 1 on @c sends 'tensor<2x4xf32>' but the matching recv on rank 1 receives 'tensor<8xf32>'}}
    %b = monarch.send <16, tensor<2x4xf32>> to 1 on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    %a = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    // expected-note @+1 {{matching recv}}
    %b = monarch.recv <16, tensor<8xf32>> from 0 on @c stream 1 : !monarch.event
  }
}

// -----

// The element type counts too.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{send #1 from rank 0 to rank 1 on @c sends 'tensor<4xf32>' but the matching recv on rank 1 receives 'tensor<4xi32>'}}
    %a = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    // expected-note @+1 {{matching recv}}
    %a = monarch.recv <0, tensor<4xi32>> from 0 on @c stream 1 : !monarch.event
  }
}

// -----

// Collective order differs across ranks.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-note @+1 {{collective #1 on @c of rank 0}}
    %a = monarch.collective all_reduce sum <0, tensor<2x4xf32>> -> <0, tensor<2x4xf32>> on @c stream 1 : !monarch.event
    %b = monarch.collective all_gather <0, tensor<2x4xf32>> -> <32, tensor<4x4xf32>> on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 128 {
    // expected-error @+1 {{collective #1 on @c differs across ranks: rank 1 issues all_gather tensor<2x4xf32> -> tensor<4x4xf32> but rank 0 issues all_reduce sum tensor<2x4xf32> -> tensor<2x4xf32>}}
    %b = monarch.collective all_gather <0, tensor<2x4xf32>> -> <32, tensor<4x4xf32>> on @c stream 1 : !monarch.event
    %a = monarch.collective all_reduce sum <0, tensor<2x4xf32>> -> <0, tensor<2x4xf32>> on @c stream 1 : !monarch.event
  }
}

// -----

// A collective missing on one member (rank 2 has no program at all for the
// second one; rank 3 has no program).
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
    // expected-error @+1 {{collective #2 on @c of rank 0 (broadcast root 2 tensor<4xf32> -> tensor<4xf32>) has no counterpart on rank 2, which issues 1 collective on @c}}
    %b = monarch.collective broadcast <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c root 2 stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
    %b = monarch.collective broadcast <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c root 2 stream 1 : !monarch.event
  }
  monarch.rank_program rank 2 arena 64 {
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
  }
}

// -----

// A member without a program issues no collective.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [1, 0] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 1 arena 64 {
    // expected-error @+1 {{collective #1 on @c of rank 1 (all_reduce sum tensor<4xf32> -> tensor<4xf32>) has no counterpart on rank 0, which issues 0 collectives on @c}}
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
  }
}

// -----

// Reduction mismatch.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-note @+1 {{collective #1 on @c of rank 0}}
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    // expected-error @+1 {{collective #1 on @c differs across ranks: rank 1 issues all_reduce max tensor<4xf32> -> tensor<4xf32> but rank 0 issues all_reduce sum tensor<4xf32> -> tensor<4xf32>}}
    %a = monarch.collective all_reduce max <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
  }
}

// -----

// Root mismatch.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-note @+1 {{collective #1 on @c of rank 0}}
    %a = monarch.collective broadcast <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c root 0 stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    // expected-error @+1 {{rank 1 issues broadcast root 1 tensor<4xf32> -> tensor<4xf32> but rank 0 issues broadcast root 0 tensor<4xf32> -> tensor<4xf32>}}
    %a = monarch.collective broadcast <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c root 1 stream 1 : !monarch.event
  }
}

// -----

// Kind mismatch between two collectives of the same shapes.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
    // expected-note @+1 {{collective #2 on @c of rank 0}}
    %b = monarch.collective all_to_all <0, tensor<4xf32>> -> <16, tensor<4xf32>> on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @c stream 1 : !monarch.event
    // expected-error @+1 {{collective #2 on @c differs across ranks: rank 1 issues broadcast root 0 tensor<4xf32> -> tensor<4xf32> but rank 0 issues all_to_all tensor<4xf32> -> tensor<4xf32>}}
    %b = monarch.collective broadcast <0, tensor<4xf32>> -> <16, tensor<4xf32>> on @c root 0 stream 1 : !monarch.event
  }
}

// -----

// Shapes of a collective differ across ranks.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-note @+1 {{collective #1 on @c of rank 0}}
    %a = monarch.collective all_gather <0, tensor<2xf32>> -> <16, tensor<4xf32>> on @c stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    // expected-error @+1 {{rank 1 issues all_gather tensor<4xf32> -> tensor<8xf32> but rank 0 issues all_gather tensor<2xf32> -> tensor<4xf32>}}
    %a = monarch.collective all_gather <0, tensor<4xf32>> -> <16, tensor<8xf32>> on @c stream 1 : !monarch.event
  }
}

// -----

// Two ranks each send first on the stream they later receive on, without a
// group: each send waits for a receive queued behind the other send.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-error @+1 {{deadlock: rank 0 send to 1 on @c (stream 1) cannot complete before rank 1 recv from 0 on @c (stream 1) starts, which is queued behind rank 1 send to 0 on @c (stream 1), which cannot complete before rank 0 recv from 1 on @c (stream 1) starts, which is queued behind rank 0 send to 1 on @c (stream 1)}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    // expected-note @+1 {{rank 0 recv from 1 on @c (stream 1) is part of the cycle}}
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 1 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    // expected-note @+1 {{rank 1 send to 0 on @c (stream 1) is part of the cycle}}
    %s = monarch.send <0, tensor<4xf32>> to 0 on @c stream 1 : !monarch.event
    // expected-note @+1 {{rank 1 recv from 0 on @c (stream 1) is part of the cycle}}
    %r = monarch.recv <16, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

// -----

// The same exchange on separate streams, but each rank waits for its send
// before posting its receive.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-error @+1 {{deadlock: rank 0 send to 1 on @c (stream 1) cannot complete before rank 1 recv from 0 on @c (stream 2) starts, which cannot be issued before rank 1 wait (instruction 2) completes, which cannot complete before rank 1 send to 0 on @c (stream 1) completes, which cannot complete before rank 0 recv from 1 on @c (stream 2) starts, which cannot be issued before rank 0 wait (instruction 2) completes, which cannot complete before rank 0 send to 1 on @c (stream 1) completes}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    // expected-note @+1 {{rank 0 wait (instruction 2) is part of the cycle}}
    monarch.wait %s : !monarch.event
    // expected-note @+1 {{rank 0 recv from 1 on @c (stream 2) is part of the cycle}}
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 2 : !monarch.event
    monarch.wait %r : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    // expected-note @+1 {{rank 1 send to 0 on @c (stream 1) is part of the cycle}}
    %s = monarch.send <0, tensor<4xf32>> to 0 on @c stream 1 : !monarch.event
    // expected-note @+1 {{rank 1 wait (instruction 2) is part of the cycle}}
    monarch.wait %s : !monarch.event
    // expected-note @+1 {{rank 1 recv from 0 on @c (stream 2) is part of the cycle}}
    %r = monarch.recv <16, tensor<4xf32>> from 0 on @c stream 2 : !monarch.event
    monarch.wait %r : !monarch.event
  }
}

// -----

// A rank that waits on itself: its send to itself completes only once the
// receive starts, which is issued after the wait for the send.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-error @+1 {{deadlock: rank 0 send to 0 on @c (stream 1) cannot complete before rank 0 recv from 0 on @c (stream 2) starts, which cannot be issued before rank 0 wait (instruction 2) completes, which cannot complete before rank 0 send to 0 on @c (stream 1) completes}}
    %s = monarch.send <0, tensor<4xf32>> to 0 on @c stream 1 : !monarch.event
    // expected-note @+1 {{rank 0 wait (instruction 2) is part of the cycle}}
    monarch.wait %s : !monarch.event
    // expected-note @+1 {{rank 0 recv from 0 on @c (stream 2) is part of the cycle}}
    %r = monarch.recv <16, tensor<4xf32>> from 0 on @c stream 2 : !monarch.event
    monarch.wait %r : !monarch.event
  }
}

// -----

// Collectives on two communicators issued in opposite orders by the two
// members: each all_reduce waits for its peer, which is queued behind the
// other one.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @a on @m ranks [0, 1] backend nccl
monarch.communicator @b on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-error @+1 {{deadlock: rank 0 all_reduce on @a (stream 1) cannot complete before rank 1 all_reduce on @a (stream 1) starts, which is queued behind rank 1 all_reduce on @b (stream 1), which cannot complete before rank 0 all_reduce on @b (stream 1) starts, which is queued behind rank 0 all_reduce on @a (stream 1)}}
    %x = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @a stream 1 : !monarch.event
    // expected-note @+1 {{rank 0 all_reduce on @b (stream 1) is part of the cycle}}
    %y = monarch.collective all_reduce sum <16, tensor<4xf32>> -> <16, tensor<4xf32>> on @b stream 1 : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    // expected-note @+1 {{rank 1 all_reduce on @b (stream 1) is part of the cycle}}
    %y = monarch.collective all_reduce sum <16, tensor<4xf32>> -> <16, tensor<4xf32>> on @b stream 1 : !monarch.event
    // expected-note @+1 {{rank 1 all_reduce on @a (stream 1) is part of the cycle}}
    %x = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @a stream 1 : !monarch.event
  }
}

// -----

// A wait for one member of a group waits for the whole group: rank 0 cannot
// pass its wait until its receive from rank 1 completes, and rank 1 sends
// only after it has what rank 0 sends after the wait.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.communicator @d on @m ranks [0, 1] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{deadlock: group 0 of rank 0 (stream 1) cannot complete before rank 0 recv from 1 on @c (stream 1, group 0) completes, which cannot complete before rank 1 send to 0 on @c (stream 1) starts, which cannot be issued before rank 1 wait (instruction 3) completes, which cannot complete before rank 1 recv from 0 on @d (stream 2) completes, which cannot complete before rank 0 send to 1 on @d (stream 2) starts, which cannot be issued before rank 0 wait (instruction 3) completes, which cannot complete before group 0 of rank 0 (stream 1) completes}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 group 0 : !monarch.event
    // expected-note @+1 {{rank 0 recv from 1 on @c (stream 1, group 0) is part of the cycle}}
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 1 group 0 : !monarch.event
    // expected-note @+1 {{rank 0 wait (instruction 3) is part of the cycle}}
    monarch.wait %s : !monarch.event
    // expected-note @+1 {{rank 0 send to 1 on @d (stream 2) is part of the cycle}}
    %t = monarch.send <32, tensor<4xf32>> to 1 on @d stream 2 : !monarch.event
    monarch.wait %r, %t : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 64 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    // expected-note @+1 {{rank 1 recv from 0 on @d (stream 2) is part of the cycle}}
    %t = monarch.recv <32, tensor<4xf32>> from 0 on @d stream 2 : !monarch.event
    // expected-note @+1 {{rank 1 wait (instruction 3) is part of the cycle}}
    monarch.wait %t : !monarch.event
    // expected-note @+1 {{rank 1 send to 0 on @c (stream 1) is part of the cycle}}
    %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 : !monarch.event
    monarch.wait %r, %s : !monarch.event, !monarch.event
  }
}

// -----

// A group interrupted by another instruction.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
func.func private @k(tensor<4xf32>)
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 48 {
    // expected-note @+1 {{previous instruction of group 3}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 group 3 : !monarch.event
    %k = monarch.launch @k ins() outs(#monarch.buf<32, tensor<4xf32>>) stream 0 : !monarch.event
    // expected-error @+1 {{group 3 of rank 0 is not adjacent: rank 0 launch @k (stream 0) separates this instruction from the earlier ones of the group; the instructions of a group must be consecutive in program order}}
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 1 group 3 : !monarch.event
    monarch.wait %s, %r, %k : !monarch.event, !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 group 0 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

// -----

// A group id reused after the group ended is not adjacent either.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-note @+1 {{previous instruction of group 0}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 group 0 : !monarch.event
    monarch.wait %s : !monarch.event
    // expected-error @+1 {{group 0 of rank 0 is not adjacent: rank 0 wait (instruction 2) separates this instruction}}
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 1 group 0 : !monarch.event
    monarch.wait %r : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

// -----

// A group on two streams.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-note @+1 {{previous instruction of the group}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 group 0 : !monarch.event
    // expected-error @+1 {{group 0 of rank 0 spans streams 1 and 2: the instructions of a group form one stream entry}}
    %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 2 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 group 0 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

// -----

// Data race: a kernel on stream 0 reads what a receive on stream 1 writes,
// with no wait in between.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
func.func private @k(tensor<4xf32>, tensor<4xf32>)
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    monarch.feed_buffer 0 into <0, tensor<4xf32>>
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    // expected-note @+1 {{conflicting write}}
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    // expected-error @+1 {{data race: rank 1 launch @k (stream 0) reads #monarch.buf<0, tensor<4xf32>>, which overlaps #monarch.buf<0, tensor<4xf32>> written by rank 1 recv from 0 on @c (stream 1) with no wait in between}}
    %k = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %r, %k : !monarch.event, !monarch.event
  }
}

// -----

// Data race: a host fetch of a buffer a kernel is still writing, and a feed
// overwriting bytes a send may still be reading (partial overlap).
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
func.func private @init(tensor<4xf32>)
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-note @+1 {{conflicting write}}
    %k = monarch.launch @init ins() outs(#monarch.buf<0, tensor<4xf32>>) stream 0 : !monarch.event
    // expected-error @+1 {{data race: rank 0 fetch_buffer (instruction 2) reads #monarch.buf<0, tensor<4xf32>>, which overlaps #monarch.buf<0, tensor<4xf32>> written by rank 0 launch @init (stream 0) with no wait in between}}
    monarch.fetch_buffer 0 from <0, tensor<4xf32>>
    monarch.wait %k : !monarch.event
    // expected-note @+1 {{conflicting read}}
    %s = monarch.send <32, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    // expected-error @+1 {{data race: rank 0 feed_buffer (instruction 5) writes #monarch.buf<40, tensor<2xf32>>, which overlaps #monarch.buf<32, tensor<4xf32>> read by rank 0 send to 1 on @c (stream 1) with no wait in between}}
    monarch.feed_buffer 0 into <40, tensor<2xf32>>
    monarch.wait %s : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    monarch.wait %r : !monarch.event
  }
}

// -----

// Data race inside a group: its members run concurrently.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-note @+1 {{conflicting read}}
    %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 group 0 : !monarch.event
    // expected-error @+1 {{data race: rank 0 recv from 1 on @c (stream 1, group 0) writes #monarch.buf<0, tensor<4xf32>>, which overlaps #monarch.buf<0, tensor<4xf32>> read by rank 0 send to 1 on @c (stream 1, group 0); both are in one group, whose members run concurrently}}
    %r = monarch.recv <0, tensor<4xf32>> from 1 on @c stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 group 0 : !monarch.event
    %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 group 0 : !monarch.event
    monarch.wait %s, %r : !monarch.event, !monarch.event
  }
}

// -----

// Waiting for a later entry of the same stream orders the earlier ones too;
// waiting for another stream does not.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
func.func private @init(tensor<4xf32>)
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %a = monarch.launch @init ins() outs(#monarch.buf<0, tensor<4xf32>>) stream 0 : !monarch.event
    %b = monarch.launch @init ins() outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    // expected-note @+1 {{conflicting write}}
    %c = monarch.launch @init ins() outs(#monarch.buf<32, tensor<4xf32>>) stream 1 : !monarch.event
    %d = monarch.launch @init ins() outs(#monarch.buf<48, tensor<4xf32>>) stream 2 : !monarch.event
    monarch.wait %b, %d : !monarch.event, !monarch.event
    monarch.fetch_buffer 0 from <0, tensor<4xf32>>
    // expected-error @+1 {{data race: rank 0 fetch_buffer (instruction 7) reads #monarch.buf<32, tensor<4xf32>>}}
    monarch.fetch_buffer 1 from <32, tensor<4xf32>>
    monarch.wait %a, %c : !monarch.event, !monarch.event
  }
}

// -----

// The hazard check runs once per program shape: a shape found free of races
// (ranks 0 and 2) is checked once, and every rank of a racy shape (ranks 1
// and 3, equal programs) reports its own race.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func private @k(tensor<4xf32>, tensor<4xf32>)
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %a : !monarch.event
    %b = monarch.launch @k ins(#monarch.buf<16, tensor<4xf32>>) outs(#monarch.buf<0, tensor<4xf32>>) stream 1 : !monarch.event
    monarch.wait %b : !monarch.event
  }
  monarch.rank_program rank 1 arena 32 {
    // expected-note @+1 {{conflicting write}}
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    // expected-error @+1 {{data race: rank 1 launch @k (stream 1) reads #monarch.buf<16, tensor<4xf32>>, which overlaps #monarch.buf<16, tensor<4xf32>> written by rank 1 launch @k (stream 0) with no wait in between}}
    %b = monarch.launch @k ins(#monarch.buf<16, tensor<4xf32>>) outs(#monarch.buf<0, tensor<4xf32>>) stream 1 : !monarch.event
    monarch.wait %a, %b : !monarch.event, !monarch.event
  }
  monarch.rank_program rank 2 arena 32 {
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    monarch.wait %a : !monarch.event
    %b = monarch.launch @k ins(#monarch.buf<16, tensor<4xf32>>) outs(#monarch.buf<0, tensor<4xf32>>) stream 1 : !monarch.event
    monarch.wait %b : !monarch.event
  }
  monarch.rank_program rank 3 arena 32 {
    // expected-note @+1 {{conflicting write}}
    %a = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
    // expected-error @+1 {{data race: rank 3 launch @k (stream 1) reads #monarch.buf<16, tensor<4xf32>>, which overlaps #monarch.buf<16, tensor<4xf32>> written by rank 3 launch @k (stream 0) with no wait in between}}
    %b = monarch.launch @k ins(#monarch.buf<16, tensor<4xf32>>) outs(#monarch.buf<0, tensor<4xf32>>) stream 1 : !monarch.event
    monarch.wait %a, %b : !monarch.event, !monarch.event
  }
}

// -----

// A monarch.rank_member is checked as the program it stands for, with its
// own peers: rank 2 runs rank 0's program but sends to rank 3, which has no
// receive, and rank 3 runs rank 1's but receives from rank 0, which sends
// only to rank 1. The errors are at the program's instructions and name
// the member.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 16 {
    // expected-error @+1 {{send #1 from rank 2 to rank 3 on @c has no matching recv: rank 2 posts 1 send to rank 3 but rank 3 posts 0 recvs from rank 2}}
    %a = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %a : !monarch.event
  }
  monarch.rank_program rank 1 arena 16 {
    // expected-error @+1 {{recv #1 on rank 3 from rank 0 on @c has no matching send: rank 3 posts 1 recv from rank 0 but rank 0 posts 0 sends to rank 3}}
    %a = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
    monarch.wait %a : !monarch.event
  }
  monarch.rank_member rank 2 of 0 peers [3] comms [] offsets []
  monarch.rank_member rank 3 of 1 peers [0] comms [] offsets []
}

// -----

// A member's collectives are on its own communicators: rank 2 runs rank 0's
// all_reduce on @hi, where rank 3 issues an all_gather.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @lo on @m ranks [0, 1] backend nccl
monarch.communicator @hi on @m ranks [2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-note @+1 {{collective #1 on @hi of rank 2}}
    %a = monarch.collective all_reduce sum <0, tensor<4xf32>> -> <0, tensor<4xf32>> on @lo stream 1 : !monarch.event
    monarch.wait %a : !monarch.event
  }
  monarch.rank_member rank 1 of 0 peers [] comms [@lo] offsets []
  monarch.rank_member rank 2 of 0 peers [] comms [@hi] offsets []
  monarch.rank_program rank 3 arena 32 {
    // expected-error @+1 {{collective #1 on @hi differs across ranks: rank 3 issues all_gather tensor<4xf32> -> tensor<8xf32> but rank 2 issues all_reduce sum tensor<4xf32> -> tensor<4xf32>}}
    %a = monarch.collective all_gather <0, tensor<4xf32>> -> <0, tensor<8xf32>> on @hi stream 1 : !monarch.event
    monarch.wait %a : !monarch.event
  }
}

// -----

// A deadlock between a program and its member: rank 1 runs rank 0's program
// with peer 0, so each rank waits for its receive before it sends. The
// cycle names rank 1's instructions at the program's ops.
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.communicator @c on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // expected-error @+2 {{deadlock: rank 0 recv from 1 on @c (stream 1) cannot complete before rank 1 send to 0 on @c (stream 1) starts, which cannot be issued before rank 1 wait (instruction 2) completes, which cannot complete before rank 1 recv from 0 on @c (stream 1) completes, which cannot complete before rank 0 send to 1 on @c (stream 1) starts, which cannot be issued before rank 0 wait (instruction 2) completes, which cannot complete before rank 0 recv from 1 on @c (stream 1) completes}}
    // expected-note @+1 {{rank 1 recv from 0 on @c (stream 1) is part of the cycle}}
    %r = monarch.recv <0, tensor<4xf32>> from 1 on @c stream 1 : !monarch.event
    // expected-note @+2 {{rank 1 wait (instruction 2) is part of the cycle}}
    // expected-note @+1 {{rank 0 wait (instruction 2) is part of the cycle}}
    monarch.wait %r : !monarch.event
    // expected-note @+2 {{rank 1 send to 0 on @c (stream 1) is part of the cycle}}
    // expected-note @+1 {{rank 0 send to 1 on @c (stream 1) is part of the cycle}}
    %s = monarch.send <16, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  monarch.rank_member rank 1 of 0 peers [0, 0] comms [] offsets []
}
