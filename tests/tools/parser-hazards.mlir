// Integers too large for linalg's 64-bit array attributes: MLIR 22's own
// parsers report them and then crash (upstream mlir-opt: SIGSEGV). Our
// tools refuse them first, at their line and column
// (support/include/monarch/Support/ParserHazards.h).
// RUN: not monarch-opt %s 2>&1 | FileCheck %s
// RUN: not monarch-compile %s -o %t.mcplan 2>&1 | FileCheck %s
// RUN: not monarch-kernels %s 2>&1 | FileCheck %s

// CHECK: parser-hazards.mlir:[[@LINE+3]]:95: error: integer value too large for the 64-bit `permutation` array
func.func @f(%x: tensor<8x16xf32>) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [100000000000000000000, 0]
  return %t : tensor<16x8xf32>
}
