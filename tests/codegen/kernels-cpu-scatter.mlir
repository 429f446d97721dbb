// The adjoint of a gather (TraceBuilder::scatterAdd, in the form the tracer
// emits: out[.., i, ..] += select(row(idx) == coord[i], values, 0)) runs as
// a scatter loop on the CPU (codegen/lib/kernels/ScatterLoops.cpp): one pass
// over the values, each added at the row its wrapped and clamped index
// names, after a check that the rows' coordinates are consecutive; the
// dense loop nest stays as the fallback. Checked against the reference
// lowering (the dense loops) on random inputs: take's adjoint on an axis
// after a leading one, 2-D int64 indices, take_along's adjoint, values from
// a fused elementwise producer, a rank's slice of the rows (coordinates
// 4..11 of 12: indices outside it add nothing there), and coordinates that
// are an argument (random, not consecutive: the dense fallback runs).
// RUN: monarch-kernels %s --emit=check --kernel=take --kernel=take2d --kernel=along --kernel=fused --kernel=shard --kernel=coordarg | FileCheck %s --check-prefix=NUM
// RUN: monarch-kernels %s --emit=scheduled --kernel=take | FileCheck %s --check-prefix=SCHED
// RUN: monarch-kernels %s --emit=llvm-dialect --kernel=take | FileCheck %s --check-prefix=LOWERED
// RUN: monarch-kernels %s --profile --kernel=take | FileCheck %s --check-prefix=PROFILE

// NUM: take: ok
// NUM: take2d: ok
// NUM: along: ok
// NUM: fused: ok
// NUM: shard: ok
// NUM: coordarg: ok
// NUM: 6 kernels checked against the reference lowering, 0 mismatched

// Left untiled for the scatter lowering.
// SCHED: linalg.generic
// SCHED-SAME: monarch_scatter_add
// SCHED-NOT: vector.

// Lowered: the check that the coordinates are consecutive, then per index
// the range check of its row (row >= 0, row < 12) before the adds.
// LOWERED: llvm.icmp "eq"
// LOWERED: llvm.icmp "sge"
// LOWERED: llvm.icmp "slt"
// LOWERED: llvm.fadd
// LOWERED: llvm.store

// The profile names it a scatter and counts one add per value.
// PROFILE: generic:scatter  5:i32, 2x5x8:f32, 12:i32 -> 2x12x8:f32

#i1 = affine_map<(p, i, k, q) -> (k)>
#v1 = affine_map<(p, i, k, q) -> (p, k, q)>
#c1 = affine_map<(p, i, k, q) -> (i)>
#o1 = affine_map<(p, i, k, q) -> (p, i, q)>
func.func @take(%idx: tensor<5xi32>, %vals: tensor<2x5x8xf32>, %out: memref<2x12x8xf32>) {
  %coord = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]> : tensor<12xi32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x12x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x12x8xf32>) -> tensor<2x12x8xf32>
  %r = linalg.generic {indexing_maps = [#i1, #v1, #c1, #o1], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%idx, %vals, %coord : tensor<5xi32>, tensor<2x5x8xf32>, tensor<12xi32>) outs(%f : tensor<2x12x8xf32>) {
  ^bb0(%j: i32, %v: f32, %c: i32, %acc: f32):
    %c0 = arith.constant 0 : i32
    %cn = arith.constant 12 : i32
    %cl = arith.constant 11 : i32
    %neg = arith.cmpi slt, %j, %c0 : i32
    %w = arith.addi %j, %cn : i32
    %wr = arith.select %neg, %w, %j : i32
    %lo = arith.maxsi %wr, %c0 : i32
    %row = arith.minsi %lo, %cl : i32
    %hit = arith.cmpi eq, %row, %c : i32
    %zero = arith.constant 0.0 : f32
    %pick = arith.select %hit, %v, %zero : f32
    %s = arith.addf %acc, %pick : f32
    linalg.yield %s : f32
  } -> tensor<2x12x8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x12x8xf32>, memref<2x12x8xf32>) -> ()
  return
}

