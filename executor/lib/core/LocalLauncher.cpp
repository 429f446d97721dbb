//===- LocalLauncher.cpp - Launchers that own their child processes ------===//
//
// `local` forks and execs monarch-worker once per rank on this machine;
// `slurm` forks one `srun` that starts every rank as a task of a job step
// (SLURM places them: block distribution, `hosts` nodes). Both own their
// children the same way, here: one thread forks them (PR_SET_PDEATHSIG
// follows the thread that forked, so a thread that outlives every child is
// the only safe parent), polls them with waitpid(pid, WNOHANG) (never
// waitpid(-1): the embedding process may have children of its own),
// reports exits, and kills what is left on terminate. Children close every
// inherited descriptor so a dead controller's sockets are not kept open by
// its workers. After terminate() the launcher can launch again (the restart
// policy's next generation of workers) with a new owner thread.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Launcher.h"
#include "monarch/Support/Knobs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <signal.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace monarch::executor {

std::string WorkerExit::describe() const {
  if (!detail.empty())
    return detail;
  if (signal != 0) {
    const char *name = sigabbrev_np(signal);
    return "killed by signal " + std::to_string(signal) +
           (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "exited with code " + std::to_string(exitCode);
}

namespace {

/// A process the launcher starts: the worker of one rank, or a process
/// that starts several (srun, rank -1).
struct Child {
  int rank = -1;
  std::string what;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  /// Sent first when the grace period ends (srun forwards SIGTERM to its
  /// tasks and waits for them); SIGKILL follows 2 s later. 0: SIGKILL at
  /// once.
  int gentleSignal = 0;
  /// Its stderr goes through the launcher (ChildLauncher::onOutput, then
  /// this process's stderr) instead of straight to this process's.
  bool watchOutput = false;
};

/// The environment of this process with `spec.env`, `extra` and the job's
/// variables on top, and `drop` removed.
std::vector<std::string>
environmentWith(const LaunchSpec &spec,
                const std::map<std::string, std::string> &extra,
                const std::vector<std::string> &drop) {
  std::map<std::string, std::string> env;
  for (char **e = environ; *e; ++e) {
    const char *eq = std::strchr(*e, '=');
    if (eq)
      env[std::string(*e, eq - *e)] = eq + 1;
  }
  for (auto &[k, v] : spec.env)
    env[k] = v;
  for (auto &[k, v] : extra)
    env[k] = v;
  env["MONARCH_CONTROLLER"] = spec.controllerAddress;
  env["MONARCH_WORLD_SIZE"] = std::to_string(spec.worldSize);
  env["MONARCH_JOB_TOKEN"] = spec.jobToken;
  for (const std::string &k : drop)
    env.erase(k);
  std::vector<std::string> out;
  for (auto &[k, v] : env)
    out.push_back(k + "=" + v);
  return out;
}

class ChildLauncher : public Launcher {
public:
  bool ownsProcesses() const override { return true; }
  bool canRelaunch() const override { return true; }

  pid_t pid(int rank) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < children_.size(); ++i)
      if (rank >= 0 && children_[i].rank == rank)
        return pids_[i];
    return 0;
  }

  Status launch(const LaunchSpec &spec,
                std::function<void(const WorkerExit &)> onExit) override {
    if (spec.worldSize <= 0)
      return Status(StatusCode::InvalidArgument,
                    name() + " launcher: world size must be positive");
    if (::access(spec.workerBinary.c_str(), X_OK) != 0)
      return Status(StatusCode::NotFound,
                    name() + " launcher: worker binary '" + spec.workerBinary +
                        "' is not an executable file (set MONARCH_WORKER_BIN)");
    StatusOr<std::vector<Child>> children = plan(spec);
    if (!children.isOk())
      return children.status();
    // A terminate() in progress (joining the previous generation's thread)
    // finishes before a new generation starts.
    std::lock_guard<std::mutex> join(joinMutex_);
    std::unique_lock<std::mutex> lock(mutex_);
    if (thread_.joinable())
      return Status(StatusCode::InvalidArgument,
                    name() + " launcher: already launched");
    launched_ = false;
    stopping_ = false;
    launchStatus_ = Status::ok();
    children_ = std::move(children).value();
    onExit_ = std::move(onExit);
    pids_.assign(children_.size(), 0);
    alive_.assign(children_.size(), false);
    outputFds_.assign(children_.size(), -1);
    pending_.assign(children_.size(), std::string());
    thread_ = std::thread([this] { run(); });
    cv_.wait(lock, [&] { return launched_; });
    return launchStatus_;
  }

  void terminate(std::chrono::milliseconds grace) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!thread_.joinable())
        return;
      // Workers were asked to exit (shutdown, heartbeat replies) and flush
      // their logs first; whoever is left at the deadline is killed. A
      // second call may only bring the deadline closer.
      auto deadline = std::chrono::steady_clock::now() + grace;
      if (!stopping_ || deadline < graceDeadline_)
        graceDeadline_ = deadline;
      stopping_ = true;
    }
    std::lock_guard<std::mutex> join(joinMutex_);
    if (thread_.joinable())
      thread_.join();
  }

