//===- KernelRuntime.h - Load and call compiled kernels ------- -*- C++ -*-===//
//
// The worker side of KernelCompiler.h, free of MLIR and LLVM: a
// `KernelLibrary::binary` (an ELF shared object) is loaded from memory and its
// kernels are called through the `void symbol(void **buffers)` convention.
// Loading goes through an anonymous memory file (memfd_create, then dlopen of
// /proc/self/fd/N) so nothing is left on disk; where memfd is unavailable a
// private temporary file is used and unlinked right after dlopen. All symbols
// are bound at load (RTLD_NOW), so a library with an unresolved reference is
// rejected by `load`, not by the first call.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_KERNELRUNTIME_H
#define MONARCH_EXECUTOR_KERNELRUNTIME_H

#include "monarch/Support/Status.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace monarch::executor {

/// The entry of every compiled kernel: one pointer per kernel argument,
/// inputs first then outputs, each a contiguous row-major buffer.
using KernelFunction = void (*)(void **buffers);

/// The time spent in one loop nest of a profiled kernel (a library compiled
/// with KernelCompileOptions::profile; codegen's KernelProfile.cpp).
struct KernelOpProfile {
  std::string symbol;   // the kernel's exported symbol
  std::string op;       // linalg.matmul, generic:elementwise, ... (blas)
  std::string location; // the user's file:line:col, or "-"
  std::string shapes;   // "8x64:f32, 64x16:f32 -> 8x16:f32"
  int64_t flops = 0;    // floating-point operations of one call
  int64_t bytes = 0;    // bytes of its operands
  uint64_t calls = 0;
  uint64_t nanoseconds = 0;
};

/// One run of one loop nest of a profiled kernel, recorded while the thread
/// that called the kernel had a KernelSliceRecording open. `counts` names
/// the kernel (LoadedKernelLibrary::sliceTable), `slot` the loop nest;
/// times are CLOCK_MONOTONIC nanoseconds.
struct KernelSlice {
  const void *counts = nullptr;
  int64_t slot = 0;
  int64_t startNs = 0;
  int64_t endNs = 0;
};

/// While alive, the loop nests that profiled kernels run on this thread are
/// appended to `slices()` (the library's hook reports each one when it
/// ends). Kernels compiled without profiling report nothing. Nests.
class KernelSliceRecording {
public:
  KernelSliceRecording();
  ~KernelSliceRecording();
  KernelSliceRecording(const KernelSliceRecording &) = delete;
  KernelSliceRecording &operator=(const KernelSliceRecording &) = delete;
  const std::vector<KernelSlice> &slices() const { return slices_; }

private:
  std::vector<KernelSlice> slices_;
  std::vector<KernelSlice> *previous_;
};

/// The rows of `profile` as a table, slowest first: total time and share,
/// calls, time per call, GFLOP/s and GB/s (per call), op, shapes, line,
/// kernel; `top` rows at most (0: all), then a line with the total.
std::string formatKernelProfile(std::vector<KernelOpProfile> profile,
                                size_t top = 0);

/// A kernel library loaded into this process; unloaded on destruction.
/// Kernel pointers obtained from it are valid while it lives.
class LoadedKernelLibrary {
public:
  /// Loads `binary` (the bytes of a compiled CPU kernel library). `name` only
  /// labels errors ("kernels of rank 3").
  static executor::StatusOr<std::unique_ptr<LoadedKernelLibrary>>
  load(std::string_view binary, std::string name = "kernel library");

  ~LoadedKernelLibrary();
  LoadedKernelLibrary(const LoadedKernelLibrary &) = delete;
  LoadedKernelLibrary &operator=(const LoadedKernelLibrary &) = delete;

  /// The kernel exported as `symbol`; NotFound if there is none.
  executor::StatusOr<KernelFunction> lookup(const std::string &symbol) const;

  /// Looks up `symbol` and runs it on `buffers`.
  executor::Status call(const std::string &symbol, void **buffers) const;

  const std::string &name() const { return name_; }

  /// The loop nests of the kernels `symbols` with their accumulated times;
  /// empty for kernels compiled without profiling.
  std::vector<KernelOpProfile>
  profile(const std::vector<std::string> &symbols) const;
  /// Zeroes the accumulated times of the kernels `symbols`.
  void resetProfile(const std::vector<std::string> &symbols) const;
  /// The kernel `symbol`'s loop nests, by slot (op, location, shapes,
  /// flops, bytes; no times), and the `counts` its KernelSlices carry;
  /// {nullptr, {}} for a kernel compiled without profiling.
  std::pair<const void *, std::vector<KernelOpProfile>>
  sliceTable(const std::string &symbol) const;

private:
  LoadedKernelLibrary(void *handle, int memfd, std::string name)
      : handle_(handle), memfd_(memfd), name_(std::move(name)) {}
  void *handle_;
  /// The memory file dlopen loaded from, kept open while the library is
  /// loaded: glibc identifies loaded objects by path, and a closed fd's
  /// /proc/self/fd/N path is reused by the next library, which dlopen would
  /// then answer with this one.
  int memfd_;
  std::string name_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_KERNELRUNTIME_H