#i2 = affine_map<(i, k0, k1, q) -> (k0, k1)>
#v2 = affine_map<(i, k0, k1, q) -> (k0, k1, q)>
#c2 = affine_map<(i, k0, k1, q) -> (i)>
#o2 = affine_map<(i, k0, k1, q) -> (i, q)>
func.func @take2d(%idx: tensor<3x4xi64>, %vals: tensor<3x4x16xf64>, %out: memref<10x16xf64>) {
  %coord = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi32>
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<10x16xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<10x16xf64>) -> tensor<10x16xf64>
  %r = linalg.generic {indexing_maps = [#i2, #v2, #c2, #o2], iterator_types = ["parallel", "reduction", "reduction", "parallel"]} ins(%idx, %vals, %coord : tensor<3x4xi64>, tensor<3x4x16xf64>, tensor<10xi32>) outs(%f : tensor<10x16xf64>) {
  ^bb0(%j: i64, %v: f64, %c: i32, %acc: f64):
    %c0 = arith.constant 0 : i64
    %cn = arith.constant 10 : i64
    %cl = arith.constant 9 : i64
    %neg = arith.cmpi slt, %j, %c0 : i64
    %w = arith.addi %j, %cn : i64
    %wr = arith.select %neg, %w, %j : i64
    %lo = arith.maxsi %wr, %c0 : i64
    %row = arith.minsi %lo, %cl : i64
    %row32 = arith.trunci %row : i64 to i32
    %hit = arith.cmpi eq, %row32, %c : i32
    %zero = arith.constant 0.0 : f64
    %pick = arith.select %hit, %v, %zero : f64
    %s = arith.addf %acc, %pick : f64
    linalg.yield %s : f64
  } -> tensor<10x16xf64>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<10x16xf64>, memref<10x16xf64>) -> ()
  return
}

#i3 = affine_map<(b, i, j) -> (b, j)>
#c3 = affine_map<(b, i, j) -> (i)>
#o3 = affine_map<(b, i, j) -> (b, i)>
func.func @along(%idx: tensor<4x3xi32>, %vals: tensor<4x3xf32>, %out: memref<4x7xf32>) {
  %coord = arith.constant dense<[0, 1, 2, 3, 4, 5, 6]> : tensor<7xi32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x7xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x7xf32>) -> tensor<4x7xf32>
  %r = linalg.generic {indexing_maps = [#i3, #i3, #c3, #o3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%idx, %vals, %coord : tensor<4x3xi32>, tensor<4x3xf32>, tensor<7xi32>) outs(%f : tensor<4x7xf32>) {
  ^bb0(%j: i32, %v: f32, %c: i32, %acc: f32):
    %c0 = arith.constant 0 : i32
    %cn = arith.constant 7 : i32
    %cl = arith.constant 6 : i32
    %neg = arith.cmpi slt, %j, %c0 : i32
    %w = arith.addi %j, %cn : i32
    %wr = arith.select %neg, %w, %j : i32
    %lo = arith.maxsi %wr, %c0 : i32
    %row = arith.minsi %lo, %cl : i32
    %hit = arith.cmpi eq, %c, %row : i32
    %zero = arith.constant 0.0 : f32
    %pick = arith.select %hit, %v, %zero : f32
    %s = arith.addf %pick, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x7xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x7xf32>, memref<4x7xf32>) -> ()
  return
}

