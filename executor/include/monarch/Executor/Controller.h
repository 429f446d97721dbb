//===- Controller.h - Runs compiled plans on a mesh of workers --*- C++ -*-===//
//
// The controller of one job: it launches `worldSize` monarch-worker
// processes through a Launcher, serves their registration, heartbeats, the
// rendezvous store and error reports, loads plans on every worker, and runs
// a step as one control message per worker sent to all of them at once.
// Supervision is fail fast: the first failure of any rank (an error it
// reports, its process ending, its heartbeats stopping, its connection
// dropping) aborts every rank and is returned by the call in progress, or by
// the next call, naming the rank, the op and the user's source location.
// With a RecoveryPolicy (opt in) a failed job is restarted instead: every
// worker relaunched, the plans reloaded, the actor state of the last
// checkpoint restored, the steps since then replayed from their kept inputs,
// and the failed step run again. Used by monarch-run and the Python
// extension; docs/executor.md.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROLLER_H
#define MONARCH_EXECUTOR_CONTROLLER_H

#include "monarch/Executor/Launcher.h"
#include "monarch/Executor/RankLines.h"
#include "monarch/Support/Status.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace monarch::plan {
struct SharedPlan;
} // namespace monarch::plan

namespace monarch::executor {

/// A value that stays on the workers between calls (a kept fetch:
/// `@mc.compile(donate_argnums=...)`): resident value `slot` of the ranks
/// in `pieces`, each holding the piece of the whole value at `offsets`
/// (empty: all of it).
struct ResidentValue {
  int64_t slot = -1;
  /// The job's generation it was made in (a restart loses it).
  int generation = 0;
  struct Piece {
    std::vector<int64_t> offsets, shape;
  };
  std::map<int, Piece> pieces;
};

/// A dense row-major tensor in host memory; dtype uses numpy's names
/// ("float32", "int32", ...). With `resident` set the value is on the
/// workers instead and `data` is empty.
struct HostTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;
  std::shared_ptr<const ResidentValue> resident;

  int64_t numElements() const;
  /// "float32[2, 4]".
  std::string describe() const;
};

/// Opt-in recovery (docs/executor.md, "Recovery"). With maxRetries > 0, a
/// failure of the job (a rank crashed, hung, lost its connection or raised)
/// does not end it: the controller tears the job down, relaunches every
/// worker (a Gloo/NCCL mesh cannot be repaired rank by rank), reloads every
/// plan, restores the actor state checkpointed last, replays the steps run
/// since that checkpoint with the inputs it kept, and runs the failed call
/// again. After maxRetries consecutive failed attempts the call returns the
/// first failure, its text ending with the number of restarts tried.
struct RecoveryPolicy {
  /// Attempts to restart the job for one call; 0 turns recovery off (fail
  /// fast).
  int maxRetries = 0;
  /// A checkpoint (every actor state read back to the controller) is taken
  /// after this many successful steps of plans that declare actor state;
  /// the inputs of the steps since the last checkpoint are kept for replay.
  int checkpointEvery = 1;
  bool enabled() const { return maxRetries > 0; }
};

/// What recovery did so far (Controller::recoveryStats).
struct RecoveryStats {
  /// Whole-job restarts attempted, successful or not.
  int64_t restarts = 0;
  /// Restarts after which the failed call went on.
  int64_t recoveries = 0;
  /// Steps re-run from the journal (those since the last checkpoint).
  int64_t replayedSteps = 0;
  /// Checkpoints taken.
  int64_t checkpoints = 0;
  /// Steps (and actor state writes) kept for replay right now.
  int64_t journalEntries = 0;
  /// Wall time of the last restart (teardown to the end of the replay).
  double lastRecoveryMs = 0;
  /// The failure the last restart recovered from ("" before the first).
  std::string lastFailure;
};

