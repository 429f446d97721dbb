//===- Launcher.h - How worker processes come to exist ---------*- C++ -*-===//
//
// The controller asks a Launcher for `worldSize` workers that will connect
// back to it and register with the job token. `local` forks and execs
// `monarch-worker` on this machine (the embedded default); `env` starts
// nothing and waits for workers started by another system (torchrun-style
// variables, SLURM tasks, Kubernetes pods) to join; `slurm` runs
// `srun --nodes=H --ntasks=N monarch-worker` with the same variables and
// owns the srun process. Launchers that own processes report their exits (the
// fastest crash signal the controller has) and kill what is left on
// terminate(). The restart policy relaunches a whole job: terminate(), then
// launch() again with the next generation's spec, on launchers that
// canRelaunch().
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_LAUNCHER_H
#define MONARCH_EXECUTOR_LAUNCHER_H

#include "monarch/Support/Status.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace monarch::executor {

/// What every worker needs to join a job; a launcher passes it as the
/// MONARCH_CONTROLLER, MONARCH_RANK, MONARCH_WORLD_SIZE and MONARCH_JOB_TOKEN
/// environment variables (docs/executor.md).
struct LaunchSpec {
  int worldSize = 1;
  /// Hosts the ranks are spread over, worldSize / hosts each, in blocks
  /// (the mesh's `hosts` dimension; slurm launcher: the nodes of the step).
  int hosts = 1;
  /// "host:port" of the controller service, as workers must dial it.
  std::string controllerAddress;
  std::string jobToken;
  /// The monarch-worker executable (local launcher).
  std::string workerBinary;
  /// Extra environment for every worker (MONARCH_LOG_LEVEL, ...).
  std::map<std::string, std::string> env;
  /// Extra environment per rank (tests inject faults into one rank).
  std::map<int, std::map<std::string, std::string>> rankEnv;
  /// 0 for the first launch, n for the n-th restart of the job (the slurm
  /// launcher names its job step with it).
  int generation = 0;
};

/// A worker process that ended. `signal` is nonzero when it was killed.
struct WorkerExit {
  /// -1 for a process that is no one rank (srun, which runs them all).
  int rank = -1;
  /// "rank 3", "srun (the job step of every rank)".
  std::string process;
  pid_t pid = 0;
  int exitCode = 0;
  int signal = 0;
  /// What the launcher knows better than an exit status ("ended on node
  /// h1 (srun: task 3: Killed)"); describe() returns it when set.
  std::string detail;
  /// "exited with code 3", "killed by signal 9 (SIGKILL)".
  std::string describe() const;
};

class Launcher {
public:
  virtual ~Launcher() = default;
  /// "local", "env", ...
  virtual std::string name() const = 0;

  /// Starts the workers (or arranges for them to be started); returns once
  /// they have been asked to start, not once they have registered.
  /// `onExit` is called from a launcher thread for each owned worker that
  /// ends, whenever that happens.
  virtual Status launch(const LaunchSpec &spec,
                        std::function<void(const WorkerExit &)> onExit) = 0;

  /// True when this launcher owns the worker processes (it can see their
  /// exits and kill them); false for `env`, where only heartbeats tell.
  virtual bool ownsProcesses() const = 0;

  /// pid of the process running `rank`, 0 when unknown (not owned).
  virtual pid_t pid(int rank) const = 0;

  /// Ends every owned worker: waits up to `grace` for them to exit (they
  /// were asked to), SIGKILLs the rest, and reaps them all. Never returns
  /// with an owned child alive. Idempotent.
  virtual void terminate(std::chrono::milliseconds grace) = 0;

  /// True when launch() may be called again after terminate() returned, to
  /// start a whole new set of workers (the restart policy). local: yes; env:
  /// no (it starts nothing); slurm: yes, a new job step. Ranks
  /// are never relaunched one by one: the survivors' communicators were
  /// aborted with the failed rank's.
  virtual bool canRelaunch() const { return false; }
};

/// fork/exec `spec.workerBinary` once per rank on this machine. Children get
/// PR_SET_PDEATHSIG(SIGKILL) bound to a thread that lives as long as the
/// launcher, and their own process group.
std::unique_ptr<Launcher> createLocalLauncher();

/// Starts nothing: workers started elsewhere join using the variables above.
/// `printTo` receives one line with the variables to export (may be null).
std::unique_ptr<Launcher>
createEnvLauncher(std::function<void(const std::string &)> printTo = nullptr);

/// One `srun` job step of every rank (LocalLauncher.cpp): `spec.hosts`
/// nodes, block distribution, MONARCH_SLURM_ARGS added to srun's options;
/// outside an allocation it asks for one first (`salloc --no-shell`), runs
/// every step (restarts included) in it and cancels it when destroyed;
/// terminate() sends srun SIGTERM (forwarded to the tasks), then SIGKILL.
std::unique_ptr<Launcher> createSlurmLauncher();

/// "local", "env" or "slurm"; NotFound naming the known launchers otherwise.
StatusOr<std::unique_ptr<Launcher>> createLauncher(const std::string &name);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_LAUNCHER_H