protected:
  /// The processes that start the job's workers.
  virtual StatusOr<std::vector<Child>> plan(const LaunchSpec &spec) = 0;
  /// A line child `index` wrote on stderr (watchOutput children), on the
  /// launcher thread.
  virtual void onOutput(size_t index, const std::string &line) {}
  /// Called on the launcher thread before `exit` (of child `index`, its
  /// output read to the end) is reported: may name the rank and say why.
  virtual void explainExit(size_t index, WorkerExit &exit) {}

private:
  /// `name` when it holds a '/', else its first executable match on PATH
  /// (found before fork: execve in the child, which must not allocate).
  static std::string resolve(const std::string &name) {
    if (name.find('/') != std::string::npos)
      return name;
    const char *path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0)
        return dir + "/" + name;
    return name;
  }

  /// Reads what child `r` wrote since the last call (all of it when
  /// `toEnd`), passing whole lines to onOutput and echoing them.
  void drainOutput(size_t r, bool toEnd) {
    if (outputFds_[r] < 0)
      return;
    char chunk[4096];
    while (true) {
      ssize_t n = ::read(outputFds_[r], chunk, sizeof(chunk));
      if (n > 0) {
        pending_[r].append(chunk, n);
        continue;
      }
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(outputFds_[r]);
        outputFds_[r] = -1;
        toEnd = true;
      }
      if (n < 0 && errno == EINTR)
        continue;
      break;
    }
    size_t start = 0;
    for (size_t nl; (nl = pending_[r].find('\n', start)) != std::string::npos;
         start = nl + 1) {
      std::string line = pending_[r].substr(start, nl - start);
      std::fprintf(stderr, "%s\n", line.c_str());
      onOutput(r, line);
    }
    pending_[r].erase(0, start);
    if (toEnd && !pending_[r].empty()) {
      std::fprintf(stderr, "%s\n", pending_[r].c_str());
      onOutput(r, pending_[r]);
      pending_[r].clear();
    }
  }

  pid_t spawn(Child &process, int *outputFd) {
    int pipeFds[2] = {-1, -1};
    if (process.watchOutput && ::pipe2(pipeFds, O_CLOEXEC) != 0)
      pipeFds[0] = pipeFds[1] = -1;
    std::vector<char *> envp;
    for (auto &s : process.env)
      envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string program = resolve(process.argv[0]);
    std::vector<char *> argv;
    for (auto &a : process.argv)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t parent = ::getpid();
    pid_t child = ::fork();
    if (child != 0) {
      if (pipeFds[1] >= 0)
        ::close(pipeFds[1]);
      if (pipeFds[0] >= 0 && child > 0) {
        ::fcntl(pipeFds[0], F_SETFL, O_NONBLOCK);
        *outputFd = pipeFds[0];
      } else if (pipeFds[0] >= 0) {
        ::close(pipeFds[0]);
      }
      return child;
    }
    // Child: async-signal-safe calls only until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(125);
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
    }
    if (pipeFds[1] >= 0)
      ::dup2(pipeFds[1], 2);
    ::close_range(3, ~0U, 0);
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }

  void run() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t r = 0; r < children_.size(); ++r) {
        pid_t child = spawn(children_[r], &outputFds_[r]);
        if (child < 0) {
          launchStatus_ = Status(
              StatusCode::Internal,
              name() + " launcher: fork failed: " + std::strerror(errno));
          stopping_ = true;
          graceDeadline_ = std::chrono::steady_clock::now();
          break;
        }
        pids_[r] = child;
        alive_[r] = true;
      }
      launched_ = true;
    }
    cv_.notify_all();
    // Per child: 0 running, 1 sent its gentle signal, 2 killed.
    std::vector<int> ended(children_.size(), 0);
    while (true) {
      std::vector<WorkerExit> exits;
      bool anyAlive = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t r = 0; r < pids_.size(); ++r) {
          if (!alive_[r])
            continue;
          int status = 0;
          drainOutput(r, false);
          pid_t got = ::waitpid(pids_[r], &status, WNOHANG);
          if (got == pids_[r] || (got < 0 && errno == ECHILD)) {
            alive_[r] = false;
            drainOutput(r, true);
            WorkerExit exit;
            exit.rank = children_[r].rank;
            exit.process = children_[r].what;
            exit.pid = pids_[r];
            if (got > 0 && WIFSIGNALED(status))
              exit.signal = WTERMSIG(status);
            else if (got > 0 && WIFEXITED(status))
              exit.exitCode = WEXITSTATUS(status);
            explainExit(r, exit);
            exits.push_back(exit);
          } else {
            anyAlive = true;
          }
        }
        // At the grace deadline: SIGKILL, or the child's gentle signal
        // first and SIGKILL 2 s later.
        auto now = std::chrono::steady_clock::now();
        for (size_t r = 0; stopping_ && r < pids_.size(); ++r) {
          if (!alive_[r] || now < graceDeadline_ || ended[r] == 2)
            continue;
          if (children_[r].gentleSignal && ended[r] == 0) {
            ::kill(pids_[r], children_[r].gentleSignal);
            ended[r] = 1;
          } else if (!children_[r].gentleSignal ||
                     now >= graceDeadline_ + std::chrono::seconds(2)) {
            ::kill(pids_[r], SIGKILL);
            // A stopped process dies of SIGKILL; CONT is harmless.
            ::kill(pids_[r], SIGCONT);
            ended[r] = 2;
          }
        }
      }
      for (const WorkerExit &exit : exits) {
        spdlog::debug("{} launcher: {} (pid {}) {}", name(), exit.process,
                      exit.pid, exit.describe());
        if (onExit_)
          onExit_(exit);
      }
      if (!anyAlive) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_)
          return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::vector<Child> children_;
  /// Per child: the read end of its stderr pipe (-1: not watched, or
  /// closed) and what was read of an unfinished line.
  std::vector<int> outputFds_;
  std::vector<std::string> pending_;
  std::function<void(const WorkerExit &)> onExit_;
  mutable std::mutex mutex_;
  std::mutex joinMutex_;
  std::condition_variable cv_;
  std::thread thread_;
  std::vector<pid_t> pids_;
  std::vector<bool> alive_;
  bool launched_ = false;
  Status launchStatus_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point graceDeadline_;
};

