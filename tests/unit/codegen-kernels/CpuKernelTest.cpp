//===- CpuKernelTest.cpp - CPU kernels against numpy -------------*- C++
//-*-===//
//
// Small kernels in the planned-kernel ABI (tensor inputs, memref outputs
// written with bufferization.materialize_in_destination), compiled to a
// native library, loaded from memory and run in this process; every result
// is compared with numpy (reference.py).
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

using namespace monarch::test;

namespace {

TEST_F(KernelTest, FusedElementwiseChainMatchesNumpy) {
  // 1000 elements: 62 full vectors of 16 and a masked remainder of 8.
  const char *source = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func private @chain(%a: tensor<1000xf32>, %b: tensor<1000xf32>,
                         %c: tensor<1000xf32>, %out: memref<1000xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<1000xf32>
  %ab = linalg.mul ins(%a, %b : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) -> tensor<1000xf32>
  %abc = linalg.add ins(%ab, %c : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) -> tensor<1000xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%abc : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    %h = arith.mulf %m, %half : f32
    linalg.yield %h : f32
  } -> tensor<1000xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<1000xf32>, memref<1000xf32>) -> ()
  return
}
)mlir";
  ASSERT_TRUE(compile(source));
  std::mt19937 rng(1);
  std::vector<HostBuffer> in = {randomBuffer("f32", {1000}, rng),
                                randomBuffer("f32", {1000}, rng),
                                randomBuffer("f32", {1000}, rng)};
  std::vector<HostBuffer> out = {HostBuffer("f32", {1000})};
  ASSERT_TRUE(run("chain", in, out));
  std::vector<HostBuffer> expected = numpyReference("relu_chain", in, out);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_TRUE(allClose(out[0], expected[0], 1e-6, 1e-6));
}

TEST_F(KernelTest, MatmulMatchesNumpy) {
  const char *source = R"mlir(
func.func private @mm(%a: tensor<64x48xf32>, %b: tensor<48x40xf32>,
                      %out: memref<64x40xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x40xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x40xf32>) -> tensor<64x40xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x48xf32>, tensor<48x40xf32>) outs(%z : tensor<64x40xf32>) -> tensor<64x40xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<64x40xf32>, memref<64x40xf32>) -> ()
  return
}
)mlir";
  ASSERT_TRUE(compile(source));
  std::mt19937 rng(2);
  std::vector<HostBuffer> in = {randomBuffer("f32", {64, 48}, rng),
                                randomBuffer("f32", {48, 40}, rng)};
  std::vector<HostBuffer> out = {HostBuffer("f32", {64, 40})};
  ASSERT_TRUE(run("mm", in, out));
  std::vector<HostBuffer> expected = numpyReference("matmul", in, out);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_TRUE(allClose(out[0], expected[0], 1e-5, 1e-5));
}

} // namespace
