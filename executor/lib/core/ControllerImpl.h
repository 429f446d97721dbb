//===- ControllerImpl.h - The controller's state -------------- -*- C++ -*-===//
//
// Private to MonarchExecutor: Controller.cpp (lifecycle, endGeneration),
// ControllerCalls.cpp and ControllerProgram.cpp (plans, steps, state),
// ControllerService.cpp (the Thrift handler workers call), Supervisor.cpp
// (failure bookkeeping, the monitor thread, teardown) and
// ControllerRecovery.cpp (the restart policy) share this state. It is held
// in parts, each saying what it owns and the lock that guards it: the
// WorkerSet (ranks, their connections and dispatchers), the Supervision
// (whether and why the job failed, the supervisor's threads), the
// PlanRegistry (what loaded plans declare) and the InstructionTable (what
// progress pages point at), all under `mutex`, and the RecoveryJournal
// (what a restart replays) under `callMutex`, which serializes the calls.
// Workers are reached through ControlClient (ControlClient.h): no Thrift
// client, transport or exception here; only Controller.cpp (the server)
// and ControllerService.cpp (its handler) include ThriftGlue.h.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CORE_CONTROLLERIMPL_H
#define MONARCH_EXECUTOR_CORE_CONTROLLERIMPL_H

#include "monarch/Executor/BufferPool.h"
#include "monarch/Executor/Communicator.h"
#include "monarch/Executor/Controller.h"
#include "monarch/Executor/Store.h"
#include "monarch/Plan/Plan.h"
#include "monarch/Plan/PlanFile.h"

#include "ControlClient.h"
#include "TraceWriter.h"
#include "core/Progress.h"
#include "core/SharedArea.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace apache::thrift {
class TProcessor;
} // namespace apache::thrift

namespace monarch::executor {

class ControlServer;

using Clock = std::chrono::steady_clock;

/// One persistent thread per rank that makes that rank's blocking calls, so
/// a step reaches every worker at once without creating threads per step.
class Dispatcher {
public:
  Dispatcher();
  ~Dispatcher();
  void post(std::function<void()> task);

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

/// The rendezvous store workers see: every key under "g<generation>/", so a
/// restarted job's communicators never meet a dead generation's addresses.
class GenerationStore final : public Store {
public:
  explicit GenerationStore(std::unique_ptr<Store> base)
      : base_(std::move(base)) {}
  void setGeneration(int generation) { generation_ = generation; }
  int generation() const { return generation_.load(); }
  /// Starts a fresh key space: keys a rendezvous of an abandoned plan load
  /// left behind are not seen by the next one.
  void nextEpoch() { ++epoch_; }
  Status set(const std::string &key, const std::string &value) override {
    return base_->set(prefix() + key, value);
  }
  StatusOr<std::string> get(const std::string &key,
                            std::chrono::milliseconds timeout) override {
    return base_->get(prefix() + key, timeout);
  }
  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout) override {
    std::vector<std::string> full;
    for (const std::string &k : keys)
      full.push_back(prefix() + k);
    return base_->wait(full, timeout);
  }
  StatusOr<int64_t> add(const std::string &key, int64_t delta) override {
    return base_->add(prefix() + key, delta);
  }

private:
  std::string prefix() const {
    return "g" + std::to_string(generation_.load()) + "." +
           std::to_string(epoch_.load()) + "/";
  }
  std::unique_ptr<Store> base_;
  std::atomic<int> generation_{0};
  std::atomic<int> epoch_{0};
};

struct RankState {
  bool registered = false;
  bool exited = false;
  std::string host;
  int port = 0;
  int64_t pid = 0;
  std::string hostname;
  /// The worker's local socket when it shares the controller's host.
  std::string local;
  bool sameHost = false;
  /// On another host than the controller (its host identity differs).
  bool remote = false;
  Clock::time_point lastSeen;
  control::Progress progress;
  /// The connection runStep/loadPlan use; owned by this rank's dispatcher.
  std::unique_ptr<ControlClient> client;
  /// The worker's progress page (Progress.h), mapped at registration when
  /// it shares our host; it outlives the worker.
  std::shared_ptr<SharedArea> progressArea;
  const ProgressPage *progressPage = nullptr;

