// The CUDA target runs matmuls with cuBLAS: each becomes a `monarch.gemm`
// line of the launch manifest at its place among the PTX launches (the
// surrounding elementwise work stays PTX), with the cuBLAS arguments in
// the kernel's table (printed by monarch-compile --print-plan; checked in
// detail by monarch-cuda-runtime-tests).
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=mbr | FileCheck %s --check-prefix=MBR
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=only | FileCheck %s --check-prefix=ONLY
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=rows | FileCheck %s --check-prefix=ROWS
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=bmm | FileCheck %s --check-prefix=BMM
// RUN: monarch-kernels %s --target=cuda | FileCheck %s --check-prefix=SUMMARY

// matmul + bias + relu: the gemm writes a temporary (its zero fill is gone:
// beta 0), one fused PTX launch reads it.
// MBR: // monarch.kernel [[SYM:monarch_kernel_[0-9a-f]+]] args=4
// MBR-NEXT: // monarch.scratch [[SYM]] 0 1024
// MBR-NEXT: // monarch.gemm [[SYM]] 0 operands=a1,a0,s0
// MBR-NEXT: // monarch.launch [[SYM]] [[SYM]]_L0 {{.*}} operands=s0,a2,a3
// MBR-NOT: monarch.launch
// MBR: .visible .entry [[SYM]]_L0(
// MBR: add.rn.f32
// MBR: selp.f32
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @mbr(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %c : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %p = arith.maximumf %s, %zero : f32
    linalg.yield %p : f32
  } -> tensor<8x32xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}

// A kernel that is one matmul (B transposed through its map) has no PTX,
// only its manifest.
// ONLY: // monarch.kernel [[SYM:monarch_kernel_[0-9a-f]+]] args=3
// ONLY-NEXT: // monarch.gemm [[SYM]] 0 operands=a1,a0,a2
// ONLY-NOT: .entry
func.func private @only(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x16xf32>, tensor<32x16xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}

// Rows 2..3 of the input (a rank's shard): the gemm reads the argument at a
// byte offset (2 rows of 4 f32 = 32 bytes).
// ROWS: // monarch.gemm [[SYM:monarch_kernel_[0-9a-f]+]] 0 operands=a1,a0+32,a2
func.func private @rows(%a: tensor<8x4xf32>, %w: tensor<4x4xf32>, %out: memref<2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %a[2, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%s, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<2x4xf32>, memref<2x4xf32>) -> ()
  return
}

// A batch matmul of f16 into f32: one strided batched call.
// BMM: // monarch.gemm [[SYM:monarch_kernel_[0-9a-f]+]] 0 operands=a1,a0,a2
func.func private @bmm(%a: tensor<3x8x16xf16>, %b: tensor<3x16x4xf16>, %out: memref<3x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8x4xf32>) -> tensor<3x8x4xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<3x8x16xf16>, tensor<3x16x4xf16>) outs(%z : tensor<3x8x4xf32>) -> tensor<3x8x4xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<3x8x4xf32>, memref<3x8x4xf32>) -> ()
  return
}

// SUMMARY: 4 kernels, 4 unique, {{[0-9]+}} bytes of PTX
