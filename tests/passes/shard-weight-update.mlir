// RUN: monarch-opt %s --monarch-shard-weight-update=min-bytes=0 --split-input-file | FileCheck %s
// The result verifies and the ranks specialise and plan from it.
// RUN: monarch-opt %s --monarch-shard-weight-update=min-bytes=0 --monarch-specialize-ranks --monarch-plan-transfers --monarch-verify-plan --split-input-file | FileCheck %s --check-prefix=PLAN
// Under the default min-bytes (256 KiB) these small gradients stay
// all_reduces.
// RUN: monarch-opt %s --monarch-shard-weight-update --split-input-file | FileCheck %s --check-prefix=SMALL

// Plain SGD in actor code on 2 ranks: the averaged gradient only feeds
// `w - lr * g`, whose other input is replicated state; the update runs on
// this rank's 2 of the 4 rows between a reduce_scatter and an all_gather.

// CHECK-LABEL: monarch.actor_class @sgd
// CHECK:         %[[W:.*]] = state_get @w : tensor<4x8xf32>
// CHECK:         %[[RS:.*]] = reduce_scatter %{{.*}} over ["gpus"] axis 0 avg : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[I:.*]] = process_index over ["gpus"] : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.muli %[[I]], %[[C]] : index
// CHECK-NOT:     all_reduce
// CHECK:         %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[RS]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2x8xf32>)
// CHECK:           arith.mulf
// CHECK:         %[[ROWS:.*]] = tensor.extract_slice %[[W]][%[[FIRST]], 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
// CHECK:         %[[NEW:.*]] = linalg.generic {{.*}} ins(%[[ROWS]], %[[SCALED]] : tensor<2x8xf32>, tensor<2x8xf32>)
// CHECK:           arith.subf
// CHECK:         %[[FULL:.*]] = all_gather %[[NEW]] over ["gpus"] axis 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    state_set @w = %[[FULL]] : tensor<4x8xf32>

// PLAN-LABEL:  monarch.plan @sgd.worker.mesh
// PLAN:          monarch.rank_program rank 0
// PLAN:          monarch.collective reduce_scatter avg
// PLAN:          monarch.collective all_gather
// PLAN:          monarch.rank_program rank 1

// SMALL-LABEL: monarch.actor_class @sgd
// SMALL:         all_reduce %{{.*}} over ["gpus"] avg : tensor<4x8xf32>
// SMALL-NOT:     reduce_scatter
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @sgd {
    monarch.state @w : tensor<4x8xf32>
    monarch.endpoint @step(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}, %d: tensor<2x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
      %w = state_get @w : tensor<4x8xf32>
      %cst = arith.constant 0.000000e+00 : f32
      %lr = arith.constant 1.000000e-01 : f32
      %e = tensor.empty() : tensor<4x2xf32>
      %xt = linalg.transpose ins(%x : tensor<2x4xf32>) outs(%e : tensor<4x2xf32>) permutation = [1, 0]
      %z = tensor.empty() : tensor<4x8xf32>
      %zf = linalg.fill ins(%cst : f32) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
      %p = linalg.matmul ins(%xt, %d : tensor<4x2xf32>, tensor<2x8xf32>) outs(%zf : tensor<4x8xf32>) -> tensor<4x8xf32>
      %g = all_reduce %p over ["gpus"] avg : tensor<4x8xf32>
      %e1 = tensor.empty() : tensor<4x8xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.mulf %in, %lr : f32
        linalg.yield %m : f32
      } -> tensor<4x8xf32>
      %e2 = tensor.empty() : tensor<4x8xf32>
      %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %m = arith.subf %a, %b : f32
        linalg.yield %m : f32
      } -> tensor<4x8xf32>
      state_set @w = %n : tensor<4x8xf32>
      return
    }
  }
  monarch.actor_mesh @sgd.mesh = @sgd on @mesh
  func.func @sgd.worker.mesh(%x: tensor<4x4xf32>, %d: tensor<4x8xf32>) attributes {monarch.worker_for = @mesh} {
    monarch.broadcast @sgd.mesh::@step(%x, %d) : tensor<4x4xf32>, tensor<4x8xf32>
    return
  }
}

// -----

// Left alone: the update reads the rank's own shard (not replicated) or a
// row of the rank's own broadcast over the rows (each rank's rows would come
// from a different row), the
// state is updated with a rank's own data elsewhere (so it is not
// replicated either), two values of the chain are used outside it (SGD
// with momentum: two all_gathers would move more than the all_reduce), and
// a leading extent the group does not divide.

