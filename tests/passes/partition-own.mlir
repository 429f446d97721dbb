// RUN: monarch-opt %s --split-input-file --monarch-partition=engine=own | FileCheck %s

// The own engine (monarch-partition{engine=own}): data parallel. The batch
// is split over "gpus"; the matmul and relu run on each rank's rows, the
// column sum over the split rows is a partial sum, all-reduced where the
// replicated annotation wants it. The zero fill of the sum is every rank's
// own (sum's identity), with no rank-dependent init.

// CHECK-LABEL: monarch.actor_class @dp.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<2x3xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %[[W:.*]]: tensor<3x4xf32>) -> tensor<4xf32>
// CHECK:         linalg.matmul ins(%[[X]], %[[W]] : tensor<2x3xf32>, tensor<3x4xf32>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK-NOT:     scf.if
// CHECK:         %[[R:.*]] = linalg.reduce ins(%{{.*}} : tensor<2x4xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [0]
// CHECK:         %[[S:.*]] = all_reduce %[[R]] over ["gpus"] sum : tensor<4xf32>
// CHECK:         return %[[S]]
#id = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @dp(%x: tensor<4x3xf32>, %w: tensor<3x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x3xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x3xf32>
  %wf = monarch.feed %w to @mesh : tensor<3x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%xs, %wf : tensor<4x3xf32>, tensor<3x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<4xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%r : tensor<4x4xf32>) outs(%f3 : tensor<4xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %sr = shard.shard %sum to %rep annotate_for_users : tensor<4xf32>
  %out = monarch.fetch %sr from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}

// -----

// Megatron's MLP: w1 split by columns, w2 by rows. The hidden layer is each
// rank's own; the second product is a partial sum over the split
// contraction, all-reduced once.

// CHECK-LABEL: monarch.actor_class @mlp.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<4x8xf32>, %[[W1:.*]]: tensor<8x8xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\]\]}}>}, %[[W2:.*]]: tensor<8x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> tensor<4x8xf32>
// CHECK:         %[[H:.*]] = linalg.matmul ins(%[[X]], %[[W1]] : tensor<4x8xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK:         %[[Y:.*]] = linalg.matmul ins(%[[H]], %[[W2]] : tensor<4x8xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NEXT:    %[[S:.*]] = all_reduce %[[Y]] over ["gpus"] sum : tensor<4x8xf32>
// CHECK-NEXT:    return %[[S]]
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x8xf32>
  %w1f = monarch.feed %w1 to @mesh : tensor<8x16xf32>
  %c = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %w1s = shard.shard %w1f to %c : tensor<8x16xf32>
  %w2f = monarch.feed %w2 to @mesh : tensor<16x8xf32>
  %r = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %w2s = shard.shard %w2f to %r : tensor<16x8xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%xf, %w1s : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%h, %w2s : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %yr = shard.shard %y to %rep annotate_for_users : tensor<4x8xf32>
  %out = monarch.fetch %yr from @mesh : tensor<4x8xf32>
  return %out : tensor<4x8xf32>
}

// -----

// A partial sum wanted split by rows becomes a reduce_scatter (sequence
// parallelism's form), not an all_reduce and a slice.

// CHECK-LABEL: monarch.actor_class @rs.mesh.0.class
// CHECK:         %[[Y:.*]] = linalg.matmul
// CHECK-NEXT:    %[[S:.*]] = reduce_scatter %[[Y]] over ["gpus"] axis 0 sum : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    return %[[S]]
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @rs(%h: tensor<4x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %hf = monarch.feed %h to @mesh : tensor<4x16xf32>
  %c = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %hs = shard.shard %hf to %c : tensor<4x16xf32>
  %w2f = monarch.feed %w2 to @mesh : tensor<16x8xf32>
  %r = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %w2s = shard.shard %w2f to %r : tensor<16x8xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%hs, %w2s : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ys = shard.shard %y to %rows annotate_for_users : tensor<4x8xf32>
  %out = monarch.fetch %ys from @mesh : tensor<4x8xf32>
  return %out : tensor<4x8xf32>
}

// -----

// One tensor dimension split over both mesh dimensions of a 2x2 mesh
// (hosts major): each rank holds a quarter of the rows; the row sum is a
// partial over both, all-reduced over both.

// CHECK-LABEL: monarch.actor_class @two.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["hosts", "gpus"\], \[\]\]}}>}) -> tensor<4xf32>
// CHECK:         %[[R:.*]] = linalg.reduce ins(%[[X]] : tensor<2x4xf32>)
// CHECK:         all_reduce %[[R]] over ["hosts", "gpus"] sum : tensor<4xf32>
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
func.func @two(%x: tensor<8x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x4xf32>
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<4xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%xs : tensor<8x4xf32>) outs(%f3 : tensor<4xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %sr = shard.shard %sum to %rep annotate_for_users : tensor<4xf32>
  %out = monarch.fetch %sr from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}

// -----