#id2 = affine_map<(a, b) -> (a, b)>
#i4 = affine_map<(i, k, q) -> (k)>
#v4 = affine_map<(i, k, q) -> (k, q)>
#c4 = affine_map<(i, k, q) -> (i)>
#o4 = affine_map<(i, k, q) -> (i, q)>
func.func @fused(%idx: tensor<6xi32>, %x: tensor<6x16xf32>, %y: tensor<6x16xf32>, %out: memref<9x16xf32>) {
  %coord = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8]> : tensor<9xi32>
  %two = arith.constant 2.0 : f32
  %ev = tensor.empty() : tensor<6x16xf32>
  %vals = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<6x16xf32>, tensor<6x16xf32>) outs(%ev : tensor<6x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    %d = arith.subf %m, %b : f32
    linalg.yield %d : f32
  } -> tensor<6x16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<9x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<9x16xf32>) -> tensor<9x16xf32>
  %r = linalg.generic {indexing_maps = [#i4, #v4, #c4, #o4], iterator_types = ["parallel", "reduction", "parallel"]} ins(%idx, %vals, %coord : tensor<6xi32>, tensor<6x16xf32>, tensor<9xi32>) outs(%f : tensor<9x16xf32>) {
  ^bb0(%j: i32, %v: f32, %c: i32, %acc: f32):
    %c0 = arith.constant 0 : i32
    %cn = arith.constant 9 : i32
    %cl = arith.constant 8 : i32
    %neg = arith.cmpi slt, %j, %c0 : i32
    %w = arith.addi %j, %cn : i32
    %wr = arith.select %neg, %w, %j : i32
    %lo = arith.maxsi %wr, %c0 : i32
    %row = arith.minsi %lo, %cl : i32
    %hit = arith.cmpi eq, %row, %c : i32
    %zero = arith.constant 0.0 : f32
    %pick = arith.select %hit, %v, %zero : f32
    %s = arith.addf %acc, %pick : f32
    linalg.yield %s : f32
  } -> tensor<9x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<9x16xf32>, memref<9x16xf32>) -> ()
  return
}

func.func @shard(%idx: tensor<6xi32>, %vals: tensor<6x16xf32>, %out: memref<8x16xf32>) {
  %all = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]> : tensor<12xi32>
  %coord = tensor.extract_slice %all[4] [8] [1] : tensor<12xi32> to tensor<8xi32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#i4, #v4, #c4, #o4], iterator_types = ["parallel", "reduction", "parallel"]} ins(%idx, %vals, %coord : tensor<6xi32>, tensor<6x16xf32>, tensor<8xi32>) outs(%f : tensor<8x16xf32>) {
  ^bb0(%j: i32, %v: f32, %c: i32, %acc: f32):
    %c0 = arith.constant 0 : i32
    %cn = arith.constant 12 : i32
    %cl = arith.constant 11 : i32
    %neg = arith.cmpi slt, %j, %c0 : i32
    %w = arith.addi %j, %cn : i32
    %wr = arith.select %neg, %w, %j : i32
    %lo = arith.maxsi %wr, %c0 : i32
    %row = arith.minsi %lo, %cl : i32
    %hit = arith.cmpi eq, %row, %c : i32
    %zero = arith.constant 0.0 : f32
    %pick = arith.select %hit, %v, %zero : f32
    %s = arith.addf %acc, %pick : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  return
}

func.func @coordarg(%idx: tensor<6xi32>, %vals: tensor<6x16xf32>, %coord: tensor<8xi32>, %out: memref<8x16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#i4, #v4, #c4, #o4], iterator_types = ["parallel", "reduction", "parallel"]} ins(%idx, %vals, %coord : tensor<6xi32>, tensor<6x16xf32>, tensor<8xi32>) outs(%f : tensor<8x16xf32>) {
  ^bb0(%j: i32, %v: f32, %c: i32, %acc: f32):
    %c0 = arith.constant 0 : i32
    %cn = arith.constant 8 : i32
    %cl = arith.constant 7 : i32
    %neg = arith.cmpi slt, %j, %c0 : i32
    %w = arith.addi %j, %cn : i32
    %wr = arith.select %neg, %w, %j : i32
    %lo = arith.maxsi %wr, %c0 : i32
    %row = arith.minsi %lo, %cl : i32
    %hit = arith.cmpi eq, %row, %c : i32
    %zero = arith.constant 0.0 : f32
    %pick = arith.select %hit, %v, %zero : f32
    %s = arith.addf %acc, %pick : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x16xf32>, memref<8x16xf32>) -> ()
  return
}
