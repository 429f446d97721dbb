// RUN: monarch-opt %s --monarch-partition="engine=upstream remarks=1" --split-input-file --verify-diagnostics | FileCheck %s
// RUN: monarch-opt %s --monarch-partition --split-input-file 2>/dev/null | monarch-opt --split-input-file

// Non-splat constants, in the form the tracer emits them: the arange of a
// gather's other coordinate (`wte[tok]`), the causal mask of
// `mc.causal_mask`, the class arange of the one-hot in `mc.cross_entropy`.
// Upstream shard-partition has no rule for them (it fails the segment
// without a diagnostic, which ran all of it on whole values); they enter
// the scratch function as replicated arguments and come back as constants
// in the endpoint, so the batch stays split through the whole step: one
// all_reduce of the loss, no gather, no slice of a whole value.
// Traced from a compiled function on mc.mesh(hosts=1, gpus=2):
//   tok, lab = mc.shard(tok, gpus=0), mc.shard(lab, gpus=0)
//   x = wte[tok]; s = x @ x.transpose((0, 2, 1))
//   return mc.cross_entropy(mc.where(mc.causal_mask(T), s, -1e9), lab)

// CHECK-LABEL: monarch.actor_class @step.mesh.0.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<2x4xi32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %{{.*}}: tensor<2x4xi32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %{{.*}}: tensor<8x4xf32>) -> tensor<f32>
// CHECK-DAG:       arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
// CHECK-DAG:       arith.constant dense<{{\[\[}}1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]> : tensor<4x4xi32>
// CHECK-NOT:       tensor<4x4x4xf32>
// CHECK-NOT:       all_gather
// CHECK-NOT:       extract_slice
// CHECK:           all_reduce %{{.*}} over ["gpus"] sum : tensor<f32>
// CHECK-NOT:       all_reduce
// CHECK:       func.func @step
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1, d2) -> (d1, d2)>
module {
  shard.grid @mesh_grid(shape = 1x2)
  monarch.proc_mesh @mesh(hosts = 1, gpus = 2) grid @mesh_grid
  // expected-remark@+1 {{monarch-partition: @step: 25 ops split, 0 retried with replicated inputs, 0 on whole values (1 segment)}}
  func.func @step(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xi32>, %arg2: tensor<4x4xi32>) -> tensor<f32> {
    %0 = monarch.feed %arg1 to @mesh : tensor<4x4xi32>
    %sharding = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    // expected-remark@+1 {{monarch-partition: 25 ops on @mesh partitioned as annotated}}
    %sharding_annotated = shard.shard %0 to %sharding : tensor<4x4xi32>
    %1 = monarch.feed %arg2 to @mesh : tensor<4x4xi32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<4x4xi32>
    %2 = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
    %sharding_2 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_3 = shard.shard %2 to %sharding_2 : tensor<8x4xf32>
    %cst = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
    %3 = tensor.empty() : tensor<4x4x4xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated, %cst : tensor<4x4xi32>, tensor<4xi32>) outs(%3 : tensor<4x4x4xf32>) {
    ^bb0(%in: i32, %in_22: i32, %out: f32):
      %50 = arith.index_cast %in : i32 to index
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c7 = arith.constant 7 : index
      %51 = arith.cmpi slt, %50, %c0 : index
      %52 = arith.addi %50, %c8 : index
      %53 = arith.select %51, %52, %50 : index
      %54 = arith.maxsi %53, %c0 : index
      %55 = arith.minsi %54, %c7 : index
      %56 = arith.index_cast %in_22 : i32 to index
      %extracted = tensor.extract %sharding_annotated_3[%55, %56] : tensor<8x4xf32>
      linalg.yield %extracted : f32
    } -> tensor<4x4x4xf32>
    %5 = tensor.empty() : tensor<4x4x4xf32>
    %transposed = linalg.transpose ins(%4 : tensor<4x4x4xf32>) outs(%5 : tensor<4x4x4xf32>) permutation = [0, 2, 1] 
    %6 = tensor.empty() : tensor<4x4x4xf32>
    %cst_4 = arith.constant 0.000000e+00 : f32
    %7 = linalg.fill ins(%cst_4 : f32) outs(%6 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %8 = linalg.batch_matmul ins(%4, %transposed : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%7 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %cst_5 = arith.constant dense<[[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]> : tensor<4x4xi32>
    %c0_i32 = arith.constant 0 : i32
    %9 = tensor.empty() : tensor<4x4xi1>
    %10 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%cst_5 : tensor<4x4xi32>) outs(%9 : tensor<4x4xi1>) {
    ^bb0(%in: i32, %out: i1):
      %50 = arith.cmpi ne, %in, %c0_i32 : i32
      linalg.yield %50 : i1
    } -> tensor<4x4xi1>
    %cst_6 = arith.constant -1.000000e+09 : f32
    %11 = tensor.empty() : tensor<4x4x4xf32>
    %12 = linalg.generic {indexing_maps = [#map4, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10, %8 : tensor<4x4xi1>, tensor<4x4x4xf32>) outs(%11 : tensor<4x4x4xf32>) {
    ^bb0(%in: i1, %in_22: f32, %out: f32):
      %50 = arith.select %in, %in_22, %cst_6 : f32
      linalg.yield %50 : f32
    } -> tensor<4x4x4xf32>
    %13 = tensor.empty() : tensor<4x4xf32>
    %cst_7 = arith.constant 0xFF800000 : f32
    %14 = linalg.fill ins(%cst_7 : f32) outs(%13 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %reduced = linalg.reduce ins(%12 : tensor<4x4x4xf32>) outs(%14 : tensor<4x4xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %50 = arith.maximumf %in, %init : f32
        linalg.yield %50 : f32
      }
    %15 = tensor.empty() : tensor<4x4x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced : tensor<4x4xf32>) outs(%15 : tensor<4x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x4x1xf32>
    %17 = tensor.empty() : tensor<4x4xf32>
    %cst_8 = arith.constant -0.000000e+00 : f32
    %18 = linalg.fill ins(%cst_8 : f32) outs(%17 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %reduced_9 = linalg.reduce ins(%16 : tensor<4x4x1xf32>) outs(%18 : tensor<4x4xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %50 = arith.addf %in, %init : f32
        linalg.yield %50 : f32
      }
    %19 = tensor.empty() : tensor<4x4x4xf32>
    %20 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%12, %reduced_9 : tensor<4x4x4xf32>, tensor<4x4xf32>) outs(%19 : tensor<4x4x4xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %50 = arith.subf %in, %in_22 : f32
      linalg.yield %50 : f32
    } -> tensor<4x4x4xf32>
    %21 = tensor.empty() : tensor<4x4x4xf32>
    %22 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20 : tensor<4x4x4xf32>) outs(%21 : tensor<4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %50 = math.exp %in : f32
      linalg.yield %50 : f32
    } -> tensor<4x4x4xf32>
    %23 = tensor.empty() : tensor<4x4xf32>
    %cst_10 = arith.constant 0.000000e+00 : f32
    %24 = linalg.fill ins(%cst_10 : f32) outs(%23 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %reduced_11 = linalg.reduce ins(%22 : tensor<4x4x4xf32>) outs(%24 : tensor<4x4xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %50 = arith.addf %in, %init : f32
        linalg.yield %50 : f32
      }
    %25 = tensor.empty() : tensor<4x4x1xf32>
    %26 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_11 : tensor<4x4xf32>) outs(%25 : tensor<4x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x4x1xf32>
    %27 = tensor.empty() : tensor<4x4x1xf32>
    %28 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%26 : tensor<4x4x1xf32>) outs(%27 : tensor<4x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %50 = math.log %in : f32
      linalg.yield %50 : f32
    } -> tensor<4x4x1xf32>
    %29 = tensor.empty() : tensor<4x4xf32>
    %cst_12 = arith.constant -0.000000e+00 : f32
    %30 = linalg.fill ins(%cst_12 : f32) outs(%29 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %reduced_13 = linalg.reduce ins(%28 : tensor<4x4x1xf32>) outs(%30 : tensor<4x4xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %50 = arith.addf %in, %init : f32
        linalg.yield %50 : f32
      }
    %31 = tensor.empty() : tensor<4x4x4xf32>
    %32 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %reduced_13 : tensor<4x4x4xf32>, tensor<4x4xf32>) outs(%31 : tensor<4x4x4xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %50 = arith.subf %in, %in_22 : f32
      linalg.yield %50 : f32
    } -> tensor<4x4x4xf32>
    %cst_14 = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
    %33 = tensor.empty() : tensor<4x4x1xi32>
    %34 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_1 : tensor<4x4xi32>) outs(%33 : tensor<4x4x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<4x4x1xi32>
    %35 = tensor.empty() : tensor<4x4xi32>
    %c0_i32_15 = arith.constant 0 : i32
    %36 = linalg.fill ins(%c0_i32_15 : i32) outs(%35 : tensor<4x4xi32>) -> tensor<4x4xi32>
    %reduced_16 = linalg.reduce ins(%34 : tensor<4x4x1xi32>) outs(%36 : tensor<4x4xi32>) dimensions = [2] 
      (%in: i32, %init: i32) {
        %50 = arith.addi %in, %init : i32
        linalg.yield %50 : i32
      }
    %37 = tensor.empty() : tensor<4x4x4xi1>
    %38 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_16, %cst_14 : tensor<4x4xi32>, tensor<4xi32>) outs(%37 : tensor<4x4x4xi1>) {
    ^bb0(%in: i32, %in_22: i32, %out: i1):
      %50 = arith.cmpi eq, %in, %in_22 : i32
      linalg.yield %50 : i1
    } -> tensor<4x4x4xi1>
    %39 = tensor.empty() : tensor<4x4x4xf32>
    %40 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%38 : tensor<4x4x4xi1>) outs(%39 : tensor<4x4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %50 = arith.uitofp %in : i1 to f32
      linalg.yield %50 : f32
    } -> tensor<4x4x4xf32>
    %41 = tensor.empty() : tensor<4x4x4xf32>
    %42 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%32, %40 : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%41 : tensor<4x4x4xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %50 = arith.mulf %in, %in_22 : f32
      linalg.yield %50 : f32
    } -> tensor<4x4x4xf32>
    %43 = tensor.empty() : tensor<4x4xf32>
    %cst_17 = arith.constant 0.000000e+00 : f32
    %44 = linalg.fill ins(%cst_17 : f32) outs(%43 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %reduced_18 = linalg.reduce ins(%42 : tensor<4x4x4xf32>) outs(%44 : tensor<4x4xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %50 = arith.addf %in, %init : f32
        linalg.yield %50 : f32
      }
    %cst_19 = arith.constant -1.000000e+00 : f32
    %45 = tensor.empty() : tensor<4x4xf32>
    %46 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%reduced_18 : tensor<4x4xf32>) outs(%45 : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %50 = arith.mulf %in, %cst_19 : f32
      linalg.yield %50 : f32
    } -> tensor<4x4xf32>
    %47 = tensor.empty() : tensor<f32>
    %cst_20 = arith.constant 0.000000e+00 : f32
    %48 = linalg.fill ins(%cst_20 : f32) outs(%47 : tensor<f32>) -> tensor<f32>
    %reduced_21 = linalg.reduce ins(%46 : tensor<4x4xf32>) outs(%48 : tensor<f32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %cst_22 = arith.constant 6.250000e-02 : f32
        %50 = arith.mulf %in, %cst_22 : f32
        %51 = arith.addf %50, %init : f32
        linalg.yield %51 : f32
      }
    %49 = monarch.fetch %reduced_21 from @mesh : tensor<f32>
    return %49 : tensor<f32>
  }
}


// -----

// A constant indexed by a split loop: each rank reads its slice of it at
// its process index (an arange's slice keeps the global coordinates).

// CHECK-LABEL: monarch.actor_class @f.mesh.0.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> (tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>})
// CHECK:           %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK:           %[[I:.*]] = process_index over ["gpus"] : index
// CHECK:           %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:           tensor.extract_slice %[[C]][%[[OFF]]] [2] [1] : tensor<4xf32> to tensor<2xf32>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
// expected-remark@+1 {{monarch-partition: @f: 2 ops split, 0 retried with replicated inputs, 0 on whole values (1 segment)}}
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-remark@+1 {{monarch-partition: 2 ops on @mesh partitioned as annotated}}
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%xs, %c : tensor<4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %r = monarch.fetch %y from @mesh : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
