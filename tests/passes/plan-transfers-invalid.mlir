// RUN: monarch-opt %s --monarch-plan-transfers --split-input-file --verify-diagnostics
// RUN: not monarch-opt %s --split-input-file --monarch-plan-transfers="backend=mpi" 2>&1 | FileCheck %s --check-prefix=BACKEND
// BACKEND: monarch-plan-transfers: unknown backend 'mpi' (expected gloo or nccl)
//
// monarch-plan-transfers on the per-rank form of monarch-specialize-ranks;
// the diagnostics of specialization are in specialize-ranks-invalid.mlir.

// A worker program of the split stage has not been specialized yet.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op is not specialized per rank; monarch-specialize-ranks comes first}}
  func.func @w(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op lists @w.rank0 among its ranks, which is not a rank function (a func.func with a body of one block and 'monarch.rank')}}
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op lists @w.rank2 for rank 2, which is not a rank of its mesh}}
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank2]}
  func.func private @w.rank2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 2 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op lists @w.again for rank 0, which has another rank function}}
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0, @w.again]}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
  func.func private @w.again(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  // expected-error @+1 {{'func.func' op needs 'plan.outputs' (worker output indices) and 'plan.states' (actor state references)}}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  // expected-error @+1 {{'func.func' op takes the inputs of @w and one value per state, and returns the outputs it holds and one value per state}}
  func.func private @w.rank0(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  // expected-error @+1 {{'func.func' op result #0 is not output #1 of @w}}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 1>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op output #0 is on no rank}}
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<4xf32>) attributes {monarch.rank = 0 : i64, plan.outputs = array<i64>, plan.states = []} {
    return
  }
}

// -----

// Plan collectives move contiguous blocks: along dimension 0 only
// (monarch-specialize-ranks rearranges the others).
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<2x2xf32>) -> tensor<2x4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<2x2xf32>) -> tensor<2x4xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    // expected-error @+1 {{'monarch.all_gather' op gathers along axis 1; plans gather along axis 0 only (transpose first)}}
    %y = monarch.all_gather %x over ["gpus"] axis 1 {plan.group = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<2x4xf32>) -> tensor<2x2xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<2x4xf32>) -> tensor<2x2xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    // expected-error @+1 {{'monarch.reduce_scatter' op scatters along axis 1; plans scatter along axis 0 only (transpose first)}}
    %y = monarch.reduce_scatter %x over ["gpus"] axis 1 sum {plan.group = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<2x2xf32>
    return %y : tensor<2x2xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<2x4xf32>) -> tensor<4x2xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<2x4xf32>) -> tensor<4x2xf32> attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    // expected-error @+1 {{'monarch.all_to_all' op exchanges along dimensions 1 and 0; plans exchange along dimension 0 only (transpose first)}}
    %y = monarch.all_to_all %x over ["gpus"] split 1 concat 0 {plan.group = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<4x2xf32>
    return %y : tensor<4x2xf32>
  }
}

// -----

// A class function lists its own rank first among its members.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  // expected-error @+1 {{'func.func' op lists its own rank first among 'plan.members'}}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.members = array<i64: 1, 0>, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op lists @w.rank0 for rank 5, which is not a rank of its mesh}}
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.members = array<i64: 0, 5>, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

// A rank is a member of one class function only.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  // expected-error @+1 {{'func.func' op lists @w.rank1 for rank 1, which has another rank function}}
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0, @w.rank1]}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.members = array<i64: 0, 1>, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
  func.func private @w.rank1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<4xf32>
  }
}

// -----

// The members' offsets: one entry per member.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<2xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  // expected-error @+1 {{'func.func' op needs one entry per member in 'plan.member_input_offsets'}}
  func.func private @w.rank0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {monarch.rank = 0 : i64, plan.input_offsets = [array<i64: 0>], plan.member_input_offsets = [[array<i64: 0>]], plan.members = array<i64: 0, 1>, plan.output_offsets = [array<i64: 0>], plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<2xf32>
  }
}

// -----

// A member's shard must be one of the same type as the first rank's.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<2xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  // expected-error @+1 {{'func.func' op member 1 is fed input #0 otherwise than the class's first rank}}
  func.func private @w.rank0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {monarch.rank = 0 : i64, plan.input_offsets = [array<i64: 0>], plan.member_input_offsets = [[array<i64: 0>], [array<i64: 3>]], plan.members = array<i64: 0, 1>, plan.output_offsets = [array<i64: 0>], plan.outputs = array<i64: 0>, plan.states = []} {
    return %x : tensor<2xf32>
  }
}

// -----

// A member's group comes from the mesh its collective names.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @w(tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh, plan.ranks = [@w.rank0]}
  func.func private @w.rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.rank = 0 : i64, plan.members = array<i64: 0, 1>, plan.outputs = array<i64: 0>, plan.states = []} {
    // expected-error @+1 {{'monarch.all_reduce' op needs its group of ranks ('plan.group', set by monarch-specialize-ranks)}}
    %y = monarch.all_reduce %x over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
