// RUN: monarch-opt %s --split-input-file --verify-diagnostics
//
// Verifier diagnostics of the planned stage: communicators, plans, rank
// programs and their instructions.

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
// expected-error @+1 {{'monarch.communicator' op must contain at least one rank}}
monarch.communicator @c on @m ranks [] backend gloo

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
// expected-error @+1 {{'monarch.communicator' op rank -1 is negative}}
monarch.communicator @c on @m ranks [0, -1] backend gloo

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
// expected-error @+1 {{'monarch.communicator' op rank 2 appears twice}}
monarch.communicator @c on @m ranks [2, 0, 2] backend nccl

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
// Ranks outside the mesh.
// expected-error @+1 {{'monarch.communicator' op rank 4 is outside mesh @m of 4 ranks}}
monarch.communicator @c on @m ranks [0, 4] backend nccl

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
// Ranks are ranks of the slice (0 and 1), not of its parent.
// expected-error @+1 {{'monarch.communicator' op rank 2 is outside mesh @s1 of 2 ranks}}
monarch.communicator @c on @s1 ranks [2, 3] backend nccl

// -----

// expected-error @+1 {{'monarch.communicator' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.communicator @c on @nomesh ranks [0] backend gloo

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
// expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'backend' [gloo, nccl]}}
monarch.communicator @c on @m ranks [0] backend mpi

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  // expected-error @+1 {{'arith.constant' op is not allowed in a monarch.plan; only monarch.rank_program and monarch.rank_member are}}
  %c = arith.constant 0 : i32
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 0 {
  }
  monarch.rank_program rank 1 arena 0 {
  }
  // Duplicate rank programs.
  // expected-error @+1 {{'monarch.rank_program' op rank 0 has more than one program in plan @p}}
  monarch.rank_program rank 0 arena 0 {
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 3 arena 0 {
  }
  // expected-error @+1 {{'monarch.rank_program' op rank 4 is outside mesh @m of 4 ranks}}
  monarch.rank_program rank 4 arena 0 {
  }
}

// -----

// expected-error @+1 {{'monarch.plan' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.plan @p on @nomesh {
  monarch.rank_program rank 0 arena 0 {
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  // Negative rank, via the non-negative attribute constraint.
  // expected-error @+1 {{'monarch.rank_program' op attribute 'rank' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  monarch.rank_program rank -1 arena 0 {
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  // expected-error @+1 {{'monarch.rank_program' op attribute 'arena' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  monarch.rank_program rank 0 arena -64 {
  }
}

// -----

// expected-error @+1 {{'monarch.rank_program' op expects parent op 'monarch.plan'}}
monarch.rank_program rank 0 arena 0 {
}

// -----

func.func @f() {
  // expected-error @+1 {{'monarch.feed_buffer' op expects parent op 'monarch.rank_program'}}
  monarch.feed_buffer 0 into #monarch.buf<0, tensor<4xf32>>
  return
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.feed_buffer' op attribute 'index' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    monarch.feed_buffer -1 into #monarch.buf<0, tensor<4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 2 arena 128 {
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x4xf32>>
    // Buffers outside the arena: bytes [64, 192) of a 128-byte arena.
    // expected-error @+1 {{'monarch.fetch_buffer' op buffer #monarch.buf<64, tensor<8x4xf32>> (offset 64, 128 bytes) lies outside the arena of 128 bytes of rank 2}}
    monarch.fetch_buffer 0 from #monarch.buf<64, tensor<8x4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @k(%a: tensor<2xf64>, %b: tensor<2xf64>) {
  return
}
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 32 {
    // A buffer in a list (`outs`) is checked too: 2 x f64 at 24 ends at 40.
    // expected-error @+1 {{'monarch.launch' op buffer #monarch.buf<24, tensor<2xf64>> (offset 24, 16 bytes) lies outside the arena of 32 bytes of rank 0}}
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<2xf64>>) outs(#monarch.buf<24, tensor<2xf64>>) stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 1 arena 16 {
    // i1 elements take one byte each.
    // expected-error @+1 {{'monarch.collective' op buffer #monarch.buf<8, tensor<16xi1>> (offset 8, 16 bytes) lies outside the arena of 16 bytes of rank 1}}
    %e = monarch.collective all_reduce max #monarch.buf<0, tensor<16xi1>> -> #monarch.buf<8, tensor<16xi1>> on @world stream 0 : !monarch.event
  }
}