/// One monarch-worker per rank on this machine.
class LocalLauncher final : public ChildLauncher {
public:
  ~LocalLauncher() override { terminate(std::chrono::milliseconds(500)); }
  std::string name() const override { return "local"; }

protected:
  StatusOr<std::vector<Child>> plan(const LaunchSpec &spec) override {
    std::vector<Child> children;
    for (int rank = 0; rank < spec.worldSize; ++rank) {
      std::map<std::string, std::string> extra;
      if (auto it = spec.rankEnv.find(rank); it != spec.rankEnv.end())
        extra = it->second;
      extra["MONARCH_RANK"] = std::to_string(rank);
      extra["MONARCH_LAUNCHER"] = "local";
      Child child;
      child.rank = rank;
      child.what = "rank " + std::to_string(rank);
      child.argv = {spec.workerBinary};
      child.env = environmentWith(spec, extra, {});
      children.push_back(std::move(child));
    }
    return children;
  }
};

/// Every rank as a task of one `srun` job step: `hosts` nodes, worldSize /
/// hosts tasks on each, placed in blocks so that rank = node x tasks per
/// node + local index, the mesh's row-major order with `hosts` first.
/// Inside an allocation (SLURM_JOB_ID set) the step runs in it; outside one,
/// the first launch asks for one (allocation()). MONARCH_SLURM_ARGS adds
/// srun and salloc options (split on spaces). The tasks take their rank from
/// SLURM_PROCID and their address from their route to the controller
/// (MONARCH_WORKER_HOST is not passed on: it names one host's address).
class SlurmLauncher final : public ChildLauncher {
public:
  ~SlurmLauncher() override {
    terminate(std::chrono::milliseconds(500));
    // Give back the allocation the first launch asked for.
    if (!allocation_.empty())
      (void)!std::system(
          (sibling("scancel") + " " + allocation_ + " >/dev/null 2>&1")
              .c_str());
  }
  std::string name() const override { return "slurm"; }

protected:
  StatusOr<std::vector<Child>> plan(const LaunchSpec &spec) override {
    int hosts = std::max(1, spec.hosts);
    if (spec.worldSize % hosts != 0)
      return Status(StatusCode::InvalidArgument,
                    "slurm launcher: " + std::to_string(spec.worldSize) +
                        " ranks do not split evenly over " +
                        std::to_string(hosts) + " hosts");
    std::vector<std::string> extra;
    std::istringstream words(knobs::getString(knobs::Id::SlurmArgs).value);
    for (std::string arg; words >> arg;)
      extra.push_back(arg);
    StatusOr<std::string> job =
        allocation(hosts, spec.worldSize / hosts, extra);
    if (!job.isOk())
      return job.status();
    Child srun;
    srun.what = "srun (the job step of every rank)";
    srun.argv = {knobs::getString(knobs::Id::SlurmSrun).value,
                 "--nodes=" + std::to_string(hosts),
                 "--ntasks=" + std::to_string(spec.worldSize),
                 "--ntasks-per-node=" + std::to_string(spec.worldSize / hosts),
                 "--distribution=block",
                 "--kill-on-bad-exit=1",
                 "--job-name=monarch-" + std::to_string(spec.generation)};
    if (!job->empty())
      srun.argv.push_back("--jobid=" + *job);
    srun.argv.insert(srun.argv.end(), extra.begin(), extra.end());
    srun.argv.push_back(spec.workerBinary);
    srun.env = environmentWith(
        spec, {{"MONARCH_LAUNCHER", "slurm"}},
        {"MONARCH_RANK", "MONARCH_WORKER_HOST", "RANK", "LOCAL_WORLD_SIZE"});
    srun.gentleSignal = SIGTERM;
    srun.watchOutput = true;
    return std::vector<Child>{std::move(srun)};
  }

