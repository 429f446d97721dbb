//===- CpuKernelTest.cpp - CPU kernels against numpy ---------- -*- C++ -*-===//
//
// Small kernels in the planned-kernel ABI (tensor inputs, memref outputs
// written with bufferization.materialize_in_destination), compiled to a
// native library, loaded from memory and run in this process; every result
// is compared with numpy (reference.py).
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include <tuple>

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

std::string matmulSource(int64_t m, int64_t k, int64_t n) {
  auto t = [](int64_t a, int64_t b) {
    return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>";
  };
  std::string out =
      "memref<" + std::to_string(m) + "x" + std::to_string(n) + "xf32>";
  return "func.func private @mm(%a: " + t(m, k) + ", %b: " + t(k, n) +
         ", %out: " + out +
         ") {\n"
         "  %zero = arith.constant 0.0 : f32\n"
         "  %e = tensor.empty() : " +
         t(m, n) +
         "\n  %z = linalg.fill ins(%zero : f32) outs(%e : " + t(m, n) +
         ") -> " + t(m, n) + "\n  %c = linalg.matmul ins(%a, %b : " + t(m, k) +
         ", " + t(k, n) + ") outs(%z : " + t(m, n) + ") -> " + t(m, n) +
         "\n  bufferization.materialize_in_destination %c in restrict "
         "writable %out : (" +
         t(m, n) + ", " + out + ") -> ()\n  return\n}\n";
}

class MatmulTest : public KernelTest,
                   public ::testing::WithParamInterface<
                       std::tuple<int64_t, int64_t, int64_t>> {};

// Shapes covering the packed schedule (N a multiple of 32 or 16, several
// register-tile heights) and the generic path (N = 40, tiny shapes).
TEST_P(MatmulTest, MatchesNumpy) {
  auto [m, k, n] = GetParam();
  ASSERT_TRUE(compile(matmulSource(m, k, n)));
  std::mt19937 rng(static_cast<unsigned>(m * 1000003 + k * 1009 + n));
  std::vector<HostBuffer> in = {randomBuffer("f32", {m, k}, rng),
                                randomBuffer("f32", {k, n}, rng)};
  std::vector<HostBuffer> out = {HostBuffer("f32", {m, n})};
  ASSERT_TRUE(run("mm", in, out));
  std::vector<HostBuffer> expected = numpyReference("matmul", in, out);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_TRUE(allClose(out[0], expected[0], 1e-5, 1e-5 * k));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(std::make_tuple(64, 48, 40), std::make_tuple(96, 80, 64),
                      std::make_tuple(30, 70, 48), std::make_tuple(8, 16, 32),
                      std::make_tuple(7, 5, 3), std::make_tuple(1, 64, 32),
                      std::make_tuple(128, 512, 128)));

} // namespace
