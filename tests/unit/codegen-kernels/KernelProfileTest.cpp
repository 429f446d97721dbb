//===- KernelProfileTest.cpp - Profiled kernels' times and slices -*- C++
//-*-===//
//
// A kernel compiled with KernelCompileOptions::profile (KernelProfile.cpp)
// times every loop nest: LoadedKernelLibrary::profile sums them, and a
// KernelSliceRecording on the calling thread receives each nest's run (what
// the worker turns into trace slices inside the launch, MONARCH_TRACE).
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include <ctime>
#include <thread>

using namespace monarch::test;

namespace {

// x @ w, then relu: a BLAS call and an elementwise nest (and the fill of
// the matmul's accumulator, unless the BLAS call absorbs it).
const char *kSource = R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @mm_relu(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>,
                           %out: memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>)
                      outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x4xf32>, memref<8x4xf32>) -> ()
  return
}
)mlir";

int64_t monotonicNs() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

TEST_F(KernelTest, ARecordingReceivesEveryLoopNestOfEveryCallInOrder) {
  monarch::codegen::KernelCompileOptions options;
  options.profile = true;
  ASSERT_TRUE(compile(kSource, {}, options));
  const std::string symbol = kernel("mm_relu")->symbol;
  auto [counts, nests] = loaded->sliceTable(symbol);
  ASSERT_NE(counts, nullptr);
  ASSERT_GE(nests.size(), 2u);
  bool sawBlas = false;
  for (const auto &nest : nests)
    sawBlas |= nest.op.find("(blas)") != std::string::npos &&
               nest.shapes == "8x16:f32, 16x4:f32 -> 8x4:f32";
  EXPECT_TRUE(sawBlas) << "no BLAS nest with the matmul's shapes";

  std::mt19937 rng(3);
  std::vector<HostBuffer> in = {randomBuffer("f32", {8, 16}, rng),
                                randomBuffer("f32", {16, 4}, rng)};
  std::vector<HostBuffer> out = {HostBuffer("f32", {8, 4})};
  ASSERT_TRUE(run("mm_relu", in, out)); // not recorded: no recording open

  int64_t before = monotonicNs();
  std::vector<monarch::executor::KernelSlice> slices;
  {
    monarch::executor::KernelSliceRecording recording;
    ASSERT_TRUE(run("mm_relu", in, out));
    ASSERT_TRUE(run("mm_relu", in, out));
    slices = recording.slices();
  }
  int64_t after = monotonicNs();
  ASSERT_TRUE(run("mm_relu", in, out)); // closed: not recorded

  ASSERT_EQ(slices.size(), 2 * nests.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto &slice = slices[i];
    EXPECT_EQ(slice.counts, counts);
    // One call's nests in slot order, then the next call's.
    EXPECT_EQ(slice.slot, static_cast<int64_t>(i % nests.size()));
    EXPECT_LE(before, slice.startNs);
    EXPECT_LE(slice.startNs, slice.endNs);
    EXPECT_LE(slice.endNs, after);
    if (i > 0) {
      EXPECT_LE(slices[i - 1].endNs, slice.startNs);
    }
  }

  // The summed profile counted all four calls.
  for (const auto &row : loaded->profile({symbol}))
    EXPECT_EQ(row.calls, 4u) << row.op;
}

TEST_F(KernelTest, ARecordingSeesOnlyItsOwnThread) {
  monarch::codegen::KernelCompileOptions options;
  options.profile = true;
  ASSERT_TRUE(compile(kSource, {}, options));
  std::mt19937 rng(4);
  std::vector<HostBuffer> in = {randomBuffer("f32", {8, 16}, rng),
                                randomBuffer("f32", {16, 4}, rng)};
  std::vector<HostBuffer> out = {HostBuffer("f32", {8, 4})};
  monarch::executor::KernelSliceRecording recording;
  std::thread other([&] { EXPECT_TRUE(run("mm_relu", in, out)); });
  other.join();
  EXPECT_TRUE(recording.slices().empty());
}

TEST_F(KernelTest, KernelsCompiledWithoutProfilingHaveNoSlices) {
  ASSERT_TRUE(compile(kSource));
  EXPECT_EQ(loaded->sliceTable(kernel("mm_relu")->symbol).first, nullptr);
  std::mt19937 rng(5);
  std::vector<HostBuffer> in = {randomBuffer("f32", {8, 16}, rng),
                                randomBuffer("f32", {16, 4}, rng)};
  std::vector<HostBuffer> out = {HostBuffer("f32", {8, 4})};
  monarch::executor::KernelSliceRecording recording;
  ASSERT_TRUE(run("mm_relu", in, out));
  EXPECT_TRUE(recording.slices().empty());
}

} // namespace
