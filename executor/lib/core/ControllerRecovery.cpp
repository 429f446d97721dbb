//===- ControllerRecovery.cpp - The opt-in restart policy -----------------===//
//
// The public calls that reach the workers, each one attempt
// (ControllerCalls.cpp) wrapped with the RecoveryPolicy. Without a policy a
// failure is final (fail fast). With one, a call whose job failed restarts
// the whole job and tries again: the supervisor's teardown has aborted every
// rank; the launcher kills and reaps what is left; a new generation of
// workers is launched under a fresh store prefix (GenerationStore), every
// plan file is loaded again, the last checkpoint of actor state is written
// back, and the steps since that checkpoint are replayed with the inputs the
// journal kept, so the state is the one the failed call started from.
// Replayed steps' outputs are dropped (they were returned already).
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"

#include <spdlog/spdlog.h>

namespace monarch::executor {

//===--- Public calls -----------------------------------------------------===//

namespace {
const Status &statusOf(const Status &s) { return s; }
template <typename T> const Status &statusOf(const StatusOr<T> &s) {
  return s.status();
}
} // namespace

template <typename Attempt> auto Controller::withRecovery(Attempt attempt) {
  using Result = decltype(attempt());
  std::lock_guard<std::recursive_mutex> call(impl_->callMutex);
  int attempts = 0;
  Status first;
  if (Status st = recoverIfFailed(attempts, first); !st)
    return Result(st);
  while (true) {
    Result result = attempt();
    if (statusOf(result).isOk())
      return result;
    if (Status st = recoverFrom(statusOf(result), attempts, first); !st)
      return Result(st);
  }
}

StatusOr<std::vector<std::string>>
Controller::loadPlan(const std::string &planBytes) {
  // Rejected here first, so a bad file never reaches the workers.
  auto shared = plan::decodeSharedPlan(planBytes);
  if (!shared)
    return shared.status();
  return loadPlan(*shared);
}

StatusOr<std::vector<std::string>>
Controller::loadPlan(const plan::SharedPlan &shared) {
  return withRecovery([&] {
    auto names = loadPlanOnce(shared);
    // Kept whatever the policy: one turned on later reloads them too.
    if (names.isOk())
      impl_->recovery.planFiles.push_back(shared);
    return names;
  });
}

StatusOr<std::vector<HostTensor>>
Controller::runStep(const std::string &plan,
                    const std::vector<HostTensor> &inputs) {
  std::vector<const HostTensor *> refs;
  refs.reserve(inputs.size());
  for (const HostTensor &t : inputs)
    refs.push_back(&t);
  return runStepRefs(plan, refs);
}

StatusOr<std::vector<HostTensor>>
Controller::runStepRefs(const std::string &plan,
                        const std::vector<const HostTensor *> &inputs,
                        const std::set<int> *keeps) {
  // A retry runs under the same step number (faults injected at step k
  // repeat; the trace shows one step).
  int64_t step = -1;
  return withRecovery([&] {
    auto outputs = runStepOnce(plan, inputs, step, keeps);
    if (outputs.isOk())
      noteStep(plan, inputs, step);
    return outputs;
  });
}

Status Controller::setActorState(const std::string &key,
                                 const HostTensor &value, int rank) {
  return withRecovery([&] {
    Status status = setActorStateOnce(key, value, rank);
    if (status)
      noteSetState(key, value, rank);
    return status;
  });
}

StatusOr<HostTensor> Controller::getActorState(const std::string &key,
                                               int rank) {
  return withRecovery([&] { return getActorStateOnce(key, rank); });
}

StatusOr<Controller::Checkpoint> Controller::checkpointActorState() {
  return withRecovery([&] { return checkpointOnce(); });
}

Status Controller::restoreActorState(const Checkpoint &checkpoint) {
  std::lock_guard<std::recursive_mutex> call(impl_->callMutex);
  for (auto &[where, value] : checkpoint.states)
    if (Status st = setActorState(where.first, value, where.second); !st)
      return st.withContext("restoring " + where.first + " on rank " +
                            std::to_string(where.second));
  return Status::ok();
}

//===--- Policy -----------------------------------------------------------===//

Status Controller::setRecoveryPolicy(const RecoveryPolicy &policy) {
  Impl &s = *impl_;
  if (policy.maxRetries < 0 || policy.checkpointEvery < 1)
    return Status(StatusCode::InvalidArgument,
                  "recovery policy: maxRetries must be >= 0 and "
                  "checkpointEvery >= 1, got " +
                      std::to_string(policy.maxRetries) + " and " +
                      std::to_string(policy.checkpointEvery));
  if (policy.enabled() && !s.launcher->canRelaunch())
    return Status(StatusCode::InvalidArgument,
                  "recovery restarts every worker, which the '" +
                      s.launcher->name() +
                      "' launcher cannot do (it does not start them)");
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  bool wasOn = s.recovery.policy.enabled();
  s.recovery.policy = policy;
  if (!policy.enabled()) {
    s.recovery.entries.clear();
    s.recovery.checkpoint = {};
    s.recovery.stepsSinceCheckpoint = 0;
  } else if (!wasOn) {
    // The state a first restart goes back to is the state now.
    if (Status h = health(); !h) {
      s.recovery.policy = RecoveryPolicy{};
      return h.withContext("turning recovery on");
    }
    if (!takeCheckpoint()) {
      s.recovery.policy = RecoveryPolicy{};
      return health().withContext("turning recovery on");
    }
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.recovery.stats.journalEntries =
      static_cast<int64_t>(s.recovery.entries.size());
  return Status::ok();
}

RecoveryPolicy Controller::recoveryPolicy() const {
  std::lock_guard<std::recursive_mutex> call(impl_->callMutex);
  return impl_->recovery.policy;
}

RecoveryStats Controller::recoveryStats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->recovery.stats;
}

//===--- Journal and checkpoints ------------------------------------------===//

bool Controller::takeCheckpoint() {
  Impl &s = *impl_;
  auto checkpoint = checkpointOnce();
  if (!checkpoint.isOk()) {
    spdlog::warn("recovery: checkpoint failed ({}); a restart replays from "
                 "the previous one",
                 checkpoint.status().toString());
    return false;
  }
  s.recovery.checkpoint = std::move(checkpoint).value();
  s.recovery.entries.clear();
  s.recovery.stepsSinceCheckpoint = 0;
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.recovery.stats.checkpoints;
  s.recovery.stats.journalEntries = 0;
  return true;
}

void Controller::noteStep(const std::string &plan,
                          const std::vector<const HostTensor *> &inputs,
                          int64_t step) {
  Impl &s = *impl_;
  if (!s.recovery.policy.enabled())
    return;
  {
    // A plan without actor state changes nothing a restart would lose.
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.registry.plans.find(plan);
    if (it == s.registry.plans.end() || it->second.states.empty())
      return;
  }
  // The checkpoint comes first so checkpointEvery == 1 never copies inputs.
  if (s.recovery.stepsSinceCheckpoint + 1 >=
          s.recovery.policy.checkpointEvery &&
      takeCheckpoint())
    return;
  std::vector<HostTensor> kept;
  kept.reserve(inputs.size());
  for (const HostTensor *t : inputs)
    kept.push_back(*t);
  s.recovery.entries.push_back({true, plan, std::move(kept), step, -1});
  ++s.recovery.stepsSinceCheckpoint;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.recovery.stats.journalEntries =
      static_cast<int64_t>(s.recovery.entries.size());
}

void Controller::noteSetState(const std::string &key, const HostTensor &value,
                              int rank) {
  Impl &s = *impl_;
  if (!s.recovery.policy.enabled())
    return;
  s.recovery.entries.push_back({false, key, {value}, 0, rank});
  std::lock_guard<std::mutex> lock(s.mutex);
  s.recovery.stats.journalEntries =
      static_cast<int64_t>(s.recovery.entries.size());
}

//===--- Restarting -------------------------------------------------------===//

Status Controller::recoverIfFailed(int &attempts, Status &first) {
  Status failure;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (!impl_->recovery.policy.enabled() || !impl_->supervisor.failed)
      return Status::ok();
    failure = impl_->supervisor.failure;
  }
  return recoverFrom(failure, attempts, first);
}