// Moving the split from rows to columns for work that wants columns is one
// all_to_all; a slice along the split dimension gathers that dimension only
// (not the whole value). (A value that only leaves the segment keeps its
// layout: the plan fetches its shards.)

// CHECK-LABEL: monarch.actor_class @move.mesh.0.class
// CHECK:         all_to_all %{{.*}} over ["gpus"] split 1 concat 0 : tensor<2x4xf32> -> tensor<4x2xf32>
// CHECK:         %[[G:.*]] = all_gather %{{.*}} over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK:         tensor.extract_slice %[[G]][1, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @move(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<2x4xf32>) {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %yc = shard.shard %y to %cols annotate_for_users : tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%yc : tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %mid = tensor.extract_slice %y[1, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
  %o1 = monarch.fetch %z from @mesh : tensor<4x4xf32>
  %o2 = monarch.fetch %mid from @mesh : tensor<2x4xf32>
  return %o1, %o2 : tensor<4x4xf32>, tensor<2x4xf32>
}

// -----

// A gather (a body reading a captured table at data-dependent rows)
// partitions over its loops: the indices stay split, the table is whole on
// every rank.

// CHECK-LABEL: monarch.actor_class @gather.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[T:.*]]: tensor<8x4xf32>, %[[I:.*]]: tensor<2xi32> {monarch.dist = #monarch.dist<{{\[\["gpus"\]\]}}>})
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[I]], %{{.*}} : tensor<2xi32>, tensor<4xi32>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK:           tensor.extract %[[T]]
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @gather(%table: tensor<8x4xf32>, %idx: tensor<4xi32>) -> tensor<4x4xf32> {
  %tf = monarch.feed %table to @mesh : tensor<8x4xf32>
  %if = monarch.feed %idx to @mesh : tensor<4xi32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %is = shard.shard %if to %s : tensor<4xi32>
  %cols = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%is, %cols : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%i: i32, %j: i32, %o: f32):
    %ii = arith.index_cast %i : i32 to index
    %jj = arith.index_cast %j : i32 to index
    %v = tensor.extract %tf[%ii, %jj] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4x4xf32>
  return %out : tensor<4x4xf32>
}


// -----

// The table split by rows (Megatron's vocabulary-parallel embedding): each
// rank reads the rows in its shard (global row - its first row, zero
// outside) and the partial sums are all-reduced once; the table is never
// gathered.

// CHECK-LABEL: monarch.actor_class @vocab.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[T:.*]]: tensor<4x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %[[I:.*]]: tensor<4xi32>) -> tensor<4x4xf32>
// CHECK:         %[[P:.*]] = process_index over ["gpus"] : index
// CHECK:         %[[FIRST:.*]] = arith.muli %[[P]], %{{.*}} : index
// CHECK:         %[[G:.*]] = linalg.generic
// CHECK:           %[[LOCAL:.*]] = arith.subi %{{.*}}, %[[FIRST]] : index
// CHECK:           tensor.extract %[[T]]
// CHECK:           arith.select
// CHECK:         all_reduce %[[G]] over ["gpus"] sum : tensor<4x4xf32>
// CHECK-NOT:     all_gather
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @vocab(%table: tensor<8x4xf32>, %idx: tensor<4xi32>) -> tensor<4x4xf32> {
  %tf = monarch.feed %table to @mesh : tensor<8x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ts = shard.shard %tf to %s : tensor<8x4xf32>
  %if = monarch.feed %idx to @mesh : tensor<4xi32>
  %cols = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%if, %cols : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%i: i32, %j: i32, %o: f32):
    %ii = arith.index_cast %i : i32 to index
    %jj = arith.index_cast %j : i32 to index
    %v = tensor.extract %ts[%ii, %jj] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4x4xf32>
  return %out : tensor<4x4xf32>
}

// -----

// A body reading its loop index gets the global coordinate: the rank's
// first index along the split loop is added to `linalg.index`.

// CHECK-LABEL: monarch.actor_class @index.mesh.0.class
// CHECK:         %[[P:.*]] = process_index over ["gpus"] : index
// CHECK:         %[[FIRST:.*]] = arith.muli %[[P]], %{{.*}} : index
// CHECK:         linalg.generic
// CHECK:           %[[I:.*]] = linalg.index 0 : index
// CHECK:           %[[G:.*]] = arith.addi %[[I]], %[[FIRST]] : index
// CHECK:           arith.index_cast %[[G]]
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @index(%x: tensor<4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%xs : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %m = arith.addf %a, %f : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}

// -----

// A partial sum with two users is reduced once where it is made, when one
// of them needs it reduced: AdamW's `(1 - b1) * g` could carry the
// gradient's partial sum, but its `g * g` needs `g` whole, so both read
// the one all_reduce (carrying it through the scaling would reduce the
// same sum twice).

