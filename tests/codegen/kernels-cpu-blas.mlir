// Contractions call OpenBLAS (codegen/lib/kernels/BlasCalls.cpp): a matmul,
// transposed operands of the backward (A^T B, A B^T), a C stored transposed
// (computed as C^T = B^T A^T), float64, batch_matmul, a batch shared by one
// operand (a 4-D `@` against a 2-D weight), two batch dimensions, and a
// strided slice BLAS cannot read (copied to a contiguous buffer first). The
// optimized kernels are checked against the reference lowering's scalar
// loops on random inputs; the flags show how BLAS reads each operand. A
// reduction loop of one operand alone (einsum 'ij,ipq->jp': q summed over
// B only) is no GEMM dimension: those contractions are generated code.
// RUN: monarch-kernels %s --emit=check --kernel=mm --kernel=ta --kernel=tb --kernel=bmm --kernel=ct --kernel=bcast --kernel=batch2 --kernel=strided --kernel=kloop --kernel=fold --kernel=nofuse --kernel=onesided --kernel=onesided2 | FileCheck %s --check-prefix=CHECK-NUM
// RUN: monarch-kernels %s --emit=llvm-dialect --kernel=mm | FileCheck %s --check-prefix=MM
// RUN: monarch-kernels %s --emit=llvm-dialect --kernel=ta | FileCheck %s --check-prefix=TA
// RUN: monarch-kernels %s --emit=llvm-dialect --kernel=ct | FileCheck %s --check-prefix=CT
// RUN: monarch-kernels %s --emit=llvm-dialect --kernel=batch2 | FileCheck %s --check-prefix=BATCH2
// RUN: monarch-kernels %s --emit=llvm-dialect --kernel=strided | FileCheck %s --check-prefix=STRIDED
// RUN: monarch-kernels %s --emit=bufferized --kernel=bcast --kernel=kloop | FileCheck %s --check-prefix=MERGE
// RUN: monarch-kernels %s --emit=bufferized --kernel=fold | FileCheck %s --check-prefix=FOLD
// RUN: monarch-kernels %s --emit=prepared --kernel=nofuse | FileCheck %s --check-prefix=NOFUSE
// RUN: env MONARCH_CPU_GEMM=generated monarch-kernels %s --emit=prepared --kernel=nofuse | FileCheck %s --check-prefix=FUSED
// RUN: env MONARCH_CPU_GEMM=generated monarch-kernels %s --emit=llvm-dialect --kernel=mm --kernel=bmm | FileCheck %s --check-prefix=GENERATED
// RUN: env MONARCH_CPU_GEMM=generated monarch-kernels %s --emit=check --kernel=ta --kernel=bcast | FileCheck %s --check-prefix=GENERATED-NUM
// RUN: monarch-kernels %s --emit=library --kernel=mm -o %t.so
// RUN: llvm-readelf -d %t.so | FileCheck %s --check-prefix=NEEDED

// CHECK-NUM: mm: ok
// CHECK-NUM: ta: ok
// CHECK-NUM: tb: ok
// CHECK-NUM: bmm: ok
// CHECK-NUM: ct: ok
// CHECK-NUM: bcast: ok
// CHECK-NUM: batch2: ok
// CHECK-NUM: strided: ok
// CHECK-NUM: kloop: ok
// CHECK-NUM: fold: ok
// CHECK-NUM: nofuse: ok
// CHECK-NUM: onesided: ok
// CHECK-NUM: onesided2: ok
// CHECK-NUM: 13 kernels checked against the reference lowering, 0 mismatched

// Row-major C, no transposes (CblasRowMajor 101, CblasNoTrans 111).
// MM-DAG: llvm.mlir.constant(101 : i32)
// MM-DAG: llvm.mlir.constant(111 : i32)
// MM-NOT: llvm.mlir.constant(112 : i32)
// MM: llvm.call @cblas_sgemm
// MM-NOT: scf.for

// A stored K x M: CblasTrans (112) for A.
// TA: llvm.mlir.constant(112 : i32)
// TA: llvm.call @cblas_sgemm

// C stored N x M in float64: dgemm.
// CT: llvm.call @cblas_dgemm
// CT-NOT: @cblas_sgemm

// Two batch dimensions: one call inside two loops.
// BATCH2-COUNT-1: llvm.call @cblas_sgemm

// STRIDED: llvm.call @cblas_sgemm

// The zero fill of the destination goes (the call overwrites it, beta 0) and
// the result is computed in the output buffer; the batch of `bcast` merges
// into M (one call of M = 2*3*16 = 96). In `kloop` the fill stays, for the
// loop over k1.
// MERGE-LABEL: kernel bcast
// MERGE-NOT: linalg.fill
// MERGE-NOT: memref.alloc
// MERGE: outs(%arg2 : memref<2x3x16x24xf32>) attrs = {monarch_blas, monarch_blas_overwrite}
// MERGE-LABEL: kernel kloop
// MERGE: monarch_blas_overwrite

