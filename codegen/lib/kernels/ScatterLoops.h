//===- ScatterLoops.h - Compare-and-add generics as scatter loops -*- C++
//-*-===//
//
// See ScatterLoops.cpp: which linalg.generics of a CPU kernel are the
// adjoint of a gather, and their lowering to one pass over the values.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_LIB_KERNELS_SCATTERLOOPS_H
#define MONARCH_CODEGEN_LIB_KERNELS_SCATTERLOOPS_H

#include "mlir/IR/BuiltinOps.h"

namespace monarch::codegen::detail {

/// Tags the scatter-adds of `scratch` (on tensors): the schedules leave
/// tagged ops alone, and lowerScatterAdds rewrites them after
/// bufferization.
void markScatterAdds(mlir::ModuleOp scratch);
bool isMarkedScatterAdd(mlir::Operation *op);

/// Replaces every tagged scatter-add (now on buffers) by a check that the
/// rows' coordinates are consecutive, the scatter loop when they are and
/// the dense loop nest when not.
mlir::LogicalResult lowerScatterAdds(mlir::ModuleOp scratch);

} // namespace monarch::codegen::detail

#endif // MONARCH_CODEGEN_LIB_KERNELS_SCATTERLOOPS_H
