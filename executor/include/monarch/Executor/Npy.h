//===- Npy.h - Read and write numpy .npy files ------------------*- C++ -*-===//
//
// Version 1.0-3.0 .npy files of little-endian, C-order arrays of the dtypes
// the executor moves (float16/32/64, int8/32/64, uint8; bfloat16 has no
// numpy code and is written as raw uint16 with a "bfloat16" note nowhere:
// it is refused). No dependency beyond the standard library.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_NPY_H
#define MONARCH_EXECUTOR_NPY_H

#include "monarch/Executor/Controller.h"
#include "monarch/Support/Status.h"

#include <string>

namespace monarch::executor {

/// Parses .npy bytes; errors name `what` (usually the file name).
StatusOr<HostTensor> parseNpy(const std::string &bytes,
                              const std::string &what = "npy data");
StatusOr<std::string> serializeNpy(const HostTensor &tensor);

StatusOr<HostTensor> readNpyFile(const std::string &path);
Status writeNpyFile(const std::string &path, const HostTensor &tensor);

/// Bytes per element of a numpy dtype name, 0 when unknown.
size_t dtypeBytes(const std::string &dtype);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_NPY_H
