// RUN: monarch-opt %s --monarch-partition | FileCheck %s --check-prefix=TP --implicit-check-not='over ["gpus"]' --implicit-check-not=all_gather --implicit-check-not=all_to_all
// RUN: monarch-opt %s --monarch-partition | FileCheck %s --check-prefix=DP --implicit-check-not='over ["hosts"' --implicit-check-not=all_gather

// One GPT block, trained as written in examples/python/gpt.py (layers=1,
// value_and_grad of the cross-entropy), on a 2x2 mesh: data parallel over
// "hosts", Megatron tensor parallel over "gpus" (wq, wk, wv and w1 split by
// columns, wo and w2 by rows). Traced by the Python frontend and printed
// without locations. The own partitioner (the default) gives the step
// Megatron's collectives:
//
// - over "gpus", four all_reduces: after the attention's output
//   projection and after the MLP in the forward pass, and in the backward
//   pass one for the input gradient of the MLP (du @ w1.T) and one for the
//   attention's (dq @ wq.T + dk @ wk.T + dv @ wv.T, partial sums added
//   before one reduction);
// - over "hosts", the data-parallel reductions of the 17 gradients and the
//   loss (two of them, of parameters every rank of a row uses whole, over
//   both mesh dimensions at once);
// - no all_gather and no all_to_all anywhere in the step.

// TP-COUNT-4: all_reduce {{.*}} over ["gpus"] sum

// DP-COUNT-18: all_reduce {{.*}} over ["hosts"{{.*}}] sum