struct ControllerOptions {
  int worldSize = 1;
  /// Hosts the ranks spread over (LaunchSpec::hosts; the slurm launcher's
  /// nodes).
  int hosts = 1;
  /// "local" (fork/exec on this machine), "env" (workers join by
  /// themselves) or "slurm" (one srun job step); ignored when `launcher` is
  /// set.
  std::string launcherName = "local";
  std::shared_ptr<Launcher> launcher;
  /// monarch-worker for the local launcher; empty: MONARCH_WORKER_BIN, else
  /// the monarch-worker beside the running executable, else PATH.
  std::string workerBinary;
  /// Address the controller service listens on (loopback unless told).
  std::string bindHost = "127.0.0.1";
  /// 0 picks a free port (local); the env launcher needs a known one.
  int port = 0;
  /// The address workers dial; defaults to bindHost (127.0.0.1 for 0.0.0.0).
  std::string advertiseHost;
  /// Generated when empty; the env launcher needs the one workers have.
  std::string jobToken;

  std::chrono::milliseconds heartbeatInterval{200};
  /// A rank silent for this long is declared hung.
  std::chrono::milliseconds heartbeatTimeout{1000};
  /// The same for a rank on another host (the longer of the two applies):
  /// its silence may be the network's, and an outage shorter than this is
  /// survived (TCP retransmits what waited).
  std::chrono::milliseconds remoteHeartbeatTimeout{3000};
  /// Workers exit when the controller has been unreachable this long.
  std::chrono::milliseconds controllerTimeout{3000};
  /// Registration of every rank, and each loadPlan.
  std::chrono::milliseconds startTimeout{60000};
  /// Secondary errors (a peer's connection closed, Aborted) wait this long
  /// for the failure that caused them before being reported themselves.
  std::chrono::milliseconds rootCauseGrace{300};

  /// Chrome trace of every step written here at stop() (MONARCH_TRACE).
  std::string tracePath;
  /// Passed to workers as MONARCH_LOG_LEVEL.
  std::string logLevel;
  std::map<std::string, std::string> workerEnv;
  std::map<int, std::map<std::string, std::string>> rankEnv;
  /// Receives every forwarded worker log line; default: spdlog with a
  /// "[rank N] " prefix.
  std::function<void(int rank, int level, const std::string &line)> logSink;
  /// Receives the mc.debug_print lines of each step, prefixed by rank and
  /// folded across ranks (foldRankLines); default: stderr. Lines of a step
  /// that failed arrive one rank at a time, as that rank's logs do.
  std::function<void(const std::string &line)> printSink;
  /// Off by default (fail fast); needs a launcher that can relaunch.
  RecoveryPolicy recovery;

  /// Defaults overridden by MONARCH_* variables (docs/executor.md).
  static ControllerOptions fromEnv();
};

/// What a loaded plan reads and writes, as the workers reported it.
struct PlanSignature {
  std::string name;
  /// Feed index -> dtype and shape (inputs[i] of runStep).
  std::map<int, std::pair<std::string, std::vector<int64_t>>> feeds;
  /// Fetch index -> dtype and shape (outputs[i] of runStep).
  std::map<int, std::pair<std::string, std::vector<int64_t>>> fetches;
  /// Actor state the plan declares ("@actor::@state") and the ranks holding
  /// it.
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> states;
  std::map<std::string, std::vector<int>> stateRanks;
  /// Ranks reading each feed / the rank whose copy of each fetch is returned.
  std::map<int, std::vector<int>> feedRanks;
  std::map<int, int> fetchRank;
  /// Fetches the ranks return as shards (`fetch_buffer ... at offsets`: a
  /// split result is never gathered onto one rank): each rank's piece, in
  /// rank order; `fetches` then holds the whole output's type, and runStep
  /// assembles it.
  struct Shard {
    int rank = 0;
    std::vector<int64_t> offsets, shape;
  };
  std::map<int, std::vector<Shard>> fetchShards;
  /// Every rank's copy of each fetch (keep_only ones included), by rank:
  /// where a kept output stays resident.
  std::map<int, std::map<int, Shard>> fetchPieces;
  /// Feeds some ranks take only a shard of (`feed_buffer ... at offsets`):
  /// per feed index, rank -> its piece, which runStep cuts out of the input
  /// and sends to that rank alone; `feeds` holds the whole input's type.
  std::map<int, std::map<int, Shard>> feedShards;
  /// Actor state split over ranks (`state_buffer ... shard offsets`): per
  /// key, rank -> its piece, so that setActorState can cut a global value.
  std::map<std::string, std::map<int, Shard>> stateShards;
};

