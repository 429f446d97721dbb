//===- Reduction.h - Host-side element-wise reductions ----------*- C++ -*-===//
//
// Shared by the Gloo backend (its reduce callback) and the fake communicator:
// element-wise sum/prod/max/min over every DType, with float16 and bfloat16
// computed in float32 and rounded back (round to nearest even) per step.
// Avg is a sum followed by finishAverage().
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_REDUCTION_H
#define MONARCH_EXECUTOR_DATA_REDUCTION_H

#include "monarch/Executor/Communicator.h"

#include <cstdint>

namespace monarch::executor::data {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t b);
uint16_t floatToBFloat16(float f);

/// out[i] = a[i] op b[i] for `count` elements (out may alias a or b). Avg
/// combines like Sum. Never fails: callers validated the dtype.
void reduceElements(void *out, const void *a, const void *b, size_t count,
                    DType dtype, ReduceOp op);

/// Divides `count` elements by `n` in place (integers: truncating division),
/// the second half of an average.
void finishAverage(void *buf, size_t count, DType dtype, int n);

/// Checks the shape of `op` for a communicator of `size` ranks where this is
/// `rank`: peers and roots in range, buffers non-null where read or written,
/// tags below kMaxTag. The message names `backend` and the op.
Status validateOp(const CommOp &op, int rank, int size,
                  std::string_view backend);

} // namespace monarch::executor::data

#endif // MONARCH_EXECUTOR_DATA_REDUCTION_H
