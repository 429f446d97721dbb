//===- PlanLoader.h - ExecutionPlan -> this rank's programs ----*- C++ -*-===//
//
// Decodes and validates a .mcplan (MonarchPlan) and resolves, for every step
// plan, what this world rank runs: ranks of slices mapped to world ranks,
// buffers to numpy types, kernels to exported symbols, waits to events, and
// the user's source location per instruction.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_WORKER_PLANLOADER_H
#define MONARCH_WORKER_PLANLOADER_H

#include "RankProgram.h"

#include "monarch/Executor/Status.h"

#include <string>
#include <vector>

namespace monarch::worker {

/// One RankProgram per step plan of the file, in file order.
executor::StatusOr<std::vector<RankProgram>>
loadRankPrograms(const std::string &planBytes, int worldRank, int worldSize);

} // namespace monarch::worker

#endif // MONARCH_WORKER_PLANLOADER_H
