//===- plan_load.cpp - What a worker pays to load a plan --------*- C++ -*-===//
//
// `plan_load FILE.mcplan [RANK [LOADS]]`: the time a worker of the plan's
// mesh takes to bind its program (monarch::worker::loadRankPrograms:
// decode, validate, resolve its rank's instructions and every communicator
// it uses), for RANK (default: the last rank), the median of LOADS
// (default 101) loads after a warm-up (many, to profile it), and the plan's
// size. rank_scaling.py prints it per mesh size (issue 15:
// a worker's load time within 2x of the 8-rank figure). A report, never an
// assertion.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Worker.h"
#include "monarch/Plan/PlanFile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: plan_load FILE.mcplan [RANK [LOADS]]\n");
    return 2;
  }
  auto bytes = monarch::plan::readFileBytes(argv[1]);
  if (!bytes.isOk()) {
    std::fprintf(stderr, "plan_load: %s\n", bytes.status().message().c_str());
    return 1;
  }
  // The mesh's size, from one rank's decode (the full one would dominate
  // a profile of this tool).
  auto plan = monarch::plan::deserializePlanForRank(*bytes, 0);
  if (!plan.isOk() || plan->plan.meshes.empty()) {
    std::fprintf(stderr, "plan_load: %s\n",
                 plan.isOk() ? "the plan has no mesh"
                             : plan.status().message().c_str());
    return 1;
  }
  int world = static_cast<int>(plan->plan.meshes.front().numRanks());
  int rank = argc >= 3 ? std::atoi(argv[2]) : world - 1;
  int loads = argc == 4 ? std::max(1, std::atoi(argv[3])) : 101;
  std::vector<double> ms;
  for (int i = 0; i <= loads; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto programs = monarch::worker::loadRankPrograms(*bytes, rank, world);
    auto end = std::chrono::steady_clock::now();
    if (!programs.isOk()) {
      std::fprintf(stderr, "plan_load: %s\n",
                   programs.status().message().c_str());
      return 1;
    }
    if (i > 0)
      ms.push_back(
          std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("plan_load: %zu bytes, %d ranks, rank %d binds in %.3f ms "
              "(median of %zu)\n",
              bytes->size(), world, rank, ms[ms.size() / 2], ms.size());
  return 0;
}
