//===- PlanSimulate.h - Predict a step from its plan ------------*- C++ -*-===//
//
// `monarch-compile X.mlir --simulate[=PRESET|TOPOLOGY.json]` and
// `fn.simulate(*args, topology=...)` (issue 19, first slice): the plan's
// instruction streams replayed in a discrete-event model, without running
// anything.
//
// - Each rank's issuing thread runs its instructions in order: host
//   instructions (feed, fetch, state, print) cost `hostUs`, issuing an
//   asynchronous one `issueUs`, and a `wait` blocks until its events are
//   done.
// - Each stream runs its entries one at a time, in issue order. A kernel
//   costs `launchUs` plus the larger of its flops over the device's rate
//   and its buffers' bytes over the memory bandwidth (a roofline; the plan
//   carries each kernel's flops).
// - Communication starts when every participant has it at the head of its
//   stream; it costs alpha + bytes x factor / beta over the link between
//   the ranks (same host or not: the topology's ranks per host, else the
//   plan's topology), the factor that of a ring (all_reduce 2(n-1)/n,
//   all_gather and reduce_scatter (n-1)/n of the whole, all_to_all
//   (n-1)/n, broadcast 1) with 2(n-1) or (n-1) latencies.
// - The controller adds its share to each step: `callUs`, `arrayUs` per
//   array the step plan takes or returns, the arrays' bytes at
//   `controllerBytesPerUs`, and `rankUs` per rank beyond the first.
//
// Presets (`topologyPreset`): "this-machine" (the 2-vCPU VMs these numbers
// come from: docs/benchmarks.md), "dgx-h100", "dgx-h200",
// "cpu-cluster-25g" (vendor figures, noted beside each).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_PLANSIMULATE_H
#define MONARCH_PLAN_PLANSIMULATE_H

#include "monarch/Plan/Plan.h"
#include "monarch/Support/Status.h"

#include <map>
#include <string>
#include <vector>

namespace monarch::plan {

struct SimTopology {
  std::string name;
  /// Device rates: flops per microsecond, memory bytes per microsecond.
  double flopsPerUs = 40e3, memBytesPerUs = 8e3;
  /// Fixed costs: a kernel launch, a host instruction, issuing one.
  double launchUs = 1.5, hostUs = 1.0, issueUs = 0.5;
  /// Links: latency (us) and bytes per microsecond, same host and across.
  double intraAlphaUs = 20, intraBytesPerUs = 4e3;
  double interAlphaUs = 60, interBytesPerUs = 1.2e3;
  /// Ranks per host of the simulated machine (consecutive ranks share a
  /// host); 0: the hosts of the plan's topology (the local launcher's one
  /// host).
  int ranksPerHost = 0;
  /// Cores of each host its ranks share; 0: a core per rank. Where a host's
  /// ranks outnumber its cores, their kernels take that much longer (four
  /// workers on a 2-core machine compute at half speed).
  int coresPerHost = 0;
  /// The controller's share of a step, outside the ranks: a call (the
  /// Python call, the step's messages out and the replies back) and each
  /// array it feeds or fetches (flattening, conversion, staging, reassembly
  /// of the result). Fitted from Python on this machine kind by
  /// monarch-calibrate: a no-op step on one worker less the ranks' part
  /// the simulator predicts (11 us), and a step of 32 arrays in and 32
  /// out, per array, less the ranks' part (2.2 us an array beside the
  /// ranks' 1 us for its feed or fetch).
  double callUs = 11, arrayUs = 2.2;
  /// And the bytes of each array it feeds or fetches, copied once whatever
  /// the ranks (staging a feed or cutting it into shards, reassembling a
  /// result) at this rate (0: not modelled). monarch-calibrate writes its
  /// measured memory rate; 5 GB/s is this machine kind's.
  double controllerBytesPerUs = 5e3;
  /// And each rank beyond the first that the call reaches (its message,
  /// its reply, and waking it: a no-op step here took 11.5 us on 1
  /// worker, 56 on 4 and 132 on 8, the workers sharing 2 cores).
  double rankUs = 15;
};

/// A preset by name; NotFound naming the presets otherwise.
StatusOr<SimTopology> topologyPreset(const std::string &name);
/// The preset names.
std::vector<std::string> topologyPresets();
/// Sets field `key` of a topology file ("flops_per_us", ...,
/// "ranks_per_host", "cores_per_host", "call_us", "array_us", "rank_us",
/// "controller_bytes_per_us");
/// InvalidArgument for an unknown key or a value out of range.
Status setTopologyField(SimTopology &topology, const std::string &key,
                        double value);

struct SimRank {
  int64_t rank = 0;
  /// Busy time of its kernels and of its communication, and the time its
  /// issuing thread spent blocked in waits.
  double computeUs = 0, commUs = 0, waitUs = 0;
  double finishUs = 0;
};

struct SimStep {
  std::string plan;
  /// The whole step: the ranks' makespan plus the controller's share.
  double stepUs = 0;
  /// The controller's share: callUs, arrayUs per input and output, and
  /// rankUs per rank beyond the first.
  double controllerUs = 0;
  std::vector<SimRank> ranks;
  /// The rank that finishes last, and the work it finishes on: the
  /// asynchronous instruction of that rank that completed last (a kernel or
  /// a transfer; its name and the user's source location).
  int64_t criticalRank = 0;
  std::string criticalOp, criticalLoc;
  /// Bytes moved by communication, by link class ("same host", "network").
  std::map<std::string, int64_t> linkBytes;
};

struct SimResult {
  std::vector<SimStep> steps;
  /// Chrome/Perfetto trace of the predicted steps ("ph": "X" events, one
  /// process per rank, one thread per stream, -1 the issuing thread).
  std::string chromeTrace;
};

/// Replays every step plan of `plan` (each from time 0).
StatusOr<SimResult> simulatePlan(const ExecutionPlan &plan,
                                 const SimTopology &topology);

/// A readable report of `result` (what --simulate prints).
std::string simulationReport(const SimResult &result,
                             const SimTopology &topology);

} // namespace monarch::plan

#endif // MONARCH_PLAN_PLANSIMULATE_H
