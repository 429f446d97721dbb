// An elementwise producer whose payload reads its init (`out = init + a * b`,
// an einsum step with nothing to sum) does not fuse into a consumer that
// reads its elements more than once (a broadcast): fused, some elements
// were computed twice into one buffer (the fuzzer's np.triu of such a
// vector doubled one element; CpuPipeline.cpp fuseElementwiseOps). Fused
// into a consumer that reads each element once, it still fuses. Checked
// against the reference lowering's scalar loops on random inputs.
// RUN: monarch-kernels %s --emit=check --kernel=broadcast --kernel=once | FileCheck %s --check-prefix=CHECK-NUM
// RUN: monarch-kernels %s --emit=prepared --kernel=broadcast --kernel=once | FileCheck %s

// CHECK-NUM: broadcast: ok
// CHECK-NUM: once: ok
// CHECK-NUM: 2 kernels checked against the reference lowering, 0 mismatched

// The broadcast keeps two loop nests; the permutation fuses into one.
// CHECK-LABEL: func.func @monarch_kernel_impl(%arg0: tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<3xf32>, tensor<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK-LABEL: func.func @monarch_kernel_impl(%arg0: tensor<3x2xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<3x2xf32>, tensor<3x2xf32>) outs(%{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<2x3xf32>)
// CHECK-NOT: linalg.generic

#v = affine_map<(i) -> (i)>
#row = affine_map<(i, j) -> (j)>
#id2 = affine_map<(i, j) -> (i, j)>
#t2 = affine_map<(i, j) -> (j, i)>
func.func @broadcast(%a: tensor<3xf32>, %b: tensor<3xf32>, %out: memref<2x3xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %p = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%a, %b : tensor<3xf32>, tensor<3xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<3xf32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<2x3xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
func.func @once(%a: tensor<3x2xf32>, %b: tensor<3x2xf32>, %out: memref<2x3xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %p = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<3x2xf32>, tensor<3x2xf32>) outs(%f : tensor<3x2xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#t2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<3x2xf32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<2x3xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
