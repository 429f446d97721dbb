//===- PlanSummary.h - What a planned program does per rank -----*- C++ -*-===//
//
// An analysis of a planned module (the `planned` stage): per rank its ops,
// kernels, transfers, arena and state bytes and its share of the step's
// compute; bytes per point-to-point link; bytes and members of every
// collective, with ranks mapped to the root proc mesh the workers run (where
// a transport is decided). `fn.plan_summary()` and the C++
// `driver::summarizeTrace` return it.
//
// The struct is standard C++ (the Python extension, built with exceptions,
// includes this header); the analyses take modules by handle.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_PLANSUMMARY_H
#define MONARCH_CODEGEN_PLANSUMMARY_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace monarch::codegen {

struct PlanSummary {
  struct Rank {
    std::string plan;
    int64_t rank = 0;
    int64_t ops = 0;
    int64_t kernels = 0;
    int64_t sends = 0;
    int64_t recvs = 0;
    int64_t collectives = 0;
    int64_t arenaBytes = 0;
    /// Peak live bytes from the schedule (`monarch.peak_bytes`), else the
    /// arena size.
    int64_t peakBytes = 0;
    /// Iterations of the structured (linalg) ops of the kernels this rank
    /// launches per step: its share of the step's compute is
    /// `work / PlanSummary::globalWork` (ideal 1/N for N ranks).
    int64_t work = 0;
    /// Bytes of actor state this rank holds for the plan (its
    /// `state_buffer`s: parameters, optimizer moments; split state counts
    /// this rank's shard).
    int64_t stateBytes = 0;
  };
  struct Link {
    std::string plan;
    int64_t from = 0;
    int64_t to = 0;
    int64_t bytes = 0;
    /// `from` and `to` as ranks of `root` (the proc mesh at the root of the
    /// plan's mesh: the ranks workers run), where the transport is decided.
    std::string root;
    int64_t fromRoot = 0;
    int64_t toRoot = 0;
  };
  struct Collective {
    std::string plan;
    std::string communicator;
    std::string kind;
    /// The communicator's members as ranks of its root proc mesh `root`.
    std::string root;
    std::vector<int64_t> members;
    /// Input bytes and instructions, summed over the participating ranks.
    int64_t bytes = 0;
    int64_t count = 0;
  };
  std::vector<Rank> ranks;
  std::vector<Link> links;
  std::vector<Collective> collectives;
  /// Iterations of the structured ops of the traced program run on one
  /// machine: what the ranks' `work` is measured against. Endpoint bodies
  /// (per-rank code) count once per rank of the mesh they are called on.
  int64_t globalWork = 0;
};

/// Ranks, links and collectives of a planned module (`globalWork` stays 0).
PlanSummary summarizePlan(mlir::ModuleOp planned);

/// The work of a traced module on one machine (PlanSummary::globalWork):
/// its functions' structured ops, and each endpoint call's body once per
/// rank of the mesh it runs on.
int64_t tracedWork(mlir::ModuleOp traced);

} // namespace monarch::codegen

#endif // MONARCH_CODEGEN_PLANSUMMARY_H