Status Controller::recoverFrom(const Status &failure, int &attempts,
                               Status &first) {
  Impl &s = *impl_;
  // The call an interrupt broke returns its failure; the next one recovers.
  bool interrupted = s.supervisor.interrupted.exchange(false);
  if (!s.recovery.policy.enabled() || interrupted)
    return failure;
  {
    // Only a failure of the job is recovered; a bad argument is the
    // caller's, and a stopped controller stays stopped.
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.supervisor.failed || s.stopping)
      return failure;
  }
  if (first.isOk())
    first = failure;
  while (attempts < s.recovery.policy.maxRetries) {
    ++attempts;
    Status restarted = restartOnce(attempts);
    if (restarted)
      return Status::ok();
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.stopping)
        return first;
    }
    spdlog::warn("recovery: restart {} of {} failed: {}", attempts,
                 s.recovery.policy.maxRetries, restarted.toString());
  }
  return Status(first.code(), first.message() + " (gave up after " +
                                  std::to_string(attempts) + " restart" +
                                  (attempts == 1 ? "" : "s") +
                                  " of the job: " + "recovery allows " +
                                  std::to_string(s.recovery.policy.maxRetries) +
                                  ")");
}

Status Controller::restartOnce(int attempt) {
  Impl &s = *impl_;
  Clock::time_point start = Clock::now();
  int n = s.options.worldSize;
  Status cause;
  int generation;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.stopping)
      return Status(StatusCode::Aborted, "the controller was stopped");
    cause = s.supervisor.failure;
    generation = ++s.recovery.generation;
    ++s.recovery.stats.restarts;
    s.recovery.stats.lastFailure = cause.message();
  }
  int64_t steps = 0;
  for (const RecoveryJournal::Entry &entry : s.recovery.entries)
    steps += entry.isStep;
  spdlog::warn("recovery: restarting all {} workers (attempt {} of {}) after: "
               "{}; restoring the last checkpoint ({} values) and replaying "
               "{} steps since it",
               n, attempt, s.recovery.policy.maxRetries, cause.toString(),
               s.recovery.checkpoint.states.size(), steps);

  // Teardown: the supervisor's thread aborts every rank and asks the
  // launcher to end them after a grace for their logs; a restart does not
  // wait for that grace: every worker of the failed generation is killed
  // and reaped now, and the teardown thread is done before anything new
  // starts (its terminate must not meet the next generation).
  s.endGeneration();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.workers.ranks.clear();
    s.workers.ranks.resize(n);
    s.workers.numRegistered = 0;
    s.supervisor.failed = false;
    s.supervisor.failure = Status::ok();
    s.supervisor.pendingSecondary.reset();
    s.generationStore->setGeneration(generation);
    s.spec.generation = generation;
  }
  for (int r = 0; r < n; ++r)
    s.workers.dispatchers.push_back(std::make_unique<Dispatcher>());

  // Everything below that fails leaves the job failed, for the next attempt.
  auto failJob = [&](Status st, const std::string &what) {
    st = st.withContext("restart " + std::to_string(attempt) + ", " + what);
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.supervisor.failed && !s.stopping)
      s.reportFailureLocked(st, true);
    return st;
  };
  if (Status st = s.launchWorkers(); !st)
    return failJob(st, "relaunching the workers");
  for (const plan::SharedPlan &file : s.recovery.planFiles)
    if (auto names = loadPlanOnce(file); !names.isOk())
      return failJob(names.status(), "reloading a plan");
  for (auto &[where, value] : s.recovery.checkpoint.states)
    if (Status st = setActorStateOnce(where.first, value, where.second); !st)
      return failJob(st, "restoring " + where.first + " on rank " +
                             std::to_string(where.second));
  for (const RecoveryJournal::Entry &entry : s.recovery.entries) {
    if (entry.isStep) {
      int64_t step = entry.step;
      std::vector<const HostTensor *> refs;
      for (const HostTensor &t : entry.inputs)
        refs.push_back(&t);
      if (auto out = runStepOnce(entry.name, refs, step); !out.isOk())
        return failJob(out.status(), "replaying step " +
                                         std::to_string(entry.step) +
                                         " of plan '" + entry.name + "'");
    } else if (Status st =
                   setActorStateOnce(entry.name, entry.inputs[0], entry.rank);
               !st) {
      return failJob(st, "replaying a write of " + entry.name);
    }
  }
  double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.recovery.stats.recoveries;
    s.recovery.stats.replayedSteps += steps;
    s.recovery.stats.lastRecoveryMs = ms;
  }
  spdlog::warn("recovery: the job runs again after {:.0f} ms ({} plan files "
               "reloaded, {} actor state values restored, {} steps replayed)",
               ms, s.recovery.planFiles.size(),
               s.recovery.checkpoint.states.size(), steps);
  return Status::ok();
}

} // namespace monarch::executor
