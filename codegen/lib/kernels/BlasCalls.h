//===- BlasCalls.h - Contractions as calls to cblas_?gemm ----- -*- C++ -*-===//
//
// See BlasCalls.cpp: which contractions of a CPU kernel call OpenBLAS, and
// their lowering to the calls after bufferization.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_LIB_KERNELS_BLASCALLS_H
#define MONARCH_CODEGEN_LIB_KERNELS_BLASCALLS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace monarch::codegen::detail {

/// Whether this build links kernels against OpenBLAS.
bool blasAvailable();
/// The OpenBLAS shared library kernels link against (null: none).
const char *blasLibraryPath();

/// Whether `op` (on tensors) is a contraction that markBlasContractions
/// will tag: BLAS is on, float32/float64 throughout, M, N and K roles.
bool willCallBlas(mlir::linalg::LinalgOp op);
/// Whether `op` only moves data (a transpose or a broadcast).
bool movesDataOnly(mlir::linalg::GenericOp op);

/// Tags the contractions of `scratch` (on tensors) that are to call BLAS
/// under MONARCH_CPU_GEMM; the schedules leave tagged ops alone.
void markBlasContractions(mlir::ModuleOp scratch);
bool isMarkedForBlas(mlir::Operation *op);

/// Replaces every tagged contraction (now on buffers) by its BLAS call.
mlir::LogicalResult lowerBlasContractions(mlir::ModuleOp scratch);

} // namespace monarch::codegen::detail

#endif // MONARCH_CODEGEN_LIB_KERNELS_BLASCALLS_H
