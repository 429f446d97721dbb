// RUN: monarch-opt %s --monarch-partition=engine=upstream --split-input-file | FileCheck %s
// RUN: monarch-opt %s --monarch-partition=engine=upstream --split-input-file | monarch-opt --split-input-file
// The own engine (the default) partitions every case here into IR that verifies:
// RUN: monarch-opt %s --monarch-partition --split-input-file | monarch-opt --split-input-file
// The CHECK lines below pin the upstream path (engine=upstream), kept for
// segments the own engine has no rule for; partition-own.mlir pins the own one.

// Data parallel: the batch is split over "gpus"; the matmul and relu run on
// each rank's rows, the column sum becomes a partial sum plus an all_reduce.
// The program calls the outlined endpoint with the global values.

// CHECK-LABEL: monarch.actor_class @step.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %[[W:.*]]: tensor<4x4xf32>) -> tensor<4xf32>
// CHECK:           linalg.matmul ins(%[[X]], %[[W]] : tensor<2x4xf32>, tensor<4x4xf32>)
// CHECK:           linalg.generic
// CHECK:           process_index over ["gpus"] : index
// CHECK:           %[[PART:.*]] = linalg.reduce ins(%{{.*}} : tensor<2x4xf32>)
// CHECK:           %[[SUM:.*]] = all_reduce %[[PART]] over ["gpus"] sum : tensor<4xf32>
// CHECK:           return %[[SUM]] : tensor<4xf32>
// CHECK:       monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
// CHECK-LABEL: func.func @step
// CHECK-NEXT:    %[[XF:.*]] = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
// CHECK-NEXT:    %[[WF:.*]] = monarch.feed %arg1 to @mesh : tensor<4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = monarch.call @step.mesh.0::@run(%[[XF]], %[[WF]]) : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[OUT:.*]] = monarch.fetch %[[R]] from @mesh : tensor<4xf32>
// CHECK-NEXT:    return %[[OUT]]
shard.grid @grid(shape = 4)
monarch.proc_mesh @mesh(gpus = 4) grid @grid
func.func @step(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x4xf32>
  %wf = monarch.feed %w to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<8x4xf32>
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %e = tensor.empty() : tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%xs, %wf : tensor<8x4xf32>, tensor<4x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e3 = tensor.empty() : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i,j)>], iterator_types = ["parallel","parallel"]} ins(%y : tensor<8x4xf32>) outs(%e3 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%r : tensor<8x4xf32>) outs(%f2 : tensor<4xf32>) dimensions = [0]
    (%a: f32, %b: f32) { %t = arith.addf %a, %b : f32
      linalg.yield %t : f32 }
  %out = shard.shard %sum to %rep annotate_for_users : tensor<4xf32>
  %res = monarch.fetch %out from @mesh : tensor<4xf32>
  return %res : tensor<4xf32>
}

// -----

// Tensor parallel (Megatron MLP): column-parallel then row-parallel matmul
// needs one all_reduce; the result then moves to another mesh, where the
// second segment runs replicated.

