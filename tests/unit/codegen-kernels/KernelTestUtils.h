//===- KernelTestUtils.h - Compile, run and check kernels ----- -*- C++ -*-===//
//
// Typed host buffers with seeded random contents, a fixture that compiles
// MLIR kernels with compileKernels() and runs them through
// MonarchKernelRuntime, and the bridge to the numpy reference
// (reference.py): inputs are written as raw files, numpy recomputes the
// outputs, and the kernel's outputs are compared element by element.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_TESTS_UNIT_CODEGEN_KERNELS_KERNELTESTUTILS_H
#define MONARCH_TESTS_UNIT_CODEGEN_KERNELS_KERNELTESTUTILS_H

#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Executor/KernelRuntime.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace monarch::test {

/// A dense row-major host array of one of the kernel dtypes ("f32", "f16",
/// "bf16", "i32", ...).
struct HostBuffer {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  HostBuffer() = default;
  HostBuffer(std::string dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  /// Element `i` widened to double (bf16/f16 decoded).
  double at(int64_t i) const;
  void set(int64_t i, double value);
  /// "f32:4x16", the spec reference.py reads.
  std::string spec() const;
};

/// Uniform random contents in [lo, hi] (integers: rounded), seeded.
HostBuffer randomBuffer(const std::string &dtype, std::vector<int64_t> shape,
                        std::mt19937 &rng, double lo = -1.0, double hi = 1.0);

/// Runs `reference.py CASE` on `inputs`; returns outputs shaped like
/// `outputTemplates`. Fails the test (and returns empty) on error.
std::vector<HostBuffer>
numpyReference(const std::string &caseName,
               const std::vector<HostBuffer> &inputs,
               const std::vector<HostBuffer> &outputTemplates);

/// Checks |actual - expected| <= atol + rtol * |expected| element-wise;
/// reports the first mismatches.
::testing::AssertionResult allClose(const HostBuffer &actual,
                                    const HostBuffer &expected, double rtol,
                                    double atol);

/// Owns a context able to parse kernels and the library compiled from them.
class KernelTest : public ::testing::Test {
protected:
  KernelTest();
  ~KernelTest() override;

  /// Parses `source`, compiles the functions named in `kernels` (all
  /// functions with a body when empty) and loads the library. Returns false
  /// (with a test failure) on error.
  bool compile(const std::string &source,
               const std::vector<std::string> &kernels = {},
               codegen::KernelCompileOptions options = {});

  /// Parses `source` and compiles its functions (or only `only`) expecting
  /// failure; returns the diagnostics.
  std::string compileError(const std::string &source,
                           const std::string &only = "",
                           codegen::KernelCompileOptions options = {});

  /// The compiled entry of kernel `name` of the last compile().
  const codegen::CompiledKernel *kernel(const std::string &name) const;

  /// Runs kernel `name` on `inputs`, writing `outputs`.
  ::testing::AssertionResult run(const std::string &name,
                                 std::vector<HostBuffer> &inputs,
                                 std::vector<HostBuffer> &outputs);

  mlir::MLIRContext ctx;
  std::string diagnostics;
  codegen::KernelLibrary library;
  std::unique_ptr<executor::LoadedKernelLibrary> loaded;
};

} // namespace monarch::test

#endif // MONARCH_TESTS_UNIT_CODEGEN_KERNELS_KERNELTESTUTILS_H