// CHECK-LABEL: monarch.actor_class @left
// CHECK-NOT:     reduce_scatter
// CHECK-COUNT-5: all_reduce
// CHECK-NOT:     reduce_scatter
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @left {
    monarch.state @w : tensor<4x8xf32>
    monarch.state @v : tensor<4x8xf32>
    monarch.state @m : tensor<4x8xf32>
    monarch.state @b : tensor<4x8xf32>
    monarch.state @odd : tensor<3x8xf32>
    monarch.endpoint @step(%p: tensor<4x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}, %q: tensor<3x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
      %g = all_reduce %p over ["gpus"] avg : tensor<4x8xf32>
      // w + p (p is this rank's own).
      %e1 = tensor.empty() : tensor<4x8xf32>
      %n1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g, %p : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      state_set @w = %n1 : tensor<4x8xf32>
      // v - g, where v was set from p below.
      %g2 = all_reduce %p over ["gpus"] sum : tensor<4x8xf32>
      %v = state_get @v : tensor<4x8xf32>
      %e2 = tensor.empty() : tensor<4x8xf32>
      %n2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v, %g2 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.subf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      state_set @b = %n2 : tensor<4x8xf32>
      state_set @v = %p : tensor<4x8xf32>
      // Momentum: m' = m + g, w' = w - m': two values leave the chain.
      %g3 = all_reduce %p over ["gpus"] avg : tensor<4x8xf32>
      %m = state_get @m : tensor<4x8xf32>
      %e3 = tensor.empty() : tensor<4x8xf32>
      %m2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %g3 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      %w = state_get @w : tensor<4x8xf32>
      %e4 = tensor.empty() : tensor<4x8xf32>
      %w2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w, %m2 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e4 : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.subf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      state_set @m = %m2 : tensor<4x8xf32>
      state_set @w = %w2 : tensor<4x8xf32>
      // 3 rows over 2 ranks.
      %g4 = all_reduce %q over ["gpus"] avg : tensor<3x8xf32>
      %o = state_get @odd : tensor<3x8xf32>
      %e5 = tensor.empty() : tensor<3x8xf32>
      %o2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%o, %g4 : tensor<3x8xf32>, tensor<3x8xf32>) outs(%e5 : tensor<3x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.subf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<3x8xf32>
      state_set @odd = %o2 : tensor<3x8xf32>
      // g + (the rank's own column sums of p), broadcast over the rows.
      %g5 = all_reduce %p over ["gpus"] avg : tensor<4x8xf32>
      %z = arith.constant 0.000000e+00 : f32
      %e6 = tensor.empty() : tensor<8xf32>
      %zr = linalg.fill ins(%z : f32) outs(%e6 : tensor<8xf32>) -> tensor<8xf32>
      %row = linalg.reduce ins(%p : tensor<4x8xf32>) outs(%zr : tensor<8xf32>) dimensions = [0]
        (%a: f32, %acc: f32) {
          %s = arith.addf %a, %acc : f32
          linalg.yield %s : f32
        }
      %e7 = tensor.empty() : tensor<4x8xf32>
      %n5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g5, %row : tensor<4x8xf32>, tensor<8xf32>) outs(%e7 : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      state_set @b = %n5 : tensor<4x8xf32>
      return
    }
  }
  monarch.actor_mesh @left.mesh = @left on @mesh
  func.func @left.worker.mesh(%p: tensor<8x8xf32>, %q: tensor<6x8xf32>) attributes {monarch.worker_for = @mesh} {
    monarch.broadcast @left.mesh::@step(%p, %q) : tensor<8x8xf32>, tensor<6x8xf32>
    return
  }
}

// -----

// A global-semantics step whose new weight is returned, and kept on the
// workers (`donate_argnums`): the all_gather writes the kept value (the
// worker binds its output to the resident bytes, as a kernel's).

// CHECK-LABEL: monarch.actor_class @kept
// CHECK:         reduce_scatter %{{.*}} over ["gpus"] axis 0 sum
// CHECK:         %[[F:.*]] = all_gather
// CHECK-NEXT:    return %[[F]] : tensor<4x8xf32>
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @kept {
    monarch.endpoint @run(%p: tensor<4x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %g = all_reduce %p over ["gpus"] sum : tensor<4x8xf32>
      %e = tensor.empty() : tensor<4x8xf32>
      %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.subf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      return %n : tensor<4x8xf32>
    }
  }
  monarch.actor_mesh @kept.mesh = @kept on @mesh
  func.func @kept.worker.mesh(%p: tensor<8x8xf32>, %w: tensor<4x8xf32>) -> (tensor<4x8xf32> {monarch.keep}) attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @kept.mesh::@run(%p, %w) : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