// NOFUSE: arith.maximumf
// NOFUSE: linalg.yield
// NOFUSE: linalg.generic
// NOFUSE-NOT: arith.maximumf
// NOFUSE: arith.mulf
// FUSED-COUNT-1: linalg.generic
// FUSED: arith.maximumf
// FUSED: arith.mulf

// FOLD-NOT: memref.alloc
// FOLD: linalg.generic {indexing_maps = [#map, #map1, #map2]{{.*}}ins(%arg0, %arg1 : memref<32x48xf32>, memref<24x48xf32>) outs(%arg3 : memref<32x24xf32>) attrs = {monarch_blas, monarch_blas_overwrite}
// FOLD: ins(%arg2, %arg1 : memref<4x8x24xf32>, memref<24x48xf32>) outs(%arg4 : memref<4x8x48xf32>) attrs = {monarch_blas, monarch_blas_overwrite}

// GENERATED-NOT: cblas
// GENERATED-NUM: 2 kernels checked against the reference lowering, 0 mismatched

// NEEDED: (NEEDED) Shared library: [libopenblas

#a = affine_map<(m, n, k) -> (k, m)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#bt = affine_map<(m, n, k) -> (n, k)>
func.func @mm(%a: tensor<64x96xf32>, %b: tensor<96x128xf32>, %out: memref<64x128xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x128xf32>) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
func.func @ta(%a: tensor<96x64xf32>, %b: tensor<96x128xf32>, %out: memref<64x128xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<96x64xf32>, tensor<96x128xf32>) outs(%f : tensor<64x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x128xf32>
  %t = arith.constant 2.0 : f32
  %r2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %t : f32
    linalg.yield %m : f32
  } -> tensor<64x128xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %out : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
func.func @tb(%a: tensor<64x96xf32>, %b: tensor<128x96xf32>, %out: memref<64x128xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x96xf32>, tensor<128x96xf32>) outs(%f : tensor<64x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x128xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64x128xf32>, memref<64x128xf32>) -> ()
  return
}
func.func @bmm(%a: tensor<8x64x32xf32>, %b: tensor<8x32x48xf32>, %out: memref<8x64x48xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x64x48xf32>) -> tensor<8x64x48xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<8x64x32xf32>, tensor<8x32x48xf32>) outs(%f : tensor<8x64x48xf32>) -> tensor<8x64x48xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x64x48xf32>, memref<8x64x48xf32>) -> ()
  return
}
func.func @ct(%a: tensor<64x96xf64>, %b: tensor<96x128xf64>, %out: memref<128x64xf64>) {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<128x64xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<128x64xf64>) -> tensor<128x64xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, #b, affine_map<(m, n, k) -> (n, m)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<64x96xf64>, tensor<96x128xf64>) outs(%f : tensor<128x64xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<128x64xf64>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<128x64xf64>, memref<128x64xf64>) -> ()
  return
}

