//===- MatmulSchedule.cpp - Transform-dialect schedules for matmul -*- C++
//-*-===//
//
// Placeholder: matmuls take the generic tile-and-vectorize path.
//
//===----------------------------------------------------------------------===//
#include "MatmulSchedule.h"

using namespace mlir;

namespace monarch::codegen::detail {

MatmulTiles chooseMatmulTiles(const KernelCompileOptions &options) {
  return MatmulTiles();
}

std::string buildMatmulSchedule(int64_t m, int64_t n, int64_t k,
                                llvm::StringRef tag, const MatmulTiles &tiles) {
  return "";
}

LogicalResult applyMatmulSchedules(ModuleOp scratch,
                                   const KernelCompileOptions &options) {
  return success();
}

} // namespace monarch::codegen::detail
