// monarch-kernels --profile (codegen/lib/kernels/KernelProfile.cpp): every
// top-level linalg op of a kernel is timed, and the table names the op, its
// operand shapes, flops and bytes per call, and the line it came from. A
// module without monarch.launch profiles every function with a body.
// RUN: monarch-kernels %s --profile --runs=3 | FileCheck %s
// RUN: not monarch-kernels %s --profile --target=cuda 2>&1 | FileCheck %s --check-prefix=CUDA

// CHECK: total ms  share   calls    us/call  GFLOP/s     GB/s  op  shapes  line  kernel
// CHECK-DAG: linalg.matmul (blas)  16x32:f32, 32x8:f32 -> 16x8:f32  {{.*}}kernels-profile.mlir:21:8  monarch_kernel_
// CHECK-DAG: generic:elementwise  16x8:f32 -> 16x8:f32  {{.*}}kernels-profile.mlir:23:8
// CHECK: ms in 2 loop nests (time inside kernels, between their profile hooks)
// CHECK: ms per call of all 1 kernels, hooks included (3 timed calls each after one warm-up)

// CUDA: monarch-kernels: --profile runs the kernels here: it needs --target=cpu

#map = affine_map<(i, j) -> (i, j)>
func.func @mm_relu(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>, %out: memref<16x8xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<16x8xf32>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %z : f32
    linalg.yield %y : f32
  } -> tensor<16x8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<16x8xf32>, memref<16x8xf32>) -> ()
  return
}
