// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-hoist-collectives --monarch-plan-transfers -o %t.classes
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-hoist-collectives --monarch-plan-transfers=rank-classes=false -o %t.each
// RUN: diff %t.classes %t.each
// RUN: monarch-opt %s --monarch-specialize-ranks=classes=1 --monarch-hoist-collectives --monarch-plan-transfers -o %t.spec
// RUN: diff %t.spec %t.each
// RUN: FileCheck %s < %t.classes
//
// The data x tensor x pipeline step of bench/compile_scaling (dtp_program.py)
// on mesh(hosts=2, stages=2, gpus=2), at the split stage: ranks copied from
// the first of their class (docs/spmd-classes.md) get their own shard of the
// batch (`at`), of the weights (`shard`), their own pipeline peer and their
// own groups' communicators, and the plan equals the one lowering every rank
// builds (the diff), from rank functions or from the class functions of
// specialize-ranks classes=1.

// CHECK:       monarch.rank_program rank 0
// CHECK:         monarch.feed_buffer 0 into {{.*}} at [0, 0]
// CHECK:         monarch.state_buffer @first::@w1 at {{.*}} shard [0, 0]
// CHECK:         monarch.send {{.*}} to 2 on
// CHECK:       monarch.rank_program rank 1
// CHECK:         monarch.feed_buffer 0 into {{.*}} at [0, 0]
// CHECK:         monarch.state_buffer @first::@w1 at {{.*}} shard [0, 32]
// CHECK:         monarch.send {{.*}} to 3 on
// CHECK:       monarch.rank_program rank 4
// CHECK:         monarch.feed_buffer 0 into {{.*}} at [4, 0]
// CHECK:         monarch.state_buffer @first::@w1 at {{.*}} shard [0, 0]
// CHECK:         monarch.send {{.*}} to 6 on
// CHECK:       monarch.rank_program rank 7
// CHECK:         monarch.feed_buffer 1 into {{.*}} at [4, 0]
// CHECK:         monarch.recv {{.*}} from 5 on
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @mesh_grid(shape = 2x2x2)
  monarch.proc_mesh @mesh(hosts = 2, stages = 2, gpus = 2) grid @mesh_grid
  shard.grid @mesh_stages0_1_grid(shape = 2x1x2)
  monarch.mesh_slice @mesh_stages0_1 of @mesh(hosts = 0 to 2, stages = 0 to 1, gpus = 0 to 2) grid @mesh_stages0_1_grid
  monarch.actor_class @First {
    monarch.state @w1 : tensor<16x32xf32> dist #monarch.dist<[[], ["gpus"]]>
    monarch.state @w2 : tensor<32x16xf32> dist #monarch.dist<[["gpus"], []]>
    monarch.endpoint @forward(%arg0: tensor<4x16xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) -> (tensor<4x16xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) {
      %0 = state_get @w1 : tensor<16x32xf32>
      %1 = tensor.empty() : tensor<4x32xf32>
      %cst = arith.constant 0.000000e+00 : f32
      %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %3 = linalg.matmul ins(%arg0, %0 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%2 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %4 = tensor.empty() : tensor<4x32xf32>
      %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x32xf32>) outs(%4 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %11 = math.tanh %in : f32
        linalg.yield %11 : f32
      } -> tensor<4x32xf32>
      %6 = state_get @w2 : tensor<32x16xf32>
      %7 = tensor.empty() : tensor<4x16xf32>
      %cst_0 = arith.constant 0.000000e+00 : f32
      %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<4x16xf32>) -> tensor<4x16xf32>
      %9 = linalg.matmul ins(%5, %6 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%8 : tensor<4x16xf32>) -> tensor<4x16xf32>
      %10 = all_reduce %9 over ["gpus"] sum : tensor<4x16xf32>
      return %10 : tensor<4x16xf32>
    }
    monarch.endpoint @backward(%arg0: tensor<4x16xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}, %arg1: tensor<4x16xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}, %arg2: f32) {
      %0 = state_get @w1 : tensor<16x32xf32>
      %1 = tensor.empty() : tensor<4x32xf32>
      %cst = arith.constant 0.000000e+00 : f32
      %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %3 = linalg.matmul ins(%arg0, %0 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%2 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %4 = tensor.empty() : tensor<4x32xf32>
      %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x32xf32>) outs(%4 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %35 = math.tanh %in : f32
        linalg.yield %35 : f32
      } -> tensor<4x32xf32>
      %6 = tensor.empty() : tensor<32x4xf32>
      %transposed = linalg.transpose ins(%5 : tensor<4x32xf32>) outs(%6 : tensor<32x4xf32>) permutation = [1, 0] 
      %7 = tensor.empty() : tensor<32x16xf32>
      %cst_0 = arith.constant 0.000000e+00 : f32
      %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<32x16xf32>) -> tensor<32x16xf32>
      %9 = linalg.matmul ins(%transposed, %arg1 : tensor<32x4xf32>, tensor<4x16xf32>) outs(%8 : tensor<32x16xf32>) -> tensor<32x16xf32>
      %10 = tensor.empty() : tensor<16x4xf32>
      %transposed_1 = linalg.transpose ins(%arg0 : tensor<4x16xf32>) outs(%10 : tensor<16x4xf32>) permutation = [1, 0] 
      %11 = state_get @w2 : tensor<32x16xf32>
      %12 = tensor.empty() : tensor<16x32xf32>
      %transposed_2 = linalg.transpose ins(%11 : tensor<32x16xf32>) outs(%12 : tensor<16x32xf32>) permutation = [1, 0] 
      %13 = tensor.empty() : tensor<4x32xf32>
      %cst_3 = arith.constant 0.000000e+00 : f32
      %14 = linalg.fill ins(%cst_3 : f32) outs(%13 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %15 = linalg.matmul ins(%arg1, %transposed_2 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%14 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %16 = tensor.empty() : tensor<4x32xf32>
      %17 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %5 : tensor<4x32xf32>, tensor<4x32xf32>) outs(%16 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %in_6: f32, %out: f32):
        %35 = arith.mulf %in, %in_6 : f32
        linalg.yield %35 : f32
      } -> tensor<4x32xf32>
      %cst_4 = arith.constant 1.000000e+00 : f32
      %18 = tensor.empty() : tensor<4x32xf32>
      %19 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%17 : tensor<4x32xf32>) outs(%18 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %35 = arith.subf %cst_4, %in : f32
        linalg.yield %35 : f32
      } -> tensor<4x32xf32>
      %20 = tensor.empty() : tensor<4x32xf32>
      %21 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%15, %19 : tensor<4x32xf32>, tensor<4x32xf32>) outs(%20 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %in_6: f32, %out: f32):
        %35 = arith.mulf %in, %in_6 : f32
        linalg.yield %35 : f32
      } -> tensor<4x32xf32>
      %22 = tensor.empty() : tensor<16x32xf32>
      %cst_5 = arith.constant 0.000000e+00 : f32
      %23 = linalg.fill ins(%cst_5 : f32) outs(%22 : tensor<16x32xf32>) -> tensor<16x32xf32>
      %24 = linalg.matmul ins(%transposed_1, %21 : tensor<16x4xf32>, tensor<4x32xf32>) outs(%23 : tensor<16x32xf32>) -> tensor<16x32xf32>
      %25 = all_reduce %24 over ["hosts"] sum : tensor<16x32xf32>
      %26 = tensor.empty() : tensor<16x32xf32>
      %27 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%25 : tensor<16x32xf32>) outs(%26 : tensor<16x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %35 = arith.mulf %arg2, %in : f32
        linalg.yield %35 : f32
      } -> tensor<16x32xf32>
      %28 = tensor.empty() : tensor<16x32xf32>
      %29 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %27 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%28 : tensor<16x32xf32>) {
      ^bb0(%in: f32, %in_6: f32, %out: f32):
        %35 = arith.subf %in, %in_6 : f32
        linalg.yield %35 : f32
      } -> tensor<16x32xf32>
      state_set @w1 = %29 : tensor<16x32xf32>
      %30 = all_reduce %9 over ["hosts"] sum : tensor<32x16xf32>
      %31 = tensor.empty() : tensor<32x16xf32>
      %32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%30 : tensor<32x16xf32>) outs(%31 : tensor<32x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %35 = arith.mulf %arg2, %in : f32
        linalg.yield %35 : f32
      } -> tensor<32x16xf32>
      %33 = tensor.empty() : tensor<32x16xf32>
      %34 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%11, %32 : tensor<32x16xf32>, tensor<32x16xf32>) outs(%33 : tensor<32x16xf32>) {
      ^bb0(%in: f32, %in_6: f32, %out: f32):
        %35 = arith.subf %in, %in_6 : f32
        linalg.yield %35 : f32
      } -> tensor<32x16xf32>
      state_set @w2 = %34 : tensor<32x16xf32>
      return
    }
  }
  monarch.actor_mesh @first = @First on @mesh_stages0_1
  shard.grid @mesh_stages1_2_grid(shape = 2x1x2)
  monarch.mesh_slice @mesh_stages1_2 of @mesh(hosts = 0 to 2, stages = 1 to 2, gpus = 0 to 2) grid @mesh_stages1_2_grid
  monarch.actor_class @Last {
    monarch.state @w3 : tensor<16x32xf32> dist #monarch.dist<[[], ["gpus"]]>
    monarch.state @w4 : tensor<32x8xf32> dist #monarch.dist<[["gpus"], []]>
    monarch.endpoint @step(%arg0: tensor<4x16xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}, %arg1: tensor<4x8xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}, %arg2: f32) -> (tensor<f32>, tensor<4x16xf32> {monarch.dist = #monarch.dist<[["hosts"], []]>}) {
      %0 = state_get @w3 : tensor<16x32xf32>
      %1 = tensor.empty() : tensor<4x32xf32>
      %cst = arith.constant 0.000000e+00 : f32
      %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %3 = linalg.matmul ins(%arg0, %0 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%2 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %4 = tensor.empty() : tensor<4x32xf32>
      %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x32xf32>) outs(%4 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %53 = math.tanh %in : f32
        linalg.yield %53 : f32
      } -> tensor<4x32xf32>
      %6 = state_get @w4 : tensor<32x8xf32>
      %7 = tensor.empty() : tensor<4x8xf32>
      %cst_0 = arith.constant 0.000000e+00 : f32
      %8 = linalg.fill ins(%cst_0 : f32) outs(%7 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %9 = linalg.matmul ins(%5, %6 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%8 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %10 = all_reduce %9 over ["gpus"] sum : tensor<4x8xf32>
      %11 = tensor.empty() : tensor<4x8xf32>
      %12 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%10, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%11 : tensor<4x8xf32>) {
      ^bb0(%in: f32, %in_11: f32, %out: f32):
        %53 = arith.subf %in, %in_11 : f32
        linalg.yield %53 : f32
      } -> tensor<4x8xf32>
      %13 = tensor.empty() : tensor<4x8xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%12, %12 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%13 : tensor<4x8xf32>) {
      ^bb0(%in: f32, %in_11: f32, %out: f32):
        %53 = arith.mulf %in, %in_11 : f32
        linalg.yield %53 : f32
      } -> tensor<4x8xf32>
      %15 = tensor.empty() : tensor<f32>
      %cst_1 = arith.constant 0.000000e+00 : f32
      %16 = linalg.fill ins(%cst_1 : f32) outs(%15 : tensor<f32>) -> tensor<f32>
      %reduced = linalg.reduce ins(%14 : tensor<4x8xf32>) outs(%16 : tensor<f32>) dimensions = [0, 1] 
        (%in: f32, %init: f32) {
          %53 = arith.addf %in, %init : f32
          linalg.yield %53 : f32
        }
      %17 = all_reduce %reduced over ["hosts"] sum : tensor<f32>
      %cst_2 = arith.constant 2.000000e+00 : f32
      %18 = tensor.empty() : tensor<4x8xf32>
      %19 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%12 : tensor<4x8xf32>) outs(%18 : tensor<4x8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %53 = arith.mulf %in, %cst_2 : f32
        linalg.yield %53 : f32
      } -> tensor<4x8xf32>
      %20 = tensor.empty() : tensor<32x4xf32>
      %transposed = linalg.transpose ins(%5 : tensor<4x32xf32>) outs(%20 : tensor<32x4xf32>) permutation = [1, 0] 
      %21 = tensor.empty() : tensor<32x8xf32>
      %cst_3 = arith.constant 0.000000e+00 : f32
      %22 = linalg.fill ins(%cst_3 : f32) outs(%21 : tensor<32x8xf32>) -> tensor<32x8xf32>
      %23 = linalg.matmul ins(%transposed, %19 : tensor<32x4xf32>, tensor<4x8xf32>) outs(%22 : tensor<32x8xf32>) -> tensor<32x8xf32>
      %24 = tensor.empty() : tensor<8x32xf32>
      %transposed_4 = linalg.transpose ins(%6 : tensor<32x8xf32>) outs(%24 : tensor<8x32xf32>) permutation = [1, 0] 
      %25 = tensor.empty() : tensor<4x32xf32>
      %cst_5 = arith.constant 0.000000e+00 : f32
      %26 = linalg.fill ins(%cst_5 : f32) outs(%25 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %27 = linalg.matmul ins(%19, %transposed_4 : tensor<4x8xf32>, tensor<8x32xf32>) outs(%26 : tensor<4x32xf32>) -> tensor<4x32xf32>
      %28 = tensor.empty() : tensor<4x32xf32>
      %29 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %5 : tensor<4x32xf32>, tensor<4x32xf32>) outs(%28 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %in_11: f32, %out: f32):
        %53 = arith.mulf %in, %in_11 : f32
        linalg.yield %53 : f32
      } -> tensor<4x32xf32>
      %cst_6 = arith.constant 1.000000e+00 : f32
      %30 = tensor.empty() : tensor<4x32xf32>
      %31 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%29 : tensor<4x32xf32>) outs(%30 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %53 = arith.subf %cst_6, %in : f32
        linalg.yield %53 : f32
      } -> tensor<4x32xf32>
      %32 = tensor.empty() : tensor<4x32xf32>
      %33 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%27, %31 : tensor<4x32xf32>, tensor<4x32xf32>) outs(%32 : tensor<4x32xf32>) {
      ^bb0(%in: f32, %in_11: f32, %out: f32):
        %53 = arith.mulf %in, %in_11 : f32
        linalg.yield %53 : f32
      } -> tensor<4x32xf32>
      %34 = tensor.empty() : tensor<32x16xf32>
      %transposed_7 = linalg.transpose ins(%0 : tensor<16x32xf32>) outs(%34 : tensor<32x16xf32>) permutation = [1, 0] 
      %35 = tensor.empty() : tensor<4x16xf32>
      %cst_8 = arith.constant 0.000000e+00 : f32
      %36 = linalg.fill ins(%cst_8 : f32) outs(%35 : tensor<4x16xf32>) -> tensor<4x16xf32>
      %37 = linalg.matmul ins(%33, %transposed_7 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%36 : tensor<4x16xf32>) -> tensor<4x16xf32>
      %38 = all_reduce %37 over ["gpus"] sum : tensor<4x16xf32>
      %39 = tensor.empty() : tensor<16x4xf32>
      %transposed_9 = linalg.transpose ins(%arg0 : tensor<4x16xf32>) outs(%39 : tensor<16x4xf32>) permutation = [1, 0] 
      %40 = tensor.empty() : tensor<16x32xf32>
      %cst_10 = arith.constant 0.000000e+00 : f32
      %41 = linalg.fill ins(%cst_10 : f32) outs(%40 : tensor<16x32xf32>) -> tensor<16x32xf32>
      %42 = linalg.matmul ins(%transposed_9, %33 : tensor<16x4xf32>, tensor<4x32xf32>) outs(%41 : tensor<16x32xf32>) -> tensor<16x32xf32>
      %43 = all_reduce %42 over ["hosts"] sum : tensor<16x32xf32>
      %44 = tensor.empty() : tensor<16x32xf32>
      %45 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%43 : tensor<16x32xf32>) outs(%44 : tensor<16x32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %53 = arith.mulf %arg2, %in : f32
        linalg.yield %53 : f32
      } -> tensor<16x32xf32>
      %46 = tensor.empty() : tensor<16x32xf32>
      %47 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %45 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%46 : tensor<16x32xf32>) {
      ^bb0(%in: f32, %in_11: f32, %out: f32):
        %53 = arith.subf %in, %in_11 : f32
        linalg.yield %53 : f32
      } -> tensor<16x32xf32>
      state_set @w3 = %47 : tensor<16x32xf32>
      %48 = all_reduce %23 over ["hosts"] sum : tensor<32x8xf32>
      %49 = tensor.empty() : tensor<32x8xf32>
      %50 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%48 : tensor<32x8xf32>) outs(%49 : tensor<32x8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %53 = arith.mulf %arg2, %in : f32
        linalg.yield %53 : f32
      } -> tensor<32x8xf32>
      %51 = tensor.empty() : tensor<32x8xf32>
      %52 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%6, %50 : tensor<32x8xf32>, tensor<32x8xf32>) outs(%51 : tensor<32x8xf32>) {
      ^bb0(%in: f32, %in_11: f32, %out: f32):
        %53 = arith.subf %in, %in_11 : f32
        linalg.yield %53 : f32
      } -> tensor<32x8xf32>
      state_set @w4 = %52 : tensor<32x8xf32>
      return %17, %38 : tensor<f32>, tensor<4x16xf32>
    }
  }
  monarch.actor_mesh @last = @Last on @mesh_stages1_2
  monarch.channel @train.ch0 from @mesh_stages0_1 to @mesh_stages1_2 : tensor<8x16xf32>
  monarch.channel @train.ch1 from @mesh_stages1_2 to @mesh_stages0_1 : tensor<8x16xf32>
  func.func @train.worker.mesh(%arg0: tensor<8x16xf32>, %arg1: tensor<8x8xf32>, %arg2: f32) -> tensor<f32> attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @first::@forward(%arg0) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    monarch.channel_send @train.ch0, %0 : tensor<8x16xf32>
    %1 = monarch.channel_recv @train.ch0 : tensor<8x16xf32>
    %2:2 = monarch.call @last::@step(%1, %arg1, %arg2) : (tensor<8x16xf32>, tensor<8x8xf32>, f32) -> (tensor<f32>, tensor<8x16xf32>)
    monarch.channel_send @train.ch1, %2#1 : tensor<8x16xf32>
    %3 = monarch.channel_recv @train.ch1 : tensor<8x16xf32>
    monarch.call @first::@backward(%arg0, %3, %arg2) : (tensor<8x16xf32>, tensor<8x16xf32>, f32) -> ()
    return %2#0 : tensor<f32>
  }
  func.func @train(%arg0: tensor<8x16xf32>, %arg1: tensor<8x8xf32>, %arg2: f32) -> tensor<f32> {
    %0 = monarch.control_msg to @mesh invoke [@train.worker.mesh] args(%arg2 : f32) : !monarch.token
    monarch.feed_input %arg0 to @train.worker.mesh input 0 : tensor<8x16xf32>
    monarch.feed_input %arg1 to @train.worker.mesh input 1 : tensor<8x8xf32>
    %1 = monarch.fetch_output @train.worker.mesh output 0 : tensor<f32>
    monarch.await %0 : !monarch.token
    return %1 : tensor<f32>
  }
}