class Controller {
public:
  /// Starts the control service, launches the workers and waits until all
  /// of them registered.
  static StatusOr<std::unique_ptr<Controller>> start(ControllerOptions options);
  ~Controller();
  Controller(const Controller &) = delete;
  Controller &operator=(const Controller &) = delete;

  /// Loads a serialized ExecutionPlan (.mcplan bytes) on every worker; they
  /// create the plans' communicators through the rendezvous store. Returns
  /// the names of the step plans it holds, used by runStep.
  StatusOr<std::vector<std::string>> loadPlan(const std::string &planBytes);
  /// The same for a plan already decoded in this process (the compiler's,
  /// handed over in memory): neither copied nor decoded again; kept, shared,
  /// for reloading after a restart.
  StatusOr<std::vector<std::string>> loadPlan(const plan::SharedPlan &shared);
  const PlanSignature *signature(const std::string &plan) const;

  /// Runs one step of `plan`: `inputs[i]` is feed i; returns fetch i as
  /// element i. One control message per worker, sent concurrently.
  StatusOr<std::vector<HostTensor>>
  runStep(const std::string &plan, const std::vector<HostTensor> &inputs);

  /// Runs the controller program `program` (a compiled function, from the
  /// last loaded .mcplan that has it) on `args`: its feeds, control
  /// messages (one runStep per plan they name) and fetches, in order.
  /// Returns the program's results.
  StatusOr<std::vector<HostTensor>> call(const std::string &program,
                                         const std::vector<HostTensor> &args);
  /// call() whose results `keep[i]` stay on the workers when they can (an
  /// output fetched from a plan: HostTensor::resident set, no data); an
  /// argument may be such a value, fed from where it is when its layout is
  /// the feed's (else it is fetched and sent). Without recovery only: with a
  /// restart policy every result is returned (a restart loses resident
  /// values).
  StatusOr<std::vector<HostTensor>> call(const std::string &program,
                                         const std::vector<HostTensor> &args,
                                         const std::vector<bool> &keep);
  /// The whole value of a resident result, read from its ranks.
  StatusOr<HostTensor> fetchResident(const HostTensor &value);
  /// The workers may drop resident value `value` (sent with the next step).
  void releaseResident(const HostTensor &value);
  /// Counts since start: outputs kept on the workers, resident inputs fed
  /// where they were, resident inputs fetched to be sent (their layout was
  /// not the feed's), and releases sent.
  struct ResidentStats {
    int64_t kept = 0, fedInPlace = 0, fetchedToFeed = 0, released = 0;
  };
  ResidentStats residentStats() const;
  /// Names of the controller programs loaded so far.
  std::vector<std::string> programs() const;

  /// Sets actor state `key` ("@actor::@state", as in the plan) to `value` on
  /// `rank`, or on every rank holding it when rank is -1 (a replicated
  /// parameter). State lives on the workers, shared by all their plans.
  Status setActorState(const std::string &key, const HostTensor &value,
                       int rank = -1);
  /// Reads actor state `key` from `rank`.
  StatusOr<HostTensor> getActorState(const std::string &key, int rank);

