//===- CudaPipeline.cpp - Kernels through gpu/nvvm to PTX --------*- C++
//-*-===//
//
// Placeholder until the gpu/nvvm path lands.
//
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"

using namespace mlir;

namespace monarch::codegen::detail {

FailureOr<std::string> lowerKernelToPtx(ModuleOp scratch,
                                        llvm::StringRef symbol,
                                        const KernelCompileOptions &opts,
                                        std::string &message) {
  message = "the CUDA target is not implemented yet";
  return failure();
}

} // namespace monarch::codegen::detail