// -----

// Offsets and sizes near 2^63 must not wrap around the arena check.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{buffer offset 4611686018427387904 is not below 2^62}}
    monarch.feed_buffer 0 into #monarch.buf<4611686018427387904, tensor<4xf32>>
  }
}

// -----

// expected-error @+1 {{buffer of type 'tensor<4611686018427387904x4xf32>' is larger than 2^62 bytes}}
func.func private @f() attributes {b = #monarch.buf<0, tensor<4611686018427387904x4xf32>>}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.fetch_buffer' op buffer #monarch.buf<4611686018427387000, tensor<4xf32>> (offset 4611686018427387000, 16 bytes) lies outside the arena of 64 bytes of rank 0}}
    monarch.fetch_buffer 0 from #monarch.buf<4611686018427387000, tensor<4xf32>>
  }
}

// -----

// A plan's communicators list ranks of the plan's own mesh.
shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
monarch.communicator @pp on @s1 ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 2 arena 64 {
    // expected-error @+1 {{'monarch.send' op communicator @pp is on @s1 but plan @p is on @m; a plan's communicators list ranks of the plan's mesh}}
    %e = monarch.send #monarch.buf<0, tensor<4xf32>> to 3 on @pp stream 0 : !monarch.event
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.launch
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.launch' op @nokernel does not name a kernel function}}
    %e = monarch.launch @nokernel ins() outs(#monarch.buf<0, tensor<4xf32>>) stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // A mesh is not a kernel.
    // expected-error @+1 {{'monarch.launch' op @m does not name a kernel function}}
    %e = monarch.launch @m ins() outs(#monarch.buf<0, tensor<4xf32>>) stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @k(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) {
  return
}
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.launch' op passes 2 buffers but kernel @k takes 3 arguments}}
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @k(%a: tensor<4xf32>, %b: memref<2x2xf32>) {
  return
}
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.launch' op buffer #1 of type 'tensor<4xf32>' does not match kernel argument of type 'memref<2x2xf32>'}}
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs(#monarch.buf<16, tensor<4xf32>>) stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @k(%a: tensor<4xf16>) {
  return
}
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.launch' op buffer #0 of type 'tensor<4xf32>' does not match kernel argument of type 'tensor<4xf16>'}}
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs() stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @k(%a: tensor<4xf32>, %lr: f32) {
  return
}
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.launch' op buffer #1 of type 'tensor<1xf32>' does not match kernel argument of type 'f32'}}
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>, #monarch.buf<16, tensor<1xf32>>) outs() stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @k(%a: tensor<4xf32>) {
  return
}
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.launch' op attribute 'stream' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %e = monarch.launch @k ins(#monarch.buf<0, tensor<4xf32>>) outs() stream -1 : !monarch.event
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.send, monarch.recv
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.send' op @pp does not name a monarch.communicator}}
    %e = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 2 on @pp stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.recv' op @m does not name a monarch.communicator}}
    %e = monarch.recv #monarch.buf<0, tensor<8x4xf32>> from 2 on @m stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pp on @m ranks [0, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 1 arena 128 {
    // Rank not a member.
    // expected-error @+1 {{'monarch.send' op rank 1 is not a member of communicator @pp}}
    %e = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 2 on @pp stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pp on @m ranks [0, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 2 arena 128 {
    // Peer not in the communicator.
    // expected-error @+1 {{'monarch.recv' op peer rank 3 is not a member of communicator @pp}}
    %e = monarch.recv #monarch.buf<0, tensor<8x4xf32>> from 3 on @pp stream 1 group 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pp on @m ranks [0, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.send' op attribute 'peer' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %e = monarch.send #monarch.buf<0, tensor<8x4xf32>> to -2 on @pp stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pp on @m ranks [0, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.send' op attribute 'group' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %e = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 2 on @pp stream 1 group -1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pp on @m ranks [0, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{invalid kind of type specified: expected monarch.event, but found '!monarch.token'}}
    %e = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 2 on @pp stream 1 : !monarch.token
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.collective: op-local checks
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // Missing reduction.
    // expected-error @+1 {{'monarch.collective' op all_reduce needs a reduction kind}}
    %e = monarch.collective all_reduce #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op reduce_scatter needs a reduction kind}}
    %e = monarch.collective reduce_scatter #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<1x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op all_gather takes no reduction kind}}
    %e = monarch.collective all_gather sum #monarch.buf<0, tensor<1x4xf32>> -> #monarch.buf<16, tensor<4x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op all_to_all takes no reduction kind}}
    %e = monarch.collective all_to_all avg #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<4x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // Missing root.
    // expected-error @+1 {{'monarch.collective' op broadcast needs a root}}
    %e = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op broadcast takes no reduction kind}}
    %e = monarch.collective broadcast sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world root 0 stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op only broadcast takes a root}}
    %e = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world root 0 stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op element types differ: 'f32' vs 'i32'}}
    %e = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<4x4xi32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op attribute 'root' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %e = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world root -1 stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [all_reduce, all_gather, reduce_scatter, broadcast, all_to_all]}}
    %e = monarch.collective reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.collective: communicator and shape rules per kind
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.collective' op @world does not name a monarch.communicator}}
    %e = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @even on @m ranks [0, 2] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 3 arena 64 {
    // expected-error @+1 {{'monarch.collective' op rank 3 is not a member of communicator @even}}
    %e = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @even stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op input 'tensor<4x4xf32>' and output 'tensor<2x8xf32>' must have the same shape}}
    %e = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<2x8xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op input 'tensor<4x4xf32>' and output 'tensor<16xf32>' must have the same shape}}
    %e = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<16xf32>> on @world root 0 stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pair on @m ranks [1, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 1 arena 128 {
    // The root is a position in the communicator (2 ranks), not a mesh rank.
    // expected-error @+1 {{'monarch.collective' op root 3 is outside communicator @pair of 2 ranks}}
    %e = monarch.collective broadcast #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<0, tensor<4x4xf32>> on @pair root 3 stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op all_gather over 4 ranks maps 'tensor<1x4xf32>' to 'tensor<2x4xf32>'; expected dimension 0 to grow by 4}}
    %e = monarch.collective all_gather #monarch.buf<0, tensor<1x4xf32>> -> #monarch.buf<16, tensor<2x4xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // Dimension 0 grows by 4, but the trailing dimensions differ.
    // expected-error @+1 {{'monarch.collective' op all_gather over 4 ranks maps 'tensor<1x4xf32>' to 'tensor<4x2xf32>'; expected dimension 0 to grow by 4}}
    %e = monarch.collective all_gather #monarch.buf<0, tensor<1x4xf32>> -> #monarch.buf<16, tensor<4x2xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op all_gather over 4 ranks maps 'tensor<1x4xf32>' to 'tensor<4x4x1xf32>'; expected dimension 0 to grow by 4}}
    %e = monarch.collective all_gather #monarch.buf<0, tensor<1x4xf32>> -> #monarch.buf<16, tensor<4x4x1xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pair on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op reduce_scatter over 2 ranks maps 'tensor<4x4xf32>' to 'tensor<1x4xf32>'; expected dimension 0 to shrink by 2}}
    %e = monarch.collective reduce_scatter sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<1x4xf32>> on @pair stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @pair on @m ranks [0, 1] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op reduce_scatter over 2 ranks maps 'tensor<4x4xf32>' to 'tensor<2x2xf32>'; expected dimension 0 to shrink by 2}}
    %e = monarch.collective reduce_scatter sum #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<2x2xf32>> on @pair stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op all_to_all over 4 ranks needs equal shapes with dimension 0 divisible by 4, got 'tensor<6x2xf32>' and 'tensor<6x2xf32>'}}
    %e = monarch.collective all_to_all #monarch.buf<0, tensor<6x2xf32>> -> #monarch.buf<64, tensor<6x2xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @world on @m ranks [0, 1, 2, 3] backend nccl
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 128 {
    // expected-error @+1 {{'monarch.collective' op all_to_all over 4 ranks needs equal shapes with dimension 0 divisible by 4, got 'tensor<4x4xf32>' and 'tensor<16xf32>'}}
    %e = monarch.collective all_to_all #monarch.buf<0, tensor<4x4xf32>> -> #monarch.buf<64, tensor<16xf32>> on @world stream 1 : !monarch.event
  }
}

