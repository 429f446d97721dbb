//===- Worker.h - One rank of a job: bind a plan, run its steps -*- C++ -*-===//
//
// The worker runtime (MonarchWorker, executor/lib/worker) in three parts:
//
//   bind    loadRankPrograms: a .mcplan's bytes -> this rank's RankProgram
//           per step plan (decoded, validated, resolved). No side effects.
//   create  Interpreter::create: a RankProgram -> a runnable program (kernels
//           loaded, arena allocated, communicators created with the other
//           members, stream threads started).
//   run     Interpreter::runStep: one step, returning the first failure as a
//           Status with the failing instruction (never throws).
//
// runWorker is the monarch-worker process around them (registration with the
// controller, heartbeats, the WorkerService). Tests and embedders use the
// first three in process, e.g. over FakeCommWorld (Interpreter::Options::
// makeCommunicator). No MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_WORKER_H
#define MONARCH_EXECUTOR_WORKER_H

#include "monarch/Executor/Interpreter.h"
#include "monarch/Executor/RankProgram.h"
#include "monarch/Support/Status.h"

#include <string>
#include <vector>

namespace monarch::worker {

/// One RankProgram per step plan of the file, in file order, for
/// `worldRank` of a job of `worldSize` ranks.
executor::StatusOr<std::vector<RankProgram>>
loadRankPrograms(const std::string &planBytes, int worldRank, int worldSize);

/// Runs a worker configured from the environment (MONARCH_CONTROLLER,
/// MONARCH_RANK, MONARCH_WORLD_SIZE, MONARCH_JOB_TOKEN) until it is told to
/// stop or loses its controller; returns the process exit code.
int runWorker();

} // namespace monarch::worker

#endif // MONARCH_EXECUTOR_WORKER_H
