//===- KernelTemplatesTest.cpp - Kernels that take their integers ---------===//
//
// Kernels equal but for a few integers (a rank's offset in a slice, its
// coordinate) compile to one symbol that reads those integers from a
// parameter input; each kernel keeps its own values, and runs as its own
// body did. With MONARCH_KERNEL_PARAMS=off each is compiled apart.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include <cstdlib>
#include <cstring>
#include <set>

using namespace monarch::test;

namespace {

/// Rank r's kernel: its 4 columns of a 4x16 input (from column 4r) plus r,
/// and the element of a constant table the rank picks, times r + 1.
std::string rankKernel(int r) {
  std::string R = std::to_string(r);
  return "func.func private @rank" + R +
         R"mlir((%x: tensor<4x16xf32>, %out: memref<4x4xf32>, %pick: memref<1xi32>) {
  %c = arith.constant )mlir" +
         R + R"mlir( : i32
  %k = arith.constant )mlir" +
         std::to_string(r + 1) + R"mlir( : i32
  %table = arith.constant dense<[10, 11, 12, 13]> : tensor<4xi32>
  %s = tensor.extract_slice %x[0, )mlir" +
         std::to_string(4 * r) +
         R"mlir(] [4, 4] [1, 1] : tensor<4x16xf32> to tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %f = arith.sitofp %c : i32 to f32
    %a = arith.addf %v, %f : f32
    linalg.yield %a : f32
  } -> tensor<4x4xf32>
  %t = tensor.extract_slice %table[)mlir" +
         R + R"mlir(] [1] [1] : tensor<4xi32> to tensor<1xi32>
  %e1 = tensor.empty() : tensor<1xi32>
  %p = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%t : tensor<1xi32>) outs(%e1 : tensor<1xi32>) {
  ^bb0(%v: i32, %o: i32):
    %m = arith.muli %v, %k : i32
    linalg.yield %m : i32
  } -> tensor<1xi32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x4xf32>, memref<4x4xf32>) -> ()
  bufferization.materialize_in_destination %p in restrict writable %pick : (tensor<1xi32>, memref<1xi32>) -> ()
  return
}
)mlir";
}

std::string source() {
  return rankKernel(0) + rankKernel(1) + rankKernel(2) + rankKernel(3);
}

class KernelTemplates : public KernelTest {
protected:
  void checkRanks();
  /// The symbols of the four rank kernels, checking each compiled.
  std::set<std::string> rankSymbols() {
    std::set<std::string> symbols;
    for (int r = 0; r < 4; ++r) {
      const monarch::codegen::CompiledKernel *k =
          kernel("rank" + std::to_string(r));
      EXPECT_NE(k, nullptr) << "rank " << r;
      if (k)
        symbols.insert(k->symbol);
    }
    return symbols;
  }
};

void KernelTemplates::checkRanks() {
  std::mt19937 rng(3);
  HostBuffer x = randomBuffer("f32", {4, 16}, rng);
  for (int r = 0; r < 4; ++r) {
    std::vector<HostBuffer> in = {x};
    std::vector<HostBuffer> out = {HostBuffer("f32", {4, 4}),
                                   HostBuffer("i32", {1})};
    ASSERT_TRUE(run("rank" + std::to_string(r), in, out));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(static_cast<float>(out[0].at(i * 4 + j)),
                  static_cast<float>(x.at(i * 16 + 4 * r + j)) +
                      static_cast<float>(r));
    EXPECT_EQ(out[1].at(0), (10 + r) * (r + 1)) << "rank " << r;
  }
}

TEST_F(KernelTemplates, RankVariantsCompileOnceWithTheirIntegersAsParameters) {
  ASSERT_TRUE(compile(source()));
  EXPECT_EQ(rankSymbols().size(), 1u);
  for (int r = 0; r < 4; ++r) {
    const monarch::codegen::CompiledKernel *k =
        kernel("rank" + std::to_string(r));
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->numInputs, 1u);
    // The integers that differ, in body order: r, r + 1, the column 4r and
    // the table's row r; the row offset 0 stays a constant.
    EXPECT_EQ(k->params, (std::vector<int64_t>{r, r + 1, 4 * r, r}))
        << "rank " << r;
  }
  checkRanks();
}

TEST_F(KernelTemplates, RankVariantsCompileApartWithParametersOff) {
  setenv("MONARCH_KERNEL_PARAMS", "off", 1);
  bool ok = compile(source());
  unsetenv("MONARCH_KERNEL_PARAMS");
  ASSERT_TRUE(ok);
  EXPECT_EQ(rankSymbols().size(), 4u);
  for (const monarch::codegen::CompiledKernel &k : library.kernels)
    EXPECT_TRUE(k.params.empty()) << k.name;
  checkRanks();
}

// A kernel alone, or whose integers are all the same as another's, takes
// no parameters.
TEST_F(KernelTemplates, AKernelWithoutVariantsTakesNoParameters) {
  ASSERT_TRUE(compile(rankKernel(2)));
  const monarch::codegen::CompiledKernel *k = kernel("rank2");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->params.empty());
}

} // namespace