// -----

// Rank-0 buffers cannot be gathered or scattered along dimension 0.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.collective' op all_gather over 1 ranks maps 'tensor<f32>' to 'tensor<f32>'; expected dimension 0 to grow by 1}}
    %e = monarch.collective all_gather #monarch.buf<0, tensor<f32>> -> #monarch.buf<4, tensor<f32>> on @c stream 0 : !monarch.event
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.collective' op reduce_scatter over 1 ranks maps 'tensor<f32>' to 'tensor<f32>'; expected dimension 0 to shrink by 1}}
    %e = monarch.collective reduce_scatter sum #monarch.buf<0, tensor<f32>> -> #monarch.buf<4, tensor<f32>> on @c stream 0 : !monarch.event
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.wait, monarch.state_buffer
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 0 {
    // expected-error @+1 {{'monarch.wait' op must wait for at least one event}}
    "monarch.wait"() : () -> ()
  }
}

// -----

func.func @f(%t: !monarch.token) {
  // expected-error @+1 {{'monarch.wait' op expects parent op 'monarch.rank_program'}}
  monarch.wait %t : !monarch.token
  return
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 0 {
    // Only plan instructions may appear in a rank program.
    // expected-error @+1 {{'builtin.unrealized_conversion_cast' op is not a plan instruction and cannot appear in a monarch.rank_program}}
    %t = builtin.unrealized_conversion_cast to !monarch.token
    monarch.wait %t : !monarch.token
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @A {
  monarch.state @w : tensor<4x4xf32>
}
monarch.actor_mesh @a = @A on @m
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.state_buffer' op state @w must have the form @actor_mesh::@state}}
    monarch.state_buffer @w at #monarch.buf<0, tensor<4x4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.state_buffer' op @s0 does not name a monarch.actor_mesh}}
    monarch.state_buffer @s0::@w at #monarch.buf<0, tensor<4x4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @A {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // An endpoint is not state.
    // expected-error @+1 {{'monarch.state_buffer' op actor mesh @a has no state @f}}
    monarch.state_buffer @a::@f at #monarch.buf<0, tensor<4x4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @A {
  monarch.state @w : tensor<4x4xf32>
}
monarch.actor_mesh @a = @A on @m
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{'monarch.state_buffer' op buffer type 'tensor<16xf32>' does not match state type 'tensor<4x4xf32>'}}
    monarch.state_buffer @a::@w at #monarch.buf<0, tensor<16xf32>>
  }
}

