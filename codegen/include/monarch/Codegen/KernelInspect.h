//===- KernelInspect.h - Print a kernel at any stage ---------- -*- C++ -*-===//
//
// For tests and debugging (tools/monarch-kernels): runs the pipeline of
// KernelCompiler.h on one kernel and stops at a named stage, returning the
// IR, assembly or PTX there as text.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_KERNELINSPECT_H
#define MONARCH_CODEGEN_KERNELINSPECT_H

#include "monarch/Codegen/KernelCompiler.h"

#include <optional>
#include <string>

namespace monarch::codegen {

enum class KernelStage {
  Prepared,    // canonicalized, generalized, elementwise chains fused
  Scheduled,   // CPU: matmul schedule and tile+vectorize applied (tensors)
  Bufferized,  // one-shot bufferized into the output buffers
  LLVMDialect, // CPU: lowered to the LLVM dialect; CUDA: GPU module lowered
  LLVMIR,      // CPU: LLVM IR with the exported entry, before -O3
  Assembly,    // CPU: host assembly after -O3
  Ptx,         // CUDA: PTX text
};

/// Parses "prepared", "scheduled", "bufferized", "llvm-dialect", "llvm",
/// "asm", "ptx".
std::optional<KernelStage> parseKernelStage(llvm::StringRef name);

/// Compiles `kernel` alone up to `stage` and returns that stage's text.
/// Errors are emitted as diagnostics at the kernel.
mlir::FailureOr<std::string>
compileKernelToStage(mlir::func::FuncOp kernel, KernelStage stage,
                     const KernelCompileOptions &options);

} // namespace monarch::codegen

#endif // MONARCH_CODEGEN_KERNELINSPECT_H
