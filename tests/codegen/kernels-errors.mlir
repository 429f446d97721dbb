// Kernels that break the ABI, and bad tool invocations: clear errors, no
// crash, non-zero exit.
// RUN: not monarch-kernels %s --kernel=dynamic 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not monarch-kernels %s --kernel=order 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not monarch-kernels %s --kernel=returns 2>&1 | FileCheck %s --check-prefix=RET
// RUN: not monarch-kernels %s --kernel=strided 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not monarch-kernels %s --kernel=calls 2>&1 | FileCheck %s --check-prefix=CALL
// RUN: not monarch-kernels %s --kernel=nosuch 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not monarch-kernels %s --kernel=fine --emit=bogus 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not monarch-kernels %s --kernel=fine --target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not monarch-kernels %s --kernel=fine --target=cuda --emit=asm 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not monarch-kernels %s --kernel=boolcopy 2>&1 | FileCheck %s --check-prefix=BOOL
// RUN: monarch-kernels %s --kernel=boolfine --emit=bufferized | FileCheck %s --check-prefix=BOOLABI
// RUN: not monarch-kernels %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=NOFILE

// DYN: error: kernel 'dynamic' argument #0 ('tensor<?xf32>') has a dynamic shape; kernels need static shapes
func.func private @dynamic(%a: tensor<?xf32>, %out: memref<4xf32>) { return }

// ORDER: error: kernel 'order' has tensor argument #1 after a memref output; inputs come first
func.func private @order(%out: memref<4xf32>, %a: tensor<4xf32>) { return }

// RET: error: kernel 'returns' returns values; kernels write their results into memref output arguments
func.func private @returns(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }

// LAYOUT: error: kernel 'strided' output #1 ('memref<4xf32, strided<[2]>>') must have the identity layout and default memory space
func.func private @strided(%a: tensor<4xf32>, %out: memref<4xf32, strided<[2]>>) { return }

// CALL: error: kernel 'calls' references symbol @helper; kernels must be self-contained
func.func private @helper(memref<4xf32>)
func.func private @calls(%a: tensor<4xf32>, %out: memref<4xf32>) {
  call @helper(%out) : (memref<4xf32>) -> ()
  return
}

// MISSING: error: no kernel function named 'nosuch'
// EMIT: monarch-kernels: unknown --emit 'bogus'
// TARGET: monarch-kernels: unknown --target 'tpu' (expected cpu or cuda)
// STAGE: error: stage not available for the cuda target
// NOFILE: monarch-kernels: {{.*}}does-not-exist.mlir
func.func private @fine(%a: tensor<4xf32>, %out: memref<4xf32>) {
  bufferization.materialize_in_destination %a in restrict writable %out : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}

// An i1 output is bytes in memory; the kernel only accepts whole-tensor
// writes into it, which it widens to i8.
// BOOL: error: kernel 'boolcopy' writes its i1 output #1 with 'memref.copy'; i1 outputs must be written by bufferization.materialize_in_destination
func.func private @boolcopy(%a: tensor<4xi1>, %out: memref<4xi1>) {
  %m = bufferization.to_buffer %a : tensor<4xi1> to memref<4xi1>
  memref.copy %m, %out : memref<4xi1> to memref<4xi1>
  return
}

// BOOLABI: func.func @monarch_kernel_impl(%{{.*}}: memref<4xi8>, %{{.*}}: memref<4xi8>)
// BOOLABI: arith.cmpi ne
// BOOLABI: arith.extui
func.func private @boolfine(%a: tensor<4xi1>, %out: memref<4xi1>) {
  bufferization.materialize_in_destination %a in restrict writable %out : (tensor<4xi1>, memref<4xi1>) -> ()
  return
}