// -----

// Scalar state lives in a rank-0 tensor buffer (valid; a following bad case
// makes the split fail so the checker sees an error).
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @A {
  monarch.state @lr : f32
}
monarch.actor_mesh @a = @A on @m
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    monarch.state_buffer @a::@lr at #monarch.buf<0, tensor<f32>>
    // expected-error @+1 {{'monarch.state_buffer' op buffer type 'tensor<f64>' does not match state type 'f32'}}
    monarch.state_buffer @a::@lr at #monarch.buf<8, tensor<f64>>
  }
}


// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.plan @p on @m {
  // expected-error @+1 {{'monarch.critical_path_us' must be a non-negative float}}
  monarch.rank_program rank 0 arena 0 attributes {monarch.critical_path_us = -1.0 : f64} {
  }
}

// -----

// expected-error @+1 {{'monarch.peak_bytes' is only valid on a monarch.rank_program}}
func.func @f() attributes {monarch.peak_bytes = 3 : i64} {
  return
}

// -----

// A monarch.rank_member (a rank running another rank's program with its own
// peers, communicators and offsets, docs/spmd-classes.md) names an earlier
// rank program.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  // expected-error @+1 {{'monarch.rank_member' op runs the program of rank 1, which is not a monarch.rank_program earlier in plan @p}}
  monarch.rank_member rank 0 of 1 peers [] comms [] offsets []
  monarch.rank_program rank 1 arena 0 {
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 0 {
  }
  monarch.rank_member rank 1 of 0 peers [] comms [] offsets []
  // expected-error @+1 {{'monarch.rank_member' op runs the program of rank 1, which is not a monarch.rank_program earlier in plan @p}}
  monarch.rank_member rank 2 of 1 peers [] comms [] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 0 {
  }
  // expected-error @+1 {{'monarch.rank_member' op rank 0 has more than one program in plan @p}}
  monarch.rank_member rank 0 of 0 peers [] comms [] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1, 2, 3] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %s = monarch.send <0, tensor<16xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  // expected-error @+1 {{'monarch.rank_member' op has 2 peers but the program of rank 0 has 1 sends and receives}}
  monarch.rank_member rank 2 of 0 peers [3, 1] comms [] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
  }
  // expected-error @+1 {{'monarch.rank_member' op has 0 offsets but the program of rank 0 has 1 feeds, fetches and states}}
  monarch.rank_member rank 2 of 0 peers [] comms [] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    monarch.feed_buffer 0 into <0, tensor<16xf32>>
  }
  // expected-error @+1 {{'monarch.rank_member' op offsets #0 is 3 : i64, not array<i64: ...> or unit}}
  monarch.rank_member rank 2 of 0 peers [] comms [] offsets [3]
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %c = monarch.collective all_reduce sum <0, tensor<16xf32>> -> <0, tensor<16xf32>> on @c stream 1 : !monarch.event
    monarch.wait %c : !monarch.event
  }
  // expected-error @+1 {{'monarch.rank_member' op comms #0 is "c", not a communicator's name}}
  monarch.rank_member rank 2 of 0 peers [] comms ["c"] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1, 2, 3] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %s = monarch.send <0, tensor<16xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  // expected-error @+1 {{'monarch.rank_member' op rank 5 is outside mesh @m of 4 ranks}}
  monarch.rank_member rank 5 of 0 peers [3] comms [] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1, 2] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %s = monarch.send <0, tensor<16xf32>> to 1 on @c stream 1 : !monarch.event
    monarch.wait %s : !monarch.event
  }
  // expected-error @+1 {{'monarch.rank_member' op peer rank 3 is not a member of communicator @c}}
  monarch.rank_member rank 2 of 0 peers [3] comms [] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1] backend gloo
