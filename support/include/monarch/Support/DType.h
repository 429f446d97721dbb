//===- DType.h - The element types of tensors and buffers -------*- C++ -*-===//
//
// One enum for every room: the frontend traces with it, the plan stores it
// (its values are the wire values of `enum DType` in
// plan/idl/ExecutionPlan.thrift, so a cast converts), and the data plane
// moves and reduces buffers of it. Two spellings: numpy's ("float32",
// "bool"; "bfloat16" has none there), which Python and the control plane
// use, and MLIR's ("f32", "i1"), which the plan printer and IR use.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_DTYPE_H
#define MONARCH_SUPPORT_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace monarch {

enum class DType : int32_t {
  F32 = 1,
  F16 = 2,
  BF16 = 3,
  F64 = 4,
  I1 = 5, // numpy's bool: one byte, 0 or 1
  I8 = 6,
  I16 = 7,
  I32 = 8,
  I64 = 9,
  UI8 = 10,
};

/// Every DType, for tests and tables.
inline constexpr DType kAllDTypes[] = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I1,
    DType::I8,  DType::I16, DType::I32,  DType::I64, DType::UI8};

/// Bytes per element; 0 for a value outside the enum (a decoded plan is
/// checked with it).
constexpr size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::I1:
  case DType::I8:
  case DType::UI8:
    return 1;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  return 0;
}

constexpr bool isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

/// numpy's name: "float32", "bfloat16", "bool", "uint8", ...
constexpr const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  case DType::F64:
    return "float64";
  case DType::I1:
    return "bool";
  case DType::I8:
    return "int8";
  case DType::I16:
    return "int16";
  case DType::I32:
    return "int32";
  case DType::I64:
    return "int64";
  case DType::UI8:
    return "uint8";
  }
  return "unknown";
}

/// MLIR's element type: "f32", "bf16", "i1", "ui8", ...
constexpr const char *dtypeMlirName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::UI8:
    return "ui8";
  }
  return "?";
}

/// Parses either spelling.
constexpr std::optional<DType> parseDType(std::string_view name) {
  for (DType d : kAllDTypes)
    if (name == dtypeName(d) || name == dtypeMlirName(d))
      return d;
  return std::nullopt;
}

} // namespace monarch

#endif // MONARCH_SUPPORT_DTYPE_H
