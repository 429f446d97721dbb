//===- RankClasses.h - Ranks that run the same instruction stream -*- C++
//-*-===//
//
// SPMD in the plan file (format 3): the programs of a step's ranks are
// mostly one instruction stream parameterised by the rank (data parallel:
// every rank runs the same launches and collectives on its own shard).
// The file stores each class of ranks' stream once; the other ranks of the
// class refer to it and list what differs, instruction by instruction: the
// peer and communicator of a send or receive, the communicator and root of
// a collective, the shard offsets of a feed, fetch or split state. Everything
// else (kernels, buffers, streams, events, source locations) must be equal for
// two ranks to share a stream. The in-memory ExecutionPlan stays one
// program per rank: the writer finds the classes, the reader expands them.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_LIB_RANKCLASSES_H
#define MONARCH_PLAN_LIB_RANKCLASSES_H

#include "monarch/Plan/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace monarch::plan::detail {

/// Instruction `instruction`'s rank-dependent fields where a rank differs
/// from the stream it shares (unset: the stream's value).
struct RankPatch {
  int32_t instruction = 0;
  std::optional<int64_t> peer;
  std::optional<int32_t> communicator;
  std::optional<int64_t> root;
  std::optional<std::vector<int64_t>> offsets;
  std::optional<int32_t> kernel;
};

/// For every program of `step`, the index of the earlier program whose
/// stream it shares, or -1 when it holds its own (the first of its class).
std::vector<int32_t> findRankClasses(const StepPlan &step);

/// What `program` changes in `shared` (same length, equal but for the
/// rank-dependent fields: findRankClasses' contract).
std::vector<RankPatch> rankPatches(const std::vector<Instruction> &shared,
                                   const std::vector<Instruction> &program);

/// `shared` with `patches` applied; an error names the first patch that
/// does not fit (an index out of range, a field the instruction does not
/// have).
std::optional<std::string>
applyRankPatches(std::vector<Instruction> &instructions,
                 const std::vector<RankPatch> &patches);

} // namespace monarch::plan::detail

#endif // MONARCH_PLAN_LIB_RANKCLASSES_H
