//===- KernelPipelines.h - Stages of kernel lowering ---------- -*- C++ -*-===//
//
// The stages compileKernels() chains, one kernel per scratch module:
//   prepare (generalize + fuse on tensors) -> schedule (matmul transform
//   script, elementwise tile + vectorize) -> bufferize (one-shot, into the
//   caller's output buffers) -> lower to the LLVM dialect (bare pointers)
//   -> translate, wrap in `void sym(void **)` -> object code (one per
//   kernel, on a thread of its own, cached by KernelCache) -> ELF .so.
// The CUDA path shares prepare and bufferize and lowers through gpu/nvvm.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_LIB_KERNELS_KERNELPIPELINES_H
#define MONARCH_CODEGEN_LIB_KERNELS_KERNELPIPELINES_H

#include "monarch/Codegen/KernelCompiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace monarch::codegen::detail {

/// Name of the implementation function inside a scratch module; the exported
/// entry wraps it.
inline constexpr llvm::StringLiteral kImplName = "monarch_kernel_impl";

/// Loads the dialects and interface models the pipelines need into `ctx`.
void loadKernelDialects(mlir::MLIRContext &ctx);

/// Makes every i1 argument of `kernel` (named `name` in diagnostics) an i8
/// argument: in memory a boolean is one byte per element, whatever the
/// lowering (a vectorized i1 store would pack bits). Inputs are compared
/// with 0, outputs receive the zero-extension of the i1 result. Fails with
/// a diagnostic on an i1 output written other than by
/// bufferization.materialize_in_destination.
mlir::LogicalResult widenBooleanArguments(mlir::func::FuncOp kernel,
                                          llvm::StringRef name);

/// Makes every i1 tensor left in `kernel` after fusion i8 (one byte per
/// element in memory, as the arguments are): generics convert at their
/// block arguments and yields, other ops change only their types. Fails on
/// a named linalg op other than a fill producing booleans.
mlir::LogicalResult widenBooleanTensors(mlir::func::FuncOp kernel);

/// Tensor-level clean-up shared by every target: canonicalize, generalize
/// non-contraction named ops and fuse elementwise producers into consumers.
mlir::LogicalResult prepareKernel(mlir::ModuleOp scratch);

/// Applies the CPU schedules: the packed register-tiled matmul (a transform
/// script per matmul, see MatmulSchedule.cpp) and tile-by-16 + vectorize for
/// the remaining linalg ops.
mlir::LogicalResult scheduleCpuKernel(mlir::ModuleOp scratch,
                                      const KernelCompileOptions &options);

/// One-shot bufferization with identity layouts at the function boundary;
/// results are written into the caller's output buffers.
mlir::LogicalResult bufferizeKernel(mlir::ModuleOp scratch);

/// KernelCompileOptions::profile: brackets each top-level linalg op of the
/// kernel with the profile hooks and adds its `<symbol>_prof_counts` and
/// `<symbol>_prof_ops` tables (KernelProfile.cpp).
mlir::LogicalResult instrumentForProfile(mlir::ModuleOp scratch,
                                         llvm::StringRef symbol);

/// Vector, memref, scf, arith and func to the LLVM dialect with the
/// bare-pointer calling convention.
mlir::LogicalResult lowerCpuKernelToLLVM(mlir::ModuleOp scratch);

/// Translates a lowered scratch module to LLVM IR and adds the exported
/// `void symbol(void **buffers)` entry around `kImplName` (renamed private).
std::unique_ptr<llvm::Module> translateCpuKernel(mlir::ModuleOp scratch,
                                                 llvm::LLVMContext &llvmCtx,
                                                 llvm::StringRef symbol,
                                                 unsigned numArgs);

/// Optimizes one kernel's `module` for the host (or options.cpu) at
/// options.optLevel and returns its object code (ELF relocatable), or an
/// error message. Thread-safe for modules in distinct LLVMContexts. Fills
/// the seconds spent optimizing and generating machine code when given.
llvm::Expected<std::string> emitObject(llvm::Module &module,
                                       const KernelCompileOptions &opts,
                                       double *optimizeSeconds = nullptr,
                                       double *codegenSeconds = nullptr);

/// Links kernel objects (from emitObject) and the heap hooks into an ELF
/// shared object; returns its bytes or an error message.
llvm::Expected<std::string>
linkSharedObject(llvm::ArrayRef<std::string> objects,
                 const KernelCompileOptions &opts);

/// What the object code of a kernel depends on besides its body: triple,
/// CPU, its features and the optimisation level (part of its cache key).
std::string describeCodeTarget(const KernelCompileOptions &opts);

/// Like emitObject, but returns the assembly text of the optimized module
/// (for inspection and tests).
llvm::Expected<std::string> emitAssembly(llvm::Module &module,
                                         const KernelCompileOptions &opts);

/// Attribute of the `func.call` standing for a matmul run by cuBLAS: the
/// index of its GemmCall.
inline constexpr llvm::StringLiteral kGemmAttrName = "monarch_gemm";

/// CUDA: replaces the top-level matmuls of the bufferized `fn` that cuBLAS
/// can run by calls tagged kGemmAttrName and appends their GemmCalls
/// (operands are filled in by the manifest). Others stay linalg ops.
void extractGemms(mlir::ModuleOp scratch, mlir::func::FuncOp fn,
                  std::vector<plan::GemmCall> &gemms);

/// Lowers a bufferized scratch module through gpu/nvvm and returns its
/// manifest and PTX; the kernel's matmuls become `gemms`. Sets `message`
/// and fails on error.
mlir::FailureOr<std::string>
lowerKernelToPtx(mlir::ModuleOp scratch, llvm::StringRef symbol,
                 const KernelCompileOptions &opts,
                 std::vector<plan::GemmCall> &gemms, std::string &message);

} // namespace monarch::codegen::detail

#endif // MONARCH_CODEGEN_LIB_KERNELS_KERNELPIPELINES_H
