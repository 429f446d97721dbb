// The CUDA target: PTX for the requested SM with the launch manifest the
// GPU runner reads, one PTX module per kernel, entries named after it.
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=chain | FileCheck %s --check-prefix=CHAIN
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=mm | FileCheck %s --check-prefix=MM
// RUN: monarch-kernels %s --target=cuda --cuda-arch=sm_80 --emit=ptx --kernel=chain | FileCheck %s --check-prefix=SM80
// RUN: monarch-kernels %s --target=cuda --emit=ptx --kernel=rowsum | FileCheck %s --check-prefix=SCALAR
// RUN: monarch-kernels %s --target=cuda | FileCheck %s --check-prefix=SUMMARY

// 1000 elements: 4 blocks of 256 threads, bounds-checked.
// CHAIN: // monarch.ptx-module [[SYM:monarch_kernel_[0-9a-f]+]]
// CHAIN-NEXT: // monarch.kernel [[SYM]] args=3
// CHAIN-NEXT: // monarch.launch [[SYM]] [[SYM]]_L0 grid=4,1,1 block=256,1,1 operands=a0,a1,a2
// CHAIN: .target sm_90
// CHAIN: .visible .entry [[SYM]]_L0(
// CHAIN: ld.global
// CHAIN: mul.rn.f32
// CHAIN: st.global
// SM80: .target sm_80

// An f32 matmul is a cuBLAS call (kernels-cuda-cublas.mlir); an integer
// matmul, which cuBLAS does not run, zero-fills its output, then one thread
// per element runs the k loop.
// MM: // monarch.launch [[SYM:monarch_kernel_[0-9a-f]+]] [[SYM]]_L0 grid=32,1,1 block=1,48,1 operands=a2
// MM-NEXT: // monarch.launch [[SYM]] [[SYM]]_L1 grid=32,1,1 block=1,48,1 operands=a0,a1,a2
// MM-NOT: monarch.gemm
// MM: .visible .entry [[SYM]]_L1(
// MM: mad.lo.s32

// A reduction to a scalar is sequential work: a one-thread launch. Its
// 0-d accumulator is a scratch buffer.
// SCALAR: // monarch.scratch [[SYM:monarch_kernel_[0-9a-f]+]] 0 4
// SCALAR: // monarch.launch [[SYM]] {{.*}} grid=1,1,1 block=1,1,1 operands=s0,a0,a1
// SCALAR: .visible .entry

// SUMMARY: 3 kernels, 3 unique, {{[0-9]+}} bytes of PTX

#id = affine_map<(d0) -> (d0)>
func.func private @chain(%a: tensor<1000xf32>, %b: tensor<1000xf32>, %out: memref<1000xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1000xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %p = arith.maximumf %m, %zero : f32
    linalg.yield %p : f32
  } -> tensor<1000xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<1000xf32>, memref<1000xf32>) -> ()
  return
}
func.func private @mm(%a: tensor<32x64xi32>, %b: tensor<64x48xi32>, %out: memref<32x48xi32>) {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<32x48xi32>
  %z = linalg.fill ins(%zero : i32) outs(%e : tensor<32x48xi32>) -> tensor<32x48xi32>
  %c = linalg.matmul ins(%a, %b : tensor<32x64xi32>, tensor<64x48xi32>) outs(%z : tensor<32x48xi32>) -> tensor<32x48xi32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<32x48xi32>, memref<32x48xi32>) -> ()
  return
}
func.func private @rowsum(%a: tensor<16x64xf32>, %out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%a : tensor<16x64xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %h = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%sum : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %half : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  bufferization.materialize_in_destination %h in restrict writable %out : (tensor<f32>, memref<f32>) -> ()
  return
}
