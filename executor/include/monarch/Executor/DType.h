//===- DType.h - Element types moved by the data plane ----------*- C++ -*-===//
//
// The data plane moves and reduces typed buffers without knowing tensor
// shapes: a buffer is a pointer, an element count and one of these element
// types. The worker maps a plan buffer's element type to a DType once, when
// it loads the plan. Reductions of float16 and bfloat16 go through float32
// where a backend lacks them (Gloo).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DTYPE_H
#define MONARCH_EXECUTOR_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace monarch::executor {

enum class DType : uint8_t {
  Float32,
  Float64,
  Float16,
  BFloat16,
  Int8,
  Int32,
  Int64,
  UInt8,
};

/// Every DType, for tests and tables.
inline constexpr DType kAllDTypes[] = {
    DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
    DType::Int8,    DType::Int32,   DType::Int64,   DType::UInt8};

/// Bytes per element.
constexpr size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::Float32:
  case DType::Int32:
    return 4;
  case DType::Float64:
  case DType::Int64:
    return 8;
  case DType::Float16:
  case DType::BFloat16:
    return 2;
  case DType::Int8:
  case DType::UInt8:
    return 1;
  }
  return 0;
}

/// "float32", "bfloat16", ... (numpy's names; "bfloat16" has none there).
constexpr const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "float32";
  case DType::Float64:
    return "float64";
  case DType::Float16:
    return "float16";
  case DType::BFloat16:
    return "bfloat16";
  case DType::Int8:
    return "int8";
  case DType::Int32:
    return "int32";
  case DType::Int64:
    return "int64";
  case DType::UInt8:
    return "uint8";
  }
  return "unknown";
}

/// Parses dtypeName()'s spelling and MLIR's ("f32", "bf16", "i64", "ui8").
inline std::optional<DType> parseDType(std::string_view name) {
  for (DType d : kAllDTypes)
    if (name == dtypeName(d))
      return d;
  if (name == "f32")
    return DType::Float32;
  if (name == "f64")
    return DType::Float64;
  if (name == "f16")
    return DType::Float16;
  if (name == "bf16")
    return DType::BFloat16;
  if (name == "i8")
    return DType::Int8;
  if (name == "i32")
    return DType::Int32;
  if (name == "i64")
    return DType::Int64;
  if (name == "ui8")
    return DType::UInt8;
  return std::nullopt;
}

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_DTYPE_H