#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1) -> (d1)>
#map6 = affine_map<(d0, d1) -> (d0, d1)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map10 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#map11 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#map12 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#map13 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map14 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map15 = affine_map<() -> ()>
#map16 = affine_map<(d0, d1) -> ()>
module {
  shard.grid @mesh_grid(shape = 2x2)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @mesh_grid
  func.func @grads(%arg0: tensor<32x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16xf32>, %arg4: tensor<16x16xf32>, %arg5: tensor<16x16xf32>, %arg6: tensor<16x16xf32>, %arg7: tensor<16x16xf32>, %arg8: tensor<16xf32>, %arg9: tensor<16xf32>, %arg10: tensor<16x64xf32>, %arg11: tensor<64xf32>, %arg12: tensor<64x16xf32>, %arg13: tensor<16xf32>, %arg14: tensor<16xf32>, %arg15: tensor<16xf32>, %arg16: tensor<16x32xf32>, %arg17: tensor<8x8xi32>, %arg18: tensor<8x8xi32>) -> (tensor<f32>, tensor<32x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x32xf32>) {
    %0 = monarch.feed %arg17 to @mesh : tensor<8x8xi32>
    %sharding = shard.sharding @mesh_grid split_axes = [[0]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<8x8xi32>
    %1 = monarch.feed %arg18 to @mesh : tensor<8x8xi32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[0]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<8x8xi32>
    %2 = monarch.feed %arg4 to @mesh : tensor<16x16xf32>
    %sharding_2 = shard.sharding @mesh_grid split_axes = [[], [1]] : !shard.sharding
    %sharding_annotated_3 = shard.shard %2 to %sharding_2 : tensor<16x16xf32>
    %3 = monarch.feed %arg5 to @mesh : tensor<16x16xf32>
    %sharding_4 = shard.sharding @mesh_grid split_axes = [[], [1]] : !shard.sharding
    %sharding_annotated_5 = shard.shard %3 to %sharding_4 : tensor<16x16xf32>
    %4 = monarch.feed %arg6 to @mesh : tensor<16x16xf32>
    %sharding_6 = shard.sharding @mesh_grid split_axes = [[], [1]] : !shard.sharding
    %sharding_annotated_7 = shard.shard %4 to %sharding_6 : tensor<16x16xf32>
    %5 = monarch.feed %arg10 to @mesh : tensor<16x64xf32>
    %sharding_8 = shard.sharding @mesh_grid split_axes = [[], [1]] : !shard.sharding
    %sharding_annotated_9 = shard.shard %5 to %sharding_8 : tensor<16x64xf32>
    %6 = monarch.feed %arg11 to @mesh : tensor<64xf32>
    %sharding_10 = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated_11 = shard.shard %6 to %sharding_10 : tensor<64xf32>
    %7 = monarch.feed %arg7 to @mesh : tensor<16x16xf32>
    %sharding_12 = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated_13 = shard.shard %7 to %sharding_12 : tensor<16x16xf32>
    %8 = monarch.feed %arg12 to @mesh : tensor<64x16xf32>
    %sharding_14 = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated_15 = shard.shard %8 to %sharding_14 : tensor<64x16xf32>
    %9 = monarch.feed %arg0 to @mesh : tensor<32x16xf32>
    %sharding_16 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_17 = shard.shard %9 to %sharding_16 : tensor<32x16xf32>
    %cst = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi32>
    %10 = tensor.empty() : tensor<8x8x16xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated, %cst : tensor<8x8xi32>, tensor<16xi32>) outs(%10 : tensor<8x8x16xf32>) {
    ^bb0(%in: i32, %in_304: i32, %out: f32):
      %644 = arith.index_cast %in : i32 to index
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c31 = arith.constant 31 : index
      %645 = arith.cmpi slt, %644, %c0 : index
      %646 = arith.addi %644, %c32 : index
      %647 = arith.select %645, %646, %644 : index
      %648 = arith.maxsi %647, %c0 : index
      %649 = arith.minsi %648, %c31 : index
      %650 = arith.index_cast %in_304 : i32 to index
      %extracted = tensor.extract %sharding_annotated_17[%649, %650] : tensor<32x16xf32>
      linalg.yield %extracted : f32
    } -> tensor<8x8x16xf32>
    %12 = monarch.feed %arg1 to @mesh : tensor<8x16xf32>
    %sharding_18 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_19 = shard.shard %12 to %sharding_18 : tensor<8x16xf32>
    %13 = tensor.empty() : tensor<8x8x16xf32>
    %14 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %sharding_annotated_19 : tensor<8x8x16xf32>, tensor<8x16xf32>) outs(%13 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_20 = arith.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7]]> : tensor<8x1xi32>
    %cst_21 = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi32>
    %15 = tensor.empty() : tensor<8xi32>
    %c0_i32 = arith.constant 0 : i32
    %16 = linalg.fill ins(%c0_i32 : i32) outs(%15 : tensor<8xi32>) -> tensor<8xi32>
    %reduced = linalg.reduce ins(%cst_20 : tensor<8x1xi32>) outs(%16 : tensor<8xi32>) dimensions = [1] 
      (%in: i32, %init: i32) {
        %644 = arith.addi %in, %init : i32
        linalg.yield %644 : i32
      }
    %17 = tensor.empty() : tensor<8xi32>
    %c0_i32_22 = arith.constant 0 : i32
    %18 = linalg.fill ins(%c0_i32_22 : i32) outs(%17 : tensor<8xi32>) -> tensor<8xi32>
    %reduced_23 = linalg.reduce ins(%cst_21 : tensor<1x8xi32>) outs(%18 : tensor<8xi32>) dimensions = [0] 
      (%in: i32, %init: i32) {
        %644 = arith.addi %in, %init : i32
        linalg.yield %644 : i32
      }
    %19 = tensor.empty() : tensor<8x8xi1>
    %20 = linalg.generic {indexing_maps = [#map4, #map5, #map6], iterator_types = ["parallel", "parallel"]} ins(%reduced, %reduced_23 : tensor<8xi32>, tensor<8xi32>) outs(%19 : tensor<8x8xi1>) {
    ^bb0(%in: i32, %in_304: i32, %out: i1):
      %644 = arith.cmpi sge, %in, %in_304 : i32
      linalg.yield %644 : i1
    } -> tensor<8x8xi1>
    %21 = tensor.empty() : tensor<8x8xf32>
    %cst_24 = arith.constant 0.000000e+00 : f32
    %22 = linalg.fill ins(%cst_24 : f32) outs(%21 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_25 = linalg.reduce ins(%14 : tensor<8x8x16xf32>) outs(%22 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 6.250000e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %23 = tensor.empty() : tensor<8x8x1xf32>
    %24 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_25 : tensor<8x8xf32>) outs(%23 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %25 = tensor.empty() : tensor<8x8xf32>
    %cst_26 = arith.constant -0.000000e+00 : f32
    %26 = linalg.fill ins(%cst_26 : f32) outs(%25 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_27 = linalg.reduce ins(%24 : tensor<8x8x1xf32>) outs(%26 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %27 = tensor.empty() : tensor<8x8x16xf32>
    %28 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%14, %reduced_27 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%27 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %29 = tensor.empty() : tensor<8x8x16xf32>
    %30 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28, %28 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%29 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %31 = tensor.empty() : tensor<8x8xf32>
    %cst_28 = arith.constant 0.000000e+00 : f32
    %32 = linalg.fill ins(%cst_28 : f32) outs(%31 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_29 = linalg.reduce ins(%30 : tensor<8x8x16xf32>) outs(%32 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 6.250000e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %33 = tensor.empty() : tensor<8x8x1xf32>
    %34 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_29 : tensor<8x8xf32>) outs(%33 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_30 = arith.constant 9.99999974E-6 : f32
    %35 = tensor.empty() : tensor<8x8x1xf32>
    %36 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%34 : tensor<8x8x1xf32>) outs(%35 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.addf %in, %cst_30 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %37 = tensor.empty() : tensor<8x8x1xf32>
    %38 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%36 : tensor<8x8x1xf32>) outs(%37 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = math.sqrt %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %39 = tensor.empty() : tensor<8x8xf32>
    %cst_31 = arith.constant -0.000000e+00 : f32
    %40 = linalg.fill ins(%cst_31 : f32) outs(%39 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_32 = linalg.reduce ins(%38 : tensor<8x8x1xf32>) outs(%40 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %41 = tensor.empty() : tensor<8x8x16xf32>
    %42 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28, %reduced_32 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%41 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %43 = monarch.feed %arg2 to @mesh : tensor<16xf32>
    %sharding_33 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_34 = shard.shard %43 to %sharding_33 : tensor<16xf32>
    %44 = tensor.empty() : tensor<8x8x16xf32>
    %45 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%42, %sharding_annotated_34 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%44 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %46 = monarch.feed %arg3 to @mesh : tensor<16xf32>
    %sharding_35 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_36 = shard.shard %46 to %sharding_35 : tensor<16xf32>
    %47 = tensor.empty() : tensor<8x8x16xf32>
    %48 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%45, %sharding_annotated_36 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%47 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %49 = tensor.empty() : tensor<8x8x16xf32>
    %cst_37 = arith.constant 0.000000e+00 : f32
    %50 = linalg.fill ins(%cst_37 : f32) outs(%49 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %51 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%48, %sharding_annotated_3 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%50 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %expanded = tensor.expand_shape %51 [[0], [1], [2, 3]] output_shape [8, 8, 2, 8] : tensor<8x8x16xf32> into tensor<8x8x2x8xf32>
    %52 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed = linalg.transpose ins(%expanded : tensor<8x8x2x8xf32>) outs(%52 : tensor<8x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %53 = tensor.empty() : tensor<8x8x16xf32>
    %cst_38 = arith.constant 0.000000e+00 : f32
    %54 = linalg.fill ins(%cst_38 : f32) outs(%53 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %55 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%48, %sharding_annotated_5 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%54 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %expanded_39 = tensor.expand_shape %55 [[0], [1], [2, 3]] output_shape [8, 8, 2, 8] : tensor<8x8x16xf32> into tensor<8x8x2x8xf32>
    %56 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_40 = linalg.transpose ins(%expanded_39 : tensor<8x8x2x8xf32>) outs(%56 : tensor<8x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %57 = tensor.empty() : tensor<8x8x16xf32>
    %cst_41 = arith.constant 0.000000e+00 : f32
    %58 = linalg.fill ins(%cst_41 : f32) outs(%57 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %59 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%48, %sharding_annotated_7 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%58 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %expanded_42 = tensor.expand_shape %59 [[0], [1], [2, 3]] output_shape [8, 8, 2, 8] : tensor<8x8x16xf32> into tensor<8x8x2x8xf32>
    %60 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_43 = linalg.transpose ins(%expanded_42 : tensor<8x8x2x8xf32>) outs(%60 : tensor<8x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %61 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_44 = linalg.transpose ins(%transposed_40 : tensor<8x2x8x8xf32>) outs(%61 : tensor<8x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %62 = tensor.empty() : tensor<8x2x8x8xf32>
    %cst_45 = arith.constant 0.000000e+00 : f32
    %63 = linalg.fill ins(%cst_45 : f32) outs(%62 : tensor<8x2x8x8xf32>) -> tensor<8x2x8x8xf32>
    %64 = linalg.generic {indexing_maps = [#map10, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_44 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%63 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %cst_46 = arith.constant 0.353553385 : f32
    %65 = tensor.empty() : tensor<8x2x8x8xf32>
    %66 = linalg.generic {indexing_maps = [#map13, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%64 : tensor<8x2x8x8xf32>) outs(%65 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_46 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %cst_47 = arith.constant -1.000000e+09 : f32
    %67 = tensor.empty() : tensor<8x2x8x8xf32>
    %68 = linalg.generic {indexing_maps = [#map14, #map13, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%20, %66 : tensor<8x8xi1>, tensor<8x2x8x8xf32>) outs(%67 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: i1, %in_304: f32, %out: f32):
      %644 = arith.select %in, %in_304, %cst_47 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %69 = tensor.empty() : tensor<8x2x8xf32>
    %cst_48 = arith.constant 0xFF800000 : f32
    %70 = linalg.fill ins(%cst_48 : f32) outs(%69 : tensor<8x2x8xf32>) -> tensor<8x2x8xf32>
    %reduced_49 = linalg.reduce ins(%68 : tensor<8x2x8x8xf32>) outs(%70 : tensor<8x2x8xf32>) dimensions = [3] 
      (%in: f32, %init: f32) {
        %644 = arith.maximumf %in, %init : f32
        linalg.yield %644 : f32
      }
    %71 = tensor.empty() : tensor<8x2x8x8xf32>
    %72 = linalg.generic {indexing_maps = [#map13, #map9, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%68, %reduced_49 : tensor<8x2x8x8xf32>, tensor<8x2x8xf32>) outs(%71 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      %645 = math.exp %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %73 = tensor.empty() : tensor<8x2x8xf32>
    %cst_50 = arith.constant 0.000000e+00 : f32
    %74 = linalg.fill ins(%cst_50 : f32) outs(%73 : tensor<8x2x8xf32>) -> tensor<8x2x8xf32>
    %reduced_51 = linalg.reduce ins(%72 : tensor<8x2x8x8xf32>) outs(%74 : tensor<8x2x8xf32>) dimensions = [3] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %75 = tensor.empty() : tensor<8x2x8x8xf32>
    %76 = linalg.generic {indexing_maps = [#map13, #map9, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%72, %reduced_51 : tensor<8x2x8x8xf32>, tensor<8x2x8xf32>) outs(%75 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %77 = tensor.empty() : tensor<8x2x8x8xf32>
    %cst_52 = arith.constant 0.000000e+00 : f32
    %78 = linalg.fill ins(%cst_52 : f32) outs(%77 : tensor<8x2x8x8xf32>) -> tensor<8x2x8x8xf32>
    %79 = linalg.generic {indexing_maps = [#map10, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%76, %transposed_43 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%78 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %80 = tensor.empty() : tensor<8x8x2x8xf32>
    %transposed_53 = linalg.transpose ins(%79 : tensor<8x2x8x8xf32>) outs(%80 : tensor<8x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed = tensor.collapse_shape %transposed_53 [[0], [1], [2, 3]] : tensor<8x8x2x8xf32> into tensor<8x8x16xf32>
    %81 = tensor.empty() : tensor<8x8x16xf32>
    %cst_54 = arith.constant 0.000000e+00 : f32
    %82 = linalg.fill ins(%cst_54 : f32) outs(%81 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %83 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%collapsed, %sharding_annotated_13 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%82 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %84 = tensor.empty() : tensor<8x8x16xf32>
    %85 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%14, %83 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%84 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %86 = tensor.empty() : tensor<8x8xf32>
    %cst_55 = arith.constant 0.000000e+00 : f32
    %87 = linalg.fill ins(%cst_55 : f32) outs(%86 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_56 = linalg.reduce ins(%85 : tensor<8x8x16xf32>) outs(%87 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 6.250000e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %88 = tensor.empty() : tensor<8x8x1xf32>
    %89 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_56 : tensor<8x8xf32>) outs(%88 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %90 = tensor.empty() : tensor<8x8xf32>
    %cst_57 = arith.constant -0.000000e+00 : f32
    %91 = linalg.fill ins(%cst_57 : f32) outs(%90 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_58 = linalg.reduce ins(%89 : tensor<8x8x1xf32>) outs(%91 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %92 = tensor.empty() : tensor<8x8x16xf32>
    %93 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%85, %reduced_58 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%92 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %94 = tensor.empty() : tensor<8x8x16xf32>
    %95 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%93, %93 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%94 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %96 = tensor.empty() : tensor<8x8xf32>
    %cst_59 = arith.constant 0.000000e+00 : f32
    %97 = linalg.fill ins(%cst_59 : f32) outs(%96 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_60 = linalg.reduce ins(%95 : tensor<8x8x16xf32>) outs(%97 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 6.250000e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %98 = tensor.empty() : tensor<8x8x1xf32>
    %99 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_60 : tensor<8x8xf32>) outs(%98 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_61 = arith.constant 9.99999974E-6 : f32
    %100 = tensor.empty() : tensor<8x8x1xf32>
    %101 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%99 : tensor<8x8x1xf32>) outs(%100 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.addf %in, %cst_61 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %102 = tensor.empty() : tensor<8x8x1xf32>
    %103 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%101 : tensor<8x8x1xf32>) outs(%102 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = math.sqrt %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %104 = tensor.empty() : tensor<8x8xf32>
    %cst_62 = arith.constant -0.000000e+00 : f32
    %105 = linalg.fill ins(%cst_62 : f32) outs(%104 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_63 = linalg.reduce ins(%103 : tensor<8x8x1xf32>) outs(%105 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %106 = tensor.empty() : tensor<8x8x16xf32>
    %107 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%93, %reduced_63 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%106 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %108 = monarch.feed %arg8 to @mesh : tensor<16xf32>
    %sharding_64 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_65 = shard.shard %108 to %sharding_64 : tensor<16xf32>
    %109 = tensor.empty() : tensor<8x8x16xf32>
    %110 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%107, %sharding_annotated_65 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%109 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %111 = monarch.feed %arg9 to @mesh : tensor<16xf32>
    %sharding_66 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_67 = shard.shard %111 to %sharding_66 : tensor<16xf32>
    %112 = tensor.empty() : tensor<8x8x16xf32>
    %113 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%110, %sharding_annotated_67 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%112 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %114 = tensor.empty() : tensor<8x8x64xf32>
    %cst_68 = arith.constant 0.000000e+00 : f32
    %115 = linalg.fill ins(%cst_68 : f32) outs(%114 : tensor<8x8x64xf32>) -> tensor<8x8x64xf32>
    %116 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%113, %sharding_annotated_9 : tensor<8x8x16xf32>, tensor<16x64xf32>) outs(%115 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x64xf32>
    %117 = tensor.empty() : tensor<8x8x64xf32>
    %118 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%116, %sharding_annotated_11 : tensor<8x8x64xf32>, tensor<64xf32>) outs(%117 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %119 = tensor.empty() : tensor<8x8x64xf32>
    %120 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118 : tensor<8x8x64xf32>) outs(%119 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %in : f32
      %645 = arith.mulf %644, %in : f32
      %cst_304 = arith.constant 4.471500e-02 : f32
      %646 = arith.mulf %cst_304, %645 : f32
      %647 = arith.addf %in, %646 : f32
      %cst_305 = arith.constant 0.797884583 : f32
      %648 = arith.mulf %cst_305, %647 : f32
      %649 = math.tanh %648 : f32
      %cst_306 = arith.constant 5.000000e-01 : f32
      %650 = arith.mulf %cst_306, %in : f32
      %cst_307 = arith.constant 1.000000e+00 : f32
      %651 = arith.addf %cst_307, %649 : f32
      %652 = arith.mulf %650, %651 : f32
      linalg.yield %652 : f32
    } -> tensor<8x8x64xf32>
    %121 = tensor.empty() : tensor<8x8x16xf32>
    %cst_69 = arith.constant 0.000000e+00 : f32
    %122 = linalg.fill ins(%cst_69 : f32) outs(%121 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %123 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%120, %sharding_annotated_15 : tensor<8x8x64xf32>, tensor<64x16xf32>) outs(%122 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %124 = tensor.empty() : tensor<8x8x16xf32>
    %125 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%85, %123 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%124 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %126 = monarch.feed %arg13 to @mesh : tensor<16xf32>
    %sharding_70 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_71 = shard.shard %126 to %sharding_70 : tensor<16xf32>
    %127 = tensor.empty() : tensor<8x8x16xf32>
    %128 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%125, %sharding_annotated_71 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%127 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %129 = tensor.empty() : tensor<8x8xf32>
    %cst_72 = arith.constant 0.000000e+00 : f32
    %130 = linalg.fill ins(%cst_72 : f32) outs(%129 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_73 = linalg.reduce ins(%128 : tensor<8x8x16xf32>) outs(%130 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 6.250000e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %131 = tensor.empty() : tensor<8x8x1xf32>
    %132 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_73 : tensor<8x8xf32>) outs(%131 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %133 = tensor.empty() : tensor<8x8xf32>
    %cst_74 = arith.constant -0.000000e+00 : f32
    %134 = linalg.fill ins(%cst_74 : f32) outs(%133 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_75 = linalg.reduce ins(%132 : tensor<8x8x1xf32>) outs(%134 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %135 = tensor.empty() : tensor<8x8x16xf32>
    %136 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%128, %reduced_75 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%135 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %137 = tensor.empty() : tensor<8x8x16xf32>
    %138 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%136, %136 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%137 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %139 = tensor.empty() : tensor<8x8xf32>
    %cst_76 = arith.constant 0.000000e+00 : f32
    %140 = linalg.fill ins(%cst_76 : f32) outs(%139 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_77 = linalg.reduce ins(%138 : tensor<8x8x16xf32>) outs(%140 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 6.250000e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %141 = tensor.empty() : tensor<8x8x1xf32>
    %142 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_77 : tensor<8x8xf32>) outs(%141 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_78 = arith.constant 9.99999974E-6 : f32
    %143 = tensor.empty() : tensor<8x8x1xf32>
    %144 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%142 : tensor<8x8x1xf32>) outs(%143 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.addf %in, %cst_78 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %145 = tensor.empty() : tensor<8x8x1xf32>
    %146 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%144 : tensor<8x8x1xf32>) outs(%145 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = math.sqrt %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %147 = tensor.empty() : tensor<8x8xf32>
    %cst_79 = arith.constant -0.000000e+00 : f32
    %148 = linalg.fill ins(%cst_79 : f32) outs(%147 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_80 = linalg.reduce ins(%146 : tensor<8x8x1xf32>) outs(%148 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %149 = tensor.empty() : tensor<8x8x16xf32>
    %150 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%136, %reduced_80 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%149 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %151 = monarch.feed %arg14 to @mesh : tensor<16xf32>
    %sharding_81 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_82 = shard.shard %151 to %sharding_81 : tensor<16xf32>
    %152 = tensor.empty() : tensor<8x8x16xf32>
    %153 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%150, %sharding_annotated_82 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%152 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %154 = monarch.feed %arg15 to @mesh : tensor<16xf32>
    %sharding_83 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_84 = shard.shard %154 to %sharding_83 : tensor<16xf32>
    %155 = tensor.empty() : tensor<8x8x16xf32>
    %156 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%153, %sharding_annotated_84 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%155 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %157 = monarch.feed %arg16 to @mesh : tensor<16x32xf32>
    %sharding_85 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_86 = shard.shard %157 to %sharding_85 : tensor<16x32xf32>
    %158 = tensor.empty() : tensor<8x8x32xf32>
    %cst_87 = arith.constant 0.000000e+00 : f32
    %159 = linalg.fill ins(%cst_87 : f32) outs(%158 : tensor<8x8x32xf32>) -> tensor<8x8x32xf32>
    %160 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%156, %sharding_annotated_86 : tensor<8x8x16xf32>, tensor<16x32xf32>) outs(%159 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x32xf32>
    %161 = tensor.empty() : tensor<8x8xf32>
    %cst_88 = arith.constant 0xFF800000 : f32
    %162 = linalg.fill ins(%cst_88 : f32) outs(%161 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_89 = linalg.reduce ins(%160 : tensor<8x8x32xf32>) outs(%162 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.maximumf %in, %init : f32
        linalg.yield %644 : f32
      }
    %163 = tensor.empty() : tensor<8x8x1xf32>
    %164 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_89 : tensor<8x8xf32>) outs(%163 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %165 = tensor.empty() : tensor<8x8xf32>
    %cst_90 = arith.constant -0.000000e+00 : f32
    %166 = linalg.fill ins(%cst_90 : f32) outs(%165 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_91 = linalg.reduce ins(%164 : tensor<8x8x1xf32>) outs(%166 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %167 = tensor.empty() : tensor<8x8x32xf32>
    %168 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%160, %reduced_91 : tensor<8x8x32xf32>, tensor<8x8xf32>) outs(%167 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %169 = tensor.empty() : tensor<8x8x32xf32>
    %170 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%168 : tensor<8x8x32xf32>) outs(%169 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = math.exp %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %171 = tensor.empty() : tensor<8x8xf32>
    %cst_92 = arith.constant 0.000000e+00 : f32
    %172 = linalg.fill ins(%cst_92 : f32) outs(%171 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_93 = linalg.reduce ins(%170 : tensor<8x8x32xf32>) outs(%172 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %173 = tensor.empty() : tensor<8x8x1xf32>
    %174 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_93 : tensor<8x8xf32>) outs(%173 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %175 = tensor.empty() : tensor<8x8x1xf32>
    %176 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%174 : tensor<8x8x1xf32>) outs(%175 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = math.log %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %177 = tensor.empty() : tensor<8x8xf32>
    %cst_94 = arith.constant -0.000000e+00 : f32
    %178 = linalg.fill ins(%cst_94 : f32) outs(%177 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_95 = linalg.reduce ins(%176 : tensor<8x8x1xf32>) outs(%178 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %179 = tensor.empty() : tensor<8x8x32xf32>
    %180 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%168, %reduced_95 : tensor<8x8x32xf32>, tensor<8x8xf32>) outs(%179 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %cst_96 = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi32>
    %181 = tensor.empty() : tensor<8x8x1xi32>
    %182 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_1 : tensor<8x8xi32>) outs(%181 : tensor<8x8x1xi32>) {
    ^bb0(%in: i32, %out: i32):
      linalg.yield %in : i32
    } -> tensor<8x8x1xi32>
    %183 = tensor.empty() : tensor<8x8xi32>
    %c0_i32_97 = arith.constant 0 : i32
    %184 = linalg.fill ins(%c0_i32_97 : i32) outs(%183 : tensor<8x8xi32>) -> tensor<8x8xi32>
    %reduced_98 = linalg.reduce ins(%182 : tensor<8x8x1xi32>) outs(%184 : tensor<8x8xi32>) dimensions = [2] 
      (%in: i32, %init: i32) {
        %644 = arith.addi %in, %init : i32
        linalg.yield %644 : i32
      }
    %185 = tensor.empty() : tensor<8x8x32xi1>
    %186 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_98, %cst_96 : tensor<8x8xi32>, tensor<32xi32>) outs(%185 : tensor<8x8x32xi1>) {
    ^bb0(%in: i32, %in_304: i32, %out: i1):
      %644 = arith.cmpi eq, %in, %in_304 : i32
      linalg.yield %644 : i1
    } -> tensor<8x8x32xi1>
    %187 = tensor.empty() : tensor<8x8x32xf32>
    %188 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%186 : tensor<8x8x32xi1>) outs(%187 : tensor<8x8x32xf32>) {
    ^bb0(%in: i1, %out: f32):
      %644 = arith.uitofp %in : i1 to f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %189 = tensor.empty() : tensor<8x8x32xf32>
    %190 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%180, %188 : tensor<8x8x32xf32>, tensor<8x8x32xf32>) outs(%189 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %191 = tensor.empty() : tensor<8x8xf32>
    %cst_99 = arith.constant 0.000000e+00 : f32
    %192 = linalg.fill ins(%cst_99 : f32) outs(%191 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_100 = linalg.reduce ins(%190 : tensor<8x8x32xf32>) outs(%192 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %cst_101 = arith.constant -1.000000e+00 : f32
    %193 = tensor.empty() : tensor<8x8xf32>
    %194 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%reduced_100 : tensor<8x8xf32>) outs(%193 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_101 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8xf32>
    %195 = tensor.empty() : tensor<f32>
    %cst_102 = arith.constant 0.000000e+00 : f32
    %196 = linalg.fill ins(%cst_102 : f32) outs(%195 : tensor<f32>) -> tensor<f32>
    %reduced_103 = linalg.reduce ins(%194 : tensor<8x8xf32>) outs(%196 : tensor<f32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %cst_304 = arith.constant 1.562500e-02 : f32
        %644 = arith.mulf %in, %cst_304 : f32
        %645 = arith.addf %644, %init : f32
        linalg.yield %645 : f32
      }
    %197 = tensor.empty() : tensor<i1>
    %198 = linalg.generic {indexing_maps = [#map15, #map15, #map15], iterator_types = []} ins(%reduced_103, %reduced_103 : tensor<f32>, tensor<f32>) outs(%197 : tensor<i1>) {
    ^bb0(%in: f32, %in_304: f32, %out: i1):
      %644 = arith.cmpf oeq, %in, %in_304 : f32
      linalg.yield %644 : i1
    } -> tensor<i1>
    %cst_104 = arith.constant 1.000000e+00 : f32
    %cst_105 = arith.constant 1.000000e+00 : f32
    %199 = tensor.empty() : tensor<f32>
    %200 = linalg.generic {indexing_maps = [#map15, #map15], iterator_types = []} ins(%198 : tensor<i1>) outs(%199 : tensor<f32>) {
    ^bb0(%in: i1, %out: f32):
      %644 = arith.select %in, %cst_104, %cst_105 : f32
      linalg.yield %644 : f32
    } -> tensor<f32>
    %201 = tensor.empty() : tensor<1x1xf32>
    %202 = linalg.generic {indexing_maps = [#map16, #map6], iterator_types = ["parallel", "parallel"]} ins(%200 : tensor<f32>) outs(%201 : tensor<1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1xf32>
    %cst_106 = arith.constant 6.400000e+01 : f32
    %203 = tensor.empty() : tensor<1x1xf32>
    %204 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%202 : tensor<1x1xf32>) outs(%203 : tensor<1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_106 : f32
      linalg.yield %644 : f32
    } -> tensor<1x1xf32>
    %cst_107 = arith.constant dense<0.000000e+00> : tensor<8x8xf32>
    %205 = tensor.empty() : tensor<f32>
    %cst_108 = arith.constant -0.000000e+00 : f32
    %206 = linalg.fill ins(%cst_108 : f32) outs(%205 : tensor<f32>) -> tensor<f32>
    %reduced_109 = linalg.reduce ins(%204 : tensor<1x1xf32>) outs(%206 : tensor<f32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %207 = tensor.empty() : tensor<8x8xf32>
    %208 = linalg.generic {indexing_maps = [#map16, #map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%reduced_109, %cst_107 : tensor<f32>, tensor<8x8xf32>) outs(%207 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8xf32>
    %209 = tensor.empty() : tensor<8x8xf32>
    %210 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%208 : tensor<8x8xf32>) outs(%209 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_101 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8xf32>
    %211 = tensor.empty() : tensor<8x8x1xf32>
    %212 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%210 : tensor<8x8xf32>) outs(%211 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_110 = arith.constant dense<0.000000e+00> : tensor<8x8x32xf32>
    %213 = tensor.empty() : tensor<8x8xf32>
    %cst_111 = arith.constant -0.000000e+00 : f32
    %214 = linalg.fill ins(%cst_111 : f32) outs(%213 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_112 = linalg.reduce ins(%212 : tensor<8x8x1xf32>) outs(%214 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %215 = tensor.empty() : tensor<8x8x32xf32>
    %216 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_112, %cst_110 : tensor<8x8xf32>, tensor<8x8x32xf32>) outs(%215 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %217 = tensor.empty() : tensor<8x8x32xf32>
    %218 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%216, %188 : tensor<8x8x32xf32>, tensor<8x8x32xf32>) outs(%217 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %cst_113 = arith.constant -1.000000e+00 : f32
    %219 = tensor.empty() : tensor<8x8x32xf32>
    %220 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%218 : tensor<8x8x32xf32>) outs(%219 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_113 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %221 = tensor.empty() : tensor<8x8xf32>
    %cst_114 = arith.constant 0.000000e+00 : f32
    %222 = linalg.fill ins(%cst_114 : f32) outs(%221 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_115 = linalg.reduce ins(%220 : tensor<8x8x32xf32>) outs(%222 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %223 = tensor.empty() : tensor<8x8x1xf32>
    %224 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_115 : tensor<8x8xf32>) outs(%223 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %225 = tensor.empty() : tensor<8x8x1xf32>
    %226 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%224, %174 : tensor<8x8x1xf32>, tensor<8x8x1xf32>) outs(%225 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_116 = arith.constant dense<0.000000e+00> : tensor<8x8x32xf32>
    %227 = tensor.empty() : tensor<8x8xf32>
    %cst_117 = arith.constant -0.000000e+00 : f32
    %228 = linalg.fill ins(%cst_117 : f32) outs(%227 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_118 = linalg.reduce ins(%226 : tensor<8x8x1xf32>) outs(%228 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %229 = tensor.empty() : tensor<8x8x32xf32>
    %230 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_118, %cst_116 : tensor<8x8xf32>, tensor<8x8x32xf32>) outs(%229 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %231 = tensor.empty() : tensor<8x8x32xf32>
    %232 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%230, %170 : tensor<8x8x32xf32>, tensor<8x8x32xf32>) outs(%231 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %233 = tensor.empty() : tensor<8x8x32xf32>
    %234 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%218, %232 : tensor<8x8x32xf32>, tensor<8x8x32xf32>) outs(%233 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %cst_119 = arith.constant -1.000000e+00 : f32
    %235 = tensor.empty() : tensor<8x8x32xf32>
    %236 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%234 : tensor<8x8x32xf32>) outs(%235 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_119 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %237 = tensor.empty() : tensor<8x8xf32>
    %cst_120 = arith.constant 0.000000e+00 : f32
    %238 = linalg.fill ins(%cst_120 : f32) outs(%237 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_121 = linalg.reduce ins(%236 : tensor<8x8x32xf32>) outs(%238 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %239 = tensor.empty() : tensor<8x8x1xf32>
    %240 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_121 : tensor<8x8xf32>) outs(%239 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %241 = tensor.empty() : tensor<8x8xf32>
    %cst_122 = arith.constant -0.000000e+00 : f32
    %242 = linalg.fill ins(%cst_122 : f32) outs(%241 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_123 = linalg.reduce ins(%164 : tensor<8x8x1xf32>) outs(%242 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %243 = tensor.empty() : tensor<8x8x32xi1>
    %244 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%160, %reduced_123 : tensor<8x8x32xf32>, tensor<8x8xf32>) outs(%243 : tensor<8x8x32xi1>) {
    ^bb0(%in: f32, %in_304: f32, %out: i1):
      %644 = arith.cmpf oeq, %in, %in_304 : f32
      linalg.yield %644 : i1
    } -> tensor<8x8x32xi1>
    %245 = tensor.empty() : tensor<8x8x32xf32>
    %246 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%244 : tensor<8x8x32xi1>) outs(%245 : tensor<8x8x32xf32>) {
    ^bb0(%in: i1, %out: f32):
      %644 = arith.uitofp %in : i1 to f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %247 = tensor.empty() : tensor<8x8xf32>
    %cst_124 = arith.constant 0.000000e+00 : f32
    %248 = linalg.fill ins(%cst_124 : f32) outs(%247 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_125 = linalg.reduce ins(%246 : tensor<8x8x32xf32>) outs(%248 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %249 = tensor.empty() : tensor<8x8x1xf32>
    %250 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_125 : tensor<8x8xf32>) outs(%249 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %251 = tensor.empty() : tensor<8x8x1xf32>
    %252 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%240, %250 : tensor<8x8x1xf32>, tensor<8x8x1xf32>) outs(%251 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %253 = tensor.empty() : tensor<8x8xf32>
    %cst_126 = arith.constant -0.000000e+00 : f32
    %254 = linalg.fill ins(%cst_126 : f32) outs(%253 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_127 = linalg.reduce ins(%252 : tensor<8x8x1xf32>) outs(%254 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %255 = tensor.empty() : tensor<8x8x32xf32>
    %256 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%246, %reduced_127 : tensor<8x8x32xf32>, tensor<8x8xf32>) outs(%255 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %257 = tensor.empty() : tensor<8x8x32xf32>
    %258 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%234, %256 : tensor<8x8x32xf32>, tensor<8x8x32xf32>) outs(%257 : tensor<8x8x32xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x32xf32>
    %259 = tensor.empty() : tensor<32x16xf32>
    %transposed_128 = linalg.transpose ins(%sharding_annotated_86 : tensor<16x32xf32>) outs(%259 : tensor<32x16xf32>) permutation = [1, 0] 
    %260 = tensor.empty() : tensor<8x8x16xf32>
    %cst_129 = arith.constant 0.000000e+00 : f32
    %261 = linalg.fill ins(%cst_129 : f32) outs(%260 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %262 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%258, %transposed_128 : tensor<8x8x32xf32>, tensor<32x16xf32>) outs(%261 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %collapsed_130 = tensor.collapse_shape %156 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %collapsed_131 = tensor.collapse_shape %258 [[0, 1], [2]] : tensor<8x8x32xf32> into tensor<64x32xf32>
    %263 = tensor.empty() : tensor<16x64xf32>
    %transposed_132 = linalg.transpose ins(%collapsed_130 : tensor<64x16xf32>) outs(%263 : tensor<16x64xf32>) permutation = [1, 0] 
    %264 = tensor.empty() : tensor<16x32xf32>
    %cst_133 = arith.constant 0.000000e+00 : f32
    %265 = linalg.fill ins(%cst_133 : f32) outs(%264 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %266 = linalg.matmul ins(%transposed_132, %collapsed_131 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%265 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %267 = tensor.empty() : tensor<16xf32>
    %cst_134 = arith.constant 0.000000e+00 : f32
    %268 = linalg.fill ins(%cst_134 : f32) outs(%267 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_135 = linalg.reduce ins(%262 : tensor<8x8x16xf32>) outs(%268 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %269 = tensor.empty() : tensor<1x1x16xf32>
    %270 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_135 : tensor<16xf32>) outs(%269 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %271 = tensor.empty() : tensor<16xf32>
    %cst_136 = arith.constant -0.000000e+00 : f32
    %272 = linalg.fill ins(%cst_136 : f32) outs(%271 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_137 = linalg.reduce ins(%270 : tensor<1x1x16xf32>) outs(%272 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %273 = tensor.empty() : tensor<8x8x16xf32>
    %274 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%262, %sharding_annotated_82 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%273 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %275 = tensor.empty() : tensor<8x8x16xf32>
    %276 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%262, %150 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%275 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %277 = tensor.empty() : tensor<16xf32>
    %cst_138 = arith.constant 0.000000e+00 : f32
    %278 = linalg.fill ins(%cst_138 : f32) outs(%277 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_139 = linalg.reduce ins(%276 : tensor<8x8x16xf32>) outs(%278 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %279 = tensor.empty() : tensor<1x1x16xf32>
    %280 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_139 : tensor<16xf32>) outs(%279 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %281 = tensor.empty() : tensor<16xf32>
    %cst_140 = arith.constant -0.000000e+00 : f32
    %282 = linalg.fill ins(%cst_140 : f32) outs(%281 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_141 = linalg.reduce ins(%280 : tensor<1x1x16xf32>) outs(%282 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %283 = tensor.empty() : tensor<8x8xf32>
    %cst_142 = arith.constant -0.000000e+00 : f32
    %284 = linalg.fill ins(%cst_142 : f32) outs(%283 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_143 = linalg.reduce ins(%146 : tensor<8x8x1xf32>) outs(%284 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %285 = tensor.empty() : tensor<8x8x16xf32>
    %286 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%274, %reduced_143 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%285 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_144 = arith.constant -1.000000e+00 : f32
    %287 = tensor.empty() : tensor<8x8x16xf32>
    %288 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%274 : tensor<8x8x16xf32>) outs(%287 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_144 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %289 = tensor.empty() : tensor<8x8xf32>
    %cst_145 = arith.constant -0.000000e+00 : f32
    %290 = linalg.fill ins(%cst_145 : f32) outs(%289 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_146 = linalg.reduce ins(%146 : tensor<8x8x1xf32>) outs(%290 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %291 = tensor.empty() : tensor<8x8x16xf32>
    %292 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%150, %reduced_146 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%291 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %293 = tensor.empty() : tensor<8x8x16xf32>
    %294 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%288, %292 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%293 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %295 = tensor.empty() : tensor<8x8xf32>
    %cst_147 = arith.constant 0.000000e+00 : f32
    %296 = linalg.fill ins(%cst_147 : f32) outs(%295 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_148 = linalg.reduce ins(%294 : tensor<8x8x16xf32>) outs(%296 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %297 = tensor.empty() : tensor<8x8x1xf32>
    %298 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_148 : tensor<8x8xf32>) outs(%297 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_149 = arith.constant 5.000000e-01 : f32
    %299 = tensor.empty() : tensor<8x8x1xf32>
    %300 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%298 : tensor<8x8x1xf32>) outs(%299 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_149 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %301 = tensor.empty() : tensor<8x8x1xf32>
    %302 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%300, %146 : tensor<8x8x1xf32>, tensor<8x8x1xf32>) outs(%301 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_150 = arith.constant 1.600000e+01 : f32
    %303 = tensor.empty() : tensor<8x8x1xf32>
    %304 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%302 : tensor<8x8x1xf32>) outs(%303 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_150 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_151 = arith.constant dense<0.000000e+00> : tensor<8x8x16xf32>
    %305 = tensor.empty() : tensor<8x8xf32>
    %cst_152 = arith.constant -0.000000e+00 : f32
    %306 = linalg.fill ins(%cst_152 : f32) outs(%305 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_153 = linalg.reduce ins(%304 : tensor<8x8x1xf32>) outs(%306 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %307 = tensor.empty() : tensor<8x8x16xf32>
    %308 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_153, %cst_151 : tensor<8x8xf32>, tensor<8x8x16xf32>) outs(%307 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %309 = tensor.empty() : tensor<8x8x16xf32>
    %310 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%308, %136 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%309 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %311 = tensor.empty() : tensor<8x8x16xf32>
    %312 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%308, %136 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%311 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %313 = tensor.empty() : tensor<8x8x16xf32>
    %314 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%310, %312 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%313 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %315 = tensor.empty() : tensor<8x8x16xf32>
    %316 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%286, %314 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%315 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_154 = arith.constant -1.000000e+00 : f32
    %317 = tensor.empty() : tensor<8x8x16xf32>
    %318 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%316 : tensor<8x8x16xf32>) outs(%317 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_154 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %319 = tensor.empty() : tensor<8x8xf32>
    %cst_155 = arith.constant 0.000000e+00 : f32
    %320 = linalg.fill ins(%cst_155 : f32) outs(%319 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_156 = linalg.reduce ins(%318 : tensor<8x8x16xf32>) outs(%320 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %321 = tensor.empty() : tensor<8x8x1xf32>
    %322 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_156 : tensor<8x8xf32>) outs(%321 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_157 = arith.constant 1.600000e+01 : f32
    %323 = tensor.empty() : tensor<8x8x1xf32>
    %324 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%322 : tensor<8x8x1xf32>) outs(%323 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_157 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_158 = arith.constant dense<0.000000e+00> : tensor<8x8x16xf32>
    %325 = tensor.empty() : tensor<8x8xf32>
    %cst_159 = arith.constant -0.000000e+00 : f32
    %326 = linalg.fill ins(%cst_159 : f32) outs(%325 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_160 = linalg.reduce ins(%324 : tensor<8x8x1xf32>) outs(%326 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %327 = tensor.empty() : tensor<8x8x16xf32>
    %328 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_160, %cst_158 : tensor<8x8xf32>, tensor<8x8x16xf32>) outs(%327 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %329 = tensor.empty() : tensor<8x8x16xf32>
    %330 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%316, %328 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%329 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %331 = tensor.empty() : tensor<16xf32>
    %cst_161 = arith.constant 0.000000e+00 : f32
    %332 = linalg.fill ins(%cst_161 : f32) outs(%331 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_162 = linalg.reduce ins(%330 : tensor<8x8x16xf32>) outs(%332 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %333 = tensor.empty() : tensor<1x1x16xf32>
    %334 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_162 : tensor<16xf32>) outs(%333 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %335 = tensor.empty() : tensor<16xf32>
    %cst_163 = arith.constant -0.000000e+00 : f32
    %336 = linalg.fill ins(%cst_163 : f32) outs(%335 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_164 = linalg.reduce ins(%334 : tensor<1x1x16xf32>) outs(%336 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %337 = tensor.empty() : tensor<16x64xf32>
    %transposed_165 = linalg.transpose ins(%sharding_annotated_15 : tensor<64x16xf32>) outs(%337 : tensor<16x64xf32>) permutation = [1, 0] 
    %338 = tensor.empty() : tensor<8x8x64xf32>
    %cst_166 = arith.constant 0.000000e+00 : f32
    %339 = linalg.fill ins(%cst_166 : f32) outs(%338 : tensor<8x8x64xf32>) -> tensor<8x8x64xf32>
    %340 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%330, %transposed_165 : tensor<8x8x16xf32>, tensor<16x64xf32>) outs(%339 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x64xf32>
    %collapsed_167 = tensor.collapse_shape %120 [[0, 1], [2]] : tensor<8x8x64xf32> into tensor<64x64xf32>
    %collapsed_168 = tensor.collapse_shape %330 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %341 = tensor.empty() : tensor<64x64xf32>
    %transposed_169 = linalg.transpose ins(%collapsed_167 : tensor<64x64xf32>) outs(%341 : tensor<64x64xf32>) permutation = [1, 0] 
    %342 = tensor.empty() : tensor<64x16xf32>
    %cst_170 = arith.constant 0.000000e+00 : f32
    %343 = linalg.fill ins(%cst_170 : f32) outs(%342 : tensor<64x16xf32>) -> tensor<64x16xf32>
    %344 = linalg.matmul ins(%transposed_169, %collapsed_168 : tensor<64x64xf32>, tensor<64x16xf32>) outs(%343 : tensor<64x16xf32>) -> tensor<64x16xf32>
    %345 = tensor.empty() : tensor<8x8x64xf32>
    %346 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118, %118 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%345 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %347 = tensor.empty() : tensor<8x8x64xf32>
    %348 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%346, %118 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%347 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_171 = arith.constant 4.471500e-02 : f32
    %349 = tensor.empty() : tensor<8x8x64xf32>
    %350 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%348 : tensor<8x8x64xf32>) outs(%349 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %cst_171, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %351 = tensor.empty() : tensor<8x8x64xf32>
    %352 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118, %350 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%351 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_172 = arith.constant 0.797884583 : f32
    %353 = tensor.empty() : tensor<8x8x64xf32>
    %354 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%352 : tensor<8x8x64xf32>) outs(%353 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_172 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %355 = tensor.empty() : tensor<8x8x64xf32>
    %356 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%354 : tensor<8x8x64xf32>) outs(%355 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = math.tanh %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_173 = arith.constant 1.341450e-01 : f32
    %357 = tensor.empty() : tensor<8x8x64xf32>
    %358 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%346 : tensor<8x8x64xf32>) outs(%357 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %cst_173, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_174 = arith.constant 1.000000e+00 : f32
    %359 = tensor.empty() : tensor<8x8x64xf32>
    %360 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%358 : tensor<8x8x64xf32>) outs(%359 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.addf %cst_174, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_175 = arith.constant 0.797884583 : f32
    %361 = tensor.empty() : tensor<8x8x64xf32>
    %362 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%360 : tensor<8x8x64xf32>) outs(%361 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %cst_175, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_176 = arith.constant 1.000000e+00 : f32
    %363 = tensor.empty() : tensor<8x8x64xf32>
    %364 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%356 : tensor<8x8x64xf32>) outs(%363 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.addf %cst_176, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_177 = arith.constant 5.000000e-01 : f32
    %365 = tensor.empty() : tensor<8x8x64xf32>
    %366 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%364 : tensor<8x8x64xf32>) outs(%365 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %cst_177, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_178 = arith.constant 5.000000e-01 : f32
    %367 = tensor.empty() : tensor<8x8x64xf32>
    %368 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118 : tensor<8x8x64xf32>) outs(%367 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %cst_178, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %369 = tensor.empty() : tensor<8x8x64xf32>
    %370 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%356, %356 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%369 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %cst_179 = arith.constant 1.000000e+00 : f32
    %371 = tensor.empty() : tensor<8x8x64xf32>
    %372 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%370 : tensor<8x8x64xf32>) outs(%371 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.subf %cst_179, %in : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %373 = tensor.empty() : tensor<8x8x64xf32>
    %374 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%368, %372 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%373 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %375 = tensor.empty() : tensor<8x8x64xf32>
    %376 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%374, %362 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%375 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %377 = tensor.empty() : tensor<8x8x64xf32>
    %378 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%366, %376 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%377 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %379 = tensor.empty() : tensor<8x8x64xf32>
    %380 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%340, %378 : tensor<8x8x64xf32>, tensor<8x8x64xf32>) outs(%379 : tensor<8x8x64xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x64xf32>
    %381 = tensor.empty() : tensor<64xf32>
    %cst_180 = arith.constant 0.000000e+00 : f32
    %382 = linalg.fill ins(%cst_180 : f32) outs(%381 : tensor<64xf32>) -> tensor<64xf32>
    %reduced_181 = linalg.reduce ins(%380 : tensor<8x8x64xf32>) outs(%382 : tensor<64xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %383 = tensor.empty() : tensor<1x1x64xf32>
    %384 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_181 : tensor<64xf32>) outs(%383 : tensor<1x1x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x64xf32>
    %385 = tensor.empty() : tensor<64xf32>
    %cst_182 = arith.constant -0.000000e+00 : f32
    %386 = linalg.fill ins(%cst_182 : f32) outs(%385 : tensor<64xf32>) -> tensor<64xf32>
    %reduced_183 = linalg.reduce ins(%384 : tensor<1x1x64xf32>) outs(%386 : tensor<64xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %387 = tensor.empty() : tensor<64x16xf32>
    %transposed_184 = linalg.transpose ins(%sharding_annotated_9 : tensor<16x64xf32>) outs(%387 : tensor<64x16xf32>) permutation = [1, 0] 
    %388 = tensor.empty() : tensor<8x8x16xf32>
    %cst_185 = arith.constant 0.000000e+00 : f32
    %389 = linalg.fill ins(%cst_185 : f32) outs(%388 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %390 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%380, %transposed_184 : tensor<8x8x64xf32>, tensor<64x16xf32>) outs(%389 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %collapsed_186 = tensor.collapse_shape %113 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %collapsed_187 = tensor.collapse_shape %380 [[0, 1], [2]] : tensor<8x8x64xf32> into tensor<64x64xf32>
    %391 = tensor.empty() : tensor<16x64xf32>
    %transposed_188 = linalg.transpose ins(%collapsed_186 : tensor<64x16xf32>) outs(%391 : tensor<16x64xf32>) permutation = [1, 0] 
    %392 = tensor.empty() : tensor<16x64xf32>
    %cst_189 = arith.constant 0.000000e+00 : f32
    %393 = linalg.fill ins(%cst_189 : f32) outs(%392 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %394 = linalg.matmul ins(%transposed_188, %collapsed_187 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%393 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %395 = tensor.empty() : tensor<16xf32>
    %cst_190 = arith.constant 0.000000e+00 : f32
    %396 = linalg.fill ins(%cst_190 : f32) outs(%395 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_191 = linalg.reduce ins(%390 : tensor<8x8x16xf32>) outs(%396 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %397 = tensor.empty() : tensor<1x1x16xf32>
    %398 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_191 : tensor<16xf32>) outs(%397 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %399 = tensor.empty() : tensor<16xf32>
    %cst_192 = arith.constant -0.000000e+00 : f32
    %400 = linalg.fill ins(%cst_192 : f32) outs(%399 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_193 = linalg.reduce ins(%398 : tensor<1x1x16xf32>) outs(%400 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %401 = tensor.empty() : tensor<8x8x16xf32>
    %402 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%390, %sharding_annotated_65 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%401 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %403 = tensor.empty() : tensor<8x8x16xf32>
    %404 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%390, %107 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%403 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %405 = tensor.empty() : tensor<16xf32>
    %cst_194 = arith.constant 0.000000e+00 : f32
    %406 = linalg.fill ins(%cst_194 : f32) outs(%405 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_195 = linalg.reduce ins(%404 : tensor<8x8x16xf32>) outs(%406 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %407 = tensor.empty() : tensor<1x1x16xf32>
    %408 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_195 : tensor<16xf32>) outs(%407 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %409 = tensor.empty() : tensor<16xf32>
    %cst_196 = arith.constant -0.000000e+00 : f32
    %410 = linalg.fill ins(%cst_196 : f32) outs(%409 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_197 = linalg.reduce ins(%408 : tensor<1x1x16xf32>) outs(%410 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %411 = tensor.empty() : tensor<8x8xf32>
    %cst_198 = arith.constant -0.000000e+00 : f32
    %412 = linalg.fill ins(%cst_198 : f32) outs(%411 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_199 = linalg.reduce ins(%103 : tensor<8x8x1xf32>) outs(%412 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %413 = tensor.empty() : tensor<8x8x16xf32>
    %414 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%402, %reduced_199 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%413 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_200 = arith.constant -1.000000e+00 : f32
    %415 = tensor.empty() : tensor<8x8x16xf32>
    %416 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%402 : tensor<8x8x16xf32>) outs(%415 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_200 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %417 = tensor.empty() : tensor<8x8xf32>
    %cst_201 = arith.constant -0.000000e+00 : f32
    %418 = linalg.fill ins(%cst_201 : f32) outs(%417 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_202 = linalg.reduce ins(%103 : tensor<8x8x1xf32>) outs(%418 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %419 = tensor.empty() : tensor<8x8x16xf32>
    %420 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%107, %reduced_202 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%419 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %421 = tensor.empty() : tensor<8x8x16xf32>
    %422 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%416, %420 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%421 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %423 = tensor.empty() : tensor<8x8xf32>
    %cst_203 = arith.constant 0.000000e+00 : f32
    %424 = linalg.fill ins(%cst_203 : f32) outs(%423 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_204 = linalg.reduce ins(%422 : tensor<8x8x16xf32>) outs(%424 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %425 = tensor.empty() : tensor<8x8x1xf32>
    %426 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_204 : tensor<8x8xf32>) outs(%425 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_205 = arith.constant 5.000000e-01 : f32
    %427 = tensor.empty() : tensor<8x8x1xf32>
    %428 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%426 : tensor<8x8x1xf32>) outs(%427 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_205 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %429 = tensor.empty() : tensor<8x8x1xf32>
    %430 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%428, %103 : tensor<8x8x1xf32>, tensor<8x8x1xf32>) outs(%429 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_206 = arith.constant 1.600000e+01 : f32
    %431 = tensor.empty() : tensor<8x8x1xf32>
    %432 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%430 : tensor<8x8x1xf32>) outs(%431 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_206 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_207 = arith.constant dense<0.000000e+00> : tensor<8x8x16xf32>
    %433 = tensor.empty() : tensor<8x8xf32>
    %cst_208 = arith.constant -0.000000e+00 : f32
    %434 = linalg.fill ins(%cst_208 : f32) outs(%433 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_209 = linalg.reduce ins(%432 : tensor<8x8x1xf32>) outs(%434 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %435 = tensor.empty() : tensor<8x8x16xf32>
    %436 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_209, %cst_207 : tensor<8x8xf32>, tensor<8x8x16xf32>) outs(%435 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %437 = tensor.empty() : tensor<8x8x16xf32>
    %438 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%436, %93 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%437 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %439 = tensor.empty() : tensor<8x8x16xf32>
    %440 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%436, %93 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%439 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %441 = tensor.empty() : tensor<8x8x16xf32>
    %442 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%438, %440 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%441 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %443 = tensor.empty() : tensor<8x8x16xf32>
    %444 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%414, %442 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%443 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_210 = arith.constant -1.000000e+00 : f32
    %445 = tensor.empty() : tensor<8x8x16xf32>
    %446 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%444 : tensor<8x8x16xf32>) outs(%445 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_210 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %447 = tensor.empty() : tensor<8x8xf32>
    %cst_211 = arith.constant 0.000000e+00 : f32
    %448 = linalg.fill ins(%cst_211 : f32) outs(%447 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_212 = linalg.reduce ins(%446 : tensor<8x8x16xf32>) outs(%448 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %449 = tensor.empty() : tensor<8x8x1xf32>
    %450 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_212 : tensor<8x8xf32>) outs(%449 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %451 = tensor.empty() : tensor<8x8x16xf32>
    %452 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%330, %444 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%451 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_213 = arith.constant 1.600000e+01 : f32
    %453 = tensor.empty() : tensor<8x8x1xf32>
    %454 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%450 : tensor<8x8x1xf32>) outs(%453 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_213 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_214 = arith.constant dense<0.000000e+00> : tensor<8x8x16xf32>
    %455 = tensor.empty() : tensor<8x8xf32>
    %cst_215 = arith.constant -0.000000e+00 : f32
    %456 = linalg.fill ins(%cst_215 : f32) outs(%455 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_216 = linalg.reduce ins(%454 : tensor<8x8x1xf32>) outs(%456 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %457 = tensor.empty() : tensor<8x8x16xf32>
    %458 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_216, %cst_214 : tensor<8x8xf32>, tensor<8x8x16xf32>) outs(%457 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %459 = tensor.empty() : tensor<8x8x16xf32>
    %460 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%452, %458 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%459 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %461 = tensor.empty() : tensor<16x16xf32>
    %transposed_217 = linalg.transpose ins(%sharding_annotated_13 : tensor<16x16xf32>) outs(%461 : tensor<16x16xf32>) permutation = [1, 0] 
    %462 = tensor.empty() : tensor<8x8x16xf32>
    %cst_218 = arith.constant 0.000000e+00 : f32
    %463 = linalg.fill ins(%cst_218 : f32) outs(%462 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %464 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%460, %transposed_217 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%463 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %collapsed_219 = tensor.collapse_shape %collapsed [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %collapsed_220 = tensor.collapse_shape %460 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %465 = tensor.empty() : tensor<16x64xf32>
    %transposed_221 = linalg.transpose ins(%collapsed_219 : tensor<64x16xf32>) outs(%465 : tensor<16x64xf32>) permutation = [1, 0] 
    %466 = tensor.empty() : tensor<16x16xf32>
    %cst_222 = arith.constant 0.000000e+00 : f32
    %467 = linalg.fill ins(%cst_222 : f32) outs(%466 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %468 = linalg.matmul ins(%transposed_221, %collapsed_220 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%467 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %expanded_223 = tensor.expand_shape %464 [[0], [1], [2, 3]] output_shape [8, 8, 2, 8] : tensor<8x8x16xf32> into tensor<8x8x2x8xf32>
    %469 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_224 = linalg.transpose ins(%expanded_223 : tensor<8x8x2x8xf32>) outs(%469 : tensor<8x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %470 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_225 = linalg.transpose ins(%transposed_43 : tensor<8x2x8x8xf32>) outs(%470 : tensor<8x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %471 = tensor.empty() : tensor<8x2x8x8xf32>
    %cst_226 = arith.constant 0.000000e+00 : f32
    %472 = linalg.fill ins(%cst_226 : f32) outs(%471 : tensor<8x2x8x8xf32>) -> tensor<8x2x8x8xf32>
    %473 = linalg.generic {indexing_maps = [#map10, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%transposed_224, %transposed_225 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%472 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %474 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_227 = linalg.transpose ins(%76 : tensor<8x2x8x8xf32>) outs(%474 : tensor<8x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %475 = tensor.empty() : tensor<8x2x8x8xf32>
    %cst_228 = arith.constant 0.000000e+00 : f32
    %476 = linalg.fill ins(%cst_228 : f32) outs(%475 : tensor<8x2x8x8xf32>) -> tensor<8x2x8x8xf32>
    %477 = linalg.generic {indexing_maps = [#map10, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%transposed_227, %transposed_224 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%476 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %478 = tensor.empty() : tensor<8x2x8x8xf32>
    %479 = linalg.generic {indexing_maps = [#map13, #map13, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%473, %76 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%478 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %480 = tensor.empty() : tensor<8x2x8xf32>
    %cst_229 = arith.constant 0.000000e+00 : f32
    %481 = linalg.fill ins(%cst_229 : f32) outs(%480 : tensor<8x2x8xf32>) -> tensor<8x2x8xf32>
    %reduced_230 = linalg.reduce ins(%479 : tensor<8x2x8x8xf32>) outs(%481 : tensor<8x2x8xf32>) dimensions = [3] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %482 = tensor.empty() : tensor<8x2x8x1xf32>
    %483 = linalg.generic {indexing_maps = [#map9, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%reduced_230 : tensor<8x2x8xf32>) outs(%482 : tensor<8x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x2x8x1xf32>
    %484 = tensor.empty() : tensor<8x2x8xf32>
    %cst_231 = arith.constant -0.000000e+00 : f32
    %485 = linalg.fill ins(%cst_231 : f32) outs(%484 : tensor<8x2x8xf32>) -> tensor<8x2x8xf32>
    %reduced_232 = linalg.reduce ins(%483 : tensor<8x2x8x1xf32>) outs(%485 : tensor<8x2x8xf32>) dimensions = [3] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %486 = tensor.empty() : tensor<8x2x8x8xf32>
    %487 = linalg.generic {indexing_maps = [#map13, #map9, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%76, %reduced_232 : tensor<8x2x8x8xf32>, tensor<8x2x8xf32>) outs(%486 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %488 = tensor.empty() : tensor<8x2x8x8xf32>
    %489 = linalg.generic {indexing_maps = [#map13, #map13, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%479, %487 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%488 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.subf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %cst_233 = arith.constant 0.000000e+00 : f32
    %490 = tensor.empty() : tensor<8x2x8x8xf32>
    %491 = linalg.generic {indexing_maps = [#map14, #map13, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%20, %489 : tensor<8x8xi1>, tensor<8x2x8x8xf32>) outs(%490 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: i1, %in_304: f32, %out: f32):
      %644 = arith.select %in, %in_304, %cst_233 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %492 = tensor.empty() : tensor<8x2x8x8xf32>
    %493 = linalg.generic {indexing_maps = [#map13, #map13], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%491 : tensor<8x2x8x8xf32>) outs(%492 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_46 : f32
      linalg.yield %644 : f32
    } -> tensor<8x2x8x8xf32>
    %494 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_234 = linalg.transpose ins(%transposed_44 : tensor<8x2x8x8xf32>) outs(%494 : tensor<8x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %495 = tensor.empty() : tensor<8x2x8x8xf32>
    %cst_235 = arith.constant 0.000000e+00 : f32
    %496 = linalg.fill ins(%cst_235 : f32) outs(%495 : tensor<8x2x8x8xf32>) -> tensor<8x2x8x8xf32>
    %497 = linalg.generic {indexing_maps = [#map10, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%493, %transposed_234 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%496 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %498 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_236 = linalg.transpose ins(%transposed : tensor<8x2x8x8xf32>) outs(%498 : tensor<8x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %499 = tensor.empty() : tensor<8x2x8x8xf32>
    %cst_237 = arith.constant 0.000000e+00 : f32
    %500 = linalg.fill ins(%cst_237 : f32) outs(%499 : tensor<8x2x8x8xf32>) -> tensor<8x2x8x8xf32>
    %501 = linalg.generic {indexing_maps = [#map10, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%transposed_236, %493 : tensor<8x2x8x8xf32>, tensor<8x2x8x8xf32>) outs(%500 : tensor<8x2x8x8xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x2x8x8xf32>
    %502 = tensor.empty() : tensor<8x2x8x8xf32>
    %transposed_238 = linalg.transpose ins(%501 : tensor<8x2x8x8xf32>) outs(%502 : tensor<8x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %503 = tensor.empty() : tensor<8x8x2x8xf32>
    %transposed_239 = linalg.transpose ins(%477 : tensor<8x2x8x8xf32>) outs(%503 : tensor<8x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_240 = tensor.collapse_shape %transposed_239 [[0], [1], [2, 3]] : tensor<8x8x2x8xf32> into tensor<8x8x16xf32>
    %504 = tensor.empty() : tensor<16x16xf32>
    %transposed_241 = linalg.transpose ins(%sharding_annotated_7 : tensor<16x16xf32>) outs(%504 : tensor<16x16xf32>) permutation = [1, 0] 
    %505 = tensor.empty() : tensor<8x8x16xf32>
    %cst_242 = arith.constant 0.000000e+00 : f32
    %506 = linalg.fill ins(%cst_242 : f32) outs(%505 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %507 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%collapsed_240, %transposed_241 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%506 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %collapsed_243 = tensor.collapse_shape %48 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %collapsed_244 = tensor.collapse_shape %collapsed_240 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %508 = tensor.empty() : tensor<16x64xf32>
    %transposed_245 = linalg.transpose ins(%collapsed_243 : tensor<64x16xf32>) outs(%508 : tensor<16x64xf32>) permutation = [1, 0] 
    %509 = tensor.empty() : tensor<16x16xf32>
    %cst_246 = arith.constant 0.000000e+00 : f32
    %510 = linalg.fill ins(%cst_246 : f32) outs(%509 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %511 = linalg.matmul ins(%transposed_245, %collapsed_244 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%510 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %512 = tensor.empty() : tensor<8x8x2x8xf32>
    %transposed_247 = linalg.transpose ins(%transposed_238 : tensor<8x2x8x8xf32>) outs(%512 : tensor<8x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_248 = tensor.collapse_shape %transposed_247 [[0], [1], [2, 3]] : tensor<8x8x2x8xf32> into tensor<8x8x16xf32>
    %513 = tensor.empty() : tensor<16x16xf32>
    %transposed_249 = linalg.transpose ins(%sharding_annotated_5 : tensor<16x16xf32>) outs(%513 : tensor<16x16xf32>) permutation = [1, 0] 
    %514 = tensor.empty() : tensor<8x8x16xf32>
    %cst_250 = arith.constant 0.000000e+00 : f32
    %515 = linalg.fill ins(%cst_250 : f32) outs(%514 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %516 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%collapsed_248, %transposed_249 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%515 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %collapsed_251 = tensor.collapse_shape %48 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %collapsed_252 = tensor.collapse_shape %collapsed_248 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %517 = tensor.empty() : tensor<16x64xf32>
    %transposed_253 = linalg.transpose ins(%collapsed_251 : tensor<64x16xf32>) outs(%517 : tensor<16x64xf32>) permutation = [1, 0] 
    %518 = tensor.empty() : tensor<16x16xf32>
    %cst_254 = arith.constant 0.000000e+00 : f32
    %519 = linalg.fill ins(%cst_254 : f32) outs(%518 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %520 = linalg.matmul ins(%transposed_253, %collapsed_252 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%519 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %521 = tensor.empty() : tensor<8x8x16xf32>
    %522 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%507, %516 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%521 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %523 = tensor.empty() : tensor<8x8x2x8xf32>
    %transposed_255 = linalg.transpose ins(%497 : tensor<8x2x8x8xf32>) outs(%523 : tensor<8x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_256 = tensor.collapse_shape %transposed_255 [[0], [1], [2, 3]] : tensor<8x8x2x8xf32> into tensor<8x8x16xf32>
    %524 = tensor.empty() : tensor<16x16xf32>
    %transposed_257 = linalg.transpose ins(%sharding_annotated_3 : tensor<16x16xf32>) outs(%524 : tensor<16x16xf32>) permutation = [1, 0] 
    %525 = tensor.empty() : tensor<8x8x16xf32>
    %cst_258 = arith.constant 0.000000e+00 : f32
    %526 = linalg.fill ins(%cst_258 : f32) outs(%525 : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
    %527 = linalg.generic {indexing_maps = [#map7, #map8, #map9], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%collapsed_256, %transposed_257 : tensor<8x8x16xf32>, tensor<16x16xf32>) outs(%526 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      %645 = arith.addf %out, %644 : f32
      linalg.yield %645 : f32
    } -> tensor<8x8x16xf32>
    %collapsed_259 = tensor.collapse_shape %48 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %collapsed_260 = tensor.collapse_shape %collapsed_256 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %528 = tensor.empty() : tensor<16x64xf32>
    %transposed_261 = linalg.transpose ins(%collapsed_259 : tensor<64x16xf32>) outs(%528 : tensor<16x64xf32>) permutation = [1, 0] 
    %529 = tensor.empty() : tensor<16x16xf32>
    %cst_262 = arith.constant 0.000000e+00 : f32
    %530 = linalg.fill ins(%cst_262 : f32) outs(%529 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %531 = linalg.matmul ins(%transposed_261, %collapsed_260 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%530 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %532 = tensor.empty() : tensor<8x8x16xf32>
    %533 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%522, %527 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%532 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %534 = tensor.empty() : tensor<16xf32>
    %cst_263 = arith.constant 0.000000e+00 : f32
    %535 = linalg.fill ins(%cst_263 : f32) outs(%534 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_264 = linalg.reduce ins(%533 : tensor<8x8x16xf32>) outs(%535 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %536 = tensor.empty() : tensor<1x1x16xf32>
    %537 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_264 : tensor<16xf32>) outs(%536 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %538 = tensor.empty() : tensor<16xf32>
    %cst_265 = arith.constant -0.000000e+00 : f32
    %539 = linalg.fill ins(%cst_265 : f32) outs(%538 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_266 = linalg.reduce ins(%537 : tensor<1x1x16xf32>) outs(%539 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %540 = tensor.empty() : tensor<8x8x16xf32>
    %541 = linalg.generic {indexing_maps = [#map2, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%533, %sharding_annotated_34 : tensor<8x8x16xf32>, tensor<16xf32>) outs(%540 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %542 = tensor.empty() : tensor<8x8x16xf32>
    %543 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%533, %42 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%542 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %544 = tensor.empty() : tensor<16xf32>
    %cst_267 = arith.constant 0.000000e+00 : f32
    %545 = linalg.fill ins(%cst_267 : f32) outs(%544 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_268 = linalg.reduce ins(%543 : tensor<8x8x16xf32>) outs(%545 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %546 = tensor.empty() : tensor<1x1x16xf32>
    %547 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_268 : tensor<16xf32>) outs(%546 : tensor<1x1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x1x16xf32>
    %548 = tensor.empty() : tensor<16xf32>
    %cst_269 = arith.constant -0.000000e+00 : f32
    %549 = linalg.fill ins(%cst_269 : f32) outs(%548 : tensor<16xf32>) -> tensor<16xf32>
    %reduced_270 = linalg.reduce ins(%547 : tensor<1x1x16xf32>) outs(%549 : tensor<16xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %550 = tensor.empty() : tensor<8x8xf32>
    %cst_271 = arith.constant -0.000000e+00 : f32
    %551 = linalg.fill ins(%cst_271 : f32) outs(%550 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_272 = linalg.reduce ins(%38 : tensor<8x8x1xf32>) outs(%551 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %552 = tensor.empty() : tensor<8x8x16xf32>
    %553 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%541, %reduced_272 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%552 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_273 = arith.constant -1.000000e+00 : f32
    %554 = tensor.empty() : tensor<8x8x16xf32>
    %555 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%541 : tensor<8x8x16xf32>) outs(%554 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_273 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %556 = tensor.empty() : tensor<8x8xf32>
    %cst_274 = arith.constant -0.000000e+00 : f32
    %557 = linalg.fill ins(%cst_274 : f32) outs(%556 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_275 = linalg.reduce ins(%38 : tensor<8x8x1xf32>) outs(%557 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %558 = tensor.empty() : tensor<8x8x16xf32>
    %559 = linalg.generic {indexing_maps = [#map2, #map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%42, %reduced_275 : tensor<8x8x16xf32>, tensor<8x8xf32>) outs(%558 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %560 = tensor.empty() : tensor<8x8x16xf32>
    %561 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%555, %559 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%560 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %562 = tensor.empty() : tensor<8x8xf32>
    %cst_276 = arith.constant 0.000000e+00 : f32
    %563 = linalg.fill ins(%cst_276 : f32) outs(%562 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_277 = linalg.reduce ins(%561 : tensor<8x8x16xf32>) outs(%563 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %564 = tensor.empty() : tensor<8x8x1xf32>
    %565 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_277 : tensor<8x8xf32>) outs(%564 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %cst_278 = arith.constant 5.000000e-01 : f32
    %566 = tensor.empty() : tensor<8x8x1xf32>
    %567 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%565 : tensor<8x8x1xf32>) outs(%566 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_278 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %568 = tensor.empty() : tensor<8x8x1xf32>
    %569 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%567, %38 : tensor<8x8x1xf32>, tensor<8x8x1xf32>) outs(%568 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.divf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_279 = arith.constant 1.600000e+01 : f32
    %570 = tensor.empty() : tensor<8x8x1xf32>
    %571 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%569 : tensor<8x8x1xf32>) outs(%570 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_279 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_280 = arith.constant dense<0.000000e+00> : tensor<8x8x16xf32>
    %572 = tensor.empty() : tensor<8x8xf32>
    %cst_281 = arith.constant -0.000000e+00 : f32
    %573 = linalg.fill ins(%cst_281 : f32) outs(%572 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_282 = linalg.reduce ins(%571 : tensor<8x8x1xf32>) outs(%573 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %574 = tensor.empty() : tensor<8x8x16xf32>
    %575 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_282, %cst_280 : tensor<8x8xf32>, tensor<8x8x16xf32>) outs(%574 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %576 = tensor.empty() : tensor<8x8x16xf32>
    %577 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%575, %28 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%576 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %578 = tensor.empty() : tensor<8x8x16xf32>
    %579 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%575, %28 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%578 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.mulf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %580 = tensor.empty() : tensor<8x8x16xf32>
    %581 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%577, %579 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%580 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %582 = tensor.empty() : tensor<8x8x16xf32>
    %583 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%553, %581 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%582 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_283 = arith.constant -1.000000e+00 : f32
    %584 = tensor.empty() : tensor<8x8x16xf32>
    %585 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%583 : tensor<8x8x16xf32>) outs(%584 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.mulf %in, %cst_283 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %586 = tensor.empty() : tensor<8x8xf32>
    %cst_284 = arith.constant 0.000000e+00 : f32
    %587 = linalg.fill ins(%cst_284 : f32) outs(%586 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_285 = linalg.reduce ins(%585 : tensor<8x8x16xf32>) outs(%587 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %588 = tensor.empty() : tensor<8x8x1xf32>
    %589 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_285 : tensor<8x8xf32>) outs(%588 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x8x1xf32>
    %590 = tensor.empty() : tensor<8x8x16xf32>
    %591 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%460, %583 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%590 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %cst_286 = arith.constant 1.600000e+01 : f32
    %592 = tensor.empty() : tensor<8x8x1xf32>
    %593 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%589 : tensor<8x8x1xf32>) outs(%592 : tensor<8x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %644 = arith.divf %in, %cst_286 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x1xf32>
    %cst_287 = arith.constant dense<0.000000e+00> : tensor<8x8x16xf32>
    %594 = tensor.empty() : tensor<8x8xf32>
    %cst_288 = arith.constant -0.000000e+00 : f32
    %595 = linalg.fill ins(%cst_288 : f32) outs(%594 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %reduced_289 = linalg.reduce ins(%593 : tensor<8x8x1xf32>) outs(%595 : tensor<8x8xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %596 = tensor.empty() : tensor<8x8x16xf32>
    %597 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_289, %cst_287 : tensor<8x8xf32>, tensor<8x8x16xf32>) outs(%596 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %598 = tensor.empty() : tensor<8x8x16xf32>
    %599 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%591, %597 : tensor<8x8x16xf32>, tensor<8x8x16xf32>) outs(%598 : tensor<8x8x16xf32>) {
    ^bb0(%in: f32, %in_304: f32, %out: f32):
      %644 = arith.addf %in, %in_304 : f32
      linalg.yield %644 : f32
    } -> tensor<8x8x16xf32>
    %600 = tensor.empty() : tensor<8x16xf32>
    %cst_290 = arith.constant 0.000000e+00 : f32
    %601 = linalg.fill ins(%cst_290 : f32) outs(%600 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %reduced_291 = linalg.reduce ins(%599 : tensor<8x8x16xf32>) outs(%601 : tensor<8x16xf32>) dimensions = [0] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %602 = tensor.empty() : tensor<1x8x16xf32>
    %603 = linalg.generic {indexing_maps = [#map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%reduced_291 : tensor<8x16xf32>) outs(%602 : tensor<1x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x8x16xf32>
    %604 = tensor.empty() : tensor<8x16xf32>
    %cst_292 = arith.constant -0.000000e+00 : f32
    %605 = linalg.fill ins(%cst_292 : f32) outs(%604 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %reduced_293 = linalg.reduce ins(%603 : tensor<1x8x16xf32>) outs(%605 : tensor<8x16xf32>) dimensions = [0] 
      (%in: f32, %init: f32) {
        %644 = arith.addf %in, %init : f32
        linalg.yield %644 : f32
      }
    %c0_i32_294 = arith.constant 0 : i32
    %606 = tensor.empty() : tensor<8x8xi1>
    %607 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated : tensor<8x8xi32>) outs(%606 : tensor<8x8xi1>) {
    ^bb0(%in: i32, %out: i1):
      %644 = arith.cmpi slt, %in, %c0_i32_294 : i32
      linalg.yield %644 : i1
    } -> tensor<8x8xi1>
    %c32_i32 = arith.constant 32 : i32
    %608 = tensor.empty() : tensor<8x8xi32>
    %609 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated : tensor<8x8xi32>) outs(%608 : tensor<8x8xi32>) {
    ^bb0(%in: i32, %out: i32):
      %644 = arith.addi %in, %c32_i32 : i32
      linalg.yield %644 : i32
    } -> tensor<8x8xi32>
    %610 = tensor.empty() : tensor<8x8xi32>
    %611 = linalg.generic {indexing_maps = [#map6, #map6, #map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%607, %609, %sharding_annotated : tensor<8x8xi1>, tensor<8x8xi32>, tensor<8x8xi32>) outs(%610 : tensor<8x8xi32>) {
    ^bb0(%in: i1, %in_304: i32, %in_305: i32, %out: i32):
      %644 = arith.select %in, %in_304, %in_305 : i32
      linalg.yield %644 : i32
    } -> tensor<8x8xi32>
    %c0_i32_295 = arith.constant 0 : i32
    %612 = tensor.empty() : tensor<8x8xi32>
    %613 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%611 : tensor<8x8xi32>) outs(%612 : tensor<8x8xi32>) {
    ^bb0(%in: i32, %out: i32):
      %644 = arith.maxsi %in, %c0_i32_295 : i32
      linalg.yield %644 : i32
    } -> tensor<8x8xi32>
    %c31_i32 = arith.constant 31 : i32
    %614 = tensor.empty() : tensor<8x8xi32>
    %615 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%613 : tensor<8x8xi32>) outs(%614 : tensor<8x8xi32>) {
    ^bb0(%in: i32, %out: i32):
      %644 = arith.minsi %in, %c31_i32 : i32
      linalg.yield %644 : i32
    } -> tensor<8x8xi32>
    %cst_296 = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi32>
    %collapsed_297 = tensor.collapse_shape %615 [[0, 1]] : tensor<8x8xi32> into tensor<64xi32>
    %expanded_298 = tensor.expand_shape %collapsed_297 [[0, 1]] output_shape [64, 1] : tensor<64xi32> into tensor<64x1xi32>
    %616 = tensor.empty() : tensor<64xi32>
    %c0_i32_299 = arith.constant 0 : i32
    %617 = linalg.fill ins(%c0_i32_299 : i32) outs(%616 : tensor<64xi32>) -> tensor<64xi32>
    %reduced_300 = linalg.reduce ins(%expanded_298 : tensor<64x1xi32>) outs(%617 : tensor<64xi32>) dimensions = [1] 
      (%in: i32, %init: i32) {
        %644 = arith.addi %in, %init : i32
        linalg.yield %644 : i32
      }
    %618 = tensor.empty() : tensor<64x32xi1>
    %619 = linalg.generic {indexing_maps = [#map4, #map5, #map6], iterator_types = ["parallel", "parallel"]} ins(%reduced_300, %cst_296 : tensor<64xi32>, tensor<32xi32>) outs(%618 : tensor<64x32xi1>) {
    ^bb0(%in: i32, %in_304: i32, %out: i1):
      %644 = arith.cmpi eq, %in, %in_304 : i32
      linalg.yield %644 : i1
    } -> tensor<64x32xi1>
    %620 = tensor.empty() : tensor<64x32xf32>
    %621 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%619 : tensor<64x32xi1>) outs(%620 : tensor<64x32xf32>) {
    ^bb0(%in: i1, %out: f32):
      %644 = arith.uitofp %in : i1 to f32
      linalg.yield %644 : f32
    } -> tensor<64x32xf32>
    %collapsed_301 = tensor.collapse_shape %599 [[0, 1], [2]] : tensor<8x8x16xf32> into tensor<64x16xf32>
    %622 = tensor.empty() : tensor<32x64xf32>
    %transposed_302 = linalg.transpose ins(%621 : tensor<64x32xf32>) outs(%622 : tensor<32x64xf32>) permutation = [1, 0] 
    %623 = tensor.empty() : tensor<32x16xf32>
    %cst_303 = arith.constant 0.000000e+00 : f32
    %624 = linalg.fill ins(%cst_303 : f32) outs(%623 : tensor<32x16xf32>) -> tensor<32x16xf32>
    %625 = linalg.matmul ins(%transposed_302, %collapsed_301 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%624 : tensor<32x16xf32>) -> tensor<32x16xf32>
    %626 = monarch.fetch %reduced_103 from @mesh : tensor<f32>
    %627 = monarch.fetch %625 from @mesh : tensor<32x16xf32>
    %628 = monarch.fetch %reduced_293 from @mesh : tensor<8x16xf32>
    %629 = monarch.fetch %reduced_270 from @mesh : tensor<16xf32>
    %630 = monarch.fetch %reduced_266 from @mesh : tensor<16xf32>
    %631 = monarch.fetch %531 from @mesh : tensor<16x16xf32>
    %632 = monarch.fetch %520 from @mesh : tensor<16x16xf32>
    %633 = monarch.fetch %511 from @mesh : tensor<16x16xf32>
    %634 = monarch.fetch %468 from @mesh : tensor<16x16xf32>
    %635 = monarch.fetch %reduced_197 from @mesh : tensor<16xf32>
    %636 = monarch.fetch %reduced_193 from @mesh : tensor<16xf32>
    %637 = monarch.fetch %394 from @mesh : tensor<16x64xf32>
    %638 = monarch.fetch %reduced_183 from @mesh : tensor<64xf32>
    %639 = monarch.fetch %344 from @mesh : tensor<64x16xf32>
    %640 = monarch.fetch %reduced_164 from @mesh : tensor<16xf32>
    %641 = monarch.fetch %reduced_141 from @mesh : tensor<16xf32>
    %642 = monarch.fetch %reduced_137 from @mesh : tensor<16xf32>
    %643 = monarch.fetch %266 from @mesh : tensor<16x32xf32>
    return %626, %627, %628, %629, %630, %631, %632, %633, %634, %635, %636, %637, %638, %639, %640, %641, %642, %643 : tensor<f32>, tensor<32x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<64x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x32xf32>
  }
}

