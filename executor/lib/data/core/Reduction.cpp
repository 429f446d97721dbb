//===- Reduction.cpp - Host-side element-wise reductions --------*- C++ -*-===//
//
// Plain loops the compiler vectorizes for the native types; float16 and
// bfloat16 convert through float32 element by element.
//
//===----------------------------------------------------------------------===//

#include "Reduction.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace monarch::executor::data {

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (absx < 0x38800000u) { // below the smallest normal half: subnormal
    if (absx < 0x33000000u)
      return sign;
    uint32_t exp = absx >> 23;
    uint32_t mant = (absx & 0x7fffff) | 0x800000;
    // The value is mant * 2^(exp - 150); a half subnormal counts 2^-24.
    uint32_t shift = 126 - exp;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return sign | uint16_t(half);
  }
  uint32_t rounded = absx + 0xfff + ((absx >> 13) & 1);
  return sign | uint16_t(((rounded - 0x38000000u) >> 13) & 0x7fff);
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) // nan: keep it quiet
    return uint16_t((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

namespace {

template <typename T> T combine(T a, T b, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return T(a + b);
  case ReduceOp::Prod:
    return T(a * b);
  case ReduceOp::Max:
    return std::max(a, b);
  case ReduceOp::Min:
    return std::min(a, b);
  }
  return a;
}

template <typename T>
void reduceTyped(void *out, const void *a, const void *b, size_t n,
                 ReduceOp op) {
  T *o = static_cast<T *>(out);
  const T *x = static_cast<const T *>(a);
  const T *y = static_cast<const T *>(b);
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    for (size_t i = 0; i < n; ++i)
      o[i] = T(x[i] + y[i]);
    break;
  case ReduceOp::Prod:
    for (size_t i = 0; i < n; ++i)
      o[i] = T(x[i] * y[i]);
    break;
  case ReduceOp::Max:
    for (size_t i = 0; i < n; ++i)
      o[i] = std::max(x[i], y[i]);
    break;
  case ReduceOp::Min:
    for (size_t i = 0; i < n; ++i)
      o[i] = std::min(x[i], y[i]);
    break;
  }
}

// Bools are bytes of 0 or 1; numpy's sum/max of bools is "any", prod/min
// "all", and the result stays a bool (a byte of 2 would not be one).
void reduceBool(void *out, const void *a, const void *b, size_t n,
                ReduceOp op) {
  uint8_t *o = static_cast<uint8_t *>(out);
  const uint8_t *x = static_cast<const uint8_t *>(a);
  const uint8_t *y = static_cast<const uint8_t *>(b);
  bool any = op == ReduceOp::Sum || op == ReduceOp::Max;
  for (size_t i = 0; i < n; ++i)
    o[i] = any ? uint8_t((x[i] != 0) | (y[i] != 0))
               : uint8_t((x[i] != 0) & (y[i] != 0));
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void reduce16(void *out, const void *a, const void *b, size_t n, ReduceOp op) {
  uint16_t *o = static_cast<uint16_t *>(out);
  const uint16_t *x = static_cast<const uint16_t *>(a);
  const uint16_t *y = static_cast<const uint16_t *>(b);
  for (size_t i = 0; i < n; ++i)
    o[i] = FromF(combine(ToF(x[i]), ToF(y[i]), op));
}

} // namespace

void reduceElements(void *out, const void *a, const void *b, size_t count,
                    DType dtype, ReduceOp op) {
  switch (dtype) {
  case DType::F32:
    return reduceTyped<float>(out, a, b, count, op);
  case DType::F64:
    return reduceTyped<double>(out, a, b, count, op);
  case DType::F16:
    return reduce16<halfToFloat, floatToHalf>(out, a, b, count, op);
  case DType::BF16:
    return reduce16<bfloat16ToFloat, floatToBFloat16>(out, a, b, count, op);
  case DType::I1:
    return reduceBool(out, a, b, count, op);
  case DType::I8:
    return reduceTyped<int8_t>(out, a, b, count, op);
  case DType::I16:
    return reduceTyped<int16_t>(out, a, b, count, op);
  case DType::I32:
    return reduceTyped<int32_t>(out, a, b, count, op);
  case DType::I64:
    return reduceTyped<int64_t>(out, a, b, count, op);
  case DType::UI8:
    return reduceTyped<uint8_t>(out, a, b, count, op);
  }
}

namespace {
template <typename T> void divideTyped(void *buf, size_t n, int d) {
  T *p = static_cast<T *>(buf);
  for (size_t i = 0; i < n; ++i)
    p[i] = T(p[i] / T(d));
}
template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void divide16(void *buf, size_t n, int d) {
  uint16_t *p = static_cast<uint16_t *>(buf);
  for (size_t i = 0; i < n; ++i)
    p[i] = FromF(ToF(p[i]) / float(d));
}
} // namespace

void finishAverage(void *buf, size_t count, DType dtype, int n) {
  switch (dtype) {
  case DType::F32:
    return divideTyped<float>(buf, count, n);
  case DType::F64:
    return divideTyped<double>(buf, count, n);
  case DType::F16:
    return divide16<halfToFloat, floatToHalf>(buf, count, n);
  case DType::BF16:
    return divide16<bfloat16ToFloat, floatToBFloat16>(buf, count, n);
  case DType::I1: // refused by validateOp
    return;
  case DType::I8:
    return divideTyped<int8_t>(buf, count, n);
  case DType::I16:
    return divideTyped<int16_t>(buf, count, n);
  case DType::I32:
    return divideTyped<int32_t>(buf, count, n);
  case DType::I64:
    return divideTyped<int64_t>(buf, count, n);
  case DType::UI8:
    return divideTyped<uint8_t>(buf, count, n);
  }
}

Status validateOp(const CommOp &op, int rank, int size,
                  std::string_view backend) {
  auto bad = [&](const std::string &why) {
    return Status(StatusCode::InvalidArgument, std::string(backend) + " " +
                                                   commOpKindName(op.kind) +
                                                   ": " + why);
  };
  if (dtypeSize(op.dtype) == 0)
    return bad("unknown dtype");
  bool reduces =
      op.kind == CommOpKind::AllReduce || op.kind == CommOpKind::ReduceScatter;
  if (reduces && op.dtype == DType::I1 && op.reduce == ReduceOp::Avg)
    return bad("the average of bools is not a bool");
  bool p2p = op.kind == CommOpKind::Send || op.kind == CommOpKind::Recv;
  if (p2p && (op.peer < 0 || op.peer >= size))
    return bad("peer " + std::to_string(op.peer) + " is not a rank of a " +
               std::to_string(size) + "-rank communicator");
  if (op.kind == CommOpKind::Broadcast && (op.peer < 0 || op.peer >= size))
    return bad("root " + std::to_string(op.peer) + " is not a rank of a " +
               std::to_string(size) + "-rank communicator");
  if (op.tag != kAutoTag && op.tag >= kMaxTag)
    return bad("tag " + std::to_string(op.tag) + " is not below 2^40");
  if (op.count == 0)
    return Status::ok();
  bool readsInput = op.kind != CommOpKind::Recv &&
                    (op.kind != CommOpKind::Broadcast || rank == op.peer);
  bool writesOutput = op.kind != CommOpKind::Send;
  if (readsInput && !op.input)
    return bad("null input buffer");
  if (writesOutput && !op.output)
    return bad("null output buffer");
  bool mayAlias = op.kind == CommOpKind::AllReduce ||
                  op.kind == CommOpKind::Broadcast ||
                  (op.kind == CommOpKind::AllGather && size == 1) ||
                  (op.kind == CommOpKind::ReduceScatter && size == 1);
  if (readsInput && writesOutput && !mayAlias && op.input) {
    const char *in = static_cast<const char *>(op.input);
    const char *out = static_cast<const char *>(op.output);
    if (in < out + op.outputBytes(size) && out < in + op.inputBytes(size))
      return bad("input and output buffers overlap");
  }
  return Status::ok();
}

} // namespace monarch::executor::data
