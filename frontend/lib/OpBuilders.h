//===- OpBuilders.h - IR building blocks of the tensor ops ------*- C++ -*-===//
//
// Small helpers shared by Elementwise.cpp and TensorOps.cpp: element
// conversions, constants, filled tensors, `linalg.generic` over an output
// shape, and adding/removing unit dimensions with ops that have the
// sharding interface (the partitioner rejects `tensor.collapse_shape`).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_FRONTEND_LIB_OPBUILDERS_H
#define MONARCH_FRONTEND_LIB_OPBUILDERS_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace monarch::frontend {

using BodyFn = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                              mlir::ValueRange)>;

bool isFloat(mlir::Type t);
/// Converts element `v` to `to` (float widths, int <-> float, bool).
mlir::Value convertElement(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value v, mlir::Type to);
/// An `arith.constant` of scalar type `t`.
mlir::Value constantLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Type t,
                         double value);
std::vector<int64_t> shapeOf(mlir::Value v);
/// `tensor.empty` of `shape` x `elem`.
mlir::Value empty(mlir::OpBuilder &b, mlir::Location loc,
                  llvm::ArrayRef<int64_t> shape, mlir::Type elem);
/// `tensor.empty` filled with `value`.
mlir::Value filled(mlir::OpBuilder &b, mlir::Location loc,
                   llvm::ArrayRef<int64_t> shape, mlir::Type elem,
                   double value);
/// Parallel `linalg.generic` over `outShape`; `maps` index the inputs (the
/// output uses the identity); `body` gets the input elements.
mlir::Value generic(mlir::OpBuilder &b, mlir::Location loc,
                    mlir::ValueRange inputs,
                    llvm::ArrayRef<mlir::AffineMap> maps,
                    llvm::ArrayRef<int64_t> outShape, mlir::Type outElem,
                    BodyFn body);
/// Drops the dimensions of `v` not in `keep` (all of extent 1).
mlir::Value dropUnitDims(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                         llvm::ArrayRef<bool> keep);
/// `v` as `outShape`, whose dimensions not in `keep` have extent 1.
mlir::Value insertUnitDims(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value v, llvm::ArrayRef<int64_t> outShape,
                           llvm::ArrayRef<bool> keep);

} // namespace monarch::frontend

#endif // MONARCH_FRONTEND_LIB_OPBUILDERS_H