  /// srun names the task that ended first: "srun: error: h1: task 3:
  /// Killed" (or "tasks 2-3: Exited with exit code 4"); the tasks it then
  /// ended itself say "Terminated". The first other such line names the
  /// rank (SLURM_PROCID is the rank) and its node.
  void onOutput(size_t, const std::string &line) override {
    if (!culprit_.empty() || !cancelled_.empty())
      return;
    // "slurmstepd: error: *** STEP 7.0 ON h0 CANCELLED AT ... ***": scancel
    // (or the scheduler) ended the step; no rank did.
    if (line.find(" CANCELLED AT ") != std::string::npos) {
      size_t star = line.find("***");
      cancelled_ = "was cancelled (" +
                   (star == std::string::npos ? line : line.substr(star)) + ")";
      return;
    }
    static const std::string kPrefix = "srun: error: ";
    if (line.rfind(kPrefix, 0) != 0)
      return;
    std::string rest = line.substr(kPrefix.size());
    size_t node = rest.find(": task");
    if (node == std::string::npos)
      return;
    std::string tasks = rest.substr(node + 2);
    size_t colon = tasks.find(": ");
    if (colon == std::string::npos ||
        tasks.compare(colon + 2, std::string::npos, "Terminated") == 0)
      return;
    size_t digits = tasks.find_first_of("0123456789");
    if (digits == std::string::npos || digits > colon)
      return;
    culpritRank_ = std::atoi(tasks.c_str() + digits);
    culprit_ =
        "ended on node " + rest.substr(0, node) + " (srun: " + tasks + ")";
  }

