//===- KernelCompiler.h - Planned kernels to native code or PTX -*- C++ -*-===//
//
// The contract between the plan builder and kernel lowering. The kernels of a
// planned module are the `func.func private` symbols named by
// `monarch.launch`: tensor arguments for inputs, then memref arguments for
// outputs (written with `bufferization.materialize_in_destination`), static
// shapes, identity layouts. Every kernel of a module is compiled into one
// library; kernels with identical bodies share one symbol.
//
// The calling convention of every compiled kernel is
//   extern "C" void symbol(void **buffers);
// where `buffers` holds one pointer per kernel argument, inputs first then
// outputs, each pointing at a contiguous row-major buffer of the argument's
// static shape (a slice of the rank's arena).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_KERNELCOMPILER_H
#define MONARCH_CODEGEN_KERNELCOMPILER_H

#include "monarch/Plan/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace monarch::codegen {

enum class KernelTarget { Cpu, Cuda };

struct KernelCompileOptions {
  KernelTarget target = KernelTarget::Cpu;
  /// CPU: "host" means the compiling machine's CPU and features.
  std::string cpu = "host";
  unsigned optLevel = 3;
  /// CUDA: the SM architecture the PTX is generated for.
  std::string cudaArch = "sm_90";
  /// CPU: skip fusion, schedules and vectorization (upstream scalar loops);
  /// an independent lowering the tests compare the optimized kernels with.
  bool referenceLowering = false;
  /// CPU: threads compiling distinct kernels at once (0: the value of
  /// MONARCH_COMPILE_THREADS, whose 0 means one per core).
  unsigned threads = 0;
  /// CPU: the kernel cache's directory, one object file per kernel keyed by
  /// its location-free body, the target and the compiler (empty: no cache;
  /// the compile driver sets `<plan cache dir>/kernels`).
  std::string cacheDirectory;
  /// CPU: the kernel cache's size bound; least recently used entries go
  /// first (MONARCH_KERNEL_CACHE_MB).
  uint64_t cacheMaxBytes = uint64_t(1) << 30;
  /// CPU: time every loop nest of each kernel (KernelProfile.cpp; read with
  /// LoadedKernelLibrary::profile). Profiled kernels bypass the cache.
  bool profile = false;
  /// CPU: kernels equal but for a few integers compile once, taking those
  /// as parameters (CompiledKernel::params; off also with
  /// MONARCH_KERNEL_PARAMS=off). Callers comparing with a target that has
  /// none (CUDA) turn it off.
  bool parameters = true;
};

/// One kernel of a compiled library.
struct CompiledKernel {
  /// The kernel's symbol in the planned module (e.g. `step.worker.mesh.r0.k1`).
  std::string name;
  /// The exported symbol implementing it; shared by identical kernels.
  std::string symbol;
  unsigned numInputs = 0;
  unsigned numOutputs = 0;
  /// The values of its parameters: kernels equal but for a few integers
  /// (the rank's offset in a slice, its coordinate) share a symbol whose
  /// body reads those integers from one more input, a `tensor<N x i64>`
  /// after the kernel's `numInputs` (KernelTemplates.h); the launch passes
  /// these. Empty when the symbol takes none.
  std::vector<int64_t> params;
  /// CUDA: the kernel's matmuls, executed as cuBLAS calls at the
  /// `monarch.gemm` lines of its launch manifest (docs/kernels.md).
  std::vector<plan::GemmCall> gemms;
  /// Time spent on this kernel (on whichever thread compiled it): checks,
  /// canonicalization and hashing, plus, unless its code came from the
  /// cache or an identical kernel before it, the three stages below.
  double compileSeconds = 0;
  /// MLIR pipeline and translation to LLVM IR; LLVM optimisation; machine
  /// code. Zero when the code was not generated for this kernel.
  double lowerSeconds = 0, optimizeSeconds = 0, codegenSeconds = 0;
  /// Operations in the kernel's body as planned (its size).
  unsigned numOps = 0;
  /// Bytes of its object code (CPU).
  uint64_t objectBytes = 0;
  /// Whether its code came from the kernel cache.
  bool cacheHit = false;
  /// Whether an identical kernel earlier in the library supplied its code.
  bool duplicate = false;
};

/// The `void **buffers` of a call of `kernel`: `inputs`, then the address
/// of its parameters when it takes some, then `outputs`.
std::vector<void *> kernelCallArguments(const CompiledKernel &kernel,
                                        llvm::ArrayRef<void *> inputs,
                                        llvm::ArrayRef<void *> outputs);

/// What a worker loads: an ELF shared object for the CPU, PTX text for CUDA
/// (one PTX module per kernel, each preceded by its launch manifest in PTX
/// comments; see docs/kernels.md).
struct KernelLibrary {
  KernelTarget target = KernelTarget::Cpu;
  std::string binary;
  std::vector<CompiledKernel> kernels;
  /// Wall time of linking the kernels' objects (CPU); not included in the
  /// kernels' compileSeconds.
  double emitSeconds = 0;
  /// Wall time of the whole compileKernels call, and the threads it used.
  double wallSeconds = 0;
  unsigned threads = 1;
  /// Whether the kernel cache was consulted.
  bool cacheEnabled = false;
};

/// A total line and a table of `library`'s kernels, slowest first (name,
/// ops, object size, seconds per stage or "cache hit" / "same as ..."):
/// what `monarch-compile -v` and `monarch-kernels --times` print.
std::string formatKernelReport(const KernelLibrary &library);

/// Compiles `kernels` (functions of `module`) into one library. Errors are
/// emitted as diagnostics at the offending kernel. `module` is not modified.
/// Loads the dialects and registers the passes it needs into the module's
/// context; do not call it concurrently on one context. For the CPU,
/// distinct kernels compile on `options.threads` threads, each with an
/// MLIRContext of its own, and their objects are looked up in and stored to
/// the kernel cache.
mlir::FailureOr<KernelLibrary>
compileKernels(mlir::ModuleOp module,
               llvm::ArrayRef<mlir::func::FuncOp> kernels,
               const KernelCompileOptions &options);

} // namespace monarch::codegen

#endif // MONARCH_CODEGEN_KERNELCOMPILER_H
