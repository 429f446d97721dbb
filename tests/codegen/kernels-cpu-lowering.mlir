// From kernels to native code: the exported `void sym(void **)` entry in
// LLVM IR, host vector FMAs in the assembly, and a shared object whose
// dynamic symbols are the deduplicated kernels and the allocator hooks.
// RUN: monarch-kernels %s --kernel=add --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: env MONARCH_CPU_GEMM=generated monarch-kernels %s --kernel=mm --emit=asm | FileCheck %s --check-prefix=ASM
// RUN: monarch-kernels %s --emit=library -o %t.so
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SYMS
// RUN: llvm-readelf -h %t.so | FileCheck %s --check-prefix=ELF
// RUN: monarch-kernels %s | FileCheck %s --check-prefix=SUMMARY

// The entry loads one pointer per argument from the buffer list and calls
// the private implementation.
// LLVM: define internal void @[[SYM:monarch_kernel_[0-9a-f]+]]_impl(ptr
// LLVM: define void @[[SYM]](ptr %0)
// LLVM: getelementptr inbounds ptr, ptr %0, i64 2
// LLVM: call void @[[SYM]]_impl(ptr

// The generated schedule (MONARCH_CPU_GEMM=generated; by default the
// matmul calls OpenBLAS, tests/codegen/kernels-cpu-blas.mlir).

// ASM: vfmadd{{[0-9]+}}ps

// ELF: Type: DYN (Shared object file)
// SYMS-DAG: T monarch_kernel_{{[0-9a-f]+}}
// SYMS-DAG: D monarch_kernel_alloc_fn
// SYMS-DAG: D monarch_kernel_free_fn

// add and add_again have the same body: one symbol. mm differs.
// SUMMARY: add -> [[ADD:monarch_kernel_[0-9a-f]+]] (2 in, 1 out) loaded
// SUMMARY-NEXT: add_again -> [[ADD]] (2 in, 1 out) loaded
// SUMMARY-NEXT: mm -> monarch_kernel_{{[0-9a-f]+}} (2 in, 1 out) loaded
// SUMMARY-NEXT: 3 kernels, 2 unique, {{[0-9]+}} bytes of ELF

func.func private @add(%a: tensor<64xf32>, %b: tensor<64xf32>, %out: memref<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %s = linalg.add ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  bufferization.materialize_in_destination %s in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
func.func private @add_again(%x: tensor<64xf32>, %y: tensor<64xf32>, %o: memref<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %s = linalg.add ins(%x, %y : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  bufferization.materialize_in_destination %s in restrict writable %o : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
func.func private @mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<64x64xf32>, memref<64x64xf32>) -> ()
  return
}