  void explainExit(size_t, WorkerExit &exit) override {
    if (!cancelled_.empty()) {
      exit.detail = cancelled_;
      cancelled_.clear();
      culprit_.clear();
      return;
    }
    if (culprit_.empty())
      return;
    exit.rank = culpritRank_;
    exit.process = "rank " + std::to_string(culpritRank_);
    exit.pid = 0;
    exit.detail = culprit_;
    culprit_.clear();
  }

private:
  /// `tool` (salloc, scancel) beside the configured srun, or on PATH.
  static std::string sibling(const std::string &tool) {
    std::string srun = knobs::getString(knobs::Id::SlurmSrun).value;
    size_t slash = srun.rfind('/');
    return slash == std::string::npos ? tool : srun.substr(0, slash + 1) + tool;
  }

  /// The job the steps run in: "" inside an allocation (SLURM_JOB_ID set:
  /// srun uses it); otherwise the first launch asks for one, `salloc
  /// --no-shell` with the mesh's shape and MONARCH_SLURM_ARGS (giving up
  /// after 60 s in the queue), and every step, restarts included, runs in
  /// it until the launcher is destroyed.
  StatusOr<std::string> allocation(int hosts, int perHost,
                                   const std::vector<std::string> &extra) {
    if (const char *job = std::getenv("SLURM_JOB_ID"); job && *job)
      return std::string();
    if (!allocation_.empty())
      return allocation_;
    std::string command = sibling("salloc") +
                          " --no-shell --immediate=60 --job-name=monarch"
                          " --nodes=" +
                          std::to_string(hosts) +
                          " --ntasks-per-node=" + std::to_string(perHost);
    for (const std::string &arg : extra) {
      std::string quoted = "'";
      for (char c : arg)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      command += " " + quoted + "'";
    }
    command += " 2>&1 </dev/null";
    std::string output;
    if (FILE *pipe = ::popen(command.c_str(), "r")) {
      char chunk[512];
      while (size_t n = std::fread(chunk, 1, sizeof(chunk), pipe))
        output.append(chunk, n);
      ::pclose(pipe);
    }
    static const std::string kGranted = "Granted job allocation ";
    size_t at = output.find(kGranted);
    if (at == std::string::npos)
      return Status(StatusCode::Unavailable,
                    "slurm launcher: salloc granted no allocation: " + output);
    size_t start = at + kGranted.size(), end = start;
    while (end < output.size() && std::isdigit(output[end]))
      ++end;
    allocation_ = output.substr(start, end - start);
    return allocation_;
  }

  /// The allocation this launcher asked for ("" when it runs in the
  /// caller's, or has not launched).
  std::string allocation_;
  /// What srun said of the first task that ended on its own, or of the
  /// step's cancellation.
  std::string culprit_, cancelled_;
  int culpritRank_ = -1;
};

} // namespace

std::unique_ptr<Launcher> createLocalLauncher() {
  return std::make_unique<LocalLauncher>();
}

std::unique_ptr<Launcher> createSlurmLauncher() {
  return std::make_unique<SlurmLauncher>();
}

} // namespace monarch::executor