monarch.communicator @d on @m ranks [2, 3] backend gloo
monarch.communicator @e on @m ranks [1, 2, 3] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %c = monarch.collective all_reduce sum <0, tensor<16xf32>> -> <0, tensor<16xf32>> on @c stream 1 : !monarch.event
    monarch.wait %c : !monarch.event
  }
  monarch.rank_member rank 2 of 0 peers [] comms [@d] offsets []
  // expected-error @+1 {{'monarch.rank_member' op communicator @e of collective #0 has 3 ranks but the program of rank 0 runs it on @c of 2}}
  monarch.rank_member rank 3 of 0 peers [] comms [@e] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %c = monarch.collective all_reduce sum <0, tensor<16xf32>> -> <0, tensor<16xf32>> on @c stream 1 : !monarch.event
    monarch.wait %c : !monarch.event
  }
  // expected-error @+1 {{'monarch.rank_member' op rank 2 is not a member of communicator @c}}
  monarch.rank_member rank 2 of 0 peers [] comms [@c] offsets []
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.communicator @c on @m ranks [0, 1] backend gloo
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    %c = monarch.collective all_reduce sum <0, tensor<16xf32>> -> <0, tensor<16xf32>> on @c stream 1 : !monarch.event
    monarch.wait %c : !monarch.event
  }
  // expected-error @+1 {{'monarch.rank_member' op @nowhere does not name a monarch.communicator}}
  monarch.rank_member rank 1 of 0 peers [] comms [@nowhere] offsets []
}