  /// Every actor state of every rank holding it, read between steps: what
  /// the restart policy restores (docs/executor.md, recovery).
  struct Checkpoint {
    /// (key, rank) -> value.
    std::map<std::pair<std::string, int>, HostTensor> states;
  };
  StatusOr<Checkpoint> checkpointActorState();
  /// Writes a checkpoint back (the same plans must be loaded).
  Status restoreActorState(const Checkpoint &checkpoint);

  /// Turns recovery on or off between calls. Turning it on takes a
  /// checkpoint at once (the state a first restart goes back to);
  /// InvalidArgument for a launcher that cannot relaunch (env) or bad
  /// numbers.
  Status setRecoveryPolicy(const RecoveryPolicy &policy);
  RecoveryPolicy recoveryPolicy() const;
  RecoveryStats recoveryStats() const;

  /// Stops every worker (asking first, then killing), writes the trace.
  /// Idempotent; returns the job's failure, if it had one.
  Status stop();

  /// Fails the job now with Aborted(`reason`), as a rank's failure would:
  /// every rank's step is aborted and the call in progress returns at once.
  /// That call is not retried by a restart policy; a later call recovers as
  /// from any failure (with a policy) or returns the failure. Thread-safe,
  /// for another thread than the caller's (Ctrl-C in Python).
  void interrupt(const std::string &reason);

  /// Ok, or the first failure of the job.
  Status health() const;
  int worldSize() const;
  const std::string &jobToken() const;
  /// "host:port" of the controller service.
  std::string address() const;
  /// Where rank's worker service listens, and its pid (0 if unknown).
  std::pair<std::string, int> workerAddress(int rank) const;
  int64_t workerPid(int rank) const;

  struct Impl;

private:
  explicit Controller(std::unique_ptr<Impl> impl);

  // One attempt of each call, without recovery (ControllerCalls.cpp).
  StatusOr<std::vector<std::string>>
  loadPlanOnce(const plan::SharedPlan &shared);
  /// `step` < 0 takes the plan's next step number and stores it there.
  /// `keeps`: fetch indices that stay resident (returned with `resident`).
  StatusOr<std::vector<HostTensor>>
  runStepOnce(const std::string &plan,
              const std::vector<const HostTensor *> &inputs, int64_t &step,
              const std::set<int> *keeps = nullptr);
  /// runStep over borrowed inputs: controller programs pass their values
  /// without copying them.
  StatusOr<std::vector<HostTensor>>
  runStepRefs(const std::string &plan,
              const std::vector<const HostTensor *> &inputs,
              const std::set<int> *keeps = nullptr);
  Status setActorStateOnce(const std::string &key, const HostTensor &value,
                           int rank);
  StatusOr<HostTensor> getActorStateOnce(const std::string &key, int rank);
  StatusOr<Checkpoint> checkpointOnce();

  // Recovery (ControllerRecovery.cpp).
  /// Called with a call's failure: returns ok when the job was restarted
  /// and the call may be tried again, else the error the call returns.
  /// `attempts` and `first` belong to one call.
  Status recoverFrom(const Status &failure, int &attempts, Status &first);
  /// Before a call: restarts a job that failed between calls.
  Status recoverIfFailed(int &attempts, Status &first);
  /// A public call under the restart policy, with the call lock held:
  /// `attempt()` (a Status or StatusOr) is tried, and tried again after
  /// every restart recoverFrom allows. Defined and used in
  /// ControllerRecovery.cpp only.
  template <typename Attempt> auto withRecovery(Attempt attempt);
  /// One restart (the `attempt`-th for this call): teardown, relaunch,
  /// reload, restore, replay.
  Status restartOnce(int attempt);
  /// After a successful step of `plan` (journal, checkpoint).
  void noteStep(const std::string &plan,
                const std::vector<const HostTensor *> &inputs, int64_t step);
  void noteSetState(const std::string &key, const HostTensor &value, int rank);
  /// Takes a checkpoint and drops the journal; false if it failed.
  bool takeCheckpoint();

  std::unique_ptr<Impl> impl_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROLLER_H
