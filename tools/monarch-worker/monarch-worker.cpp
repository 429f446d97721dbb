//===- monarch-worker.cpp - One rank of a monarch job ---------------------===//
//
// Started by a launcher, never by hand: reads MONARCH_CONTROLLER,
// MONARCH_RANK, MONARCH_WORLD_SIZE and MONARCH_JOB_TOKEN, serves its
// WorkerService, registers with the controller, heartbeats (carrying its
// progress and log lines), and runs plans. It exits on its own when the
// controller says so, when the controller has been unreachable for
// MONARCH_CONTROLLER_TIMEOUT_MS, or (local launcher) when the controller
// process dies (PR_SET_PDEATHSIG).
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Worker.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc > 1 &&
      (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::printf(
        "monarch-worker: one rank of a monarch job, started by a launcher\n"
        "(monarch-run, the Python API, or your own system with the env\n"
        "launcher). Environment: MONARCH_CONTROLLER=host:port, MONARCH_RANK,\n"
        "MONARCH_WORLD_SIZE, MONARCH_JOB_TOKEN; see docs/executor.md.\n");
    return 0;
  }
  return monarch::worker::runWorker();
}
