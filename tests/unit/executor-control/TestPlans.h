//===- TestPlans.h - Small ExecutionPlans and process helpers --*- C++ -*-===//
//
// Plans built directly as monarch::plan::ExecutionPlan values (no compiler in
// the loop), and helpers that check processes are gone.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_TESTS_EXECUTORCONTROL_TESTPLANS_H
#define MONARCH_TESTS_EXECUTORCONTROL_TESTPLANS_H

#include "monarch/Executor/Controller.h"
#include "monarch/Plan/Plan.h"

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace monarch::testing {

/// Every rank feeds input 0 (f32[elements]), all-reduces it (sum) over
/// @world on stream 1, waits, and fetches the sum as output 0. Source
/// locations are "test.py:<instruction + 1>:5".
monarch::plan::ExecutionPlan allReducePlan(int ranks, int64_t elements = 4);

/// A ring on top of allReducePlan's shape: rank r sends its input to r+1
/// and receives from r-1 (one group), fetched as output 0 by every rank;
/// rank 0's copy is returned.
monarch::plan::ExecutionPlan ringPlan(int ranks);

/// Actor state: a state buffer S (f32[4]) per rank; each step launches
/// `monarch_test_add4(S, input 0) -> S` and fetches S as output 0, so after
/// k steps S holds the sum of the k inputs. A second plan, `peek`, declares
/// the same actor state at another arena offset and fetches it.
/// `kernelLibrary` is the bytes of TestKernels.c compiled as a shared object.
monarch::plan::ExecutionPlan statePlan(int ranks,
                                       const std::string &kernelLibrary);

/// allReducePlan plus two controller programs: `main(x)` feeds x, runs the
/// step and returns its output; `twice_const()` feeds the constant 2.5 as
/// the whole input, runs the step twice (two control messages) and returns
/// both outputs.
monarch::plan::ExecutionPlan programPlan(int ranks);

std::string serialize(const monarch::plan::ExecutionPlan &plan);

executor::HostTensor floats(const std::vector<float> &values);
std::vector<float> toFloats(const executor::HostTensor &tensor);

/// True when `pid` no longer exists (or is a zombie nobody reaped yet).
bool processGone(pid_t pid);
/// Waits up to `timeout` until every thread of `pid` is stopped (state T).
/// kill(SIGSTOP) returns before the stop: the kernel wakes one thread to
/// take the signal, and until it runs, the others go on (a step sent right
/// after the kill can complete on a loaded machine).
bool waitStopped(pid_t pid, std::chrono::milliseconds timeout);
/// Waits up to `timeout` for every pid to be gone.
bool allGone(const std::vector<pid_t> &pids, std::chrono::milliseconds timeout);
/// Children of `parent`, from /proc.
std::vector<pid_t> childrenOf(pid_t parent);

std::string readFile(const std::string &path);

/// A local job of `ranks` monarch-worker processes (MONARCH_WORKER_BIN),
/// 20 s to register, worker logs at warn.
executor::ControllerOptions localOptions(int ranks);

} // namespace monarch::testing

#endif
