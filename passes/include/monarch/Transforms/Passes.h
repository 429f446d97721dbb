//===- Passes.h - monarch compiler passes -----------------------*- C++ -*-===//
//
// Declarations of the passes of Passes.td and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TRANSFORMS_PASSES_H
#define MONARCH_TRANSFORMS_PASSES_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace monarch {

#define GEN_PASS_DECL
#include "monarch/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "monarch/Transforms/Passes.h.inc"

} // namespace monarch

#endif // MONARCH_TRANSFORMS_PASSES_H
