//===- Reduction.cpp - Host-side element-wise reductions --------*- C++ -*-===//
//
// float32 and float64, the collectives' hot path, run in vector lanes built
// for AVX-512, AVX2 and baseline x86-64, picked when the library loads
// (GCC's target_clones): at -O2 GCC 12 left the plain loops scalar, one
// addss per element, and a 4 MB gradient's reduction ran at a fraction of
// memory speed. Each lane computes what the scalar loop computes (the same
// expression, IEEE operations), so the bits are the same on every ISA. The
// other types are plain loops; float16 and bfloat16 convert through float32
// element by element.
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

// The lane helpers pass vectors by value between inlined calls inside this
// file; the ABI of such calls across files (what -Wpsabi warns about) never
// arises. (GCC reports it where the lambdas are emitted, at the end of the
// file, so the warning is off from here on.)
#pragma GCC diagnostic ignored "-Wpsabi"

// The reductions' expressions, one per ReduceOp (Avg sums; finishAverage
// divides): std::max is (a < b) ? b : a and std::min (b < a) ? b : a. They
// take scalars and vector lanes alike, so every path computes the same bits.
constexpr auto kAdd = [](auto a, auto b) { return a + b; };
constexpr auto kMul = [](auto a, auto b) { return a * b; };
constexpr auto kMax = [](auto a, auto b) { return a < b ? b : a; };
constexpr auto kMin = [](auto a, auto b) { return b < a ? b : a; };

/// `body(expression of op)`: the one switch over ReduceOp of this file.
template <typename Body>
inline __attribute__((always_inline)) auto withOp(ReduceOp op, Body body) {
  switch (op) {
  case ReduceOp::Prod:
    return body(kMul);
  case ReduceOp::Max:
    return body(kMax);
  case ReduceOp::Min:
    return body(kMin);
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    break;
  }
  return body(kAdd);
}

template <typename T> T combine(T a, T b, ReduceOp op) {
  return withOp(op, [&](auto f) { return T(f(a, b)); });
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MONARCH_LANES_CLONES                                                   \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MONARCH_LANES_CLONES
#endif

typedef float F32Lanes __attribute__((vector_size(64)));
typedef double F64Lanes __attribute__((vector_size(64)));

/// o[i] = f(x[i], y[i]): whole vectors of lanes, then the tail one by one
/// (out may be x or y: each vector is read before it is written).
template <typename V, typename T, typename F>
inline __attribute__((always_inline)) void laneLoop(T *o, const T *x,
                                                    const T *y, size_t n, F f) {
  constexpr size_t kLanes = sizeof(V) / sizeof(T);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V a, b;
    std::memcpy(&a, x + i, sizeof(V));
    std::memcpy(&b, y + i, sizeof(V));
    V c = f(a, b);
    std::memcpy(o + i, &c, sizeof(V));
  }
  for (; i < n; ++i)
    o[i] = f(x[i], y[i]);
}

/// o[i] = x[i] op y[i] in lanes of V; inlined into each clone below, so it
/// is compiled for that clone's instruction set.
template <typename V, typename T>
inline __attribute__((always_inline)) void
reduceIn(T *o, const T *x, const T *y, size_t n, ReduceOp op) {
  withOp(op, [&](auto f) __attribute__((always_inline)) {
    laneLoop<V>(o, x, y, n, f);
  });
}

MONARCH_LANES_CLONES void reduceF32(float *o, const float *x, const float *y,
                                    size_t n, ReduceOp op) {
  reduceIn<F32Lanes>(o, x, y, n, op);
}
MONARCH_LANES_CLONES void reduceF64(double *o, const double *x, const double *y,
                                    size_t n, ReduceOp op) {
  reduceIn<F64Lanes>(o, x, y, n, op);
}

/// p[i] /= d for float32 and float64: IEEE division in every lane (a
/// reciprocal multiply would round differently).
MONARCH_LANES_CLONES void divideF32(float *p, size_t n, float d) {
  laneLoop<F32Lanes>(p, p, p, n, [d](auto a, auto) { return a / d; });
}
MONARCH_LANES_CLONES void divideF64(double *p, size_t n, double d) {
  laneLoop<F64Lanes>(p, p, p, n, [d](auto a, auto) { return a / d; });
}

template <typename T>
void reduceTyped(void *out, const void *a, const void *b, size_t n,
                 ReduceOp op) {
  T *o = static_cast<T *>(out);
  const T *x = static_cast<const T *>(a);
  const T *y = static_cast<const T *>(b);
  withOp(op, [&](auto f) {
    for (size_t i = 0; i < n; ++i)
      o[i] = T(f(x[i], y[i]));
  });
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
    return reduceF32(static_cast<float *>(out), static_cast<const float *>(a),
                     static_cast<const float *>(b), count, op);
  case DType::F64:
    return reduceF64(static_cast<double *>(out), static_cast<const double *>(a),
                     static_cast<const double *>(b), count, op);
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
    return divideF32(static_cast<float *>(buf), count, float(n));
  case DType::F64:
    return divideF64(static_cast<double *>(buf), count, double(n));
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
