//===- ElementIO.h - Read and write one element of any DType ----*- C++ -*-===//
//
// For data-plane tests that fill buffers of every element type with small
// integers and compare results as doubles. Integers wrap like the dtype's
// arithmetic does; bools are bytes of 0 or 1.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_TESTS_COMMON_ELEMENTIO_H
#define MONARCH_TESTS_COMMON_ELEMENTIO_H

#include "core/Reduction.h"
#include "monarch/Support/DType.h"

#include <cstddef>
#include <cstdint>

namespace monarch::testing {

inline double readElem(const void *p, size_t i, DType t) {
  namespace data = executor::data;
  switch (t) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::F64:
    return static_cast<const double *>(p)[i];
  case DType::F16:
    return data::halfToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::BF16:
    return data::bfloat16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::I1:
  case DType::UI8:
    return static_cast<const uint8_t *>(p)[i];
  case DType::I8:
    return static_cast<const int8_t *>(p)[i];
  case DType::I16:
    return static_cast<const int16_t *>(p)[i];
  case DType::I32:
    return static_cast<const int32_t *>(p)[i];
  case DType::I64:
    return static_cast<const int64_t *>(p)[i];
  }
  return 0;
}

inline void writeElem(void *p, size_t i, DType t, double v) {
  namespace data = executor::data;
  switch (t) {
  case DType::F32:
    static_cast<float *>(p)[i] = float(v);
    return;
  case DType::F64:
    static_cast<double *>(p)[i] = v;
    return;
  case DType::F16:
    static_cast<uint16_t *>(p)[i] = data::floatToHalf(float(v));
    return;
  case DType::BF16:
    static_cast<uint16_t *>(p)[i] = data::floatToBFloat16(float(v));
    return;
  case DType::I1:
    static_cast<uint8_t *>(p)[i] = uint8_t(v != 0);
    return;
  case DType::I8:
    static_cast<int8_t *>(p)[i] = int8_t(int64_t(v));
    return;
  case DType::I16:
    static_cast<int16_t *>(p)[i] = int16_t(int64_t(v));
    return;
  case DType::I32:
    static_cast<int32_t *>(p)[i] = int32_t(int64_t(v));
    return;
  case DType::I64:
    static_cast<int64_t *>(p)[i] = int64_t(v);
    return;
  case DType::UI8:
    static_cast<uint8_t *>(p)[i] = uint8_t(int64_t(v));
    return;
  }
}

} // namespace monarch::testing

#endif // MONARCH_TESTS_COMMON_ELEMENTIO_H