  ControlEndpoint endpoint() const { return {host, port, local}; }
};

/// The job's workers: each rank's registration, connection and progress,
/// and the dispatcher thread that makes its blocking calls. Guarded by the
/// controller's `mutex`; the dispatchers are made when the workers start
/// and dropped by endGeneration (under callMutex).
struct WorkerSet {
  std::vector<RankState> ranks;
  int numRegistered = 0;
  std::vector<std::unique_ptr<Dispatcher>> dispatchers;
  /// Makes every call in flight on a rank's connection fail now.
  void interruptCalls();
  /// Where each registered worker that has not exited listens.
  std::vector<ControlEndpoint> liveEndpoints() const;
};

/// Whether and why the job failed, and the supervisor's threads
/// (Supervisor.cpp). Under the controller's `mutex`, but for the atomics,
/// which are read without it.
struct Supervision {
  bool failed = false;
  Status failure;
  /// A secondary failure waiting `rootCauseGrace` for its root cause.
  std::optional<Status> pendingSecondary;
  Clock::time_point pendingSince;
  /// Set while a plan load one rank refused winds down: the store's waits
  /// fail at once with `loadAbortReason`, so the ranks blocked in a
  /// rendezvous for that plan answer now, not at the rendezvous deadline.
  std::atomic<bool> loadAborted{false};
  std::string loadAbortReason;
  /// Set by interrupt(): the failure it caused is not recovered by the call
  /// it interrupted.
  std::atomic<bool> interrupted{false};
  std::thread monitor;
  std::thread teardown;
};

/// This controller's hold on the process's buffer pool (BufferPool.h), from
/// its start until it stops or is destroyed.
class BufferPoolHold {
public:
  BufferPoolHold() { holdBufferPool(); }
  ~BufferPoolHold() { release(); }
  BufferPoolHold(const BufferPoolHold &) = delete;
  BufferPoolHold &operator=(const BufferPoolHold &) = delete;
  void release() {
    if (!released_.exchange(true))
      releaseBufferPool();
  }

private:
  std::atomic<bool> released_{false};
};

/// What the loaded plans declare, for the calls that follow: their
/// signatures, controller programs, actor state and step counters. Guarded
/// by the controller's `mutex` (a plan load writes it under both `mutex`
/// and callMutex; signature() reads it without a call in progress).
struct PlanRegistry {
  std::map<std::string, PlanSignature> plans;
  /// Controller programs by name, with the plan file they came from.
  struct LoadedProgram {
    std::shared_ptr<const monarch::plan::ExecutionPlan> file;
    const monarch::plan::ControllerProgram *program = nullptr;
  };
  std::map<std::string, LoadedProgram> programs;
  /// Actor state over every loaded plan: type and holders.
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> states;
  std::map<std::string, std::vector<int>> stateRanks;
  /// Split actor state: key -> rank -> its piece of the global value.
  std::map<std::string, std::map<int, PlanSignature::Shard>> stateShards;
  /// Declared inputs of each step plan (for runStep's argument count).
  std::map<std::string, size_t> planInputs;
  std::map<std::string, int64_t> nextStep;
};

/// What a same-host worker's progress page points at: per plan and rank,
/// its instructions' names and source locations, and plan names by
/// planHash. Written when a plan loads and read by the supervisor to say
/// where a rank was, both under the controller's `mutex`.
class InstructionTable {
public:
  using Names = std::vector<std::pair<std::string, std::string>>;
  /// Replaces `plan`'s entry: `perRank[r]` names rank r's instructions.
  void record(const std::string &plan, std::vector<Names> perRank);
  /// The name of the plan with hash `planHash` ("?" when none) and the
  /// names of `rank`'s instructions in it (empty when unknown).
  std::pair<std::string, Names> lookup(uint32_t planHash, int rank) const;

private:
  std::map<std::string, std::vector<Names>> text_;
  std::map<uint32_t, std::string> byHash_;
};

/// The restart policy and what a restart replays (ControllerRecovery.cpp):
/// every plan file loaded, the last checkpoint and the steps and state
/// writes since it. Guarded by callMutex; `stats` by the controller's
/// `mutex` (recoveryStats() reads it without a call in progress).
struct RecoveryJournal {
  RecoveryPolicy policy;
  RecoveryStats stats;
  /// Every plan file loaded, in order (reloaded after a restart).
  std::vector<plan::SharedPlan> planFiles;
  /// What changed actor state since the last checkpoint, in order.
  struct Entry {
    bool isStep = true;
    /// Plan (step) or state key (write).
    std::string name;
    std::vector<HostTensor> inputs;
    int64_t step = 0;
    int rank = -1;
  };
  std::vector<Entry> entries;
  Controller::Checkpoint checkpoint;
  int stepsSinceCheckpoint = 0;
  /// The workers' generation: how many times the job restarted.
  int generation = 0;
};

struct Controller::Impl {
  BufferPoolHold bufferPool;
  ControllerOptions options;
  WireOptions limits;
  std::string token;
  std::string jobId;
  std::unique_ptr<Store> store;
  GenerationStore *generationStore = nullptr;
  std::unique_ptr<ControlServer> server;
  std::shared_ptr<Launcher> launcher;
  std::string advertisedAddress;
  /// What the launcher was given (kept to relaunch).
  LaunchSpec spec;

