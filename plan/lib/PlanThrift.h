//===- PlanThrift.h - Plain plan model <-> generated Thrift -----*- C++ -*-===//
//
// Private to MonarchPlan: the only header that includes the Thrift-generated
// types (which need exceptions). Conversions are total: every enum value is
// carried as its integer so that validatePlan, not the converter, decides
// what is acceptable.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_LIB_PLAN_PLANTHRIFT_H
#define MONARCH_CODEGEN_LIB_PLAN_PLANTHRIFT_H

#include "monarch/Plan/Plan.h"
#include "monarch/Support/Status.h"

#include "ExecutionPlan_constants.h"
#include "ExecutionPlan_types.h"

#include <map>
#include <set>
#include <vector>

namespace monarch::plan::detail {

wire::ExecutionPlan toThrift(const ExecutionPlan &plan);

/// `ranks` (ascending) as the pieces a class's members are stored in: one
/// where it is a box or no split helps, else up to 4 that are each a box
/// (leading runs split off: "8 + 16i + j but [8]" is a run and a box).
std::vector<std::vector<int64_t>> boxPieces(const std::vector<int64_t> &ranks);
/// Decoding for one world rank (deserializePlanForRank): only the programs
/// it runs are rebuilt; per step plan, `commStreams` receives the streams
/// of each communicator the rank is a member of and `backends` those of
/// every communicator the step uses.
struct RankFilter {
  int64_t worldRank = 0;
  std::vector<std::map<int32_t, std::set<int64_t>>> commStreams;
  std::vector<std::set<Backend>> backends;
};

/// Fails when an instruction union holds no member or more than one.
executor::StatusOr<ExecutionPlan> fromThrift(const wire::ExecutionPlan &plan,
                                             RankFilter *only = nullptr);

} // namespace monarch::plan::detail

#endif // MONARCH_CODEGEN_LIB_PLAN_PLANTHRIFT_H
