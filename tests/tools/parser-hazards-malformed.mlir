// A malformed `permutation` array (here `= =`, from the ir-mutation
// fuzzer): MLIR 22's linalg.transpose parser reports it and then crashes on
// the null attribute (upstream mlir-opt: SIGSEGV). Our tools refuse it
// first, at its line and column (support/include/monarch/Support/ParserHazards.h).
// RUN: not monarch-opt %s 2>&1 | FileCheck %s
// RUN: not monarch-compile %s -o %t.mcplan 2>&1 | FileCheck %s
// RUN: not monarch-kernels %s 2>&1 | FileCheck %s

// CHECK: parser-hazards-malformed.mlir:[[@LINE+2]]:94: error: expected a list of integers `[...]` for `permutation`
func.func @f(%x: tensor<8x16xf32>, %e: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = = [1, 0]
  return %t : tensor<16x8xf32>
}
