//===- ElementTypes.h - MLIR element types as monarch::DType ----*- C++ -*-===//
//
// The one mapping from an MLIR element type to the DType that plans, the
// tracer and kernels use (support/DType.h numbers them as the plan IDL).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_ELEMENTTYPES_H
#define MONARCH_IR_ELEMENTTYPES_H

#include "monarch/Support/DType.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace monarch {

/// The DType of element type `type`: f32, f16, bf16, f64; integers of 1,
/// 8 (unsigned: UI8), 16, 32 and 64 bits whatever their signedness, and
/// `index` as I64. Anything else has none.
inline std::optional<DType> dtypeOf(mlir::Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF64())
    return DType::F64;
  if (type.isIndex())
    return DType::I64;
  auto integer = mlir::dyn_cast<mlir::IntegerType>(type);
  if (!integer)
    return std::nullopt;
  switch (integer.getWidth()) {
  case 1:
    return DType::I1;
  case 8:
    return integer.isUnsigned() ? DType::UI8 : DType::I8;
  case 16:
    return DType::I16;
  case 32:
    return DType::I32;
  case 64:
    return DType::I64;
  default:
    return std::nullopt;
  }
}

} // namespace monarch

#endif // MONARCH_IR_ELEMENTTYPES_H
