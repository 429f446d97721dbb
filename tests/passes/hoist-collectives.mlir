// RUN: monarch-opt %s --monarch-hoist-collectives --split-input-file | FileCheck %s
// The hoisted form plans and verifies.
// RUN: monarch-opt %s --monarch-hoist-collectives --monarch-plan-transfers --monarch-verify-plan --split-input-file | FileCheck %s --check-prefix=PLAN

// A data-parallel actor step on two ranks reducing its gradients in the
// order of its parameters: %g1 is produced last, so its all_reduce kept
// %g2's (and the loss's) waiting. Each now follows what it reads; %g2's
// passes %g1's computation and %g1's all_reduce (same group); the loss's,
// ready first, goes first.

// CHECK-LABEL: func.func private @step.worker.mesh.rank0(
// CHECK:         %[[L:.*]] = linalg.matmul ins(%arg0, %arg1
// CHECK-NEXT:    %[[RL:.*]] = monarch.all_reduce %[[L]] over ["gpus"] avg {plan.group = array<i64: 0, 1>}
// CHECK-NEXT:    %[[G2:.*]] = linalg.matmul ins(%arg1, %arg2
// CHECK-NEXT:    %[[R2:.*]] = monarch.all_reduce %[[G2]] over ["gpus"] avg
// CHECK-NEXT:    %[[G1:.*]] = linalg.matmul ins(%arg2, %arg0
// CHECK-NEXT:    %[[R1:.*]] = monarch.all_reduce %[[G1]] over ["gpus"] avg
// CHECK-NEXT:    return %[[R1]], %[[R2]], %[[RL]]
// CHECK-LABEL: func.func private @step.worker.mesh.rank1(
// CHECK:         linalg.matmul
// CHECK-NEXT:    monarch.all_reduce
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    monarch.all_reduce
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    monarch.all_reduce

