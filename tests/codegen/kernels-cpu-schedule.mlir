// The CPU schedules on tensors: the packed, register-tiled matmul (both tile
// configurations: AVX2's 6x16 with B packed, AVX-512's 8x32 with A and B
// packed) and tile-by-16 vectorization of a fused elementwise chain.
// RUN: env MONARCH_CPU_GEMM=generated MONARCH_MATMUL_TILES=6,16,128,0 monarch-kernels %s --kernel=mm --emit=scheduled | FileCheck %s --check-prefix=AVX2
// RUN: env MONARCH_CPU_GEMM=generated MONARCH_MATMUL_TILES=8,32,256,1 monarch-kernels %s --kernel=mm --emit=scheduled | FileCheck %s --check-prefix=AVX512
// RUN: monarch-kernels %s --kernel=chain --emit=scheduled | FileCheck %s --check-prefix=CHAIN
// RUN: env MONARCH_CPU_GEMM=generated MONARCH_MATMUL_TILES=8,32,256,1 monarch-kernels %s --kernel=mm_at_b --kernel=mm_a_bt --emit=scheduled | FileCheck %s --check-prefix=TRANS
// RUN: monarch-kernels %s --kernel=chain --emit=prepared | FileCheck %s --check-prefix=FUSED

// B is packed into 16-column panels contiguous over k: [N/16][K][16].
// AVX2: tensor.empty() : tensor<8x192x16xf32>
// AVX2: tensor.expand_shape %{{.*}} output_shape [192, 8, 16]
// The register tile: 6 rows x 16 columns carried across the k loop.
// C is row-major already: the "packed" C is a reshape.
// AVX2: tensor.expand_shape %{{.*}} output_shape [96, 8, 16]
// AVX2: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<6x1x16xf32>)
// AVX2: vector.contract {{.*}} : vector<6x1xf32>, vector<1x1x16xf32> into vector<6x1x16xf32>
// AVX2-NOT: linalg.matmul

// A packed by 8 rows ([M/8][K][8]), B by 32 columns, C computed packed.
// AVX512-DAG: tensor.empty() : tensor<12x192x8xf32>
// AVX512-DAG: tensor.empty() : tensor<4x192x32xf32>
// AVX512: scf.for {{.*}} -> (vector<8x32xf32>)
// AVX512: vector.contract {{.*}} : vector<1x8xf32>, vector<1x32xf32> into vector<8x32xf32>
// AVX512: tensor.collapse_shape
// AVX512-NOT: linalg.matmul
func.func private @mm(%a: tensor<96x192xf32>, %b: tensor<192x128xf32>, %out: memref<96x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<96x128xf32>) -> tensor<96x128xf32>
  %c = linalg.matmul ins(%a, %b : tensor<96x192xf32>, tensor<192x128xf32>) outs(%z : tensor<96x128xf32>) -> tensor<96x128xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<96x128xf32>, memref<96x128xf32>) -> ()
  return
}

// Fusion: the three named ops become one generic.
// FUSED: linalg.generic
// FUSED-NOT: linalg.generic
// FUSED-NOT: linalg.mul
// FUSED-NOT: linalg.add
// FUSED: arith.mulf
// FUSED: arith.addf
// FUSED: arith.maximumf
// 100 = 6 tiles of 16 and a remainder of 4: both vectorized, no masks.
// CHAIN: scf.for %{{.*}} = %c0 to %c96 step %c16
// CHAIN: arith.maximumf {{.*}} : vector<16xf32>
// CHAIN: arith.maximumf {{.*}} : vector<4xf32>
// CHAIN-NOT: vector.mask
#id = affine_map<(d0) -> (d0)>
func.func private @chain(%a: tensor<100xf32>, %b: tensor<100xf32>, %c: tensor<100xf32>, %out: memref<100xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100xf32>
  %ab = linalg.mul ins(%a, %b : tensor<100xf32>, tensor<100xf32>) outs(%e : tensor<100xf32>) -> tensor<100xf32>
  %abc = linalg.add ins(%ab, %c : tensor<100xf32>, tensor<100xf32>) outs(%e : tensor<100xf32>) -> tensor<100xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%abc : tensor<100xf32>) outs(%e : tensor<100xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<100xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<100xf32>, memref<100xf32>) -> ()
  return
}

// The backward's layouts as the generic contractions they are written as:
// the transposed operand is transposed once and the packed schedule takes
// the matmul (the generic tile-and-vectorize path ran them at 1-20% of
// OpenBLAS).
// TRANS-LABEL: func.func @monarch_kernel_impl(%arg0: tensor<192x96xf32>, %arg1: tensor<192x128xf32>
// TRANS: scf.for {{.*}} -> (vector<8x32xf32>)
// TRANS: vector.contract {{.*}} into vector<8x32xf32>
// TRANS-LABEL: func.func @monarch_kernel_impl(%arg0: tensor<96x192xf32>, %arg1: tensor<128x192xf32>
// TRANS: scf.for {{.*}} -> (vector<8x32xf32>)
// TRANS: vector.contract {{.*}} into vector<8x32xf32>
#at = affine_map<(m, n, k) -> (k, m)>
#bt = affine_map<(m, n, k) -> (n, k)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func private @mm_at_b(%a: tensor<192x96xf32>, %b: tensor<192x128xf32>, %out: memref<96x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<96x128xf32>) -> tensor<96x128xf32>
  %c = linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<192x96xf32>, tensor<192x128xf32>) outs(%z : tensor<96x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<96x128xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<96x128xf32>, memref<96x128xf32>) -> ()
  return
}
func.func private @mm_a_bt(%a: tensor<96x192xf32>, %b: tensor<128x192xf32>, %out: memref<96x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<96x128xf32>) -> tensor<96x128xf32>
  %c = linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<96x192xf32>, tensor<128x192xf32>) outs(%z : tensor<96x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<96x128xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<96x128xf32>, memref<96x128xf32>) -> ()
  return
}