// CHECK-LABEL: monarch.actor_class @twice.mesh.0.class
// CHECK:         %[[G:.*]] = linalg.reduce
// CHECK-NOT:     all_reduce
// CHECK:         %[[S:.*]] = all_reduce %[[G]] over ["gpus"] sum : tensor<4xf32>
// CHECK-NOT:     all_reduce
// CHECK:         linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK-NOT:     all_reduce
// CHECK:         linalg.generic {{.*}} ins(%[[S]], %[[S]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT:     all_reduce
// CHECK:         return
#id1 = affine_map<(d0) -> (d0)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @twice(%x: tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %z = arith.constant 0.0 : f32
  %c = arith.constant 0.1 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %g = linalg.reduce ins(%xs : tensor<4x4xf32>) outs(%f : tensor<4xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  %e1 = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%g : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %v = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%g, %g : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %mo = monarch.fetch %m from @mesh : tensor<4xf32>
  %vo = monarch.fetch %v from @mesh : tensor<4xf32>
  return %mo, %vo : tensor<4xf32>, tensor<4xf32>
}

// -----

// Conflicts are decided by cost (shared memory: 20 us + bytes / 4 GB/s a
// collective). `x` arrives split along the contraction: splitting the
// matmul's reduction loop with it would leave an 8x64 partial sum to
// all-reduce (2 KB), gathering `x` moves 64 bytes, so `x` is gathered
// and the product runs whole on each rank.

// CHECK-LABEL: monarch.actor_class @cost.mesh.0.class
// CHECK:         %[[G:.*]] = all_gather %arg0 over ["gpus"] axis 1 : tensor<8x1xf32> -> tensor<8x2xf32>
// CHECK:         linalg.matmul ins(%[[G]], %arg1 : tensor<8x2xf32>, tensor<2x64xf32>)
// CHECK-NOT:     all_reduce
// CHECK:         return
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @cost(%x: tensor<8x2xf32>, %w: tensor<2x64xf32>) -> tensor<8x64xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x2xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<8x2xf32>
  %wf = monarch.feed %w to @mesh : tensor<2x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = linalg.matmul ins(%xs, %wf : tensor<8x2xf32>, tensor<2x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  %out = monarch.fetch %y from @mesh : tensor<8x64xf32>
  return %out : tensor<8x64xf32>
}

// -----

// An op with several results (one loop nest): each result takes the
// layout its own indexing map gives the loops' split. Sum and sum of
// squares of a row-split x in one pass: both are partial sums, each
// all-reduced (the plan buckets the two into one collective, and the
// cost model charges one latency for them).

// CHECK-LABEL: monarch.actor_class @moments.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<1024x64xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> (tensor<64xf32>, tensor<64xf32>)
// CHECK-NOT:     all_gather
// CHECK:         %[[R:.*]]:2 = linalg.generic {{.*}} ins(%[[X]] : tensor<1024x64xf32>)
// CHECK-NEXT:    ^bb0
// CHECK:         } -> (tensor<64xf32>, tensor<64xf32>)
// CHECK-NEXT:    %[[S:.*]] = all_reduce %[[R]]#0 over ["gpus"] sum : tensor<64xf32>
// CHECK-NEXT:    %[[Q:.*]] = all_reduce %[[R]]#1 over ["gpus"] sum : tensor<64xf32>
// CHECK-NEXT:    return %[[S]], %[[Q]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @moments(%x: tensor<2048x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %xf = monarch.feed %x to @mesh : tensor<2048x64xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<2048x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r:2 = linalg.generic {indexing_maps = [#id2, #col, #col], iterator_types = ["reduction", "parallel"]} ins(%xs : tensor<2048x64xf32>) outs(%f, %f : tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%a: f32, %o1: f32, %o2: f32):
    %s1 = arith.addf %a, %o1 : f32
    %sq = arith.mulf %a, %a : f32
    %s2 = arith.addf %sq, %o2 : f32
    linalg.yield %s1, %s2 : f32, f32
  } -> (tensor<64xf32>, tensor<64xf32>)
  %o1 = monarch.fetch %r#0 from @mesh : tensor<64xf32>
  %o2 = monarch.fetch %r#1 from @mesh : tensor<64xf32>
  return %o1, %o2 : tensor<64xf32>, tensor<64xf32>
}

// -----

// Two elementwise results of a row-split x, the second written transposed:
// each rank makes its rows of the first and its columns of the second, and
// both leave split (the plan fetches shards), with no collective.