func.func @bcast(%a: tensor<2x3x16x32xf32>, %b: tensor<32x24xf32>, %out: memref<2x3x16x24xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x16x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x3x16x24xf32>) -> tensor<2x3x16x24xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(p, q, m, n, k) -> (p, q, m, k)>, affine_map<(p, q, m, n, k) -> (k, n)>, affine_map<(p, q, m, n, k) -> (p, q, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2x3x16x32xf32>, tensor<32x24xf32>) outs(%f : tensor<2x3x16x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x16x24xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x3x16x24xf32>, memref<2x3x16x24xf32>) -> ()
  return
}
func.func @batch2(%a: tensor<2x4x8x16xf32>, %b: tensor<2x4x24x16xf32>, %out: memref<2x4x8x24xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x8x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x8x24xf32>) -> tensor<2x4x8x24xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(p, q, m, n, k) -> (p, q, m, k)>, affine_map<(p, q, m, n, k) -> (p, q, n, k)>, affine_map<(p, q, m, n, k) -> (p, q, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2x4x8x16xf32>, tensor<2x4x24x16xf32>) outs(%f : tensor<2x4x8x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8x24xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x4x8x24xf32>, memref<2x4x8x24xf32>) -> ()
  return
}
func.func @strided(%a: tensor<32x64xf32>, %b: tensor<32x24xf32>, %out: memref<32x24xf32>) {
  %z = arith.constant 0.0 : f32
  %s = tensor.extract_slice %a[0, 0] [32, 32] [1, 2] : tensor<32x64xf32> to tensor<32x32xf32>
  %e = tensor.empty() : tensor<32x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x24xf32>) -> tensor<32x24xf32>
  %r = linalg.matmul ins(%s, %b : tensor<32x32xf32>, tensor<32x24xf32>) outs(%f : tensor<32x24xf32>) -> tensor<32x24xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<32x24xf32>, memref<32x24xf32>) -> ()
  return
}
// Two reduction loops that do not merge (k1 is not outside k2 in A): a loop
// over k1 around the call, which must then accumulate from zeros.
func.func @kloop(%a: tensor<4x16x8xf32>, %b: tensor<4x8x24xf32>, %out: memref<16x24xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k1, k2) -> (k1, m, k2)>, affine_map<(m, n, k1, k2) -> (k1, k2, n)>, affine_map<(m, n, k1, k2) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%a, %b : tensor<4x16x8xf32>, tensor<4x8x24xf32>) outs(%f : tensor<16x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x24xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<16x24xf32>, memref<16x24xf32>) -> ()
  return
}
// A transpose feeding the matmul (the backward's `g @ w.T`) and a broadcast
// feeding a batch_matmul are read through the contraction's maps: no copy
// is made, BLAS reads w transposed and the shared weight at stride 0.
func.func @fold(%g: tensor<32x48xf32>, %w: tensor<24x48xf32>, %x: tensor<4x8x24xf32>, %out: memref<32x24xf32>, %out2: memref<4x8x48xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<48x24xf32>
  %wt = linalg.transpose ins(%w : tensor<24x48xf32>) outs(%e : tensor<48x24xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<32x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<32x24xf32>) -> tensor<32x24xf32>
  %r = linalg.matmul ins(%g, %wt : tensor<32x48xf32>, tensor<48x24xf32>) outs(%f : tensor<32x24xf32>) -> tensor<32x24xf32>
  %e3 = tensor.empty() : tensor<4x24x48xf32>
  %wb = linalg.broadcast ins(%w : tensor<24x48xf32>) outs(%e3 : tensor<4x24x48xf32>) dimensions = [0]
  %e4 = tensor.empty() : tensor<4x8x48xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e4 : tensor<4x8x48xf32>) -> tensor<4x8x48xf32>
  %r2 = linalg.batch_matmul ins(%x, %wb : tensor<4x8x24xf32>, tensor<4x24x48xf32>) outs(%f2 : tensor<4x8x48xf32>) -> tensor<4x8x48xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<32x24xf32>, memref<32x24xf32>) -> ()
  bufferization.materialize_in_destination %r2 in restrict writable %out2 : (tensor<4x8x48xf32>, memref<4x8x48xf32>) -> ()
  return
}
// An elementwise producer (relu) used once by a contraction that calls BLAS
// stays a loop nest of its own: fused, the contraction's body would not be
// a multiply-add and BLAS could not compute it. With the generated
// schedule the fusion happens as upstream's pass does it.
func.func @nofuse(%x: tensor<4x8x24xf32>, %w: tensor<24x16xf32>, %out: memref<4x8x16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x24xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(b, m, k) -> (b, m, k)>, affine_map<(b, m, k) -> (b, m, k)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x8x24xf32>) outs(%e : tensor<4x8x24xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %z : f32
    linalg.yield %m : f32
  } -> tensor<4x8x24xf32>
  %e2 = tensor.empty() : tensor<4x8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%relu, %w : tensor<4x8x24xf32>, tensor<24x16xf32>) outs(%f : tensor<4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x8x16xf32>, memref<4x8x16xf32>) -> ()
  return
}

// einsum 'ij,ipq->jp': every loop of one trip but q (the fuzzer's case,
// where the call read one q of B), then the same at larger sizes.
#os_a = affine_map<(j, p, i, q) -> (i, j)>
#os_b = affine_map<(j, p, i, q) -> (i, p, q)>
#os_c = affine_map<(j, p, i, q) -> (j, p)>
func.func @onesided(%a: tensor<1x1xf32>, %b: tensor<1x1x2xf32>, %out: memref<1x1xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1xf32>) -> tensor<1x1xf32>
  %r = linalg.generic {indexing_maps = [#os_a, #os_b, #os_c], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%a, %b : tensor<1x1xf32>, tensor<1x1x2xf32>) outs(%f : tensor<1x1xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x1xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<1x1xf32>, memref<1x1xf32>) -> ()
  return
}
func.func @onesided2(%a: tensor<3x4xf32>, %b: tensor<3x5x6xf32>, %out: memref<4x5xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %r = linalg.generic {indexing_maps = [#os_a, #os_b, #os_c], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%a, %b : tensor<3x4xf32>, tensor<3x5x6xf32>) outs(%f : tensor<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x5xf32>, memref<4x5xf32>) -> ()
  return
}
