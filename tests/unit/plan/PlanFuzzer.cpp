//===- PlanFuzzer.cpp - libFuzzer target for the plan decoder ---*- C++ -*-===//
//
// Feeds arbitrary bytes to the three entry points a damaged or forged
// `.mcplan` file reaches: the whole-file reader (header, version, checksum),
// the bare payload decoder, and the payload decoder on everything after a
// header (so that mutations of real plan files, the seed corpus, get past
// the checksum). Any result is fine; crashes, sanitizer reports, leaks and
// uncaught exceptions are not. A plan that decodes must validate and
// re-serialize.
//
// Built with clang-22 -fsanitize=fuzzer,address outside the GCC build (see
// CMakeLists.txt) and run briefly by ctest over the example plans.
//
//===----------------------------------------------------------------------===//

#include "monarch/Plan/PlanFile.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace monarch::plan;

static void check(const StatusOr<ExecutionPlan> &plan) {
  if (!plan.isOk())
    return;
  if (!validatePlan(plan.value()).isOk() || !serializePlan(plan.value()).isOk())
    std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  check(deserializePlan(bytes));
  check(decodePlanPayload(bytes));
  if (size > kPlanHeaderSize)
    check(decodePlanPayload(bytes.substr(kPlanHeaderSize)));
  // A worker's decode accepts no more than the full one: what it keeps
  // of an accepted file validates for its rank.
  for (int64_t rank : {0, 1, 4095}) {
    StatusOr<RankPlan> mine = deserializePlanForRank(bytes, rank);
    if (mine.isOk() &&
        !validatePlan(mine->plan, ValidateScope::KeptRanks).isOk())
      std::abort();
  }
  return 0;
}