// CHECK-LABEL: monarch.actor_class @pair.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<2x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> (tensor<2x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, tensor<8x2xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\]\]}}>})
// CHECK-NOT:     all_
// CHECK:         %[[R:.*]]:2 = linalg.generic {{.*}} ins(%[[X]] : tensor<2x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<8x2xf32>)
// CHECK-NOT:     all_
// CHECK:         return %[[R]]#0, %[[R]]#1
#id3 = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @pair(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %xf = monarch.feed %x to @mesh : tensor<4x8xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %r:2 = linalg.generic {indexing_maps = [#id3, #id3, #tr], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x8xf32>) outs(%e, %et : tensor<4x8xf32>, tensor<8x4xf32>) {
  ^bb0(%a: f32, %o1: f32, %o2: f32):
    %y = math.exp %a : f32
    %d = arith.addf %a, %a : f32
    linalg.yield %y, %d : f32, f32
  } -> (tensor<4x8xf32>, tensor<8x4xf32>)
  %o1 = monarch.fetch %r#0 from @mesh : tensor<4x8xf32>
  %o2 = monarch.fetch %r#1 from @mesh : tensor<8x4xf32>
  return %o1, %o2 : tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

// Shardy's reshape rule, merging: (2, 16) split over (hosts, gpus) on a 2x2
// mesh is collapsed to 32 rows; each rank holds one row of the first
// dimension, so its 8 rows of the second are contiguous in the merged one,
// which is split over hosts then gpus with nothing gathered.

// CHECK-LABEL: monarch.actor_class @merge.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<1x8x4xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \["gpus"\], \[\]\]}}>})
// CHECK-NOT:     all_gather
// CHECK:         tensor.collapse_shape %[[X]] {{\[\[0, 1\], \[2\]\]}} : tensor<1x8x4xf32> into tensor<8x4xf32>
// CHECK-NOT:     all_gather
// CHECK:         return {{.*}} : tensor<8x4xf32>
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
func.func @merge(%x: tensor<2x16x4xf32>) -> tensor<32x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<2x16x4xf32>
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<2x16x4xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x16x4xf32> into tensor<32x4xf32>
  %e = tensor.empty() : tensor<32x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<32x4xf32>) outs(%e : tensor<32x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<32x4xf32>
  %out = monarch.fetch %y from @mesh : tensor<32x4xf32>
  return %out : tensor<32x4xf32>
}

// -----

// Splitting: 32 rows split over (hosts, gpus) expanded to (2, 16): hosts
// takes the first dimension whole (one row per rank), gpus goes on to the
// second. Before, the 2-row first dimension could not take all 4 ranks and
// the rows were gathered.

// CHECK-LABEL: monarch.actor_class @unmerge.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<8x4xf32> {monarch.dist = #monarch.dist<{{\[\["hosts", "gpus"\], \[\]\]}}>})
// CHECK-NOT:     all_gather
// CHECK:         tensor.expand_shape %[[X]] {{\[\[0, 1\], \[2\]\]}} output_shape [1, 8, 4] : tensor<8x4xf32> into tensor<1x8x4xf32>
// CHECK-NOT:     all_gather
// CHECK:         return {{.*}} : tensor<1x8x4xf32>
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
func.func @unmerge(%x: tensor<32x4xf32>) -> tensor<2x16x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<32x4xf32>
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<32x4xf32>
  %c = tensor.expand_shape %xs [[0, 1], [2]] output_shape [2, 16, 4] : tensor<32x4xf32> into tensor<2x16x4xf32>
  %e = tensor.empty() : tensor<2x16x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%c : tensor<2x16x4xf32>) outs(%e : tensor<2x16x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<2x16x4xf32>
  %out = monarch.fetch %y from @mesh : tensor<2x16x4xf32>
  return %out : tensor<2x16x4xf32>
}

// -----

// Where the shards would not be contiguous, the split is gathered first:
// (4, 16) with only the second dimension split merges rows 0-7 of each of
// the 4 first-dimension rows, not a block of the merged one.

// CHECK-LABEL: monarch.actor_class @interleaved.mesh.0.class
// CHECK:         %[[G:.*]] = all_gather %{{.*}} over ["gpus"] axis 1 : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK:         tensor.collapse_shape %[[G]] {{\[\[0, 1\]\]}} : tensor<4x16xf32> into tensor<64xf32>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @interleaved(%x: tensor<4x16xf32>) -> tensor<64xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x16xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x16xf32>
  %c = tensor.collapse_shape %xs [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %out = monarch.fetch %y from @mesh : tensor<64xf32>
  return %out : tensor<64xf32>
}

// -----

// The same merge when an elementwise user has an operand already split
// over the merged dimension (y split by rows): the split of the second
// dimension moves to the first, one all_to_all, and each rank keeps its
// block of the merged rows (no all_gather and slice).

