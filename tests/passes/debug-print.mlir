// RUN: monarch-opt %s --monarch-to-partitioned | FileCheck %s --check-prefix=PART
// RUN: monarch-opt %s --monarch-compile-to-planned | FileCheck %s
// RUN: monarch-opt %s --monarch-compile-to-planned --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
//
// mc.debug_print in a compiled function's global code (traced from
//   y = mc.relu(mc.shard(x, gpus=0) @ w)
//   mc.debug_print("rows {0} total {1:.3f}", y, y.sum())
// ): the print is a segment of its own whose endpoint takes the values
// whole (the caller gathers the row-split y; the sum is reduced), and
// becomes a print_buffers host instruction after the waits for the
// collectives that produced its buffers, on every rank (the rows' gather
// first: they are ready before their sum, monarch-hoist-collectives).

// PART:      monarch.endpoint @run(%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<f32>) {
// PART-NEXT:   debug_print "rows {0} total {1:.3f}" on @mesh %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<f32>
// PART:      monarch.call @step.mesh.1::@run(%{{.*}}#0, %{{.*}}#1) : (tensor<4x3xf32>, tensor<f32>) -> ()

// CHECK:       monarch.rank_program rank 0
// CHECK:         %[[ROWS:.*]] = monarch.collective all_gather #monarch.buf<{{[0-9]+}}, tensor<2x3xf32>> -> #monarch.buf<[[R:[0-9]+]], tensor<4x3xf32>>
// CHECK:         %[[SUM:.*]] = monarch.collective all_reduce sum #monarch.buf<{{[0-9]+}}, tensor<f32>> -> #monarch.buf<[[S:[0-9]+]], tensor<f32>>
// CHECK:         monarch.wait %[[ROWS]], %[[SUM]]
// CHECK:         monarch.print_buffers "rows {0} total {1:.3f}" [#monarch.buf<[[R]], tensor<4x3xf32>>, #monarch.buf<[[S]], tensor<f32>>]
// CHECK:       monarch.rank_program rank 1
// CHECK:         monarch.print_buffers "rows {0} total {1:.3f}"

// LOC: #[[L:loc[0-9]+]] = loc("model.py":8:5)
// LOC: monarch.print_buffers {{.*}} loc(#[[L]])

module {
  shard.grid @mesh_grid(shape = 1x2)
  monarch.proc_mesh @mesh(hosts = 1, gpus = 2) grid @mesh_grid
  func.func @step(%arg0: tensor<4x2xf32>, %arg1: tensor<2x3xf32>) -> tensor<3xf32> {
    %0 = monarch.feed %arg0 to @mesh : tensor<4x2xf32>
    %sharding = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<4x2xf32>
    %1 = monarch.feed %arg1 to @mesh : tensor<2x3xf32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<2x3xf32>
    %2 = tensor.empty() : tensor<4x3xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = linalg.matmul ins(%sharding_annotated, %sharding_annotated_1 : tensor<4x2xf32>, tensor<2x3xf32>) outs(%3 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %5 = tensor.empty() : tensor<4x3xf32>
    %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<4x3xf32>) outs(%5 : tensor<4x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_7 = arith.constant 0.000000e+00 : f32
      %12 = arith.maximumf %in, %cst_7 : f32
      linalg.yield %12 : f32
    } -> tensor<4x3xf32>
    %7 = tensor.empty() : tensor<f32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %8 = linalg.fill ins(%cst_2 : f32) outs(%7 : tensor<f32>) -> tensor<f32>
    %reduced = linalg.reduce ins(%6 : tensor<4x3xf32>) outs(%8 : tensor<f32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %12 = arith.addf %in, %init : f32
        linalg.yield %12 : f32
      }
    monarch.debug_print "rows {0} total {1:.3f}" on @mesh %6, %reduced : tensor<4x3xf32>, tensor<f32> loc("model.py":8:5)
    %9 = tensor.empty() : tensor<3xf32>
    %cst_3 = arith.constant 0.000000e+00 : f32
    %10 = linalg.fill ins(%cst_3 : f32) outs(%9 : tensor<3xf32>) -> tensor<3xf32>
    %reduced_4 = linalg.reduce ins(%6 : tensor<4x3xf32>) outs(%10 : tensor<3xf32>) dimensions = [0] 
      (%in: f32, %init: f32) {
        %12 = arith.addf %in, %init : f32
        linalg.yield %12 : f32
      }
    %sharding_5 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_6 = shard.shard %reduced_4 to %sharding_5 annotate_for_users : tensor<3xf32>
    %11 = monarch.fetch %sharding_annotated_6 from @mesh : tensor<3xf32>
    return %11 : tensor<3xf32>
  }
}
