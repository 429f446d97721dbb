//===- NcclCommunicator.h - The NCCL (GPU) communicator ---------*- C++ -*-===//
//
// Always compiled; with MONARCH_HAVE_CUDA it drives NCCL, without it every
// creation fails with Unavailable saying the build has no CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_NCCL_NCCLCOMMUNICATOR_H
#define MONARCH_EXECUTOR_DATA_NCCL_NCCLCOMMUNICATOR_H

#include "monarch/Executor/Communicator.h"

namespace monarch::executor::nccl_backend {

/// createCommunicator() for Backend::Nccl.
StatusOr<std::unique_ptr<Communicator>>
createNcclCommunicator(Store &store, int worldRank,
                       const std::vector<int> &ranks, const std::string &name,
                       const CommOptions &options);

/// Ok when NCCL is compiled in and a CUDA device is visible.
Status ncclAvailable();

} // namespace monarch::executor::nccl_backend

#endif // MONARCH_EXECUTOR_DATA_NCCL_NCCLCOMMUNICATOR_H