// CHECK-LABEL: monarch.actor_class @moved.mesh.0.class
// CHECK-NOT:     all_gather
// CHECK:         %[[A:.*]] = all_to_all %{{.*}} over ["gpus"] split 0 concat 1 : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK:         tensor.collapse_shape %[[A]] {{\[\[0, 1\]\]}} : tensor<2x16xf32> into tensor<32xf32>
// CHECK-NOT:     all_gather
// CHECK-NOT:     extract_slice
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @moved(%x: tensor<4x16xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x16xf32>
  %yf = monarch.feed %y to @mesh : tensor<64xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x16xf32>
  %r = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ys = shard.shard %yf to %r : tensor<64xf32>
  %c = tensor.collapse_shape %xs [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ys, %c : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %out = monarch.fetch %z from @mesh : tensor<64xf32>
  return %out : tensor<64xf32>
}

// -----

// A wanted layout says nothing of the dimensions it leaves unsplit: the
// one-hot of batch-split labels (the vocabulary-parallel embedding's
// backward: one_hot(tok).T @ dx, the vocabulary split over gpus, the batch
// over hosts) keeps its rows split over hosts, the contraction leaves a
// partial sum over hosts, and the labels are not gathered.

// CHECK-LABEL: monarch.actor_class @onehot.mesh.0.class
// CHECK:         monarch.endpoint @run(%{{.*}}: tensor<4xi32> {monarch.dist = #monarch.dist<{{\[\["hosts"\]\]}}>}
// CHECK-NOT:     all_gather
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT:    all_reduce %{{.*}} over ["hosts"] sum : tensor<32x4xf32>
#orow = affine_map<(d0, d1) -> (d0)>
#ocol = affine_map<(d0, d1) -> (d1)>
#oid = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
func.func @onehot(%lab: tensor<8xi32>, %dx: tensor<8x4xf32>) -> tensor<64x4xf32> {
  %lf = monarch.feed %lab to @mesh : tensor<8xi32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ls = shard.shard %lf to %s : tensor<8xi32>
  %dxf = monarch.feed %dx to @mesh : tensor<8x4xf32>
  %dxs = shard.shard %dxf to %s : tensor<8x4xf32>
  %classes = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]> : tensor<64xi32>
  %e = tensor.empty() : tensor<8x64xi1>
  %oh = linalg.generic {indexing_maps = [#orow, #ocol, #oid], iterator_types = ["parallel", "parallel"]} ins(%ls, %classes : tensor<8xi32>, tensor<64xi32>) outs(%e : tensor<8x64xi1>) {
  ^bb0(%a: i32, %c: i32, %o: i1):
    %eq = arith.cmpi eq, %a, %c : i32
    linalg.yield %eq : i1
  } -> tensor<8x64xi1>
  %ef = tensor.empty() : tensor<8x64xf32>
  %ohf = linalg.generic {indexing_maps = [#oid, #oid], iterator_types = ["parallel", "parallel"]} ins(%oh : tensor<8x64xi1>) outs(%ef : tensor<8x64xf32>) {
  ^bb0(%a: i1, %o: f32):
    %f = arith.uitofp %a : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x64xf32>
  %et = tensor.empty() : tensor<64x8xf32>
  %t = linalg.transpose ins(%ohf : tensor<8x64xf32>) outs(%et : tensor<64x8xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<64x4xf32>
  %fg = linalg.fill ins(%z : f32) outs(%eg : tensor<64x4xf32>) -> tensor<64x4xf32>
  %g = linalg.matmul ins(%t, %dxs : tensor<64x8xf32>, tensor<8x4xf32>) outs(%fg : tensor<64x4xf32>) -> tensor<64x4xf32>
  %v = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %gs = shard.shard %g to %v annotate_for_users : tensor<64x4xf32>
  %out = monarch.fetch %gs from @mesh : tensor<64x4xf32>
  return %out : tensor<64x4xf32>
}

// -----

// A gather along an unsplit axis of a table split along another (the
// tracer's x[:, idx]: row coordinates from an arange, columns from the
// indices) passes the split through: each rank gathers from its own rows,
// at its rows' local coordinates, with no collective.

// CHECK-LABEL: monarch.actor_class @passthrough.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[T:.*]]: tensor<4x6xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) -> (tensor<4x3xf32>
// CHECK-NOT:     all_
// CHECK:         tensor.extract_slice
// CHECK:         %[[P:.*]] = process_index over ["gpus"] : index
// CHECK-NEXT:    %[[N:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.muli %[[P]], %[[N]] : index
// CHECK-NEXT:    linalg.generic
// CHECK:           %[[ROW:.*]] = arith.subi %{{.*}}, %[[FIRST]] : index
// CHECK:           tensor.extract %[[T]][%[[ROW]], %{{.*}}] : tensor<4x6xf32>
// CHECK-NOT:     all_
// CHECK:         return
#pt0 = affine_map<(d0, d1) -> (d1)>
#pt1 = affine_map<(d0, d1) -> (d0)>
#pt2 = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @mesh_grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @mesh_grid
func.func @passthrough(%arg0: tensor<8x6xf32>, %arg1: tensor<8x6xi32>) -> tensor<8x3xf32> {
  %0 = monarch.feed %arg0 to @mesh : tensor<8x6xf32>
  %sharding = shard.sharding @mesh_grid split_axes = [[0]] : !shard.sharding
  %sharding_annotated = shard.shard %0 to %sharding : tensor<8x6xf32>
  %cst = arith.constant dense<[2, 0, 5]> : tensor<3xi32>
  %cst_0 = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  %1 = tensor.empty() : tensor<8x3xf32>
  %2 = linalg.generic {indexing_maps = [#pt0, #pt1, #pt2], iterator_types = ["parallel", "parallel"]} ins(%cst, %cst_0 : tensor<3xi32>, tensor<8xi32>) outs(%1 : tensor<8x3xf32>) {
  ^bb0(%in: i32, %in_2: i32, %out: f32):
    %6 = arith.index_cast %in : i32 to index
    %c0 = arith.constant 0 : index
    %c6 = arith.constant 6 : index
    %c5 = arith.constant 5 : index
    %7 = arith.cmpi slt, %6, %c0 : index
    %8 = arith.addi %6, %c6 : index
    %9 = arith.select %7, %8, %6 : index
    %10 = arith.maxsi %9, %c0 : index
    %11 = arith.minsi %10, %c5 : index
    %12 = arith.index_cast %in_2 : i32 to index
    %extracted = tensor.extract %sharding_annotated[%12, %11] : tensor<8x6xf32>
    linalg.yield %extracted : f32
  } -> tensor<8x3xf32>
  %cst_1 = arith.constant 2.000000e+00 : f32
  %3 = tensor.empty() : tensor<8x3xf32>
  %4 = linalg.generic {indexing_maps = [#pt2, #pt2], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<8x3xf32>) outs(%3 : tensor<8x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %6 = arith.mulf %in, %cst_1 : f32
    linalg.yield %6 : f32
  } -> tensor<8x3xf32>
  %5 = monarch.fetch %4 from @mesh : tensor<8x3xf32>
  return %5 : tensor<8x3xf32>
}

// -----

// A product over the split rows (np.prod): each rank multiplies its own
// rows from the identity, and one all_reduce(prod) completes it.

// CHECK-LABEL: monarch.actor_class @product.mesh.0.class
// CHECK:         %[[R:.*]] = linalg.reduce ins(%{{.*}} : tensor<4x3xf32>) outs(%{{.*}} : tensor<3xf32>) dimensions = [0]
// CHECK:           arith.mulf
// CHECK:         %[[P:.*]] = all_reduce %[[R]] over ["gpus"] prod : tensor<3xf32>
// CHECK:         return %[[P]]
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @product(%x: tensor<8x3xf32>) -> tensor<3xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x3xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<8x3xf32>
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %p = linalg.reduce ins(%xs : tensor<8x3xf32>) outs(%f : tensor<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %m = arith.mulf %in, %init : f32
      linalg.yield %m : f32
    }
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %ps = shard.shard %p to %r annotate_for_users : tensor<3xf32>
  %out = monarch.fetch %ps from @mesh : tensor<3xf32>
  return %out : tensor<3xf32>
}

// -----

// ZeRO-1 under global semantics: the data-parallel gradient g (a partial
// sum over "gpus") is read only by elementwise ops whose results the
// row-split moment m needs by rows (AdamW's (1 - b1) * g and g * g). It is
// reduce-scattered once, half an all_reduce's bytes, and both ops run on
// each rank's rows, not on the whole gradient every rank.

// CHECK-LABEL: monarch.actor_class @zero.mesh.0.class
// CHECK-NOT:     all_reduce
// CHECK:         %[[G:.*]] = linalg.matmul
// CHECK-NEXT:    %[[S:.*]] = reduce_scatter %[[G]] over ["gpus"] axis 0 sum : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NOT:     all_reduce
// CHECK-NOT:     all_gather
// CHECK:         linalg.generic {{.*}} ins(%[[S]] : tensor<4x4xf32>) outs({{.*}} : tensor<4x4xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[S]], %[[S]] : tensor<4x4xf32>, tensor<4x4xf32>) outs({{.*}} : tensor<4x4xf32>)
// CHECK-NOT:     all_reduce
// CHECK:         return
#el = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @zero(%xt: tensor<8x6xf32>, %d: tensor<6x4xf32>, %m: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %xf = monarch.feed %xt to @mesh : tensor<8x6xf32>
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xf to %cols : tensor<8x6xf32>
  %df = monarch.feed %d to @mesh : tensor<6x4xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ds = shard.shard %df to %rows : tensor<6x4xf32>
  %mf = monarch.feed %m to @mesh : tensor<8x4xf32>
  %ms = shard.shard %mf to %rows : tensor<8x4xf32>
  %vf = monarch.feed %v to @mesh : tensor<8x4xf32>
  %vs = shard.shard %vf to %rows : tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %g = linalg.matmul ins(%xs, %ds : tensor<8x6xf32>, tensor<6x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = arith.constant 0.1 : f32
  %b = arith.constant 0.9 : f32
  %e1 = tensor.empty() : tensor<8x4xf32>
  %g1 = linalg.generic {indexing_maps = [#el, #el], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<8x4xf32>) outs(%e1 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %g2 = linalg.generic {indexing_maps = [#el, #el, #el], iterator_types = ["parallel", "parallel"]} ins(%g, %g : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %a2: f32, %o: f32):
    %r = arith.mulf %a, %a2 : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %e3 = tensor.empty() : tensor<8x4xf32>
  %m2 = linalg.generic {indexing_maps = [#el, #el, #el], iterator_types = ["parallel", "parallel"]} ins(%ms, %g1 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e3 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %a2: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    %r = arith.addf %s, %a2 : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %e4 = tensor.empty() : tensor<8x4xf32>
  %v2 = linalg.generic {indexing_maps = [#el, #el, #el], iterator_types = ["parallel", "parallel"]} ins(%vs, %g2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e4 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %a2: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    %r = arith.addf %s, %a2 : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %om = monarch.fetch %m2 from @mesh : tensor<8x4xf32>
  %ov = monarch.fetch %v2 from @mesh : tensor<8x4xf32>
  return %om, %ov : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A generic that yields a constant whatever it reads (the seed 1.0 of
// mc.value_and_grad, where(loss == loss, 1, 1)) is a fill: the loss it
// read, a partial sum over "gpus", is not reduced for it, and nothing
// waits on that all_reduce before the backward starts.

// CHECK-LABEL: monarch.actor_class @seed.mesh.0.class
// CHECK-NOT:     all_reduce
// CHECK:         return
#s0 = affine_map<() -> ()>
#r2 = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @seed(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x4xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %rows : tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%xs : tensor<8x4xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %eb = tensor.empty() : tensor<i1>
  %eq = linalg.generic {indexing_maps = [#s0, #s0, #s0], iterator_types = []} ins(%loss, %loss : tensor<f32>, tensor<f32>) outs(%eb : tensor<i1>) {
  ^bb0(%a: f32, %b: f32, %o: i1):
    %r = arith.cmpf oeq, %a, %b : f32
    linalg.yield %r : i1
  } -> tensor<i1>
  %one = arith.constant 1.0 : f32
  %one2 = arith.constant 1.0 : f32
  %es = tensor.empty() : tensor<f32>
  %seed = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%eq : tensor<i1>) outs(%es : tensor<f32>) {
  ^bb0(%c: i1, %o: f32):
    %r = arith.select %c, %one, %one2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %eg = tensor.empty() : tensor<8x4xf32>
  %g = linalg.generic {indexing_maps = [#sc, #r2, #r2], iterator_types = ["parallel", "parallel"]} ins(%seed, %xs : tensor<f32>, tensor<8x4xf32>) outs(%eg : tensor<8x4xf32>) {
  ^bb0(%s: f32, %a: f32, %o: f32):
    %r = arith.mulf %s, %a : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %out = monarch.fetch %g from @mesh : tensor<8x4xf32>
  return %out : tensor<8x4xf32>
}

// -----

// A partial sum is reduced right after the op that makes it, not where it
// is first used, and a scaling of it (`lr * g2`, one partial operand, a
// result as large) does not carry it: the data-parallel gradient g2's
// all_reduce is issued before the backward's next contraction and
// overlaps it.

// CHECK-LABEL: monarch.actor_class @early.mesh.0.class
// CHECK:         %[[G2:.*]] = linalg.matmul
// CHECK-NEXT:    %[[R2:.*]] = all_reduce %[[G2]] over ["gpus"] sum : tensor<8x8xf32>
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    linalg.fill
// CHECK-NEXT:    %[[G1:.*]] = linalg.matmul
// CHECK-NEXT:    %[[R1:.*]] = all_reduce %[[G1]] over ["gpus"] sum : tensor<8x8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[R2]] : tensor<8x8xf32>)
// CHECK-NOT:     all_reduce
// CHECK:         return
#el = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @early(%ht: tensor<8x6xf32>, %d: tensor<6x8xf32>, %xt: tensor<8x6xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %hf = monarch.feed %ht to @mesh : tensor<8x6xf32>
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %hs = shard.shard %hf to %cols : tensor<8x6xf32>
  %df = monarch.feed %d to @mesh : tensor<6x8xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ds = shard.shard %df to %rows : tensor<6x8xf32>
  %xf = monarch.feed %xt to @mesh : tensor<8x6xf32>
  %xs = shard.shard %xf to %cols : tensor<8x6xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g2 = linalg.matmul ins(%hs, %ds : tensor<8x6xf32>, tensor<6x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g1 = linalg.matmul ins(%xs, %ds : tensor<8x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %lr = arith.constant 0.1 : f32
  %e2 = tensor.empty() : tensor<8x8xf32>
  %s1 = linalg.generic {indexing_maps = [#el, #el], iterator_types = ["parallel", "parallel"]} ins(%g1 : tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %lr : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %e3 = tensor.empty() : tensor<8x8xf32>
  %s2 = linalg.generic {indexing_maps = [#el, #el], iterator_types = ["parallel", "parallel"]} ins(%g2 : tensor<8x8xf32>) outs(%e3 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %lr : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %o1 = monarch.fetch %s1 from @mesh : tensor<8x8xf32>
  %o2 = monarch.fetch %s2 from @mesh : tensor<8x8xf32>
  return %o1, %o2 : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A gather by a constant index table along one loop (np.pad in reflect
// mode of a row-split x, in the tracer's form: the row's index wrapped and
// clamped) whose every half, cut as x is split, reads rows of the same
// half of x: each rank pads its own rows, reading them at their local
// coordinates, with no collective (it was a masked lookup on every rank
// and an all_reduce of the whole result). @wrap's first row reads x's last
// row, on the other rank: that one keeps the masked lookup.

// CHECK-LABEL: monarch.actor_class @reflect.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<4x3xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}
// CHECK-NOT:     all_reduce
// CHECK-NOT:     all_gather
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<5x3xf32>)
// CHECK:         arith.subi
// CHECK:         tensor.extract %[[X]]
// CHECK-NOT:     all_reduce
// CHECK:         return {{.*}} : tensor<5x3xf32>

// CHECK-LABEL: monarch.actor_class @wrap.mesh.0.class
// CHECK:         all_reduce
#r = affine_map<(d0, d1) -> (d0)>
#c = affine_map<(d0, d1) -> (d1)>
#o = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @reflect(%x: tensor<8x3xf32>) -> tensor<10x3xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x3xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %rows : tensor<8x3xf32>
  %ri = arith.constant dense<[1, 0, 1, 2, 3, 4, 5, 6, 7, 6]> : tensor<10xi32>
  %ci = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %e = tensor.empty() : tensor<10x3xf32>
  %g = linalg.generic {indexing_maps = [#r, #c, #o], iterator_types = ["parallel", "parallel"]} ins(%ri, %ci : tensor<10xi32>, tensor<3xi32>) outs(%e : tensor<10x3xf32>) {
  ^bb0(%i: i32, %j: i32, %o: f32):
    %ii = arith.index_cast %i : i32 to index
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c7 = arith.constant 7 : index
    %neg = arith.cmpi slt, %ii, %c0 : index
    %up = arith.addi %ii, %c8 : index
    %w = arith.select %neg, %up, %ii : index
    %lo = arith.maxsi %w, %c0 : index
    %hi = arith.minsi %lo, %c7 : index
    %jj = arith.index_cast %j : i32 to index
    %v = tensor.extract %xs[%hi, %jj] : tensor<8x3xf32>
    linalg.yield %v : f32
  } -> tensor<10x3xf32>
  %out = monarch.fetch %g from @mesh : tensor<10x3xf32>
  return %out : tensor<10x3xf32>
}
func.func @wrap(%x: tensor<8x3xf32>) -> tensor<10x3xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x3xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %rows : tensor<8x3xf32>
  %ri = arith.constant dense<[7, 0, 1, 2, 3, 4, 5, 6, 7, 0]> : tensor<10xi32>
  %ci = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %e = tensor.empty() : tensor<10x3xf32>
  %g = linalg.generic {indexing_maps = [#r, #c, #o], iterator_types = ["parallel", "parallel"]} ins(%ri, %ci : tensor<10xi32>, tensor<3xi32>) outs(%e : tensor<10x3xf32>) {
  ^bb0(%i: i32, %j: i32, %o: f32):
    %ii = arith.index_cast %i : i32 to index
    %jj = arith.index_cast %j : i32 to index
    %v = tensor.extract %xs[%ii, %jj] : tensor<8x3xf32>
    linalg.yield %v : f32
  } -> tensor<10x3xf32>
  %out = monarch.fetch %g from @mesh : tensor<10x3xf32>
  return %out : tensor<10x3xf32>
}

// -----

// A slice of a split dimension that one shard holds (x[1] of a row-split
// x: rank 0's rows) is taken by that rank at its offset in the shard, the
// others make zeros, and the result is a partial sum: an all_reduce of
// the 4 sliced elements instead of an all_gather of x.

// CHECK-LABEL: monarch.actor_class @owner.mesh.0.class
// CHECK:         monarch.endpoint @run(%[[X:.*]]: tensor<4x4xf32>
// CHECK-NOT:     all_gather
// CHECK:         %[[S:.*]] = tensor.extract_slice %[[X]][1, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<4xf32>
// CHECK:         %[[M:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK:           arith.select
// CHECK:         all_reduce %{{.*}} over ["gpus"] sum : tensor<4xf32>
// CHECK-NOT:     all_gather
// CHECK:         return
#e1 = affine_map<(d0) -> (d0)>
shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @owner(%x: tensor<8x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<8x4xf32>
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %xf to %rows : tensor<8x4xf32>
  %r = tensor.extract_slice %xs[1, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#e1, #e1], iterator_types = ["parallel"]} ins(%r : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %out = monarch.fetch %y from @mesh : tensor<4xf32>
  return %out : tensor<4xf32>
}
