//===- NcclCommunicator.cpp - The NCCL (GPU) communicator -------*- C++ -*-===//
#include "NcclCommunicator.h"

namespace monarch::executor::nccl_backend {

Status ncclAvailable() {
  return Status(StatusCode::Unavailable, "nccl: not implemented yet");
}

StatusOr<std::unique_ptr<Communicator>>
createNcclCommunicator(Store &store, int worldRank,
                       const std::vector<int> &ranks, const std::string &name,
                       const CommOptions &options) {
  return ncclAvailable();
}

} // namespace monarch::executor::nccl_backend