// CHECK-LABEL: monarch.actor_class @mlp.mesh.0.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x8xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\]\]}}>}, %{{.*}}: tensor<8x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> tensor<4x8xf32>
// CHECK-COUNT-2:   linalg.matmul
// CHECK:           all_reduce %{{.*}} over ["gpus"] sum : tensor<4x8xf32>
// CHECK-NOT:       all_reduce
// CHECK-LABEL: monarch.actor_class @mlp.other.1.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:      tensor.empty
// CHECK-NEXT:      linalg.add
// CHECK:       monarch.actor_mesh @mlp.other.1 = @mlp.other.1.class on @other
// CHECK-LABEL: func.func @mlp
// CHECK:         %[[H:.*]] = monarch.call @mlp.mesh.0::@run(%0, %1, %2) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[T:.*]] = monarch.transfer %[[H]] from @mesh to @other
// CHECK-NEXT:    %[[O:.*]] = monarch.call @mlp.other.1::@run(%[[T]])
// CHECK-NEXT:    monarch.fetch %[[O]] from @other
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
shard.grid @grid2(shape = 2)
monarch.proc_mesh @other(gpus = 2) grid @grid2
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x8xf32>
  %w1f = monarch.feed %w1 to @mesh : tensor<8x16xf32>
  %w2f = monarch.feed %w2 to @mesh : tensor<16x8xf32>
  %col = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %row = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %w1s = shard.shard %w1f to %col : tensor<8x16xf32>
  %w2s = shard.shard %w2f to %row : tensor<16x8xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x16xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%xf, %w1s : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%h, %w2s : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %yr = shard.shard %y to %rep annotate_for_users : tensor<4x8xf32>
  %t = monarch.transfer %yr from @mesh to @other : tensor<4x8xf32> -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x8xf32>
  %o = linalg.add ins(%t, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = monarch.fetch %o from @other : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Programs that only call actors have nothing to partition.

// CHECK-LABEL: func.func @only_actors
// CHECK-NEXT:    monarch.feed
// CHECK-NEXT:    monarch.call @a::@f
// CHECK-NEXT:    monarch.fetch
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    monarch.return %x : tensor<4xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @only_actors(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @m : tensor<4xf32>
  %y = monarch.call @a::@f(%xf) : (tensor<4xf32>) -> tensor<4xf32>
  %r = monarch.fetch %y from @m : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Replicated, then split inside the mesh work: each rank slices its rows
// (static sizes once the grid extents fold).
// CHECK-LABEL: monarch.actor_class @f.m.0.class
// CHECK:         process_index over ["gpus"] : index
// CHECK:         tensor.extract_slice %arg0[%{{.*}}, 0] [2, 16] [1, 1] : tensor<8x16xf32> to tensor<2x16xf32>
// CHECK-NOT:     cf.assert
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xf = monarch.feed %x to @m : tensor<8x16xf32>
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %split = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %xr = shard.shard %xf to %rep : tensor<8x16xf32>
  %xs = shard.shard %xr to %split annotate_for_users : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %y = linalg.add ins(%xs, %xs : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yr = shard.shard %y to %rep annotate_for_users : tensor<8x16xf32>
  %r = monarch.fetch %yr from @m : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// A split annotated after unannotated work: propagation pushes it back onto
// the argument, and the endpoint records it.
// CHECK-LABEL: monarch.actor_class @f.m.0.class
// CHECK:         monarch.endpoint @run(%arg0: tensor<4x16xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>})
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xf = monarch.feed %x to @m : tensor<8x16xf32>
  %split = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %e = tensor.empty() : tensor<8x16xf32>
  %a = linalg.add ins(%xf, %xf : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %as = shard.shard %a to %split : tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %b = linalg.mul ins(%as, %as : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = monarch.fetch %b from @m : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// Annotations with no tensor work on them are dropped: the call's endpoint
// says how its argument is split, so no identity endpoint is synthesized.
// CHECK-LABEL: func.func @only_annotated
// CHECK-NOT:     monarch.actor_class
// CHECK:         %[[F:.*]] = monarch.feed %arg0 to @m
// CHECK-NEXT:    monarch.call @a::@e(%[[F]])
shard.grid @g(shape = 2)
monarch.proc_mesh @m(gpus = 2) grid @g
monarch.actor_class @A {
  monarch.endpoint @e(%x: tensor<4xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) -> tensor<4xf32> {
    monarch.return %x : tensor<4xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @only_annotated(%x: tensor<8xf32>) -> tensor<4xf32> {
  %f = monarch.feed %x to @m : tensor<8xf32>
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %f to %s : tensor<8xf32>
  %y = monarch.call @a::@e(%xs) : (tensor<8xf32>) -> tensor<4xf32>
  %r = monarch.fetch %y from @m : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// On a 2-D grid, a value split over both axes then replicated: upstream
// reshards one grid axis per step, so the pass inserts the step between
// (gather "gpus", then "hosts"); in one step the result was ill-typed.

// CHECK-LABEL: monarch.endpoint @run
// CHECK-SAME:    tensor<4x4xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \["gpus"\]\]}}>}) -> tensor<8x8xf32>
// CHECK:         %[[G1:.*]] = all_gather %{{.*}} over ["gpus"] axis 1 : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK:         %[[G2:.*]] = all_gather %[[G1]] over ["hosts"] axis 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[G2]] : tensor<8x8xf32>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid22(shape = 2x2)
monarch.proc_mesh @mesh22(hosts = 2, gpus = 2) grid @grid22
func.func @double(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %xf = monarch.feed %x to @mesh22 : tensor<8x8xf32>
  %s = shard.sharding @grid22 split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<8x8xf32>
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %rep = shard.sharding @grid22 split_axes = [[]] : !shard.sharding
  %yr = shard.shard %y to %rep : tensor<8x8xf32>
  %out = monarch.fetch %yr from @mesh22 : tensor<8x8xf32>
  return %out : tensor<8x8xf32>
}

// -----

// A 0-d value annotated replicated as the tracer writes it (`[[]]`, since
// upstream cannot parse the `[]` it prints): partitioned, not crashed.

// CHECK-LABEL: monarch.endpoint @run(%{{.*}}: tensor<f32>) -> tensor<f32>
// CHECK:         arith.mulf
#map0d = affine_map<() -> ()>
module {
  shard.grid @grid0d(shape = 1x1)
  monarch.proc_mesh @mesh0d(hosts = 1, gpus = 1) grid @grid0d
  func.func @scale0d(%arg0: tensor<f32>) -> tensor<f32> {
    %cst = arith.constant 2.000000e+00 : f32
    %0 = monarch.feed %arg0 to @mesh0d : tensor<f32>
    %sharding = shard.sharding @grid0d split_axes = [[]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<f32>
    %1 = tensor.empty() : tensor<f32>
    %2 = linalg.generic {indexing_maps = [#map0d, #map0d], iterator_types = []} ins(%sharding_annotated : tensor<f32>) outs(%1 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %4 = arith.mulf %in, %cst : f32
      linalg.yield %4 : f32
    } -> tensor<f32>
    %3 = monarch.fetch %2 from @mesh0d : tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

// A result used twice, once with a request to split it over a grid axis of
// extent 1: upstream resharding crashed on both the unit axis and the two
// plain annotations propagation gives the value.

// CHECK-LABEL: monarch.endpoint @run(%{{.*}}: tensor<1x1x1xf32>) -> (tensor<1xf32>, tensor<1xf32>)
// CHECK:         %[[R:.*]] = linalg.reduce
// CHECK:         return %[[R]], %[[R]]
  shard.grid @grid111(shape = 1x1)
  monarch.proc_mesh @mesh111(hosts = 1, gpus = 1) grid @grid111
  func.func @twice(%arg0: tensor<1x1x1xf32>) -> (tensor<1xf32>, tensor<1xf32>) {
    %0 = monarch.feed %arg0 to @mesh111 : tensor<1x1x1xf32>
    %sharding = shard.sharding @grid111 split_axes = [[]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<1x1x1xf32>
    %1 = tensor.empty() : tensor<1xf32>
    %cst = arith.constant 0xFF800000 : f32
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<1xf32>) -> tensor<1xf32>
    %reduced = linalg.reduce ins(%sharding_annotated : tensor<1x1x1xf32>) outs(%2 : tensor<1xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %5 = arith.maximumf %in, %init : f32
        linalg.yield %5 : f32
      }
    %sharding_0 = shard.sharding @grid111 split_axes = [[1]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %reduced to %sharding_0 annotate_for_users : tensor<1xf32>
    %3 = monarch.fetch %sharding_annotated_1 from @mesh111 : tensor<1xf32>
    %4 = monarch.fetch %reduced from @mesh111 : tensor<1xf32>
    return %3, %4 : tensor<1xf32>, tensor<1xf32>
  }

// -----

// An argument fed to the mesh and never read: its feed is dropped (the
// controller refused the plan: "feed indices are not 0..N-1").

// CHECK-LABEL: func.func @dead_feed
// CHECK-NOT:     monarch.feed %arg0
// CHECK:         monarch.feed %arg1
#mapdf = affine_map<(d0) -> (d0)>
shard.grid @griddf(shape = 1)
monarch.proc_mesh @meshdf(gpus = 1) grid @griddf
func.func @dead_feed(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = monarch.feed %arg0 to @meshdf : tensor<4xf32>
  %1 = monarch.feed %arg1 to @meshdf : tensor<4xf32>
  %2 = tensor.empty() : tensor<4xf32>
  %3 = linalg.generic {indexing_maps = [#mapdf, #mapdf], iterator_types = ["parallel"]} ins(%1 : tensor<4xf32>) outs(%2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.sqrt %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %4 = monarch.fetch %3 from @meshdf : tensor<4xf32>
  return %4 : tensor<4xf32>
}

// -----

// One value used as both operands of a contraction whose result is split
// over both grid axes (x.T @ x.T): each use gets its own layout (rows of the
// left operand by "gpus", columns of the right by "hosts"), not one layout
// for both (that computed a wrong product).

// CHECK-LABEL: monarch.actor_class @square.mesh.0.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<1x2xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \[\]\]}}>}) -> (tensor<1x1xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \["hosts"\]\]}}>})
// CHECK:         %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x2xf32>) outs(%{{.*}} : tensor<2x1xf32>)
// CHECK:         %[[ALL:.*]] = all_gather %[[T]] over ["hosts"] axis 1 : tensor<2x1xf32> -> tensor<2x2xf32>
// CHECK:         %[[ROWS:.*]] = tensor.extract_slice %[[ALL]]
// CHECK:         linalg.matmul ins(%[[ROWS]], %[[T]] : tensor<1x2xf32>, tensor<2x1xf32>)
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
func.func @square(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %xf = monarch.feed %x to @mesh : tensor<2x2xf32>
  %e = tensor.empty() : tensor<2x2xf32>
  %t = linalg.transpose ins(%xf : tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = linalg.matmul ins(%t, %t : tensor<2x2xf32>, tensor<2x2xf32>) outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = shard.sharding @grid split_axes = [[1], [0]] : !shard.sharding
  %ys = shard.shard %y to %s : tensor<2x2xf32>
  %res = monarch.fetch %ys from @mesh : tensor<2x2xf32>
  return %res : tensor<2x2xf32>
}

// -----

// A reshape that splits a sharded dimension (attention heads: D split over
// "gpus" becomes (H, D/H) with H split) runs on each rank's shard, in an
// endpoint of its own between the work before and after it; the layouts
// stay where the matmul left them (no gather around the reshape).

// CHECK-LABEL: monarch.actor_class @heads.mesh.1.class
// CHECK:         monarch.endpoint @run(%[[A:.*]]: tensor<2x8x8xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \[\], \["gpus"\]\]}}>}) -> (tensor<2x8x1x8xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \[\], \["gpus"\], \[\]\]}}>})
// CHECK-NEXT:      %[[E:.*]] = tensor.expand_shape %[[A]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 8, 1, 8] : tensor<2x8x8xf32> into tensor<2x8x1x8xf32>
// CHECK-NEXT:      return %[[E]]
// CHECK-LABEL: monarch.actor_class @heads.mesh.2.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<2x8x1x8xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \[\], \["gpus"\], \[\]\]}}>})
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  shard.grid @mesh_grid(shape = 2x2)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @mesh_grid
  func.func @heads(%arg0: tensor<4x8x16xf32>, %arg1: tensor<16x16xf32>) -> tensor<4x8x2x8xf32> {
    %0 = monarch.feed %arg0 to @mesh : tensor<4x8x16xf32>
    %sharding = shard.sharding @mesh_grid split_axes = [[0]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<4x8x16xf32>
    %1 = monarch.feed %arg1 to @mesh : tensor<16x16xf32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[], [1]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<16x16xf32>
    %2 = tensor.empty() : tensor<4x8x16xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sharding_annotated, %sharding_annotated_1 : tensor<4x8x16xf32>, tensor<16x16xf32>) outs(%3 : tensor<4x8x16xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %8 = arith.mulf %in, %in_2 : f32
      %9 = arith.addf %out, %8 : f32
      linalg.yield %9 : f32
    } -> tensor<4x8x16xf32>
    %expanded = tensor.expand_shape %4 [[0], [1], [2, 3]] output_shape [4, 8, 2, 8] : tensor<4x8x16xf32> into tensor<4x8x2x8xf32>
    %5 = tensor.empty() : tensor<4x8x2x8xf32>
    %6 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<4x8x2x8xf32>) outs(%5 : tensor<4x8x2x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst_2 = arith.constant 0.000000e+00 : f32
      %8 = arith.maximumf %in, %cst_2 : f32
      linalg.yield %8 : f32
    } -> tensor<4x8x2x8xf32>
    %7 = monarch.fetch %6 from @mesh : tensor<4x8x2x8xf32>
    return %7 : tensor<4x8x2x8xf32>
  }
}

// -----

// A gather (emb[tok]) partitions over its own loops: the tokens keep their
// split over "hosts" and every rank reads the whole, replicated table.

// CHECK-LABEL: monarch.actor_class @lookup.mesh.0.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<2x3xi32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \[\]\]}}>}, %[[T:.*]]: tensor<10x4xf32>) -> (tensor<2x3x4xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \[\], \[\]\]}}>})
// CHECK:           tensor.extract %[[T]]
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  shard.grid @mesh_grid(shape = 2x2)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @mesh_grid
  func.func @lookup(%arg0: tensor<10x4xf32>, %arg1: tensor<4x3xi32>) -> tensor<4x3x4xf32> {
    %0 = monarch.feed %arg1 to @mesh : tensor<4x3xi32>
    %sharding = shard.sharding @mesh_grid split_axes = [[0]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<4x3xi32>
    %1 = monarch.feed %arg0 to @mesh : tensor<10x4xf32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<10x4xf32>
    %2 = tensor.empty() : tensor<4x3x4xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated : tensor<4x3xi32>) outs(%2 : tensor<4x3x4xf32>) {
    ^bb0(%in: i32, %out: f32):
      %7 = arith.index_cast %in : i32 to index
      %c0 = arith.constant 0 : index
      %c10 = arith.constant 10 : index
      %c9 = arith.constant 9 : index
      %8 = arith.cmpi slt, %7, %c0 : index
      %9 = arith.addi %7, %c10 : index
      %10 = arith.select %8, %9, %7 : index
      %11 = arith.maxsi %10, %c0 : index
      %12 = arith.minsi %11, %c9 : index
      %13 = linalg.index 2 : index
      %extracted = tensor.extract %sharding_annotated_1[%12, %13] : tensor<10x4xf32>
      linalg.yield %extracted : f32
    } -> tensor<4x3x4xf32>
    %4 = tensor.empty() : tensor<4x3x4xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<4x3x4xf32>) outs(%4 : tensor<4x3x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst = arith.constant 0.000000e+00 : f32
      %7 = arith.maximumf %in, %cst : f32
      linalg.yield %7 : f32
    } -> tensor<4x3x4xf32>
    %6 = monarch.fetch %5 from @mesh : tensor<4x3x4xf32>
    return %6 : tensor<4x3x4xf32>
  }
}

// -----

// Owner computes: `mc.replicate(mc.shard(x, gpus=0) @ w)` is a replicated
// request for the users of the product (annotate_for_users), so the matmul
// runs on each rank's rows and the product is gathered after it, instead
// of gathering x and computing the whole product on every rank.

// CHECK-LABEL: monarch.actor_class @owner.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<4x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %[[W:.*]]: tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK-NOT:       all_gather %[[X]]
// CHECK:           %[[P:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK:           all_gather %[[P]] over ["gpus"] axis 0 : tensor<4x4xf32> -> tensor<8x4xf32>
module {
  shard.grid @mesh_grid(shape = 1x2)
  monarch.proc_mesh @mesh(hosts = 1, gpus = 2) grid @mesh_grid
  func.func @owner(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<8x4xf32> {
    %0 = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
    %sharding = shard.sharding @mesh_grid split_axes = [[1]] : !shard.sharding
    %sharding_annotated = shard.shard %0 to %sharding : tensor<8x4xf32>
    %1 = monarch.feed %arg1 to @mesh : tensor<4x4xf32>
    %sharding_0 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %1 to %sharding_0 : tensor<4x4xf32>
    %2 = tensor.empty() : tensor<8x4xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<8x4xf32>) -> tensor<8x4xf32>
    %4 = linalg.matmul ins(%sharding_annotated, %sharding_annotated_1 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%3 : tensor<8x4xf32>) -> tensor<8x4xf32>
    %sharding_2 = shard.sharding @mesh_grid split_axes = [[]] : !shard.sharding
    %sharding_annotated_3 = shard.shard %4 to %sharding_2 annotate_for_users : tensor<8x4xf32>
    %5 = monarch.fetch %sharding_annotated_3 from @mesh : tensor<8x4xf32>
    return %5 : tensor<8x4xf32>
  }
}