  mutable std::mutex mutex;
  std::condition_variable cv;
  WorkerSet workers;
  Supervision supervisor;
  /// stop() has begun (read without `mutex`) / finished.
  std::atomic<bool> stopping{false};
  bool stopped = false;
  /// Resident values (kept fetches): the next slot id, and the slots the
  /// caller released, sent to the workers with the next step (under mutex).
  int64_t nextResidentSlot = 0;
  std::vector<int64_t> residentReleases;
  ResidentStats residentStats;
  /// Forwarded worker log lines, folded across ranks before they reach
  /// spdlog (without options.logSink); flushed by the monitor.
  std::unique_ptr<LogFolder> logFolder;

  PlanRegistry registry;
  InstructionTable instructionTable;
  /// Serializes loadPlan/runStep: one step at a time per job.
  std::recursive_mutex callMutex;
  /// How long runStep spins for each reply before blocking (ms-long steps
  /// lose nothing; a short step skips a wake-up): MONARCH_REPLY_SPIN_US,
  /// -1 when unset (replySpin() decides).
  int replySpinUs = -1;
  /// How long runStep polls for each of `worldSize` workers' replies: the
  /// knob, else 30 us when the workers and this controller can each have a
  /// core here, else 0 (the rule of the workers' own polling).
  int replySpin(int worldSize) const {
    if (replySpinUs >= 0)
      return replySpinUs;
    return aCoreEach(worldSize) ? 30 : 0;
  }
  /// Ours, compared with each worker's at registration.
  std::string hostIdentity = executor::hostIdentity();
  /// Per same-host rank: the area its large feeds and fetches go through
  /// (ControllerStaging.cpp); guarded by callMutex.
  std::vector<std::unique_ptr<SharedArea>> staging;
  TraceWriter trace;

  RecoveryJournal recovery;

  // Controller.cpp
  /// Launches `spec` (the current generation), waits for every rank to
  /// register and opens the dispatch connections.
  Status launchWorkers();
  /// Ends the current generation's workers, for stop() and for a restart
  /// alike: kills and reaps every worker, waits for the supervisor's
  /// teardown thread, shuts every connection, lets the dispatcher tasks
  /// using them finish, then drops them. Under callMutex, with the monitor
  /// unable to start another teardown (stopping, or the job failed).
  void endGeneration();

  // Supervisor.cpp
  /// Records a failure. A root cause fails the job at once; a secondary one
  /// (Aborted/Unavailable seen by a peer of the failed rank) waits
  /// `rootCauseGrace` for its cause. Locks `mutex`.
  void reportFailure(Status status, bool rootCause);
  void reportFailureLocked(Status status, bool rootCause);
  void onWorkerExit(const WorkerExit &exit);
  void startMonitor();
  /// "rank 2 (pid 123)" and where it was: "during step 3 of plan 'p' at
  /// instruction 4 'launch @k' (model.py:3:1)" or "while idle".
  std::string describeRankLocked(int rank) const;
  std::string whereLocked(int rank) const;
  /// Where a same-host rank's threads are from its progress page: "during
  /// step 3 of plan 'p': stream 1 at instruction 4 'launch @k' (model.py:3:1);
  /// the issuing thread at instruction 6 'wait' (...)", or "" when it has
  /// no page or every thread is between instructions.
  std::string progressPageLocked(int rank) const;
  /// "rank 1 (pid 7) failed in step 2 of plan 'p' at instruction 3
  /// 'launch @k' (model.py:4:2): Internal: message".
  Status rankFailureLocked(int rank, const std::string &plan, int64_t step,
                           int instruction, const std::string &op,
                           const std::string &location,
                           const Status &status) const;
  void logForwarded(int rank, int level, const std::string &line);
  /// Before the service starts: forwarded lines may arrive from then on.
  void createLogFolder();
  /// One step's debug_print lines of every rank (foldRankLines), to
  /// options.printSink or stderr.
  void deliverPrints(const std::vector<std::vector<std::string>> &perRank);
  void printLine(const std::string &line);

  // ControllerService.cpp
  std::shared_ptr<apache::thrift::TProcessor> makeProcessor();

  // ControllerStaging.cpp (callMutex held)
  /// Gives each request's feeds their bytes from `inputs` (or, for a rank
  /// fed a shard, from `shards[{rank, index}]`): the large feeds of
  /// same-host ranks in their staging areas (telling those workers where to
  /// write large fetches), the others in the message.
  Status stageRequests(const PlanSignature &sig,
                       const std::vector<const HostTensor *> &inputs,
                       const std::map<std::pair<int, int>, std::string> &shards,
                       std::vector<control::RunStepRequest> &requests);
  /// The bytes of fetch `f` of rank `r`'s reply, wherever they are.
  StatusOr<std::string> fetchedBytes(int r, control::Fetch &f);

private:
  void finalizeLocked(Status status);
  void runTeardown(std::string reason);
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CORE_CONTROLLERIMPL_H
