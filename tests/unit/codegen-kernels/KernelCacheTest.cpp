//===- KernelCacheTest.cpp - Kernels cached by what they compute -*- C++
//-*-===//
//
// The kernel cache (codegen/lib/kernels/KernelCache.h) and the threaded
// compile of compileKernels: a kernel compiled once is found again whatever
// its name, its locations or the program around it; a damaged entry is
// recompiled, never linked; the size bound holds; threads change nothing
// but the time; a kernel that fails on a worker thread is reported at its
// name as before.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fstream>
#include <random>

using namespace monarch;
using namespace monarch::test;

namespace {

/// Two kernels (an add and a multiply of 64 floats) named `a` and `b`,
/// located in `file` from line `line`.
std::string program(const std::string &a, const std::string &b,
                    const std::string &file, int line) {
  auto loc = [&](int offset) {
    return "loc(\"" + file + "\":" + std::to_string(line + offset) + ":5)";
  };
  return R"mlir(
func.func private @)mlir" +
         a + R"mlir((%x: tensor<64xf32>, %out: memref<64xf32>) {
  %e = tensor.empty() : tensor<64xf32> )mlir" +
         loc(0) + R"mlir(
  %r = linalg.add ins(%x, %x : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32> )mlir" +
         loc(1) + R"mlir(
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
func.func private @)mlir" +
         b + R"mlir((%x: tensor<64xf32>, %out: memref<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.mul ins(%x, %x : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32> )mlir" +
         loc(7) + R"mlir(
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
)mlir";
}

class KernelCacheTest : public KernelTest {
protected:
  void SetUp() override {
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("monarch-kernel-cache", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  codegen::KernelCompileOptions cached(uint64_t maxBytes = 1 << 30) const {
    codegen::KernelCompileOptions options;
    options.cacheDirectory = std::string(dir);
    options.cacheMaxBytes = maxBytes;
    return options;
  }

  /// The cache's entries (paths of its object files).
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::path::extension(it->path()) == ".o")
        out.push_back(it->path());
    return out;
  }

  /// Runs both kernels of program() named `a` and `b` and checks them.
  void expectRuns(const std::string &a, const std::string &b) {
    std::mt19937 rng(3);
    std::vector<HostBuffer> in = {randomBuffer("f32", {64}, rng)};
    std::vector<HostBuffer> sum = {HostBuffer("f32", {64})};
    std::vector<HostBuffer> product = {HostBuffer("f32", {64})};
    ASSERT_TRUE(run(a, in, sum));
    ASSERT_TRUE(run(b, in, product));
    for (int64_t i = 0; i < 64; ++i) {
      EXPECT_EQ(sum[0].at(i), float(in[0].at(i) + in[0].at(i)));
      EXPECT_EQ(product[0].at(i), float(in[0].at(i) * in[0].at(i)));
    }
  }

  llvm::SmallString<128> dir;
};

TEST_F(KernelCacheTest, AnotherProgramWithOtherNamesAndLinesHitsTheCache) {
  ASSERT_TRUE(compile(program("a", "b", "model.py", 10), {}, cached()));
  EXPECT_TRUE(library.cacheEnabled);
  EXPECT_FALSE(kernel("a")->cacheHit);
  EXPECT_FALSE(kernel("b")->cacheHit);
  EXPECT_GT(kernel("a")->lowerSeconds, 0);
  EXPECT_GT(kernel("a")->objectBytes, 0u);
  EXPECT_EQ(entries().size(), 2u);
  expectRuns("a", "b");

  // The same bodies after an edit: other names, other file, other lines.
  ASSERT_TRUE(
      compile(program("step_k0", "step_k1", "edited.py", 52), {}, cached()));
  EXPECT_TRUE(kernel("step_k0")->cacheHit);
  EXPECT_TRUE(kernel("step_k1")->cacheHit);
  EXPECT_EQ(kernel("step_k0")->lowerSeconds, 0);
  EXPECT_EQ(entries().size(), 2u);
  expectRuns("step_k0", "step_k1");
  std::string report = codegen::formatKernelReport(library);
  EXPECT_NE(report.find("0 compiled"), std::string::npos) << report;
  EXPECT_NE(report.find("2 from the kernel cache"), std::string::npos)
      << report;

  // Without a directory nothing is looked up.
  ASSERT_TRUE(compile(program("a", "b", "model.py", 10)));
  EXPECT_FALSE(library.cacheEnabled);
  EXPECT_FALSE(kernel("a")->cacheHit);
}