// PLAN-LABEL:  monarch.rank_program rank 0
// PLAN:          monarch.collective all_reduce avg #monarch.buf<{{[0-9]+}}, tensor<4x4xf32>>
// PLAN:          monarch.collective all_reduce avg #monarch.buf<{{[0-9]+}}, tensor<4x4xf32>>
// PLAN:          monarch.collective all_reduce avg #monarch.buf<{{[0-9]+}}, tensor<4x4xf32>>

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @step.worker.mesh(tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.worker_for = @mesh, plan.ranks = [@step.worker.mesh.rank0, @step.worker.mesh.rank1]}
  func.func private @step.worker.mesh.rank0(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0, 1, 2>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %l = linalg.matmul ins(%arg0, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %g2 = linalg.matmul ins(%arg1, %arg2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %g1 = linalg.matmul ins(%arg2, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %r1 = monarch.all_reduce %g1 over ["gpus"] avg {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    %r2 = monarch.all_reduce %g2 over ["gpus"] avg {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    %rl = monarch.all_reduce %l over ["gpus"] avg {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    return %r1, %r2, %rl : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @step.worker.mesh.rank1(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0, 1, 2>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %l = linalg.matmul ins(%arg0, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %g2 = linalg.matmul ins(%arg1, %arg2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %g1 = linalg.matmul ins(%arg2, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %r1 = monarch.all_reduce %g1 over ["gpus"] avg {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    %r2 = monarch.all_reduce %g2 over ["gpus"] avg {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    %rl = monarch.all_reduce %l over ["gpus"] avg {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    return %r1, %r2, %rl : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Never past another group's collective: on a 2x2 mesh the all_reduce over
// "gpus" that is ready first stays after the earlier one over "hosts" (each
// rank enters its groups in the same order as before).

// CHECK-LABEL: func.func private @twod.worker.mesh.rank0(
// CHECK:         %[[A:.*]] = linalg.matmul ins(%arg0, %arg0
// CHECK-NEXT:    %[[B:.*]] = linalg.matmul ins(%arg1, %arg1
// CHECK-NEXT:    monarch.all_reduce %[[B]] over ["hosts"]
// CHECK-NEXT:    monarch.all_reduce %[[A]] over ["gpus"]

module {
  shard.grid @grid(shape = 2x2)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
  func.func private @twod.worker.mesh(tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.worker_for = @mesh, plan.ranks = [@twod.worker.mesh.rank0, @twod.worker.mesh.rank1, @twod.worker.mesh.rank2, @twod.worker.mesh.rank3]}
  func.func private @twod.worker.mesh.rank0(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %a = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rb = monarch.all_reduce %b over ["hosts"] sum {plan.group = array<i64: 0, 2>} : tensor<4x4xf32>
    %ra = monarch.all_reduce %a over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    return %ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @twod.worker.mesh.rank1(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %a = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rb = monarch.all_reduce %b over ["hosts"] sum {plan.group = array<i64: 1, 3>} : tensor<4x4xf32>
    %ra = monarch.all_reduce %a over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    return %ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @twod.worker.mesh.rank2(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 2 : i64, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %a = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rb = monarch.all_reduce %b over ["hosts"] sum {plan.group = array<i64: 0, 2>} : tensor<4x4xf32>
    %ra = monarch.all_reduce %a over ["gpus"] sum {plan.group = array<i64: 2, 3>} : tensor<4x4xf32>
    return %ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @twod.worker.mesh.rank3(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 3 : i64, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %a = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rb = monarch.all_reduce %b over ["hosts"] sum {plan.group = array<i64: 1, 3>} : tensor<4x4xf32>
    %ra = monarch.all_reduce %a over ["gpus"] sum {plan.group = array<i64: 2, 3>} : tensor<4x4xf32>
    return %ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Two members of a group that would permute its collectives differently
// (rank 1 computes its two inputs in the other order) leave the worker
// program as it is: their k-th collectives must still match.

// CHECK-LABEL: func.func private @odd.worker.mesh.rank0(
// CHECK:         %[[A:.*]] = linalg.matmul
// CHECK-NEXT:    %[[B:.*]] = linalg.matmul
// CHECK-NEXT:    monarch.all_reduce %[[B]]
// CHECK-NEXT:    monarch.all_reduce %[[A]]
// CHECK-LABEL: func.func private @odd.worker.mesh.rank1(
// CHECK:         %[[C:.*]] = linalg.matmul
// CHECK-NEXT:    %[[D:.*]] = linalg.matmul
// CHECK-NEXT:    monarch.all_reduce %[[C]]
// CHECK-NEXT:    monarch.all_reduce %[[D]]

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func private @odd.worker.mesh(tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.worker_for = @mesh, plan.ranks = [@odd.worker.mesh.rank0, @odd.worker.mesh.rank1]}
  func.func private @odd.worker.mesh.rank0(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %a = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rb = monarch.all_reduce %b over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    %ra = monarch.all_reduce %a over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    return %ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @odd.worker.mesh.rank1(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 1 : i64, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %c = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %d = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rc = monarch.all_reduce %c over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    %rd = monarch.all_reduce %d over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    return %rc, %rd : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Class functions (monarch-specialize-ranks classes=1): the members of a
// group must agree member by member. Rank 0's function also stands for rank
// 1, rank 3's for rank 2; the first ranks' groups over hosts ([0, 2] and
// [1, 3]) differ, but rank 1 is in rank 3's group and rank 2 in rank 0's,
// and the two functions would permute their collectives differently: left
// as they are.

// CHECK-LABEL: func.func private @cls.worker.mesh.rank0(
// CHECK:         %[[A:.*]] = linalg.matmul
// CHECK-NEXT:    %[[B:.*]] = linalg.matmul
// CHECK-NEXT:    monarch.all_reduce %[[B]]
// CHECK-NEXT:    monarch.all_reduce %[[A]]
// CHECK-LABEL: func.func private @cls.worker.mesh.rank3(
// CHECK:         %[[C:.*]] = linalg.matmul
// CHECK-NEXT:    %[[D:.*]] = linalg.matmul
// CHECK-NEXT:    monarch.all_reduce %[[C]]
// CHECK-NEXT:    monarch.all_reduce %[[D]]

module {
  shard.grid @grid(shape = 2x2)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
  func.func private @cls.worker.mesh(tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.worker_for = @mesh, plan.ranks = [@cls.worker.mesh.rank0, @cls.worker.mesh.rank3]}
  func.func private @cls.worker.mesh.rank0(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 0 : i64, plan.members = array<i64: 0, 1>, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %a = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rb = monarch.all_reduce %b over ["hosts"] sum {plan.group = array<i64: 0, 2>, plan.group_mesh = @mesh} : tensor<4x4xf32>
    %ra = monarch.all_reduce %a over ["hosts"] sum {plan.group = array<i64: 0, 2>, plan.group_mesh = @mesh} : tensor<4x4xf32>
    return %ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @cls.worker.mesh.rank3(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {monarch.rank = 3 : i64, plan.members = array<i64: 3, 2>, plan.outputs = array<i64: 0, 1>, plan.states = []} {
    %e = tensor.empty() : tensor<4x4xf32>
    %c = linalg.matmul ins(%arg0, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %d = linalg.matmul ins(%arg1, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %rc = monarch.all_reduce %c over ["hosts"] sum {plan.group = array<i64: 1, 3>, plan.group_mesh = @mesh} : tensor<4x4xf32>
    %rd = monarch.all_reduce %d over ["hosts"] sum {plan.group = array<i64: 1, 3>, plan.group_mesh = @mesh} : tensor<4x4xf32>
    return %rc, %rd : tensor<4x4xf32>, tensor<4x4xf32>
  }
}
