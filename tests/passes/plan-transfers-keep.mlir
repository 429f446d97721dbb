// RUN: monarch-opt %s --monarch-partition --monarch-split-control-data | FileCheck %s --check-prefix=SPLIT
// RUN: monarch-opt %s --monarch-compile-to-planned | monarch-opt | FileCheck %s
//
// @mc.compile(mesh=mesh, donate_argnums=0) of
//   x = mc.shard(x, gpus=0); g = (x @ w).sum(axis=0); return w - 0.5 * g, g
// (traced, the first result's fetch marked `monarch.keep` by the tracer):
// the worker program's result carries the mark, and every rank holding the
// new w has a fetch_buffer of it: the rank that returns it a plain one, the
// other a `keep_only` one (kept when a call asks, never returned). The
// second result is not kept: fetched from one rank only.

// SPLIT: func.func @step.worker.mesh({{.*}}) -> (tensor<3x3xf32> {monarch.keep}, tensor<3xf32>)

// CHECK:      monarch.rank_program rank 0
// CHECK:        monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<3x3xf32>>{{$}}
// CHECK-NOT:    fetch_buffer 1
// CHECK:      monarch.rank_program rank 1
// CHECK:        monarch.fetch_buffer 0 from #monarch.buf<{{[0-9]+}}, tensor<3x3xf32>> keep_only
// CHECK-NEXT:   monarch.fetch_buffer 1 from #monarch.buf<{{[0-9]+}}, tensor<3xf32>>{{$}}

#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  shard.grid @mesh_grid(shape = 1x2)
  monarch.proc_mesh @mesh(hosts = 1, gpus = 2) grid @mesh_grid
  func.func @step(%arg0: tensor<3x3xf32>, %arg1: tensor<4x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>) {
    %0 = monarch.feed %arg1 to @mesh : tensor<4x3xf32>
    %sharding = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<4x3xf32>
    %1 = monarch.feed %arg0 to @mesh : tensor<3x3xf32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<3x3xf32>
    %2 = tensor.empty() : tensor<4x3xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = linalg.matmul ins(%sharding_annotated, %sharding_annotated_1 : tensor<4x3xf32>, tensor<3x3xf32>) outs(%3 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %5 = tensor.empty() : tensor<3xf32>
    %cst_2 = arith.constant 0.000000e+00 : f32
    %6 = linalg.fill ins(%cst_2 : f32) outs(%5 : tensor<3xf32>) -> tensor<3xf32>
    %reduced = linalg.reduce ins(%4 : tensor<4x3xf32>) outs(%6 : tensor<3xf32>) dimensions = [0] 
      (%in: f32, %init: f32) {
        %13 = arith.addf %in, %init : f32
        linalg.yield %13 : f32
      }
    %cst_3 = arith.constant 5.000000e-01 : f32
    %7 = tensor.empty() : tensor<3xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%reduced : tensor<3xf32>) outs(%7 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %13 = arith.mulf %cst_3, %in : f32
      linalg.yield %13 : f32
    } -> tensor<3xf32>
    %9 = tensor.empty() : tensor<3x3xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_1, %8 : tensor<3x3xf32>, tensor<3xf32>) outs(%9 : tensor<3x3xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %13 = arith.subf %in, %in_4 : f32
      linalg.yield %13 : f32
    } -> tensor<3x3xf32>
    %11 = monarch.fetch %10 from @mesh {monarch.keep} : tensor<3x3xf32>
    %12 = monarch.fetch %reduced from @mesh : tensor<3xf32>
    return %11, %12 : tensor<3x3xf32>, tensor<3xf32>
  }
}