TEST_F(KernelCacheTest, ADamagedEntryIsCompiledAgainNeverLinked) {
  ASSERT_TRUE(compile(program("a", "b", "model.py", 1), {}, cached()));
  std::vector<std::string> files = entries();
  ASSERT_EQ(files.size(), 2u);
  // One entry truncated, the other with a flipped byte in its object.
  {
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "monarch";
    std::fstream f(files[1], std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(-10, std::ios::end);
    f.put('\x5a');
  }
  ASSERT_TRUE(compile(program("a", "b", "model.py", 1), {}, cached()));
  EXPECT_FALSE(kernel("a")->cacheHit);
  EXPECT_FALSE(kernel("b")->cacheHit);
  expectRuns("a", "b");
  // Stored again whole.
  ASSERT_TRUE(compile(program("a", "b", "model.py", 1), {}, cached()));
  EXPECT_TRUE(kernel("a")->cacheHit);
  EXPECT_TRUE(kernel("b")->cacheHit);
}

TEST_F(KernelCacheTest, TheSizeBoundHolds) {
  ASSERT_TRUE(compile(program("a", "b", "model.py", 1), {}, cached()));
  std::vector<std::string> files = entries();
  ASSERT_EQ(files.size(), 2u);
  uint64_t largest = 0;
  for (const std::string &f : files) {
    uint64_t size = 0;
    ASSERT_FALSE(llvm::sys::fs::file_size(f, size));
    largest = std::max(largest, size);
  }
  // Room for one entry: a new kernel evicts down to the bound.
  ASSERT_TRUE(compile(R"mlir(
func.func private @c(%x: tensor<64xf32>, %out: memref<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.sub ins(%x, %x : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
)mlir",
                      {}, cached(largest + largest / 2)));
  uint64_t total = 0;
  for (const std::string &f : entries()) {
    uint64_t size = 0;
    ASSERT_FALSE(llvm::sys::fs::file_size(f, size));
    total += size;
  }
  EXPECT_LE(total, largest + largest / 2);
  EXPECT_GE(entries().size(), 1u);
}

TEST_F(KernelCacheTest, ThreadsChangeNothingButTheTime) {
  codegen::KernelCompileOptions one, four;
  one.threads = 1;
  four.threads = 4;
  ASSERT_TRUE(compile(program("a", "b", "model.py", 1), {}, one));
  EXPECT_EQ(library.threads, 1u);
  std::string serialA = kernel("a")->symbol, serialB = kernel("b")->symbol;
  ASSERT_TRUE(compile(program("a", "b", "model.py", 1), {}, four));
  EXPECT_EQ(library.threads, 2u); // Never more threads than kernels.
  EXPECT_EQ(kernel("a")->symbol, serialA);
  EXPECT_EQ(kernel("b")->symbol, serialB);
  expectRuns("a", "b");
}

TEST_F(KernelCacheTest, AKernelFailingOnAThreadIsReportedAtItsName) {
  // An op no lowering knows (unregistered; the worker thread's context
  // cannot even read it back) fails on the worker thread first, then again
  // on the caller's, which reports it.
  ctx.allowUnregisteredDialects(true);
  std::string source = R"mlir(
func.func private @ok(%x: tensor<64xf32>, %out: memref<64xf32>) {
  bufferization.materialize_in_destination %x in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
func.func private @bad(%x: tensor<64xf32>, %out: memref<64xf32>) {
  %r = "test.opaque"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}
)mlir";
  codegen::KernelCompileOptions options = cached();
  options.threads = 2;
  std::string text = compileError(source, "", options);
  EXPECT_NE(text.find("failed to compile kernel 'bad'"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("'ok'"), std::string::npos) << text;
  // Nothing of a failed compile is stored.
  EXPECT_TRUE(entries().empty());
}

} // namespace
