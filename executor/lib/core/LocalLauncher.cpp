//===- LocalLauncher.cpp - fork/exec monarch-worker on this machine ------===//
//
// One thread owns the children: it forks them (PR_SET_PDEATHSIG follows the
// thread that forked, so a thread that outlives every child is the only safe
// parent), polls them with waitpid(pid, WNOHANG) (never waitpid(-1): the
// embedding process may have children of its own), reports exits, and kills
// what is left on terminate. Children close every inherited descriptor so a
// dead controller's sockets are not kept open by its workers. After
// terminate() the launcher can launch again (the restart policy's next
// generation of workers) with a new owner thread.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Launcher.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace monarch::executor {

std::string WorkerExit::describe() const {
  if (signal != 0) {
    const char *name = sigabbrev_np(signal);
    return "killed by signal " + std::to_string(signal) +
           (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "exited with code " + std::to_string(exitCode);
}

namespace {

class LocalLauncher final : public Launcher {
public:
  ~LocalLauncher() override { terminate(std::chrono::milliseconds(500)); }
  std::string name() const override { return "local"; }
  bool ownsProcesses() const override { return true; }
  bool canRelaunch() const override { return true; }

  pid_t pid(int rank) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return rank >= 0 && rank < static_cast<int>(pids_.size()) ? pids_[rank] : 0;
  }

  Status launch(const LaunchSpec &spec,
                std::function<void(const WorkerExit &)> onExit) override {
    if (spec.worldSize <= 0)
      return Status(StatusCode::InvalidArgument,
                    "local launcher: world size must be positive");
    if (::access(spec.workerBinary.c_str(), X_OK) != 0)
      return Status(StatusCode::NotFound,
                    "local launcher: worker binary '" + spec.workerBinary +
                        "' is not an executable file (set MONARCH_WORKER_BIN)");
    // A terminate() in progress (joining the previous generation's thread)
    // finishes before a new generation starts.
    std::lock_guard<std::mutex> join(joinMutex_);
    std::unique_lock<std::mutex> lock(mutex_);
    if (thread_.joinable())
      return Status(StatusCode::InvalidArgument,
                    "local launcher: already launched");
    launched_ = false;
    stopping_ = false;
    launchStatus_ = Status::ok();
    spec_ = spec;
    onExit_ = std::move(onExit);
    pids_.assign(spec.worldSize, 0);
    alive_.assign(spec.worldSize, false);
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

private:
  /// Environment of one rank, built before fork (no allocation after it).
  std::vector<std::string> environmentFor(int rank) const {
    std::map<std::string, std::string> env;
    for (char **e = environ; *e; ++e) {
      const char *eq = std::strchr(*e, '=');
      if (eq)
        env[std::string(*e, eq - *e)] = eq + 1;
    }
    for (auto &[k, v] : spec_.env)
      env[k] = v;
    if (auto it = spec_.rankEnv.find(rank); it != spec_.rankEnv.end())
      for (auto &[k, v] : it->second)
        env[k] = v;
    env["MONARCH_CONTROLLER"] = spec_.controllerAddress;
    env["MONARCH_RANK"] = std::to_string(rank);
    env["MONARCH_WORLD_SIZE"] = std::to_string(spec_.worldSize);
    env["MONARCH_JOB_TOKEN"] = spec_.jobToken;
    env["MONARCH_LAUNCHER"] = "local";
    std::vector<std::string> out;
    for (auto &[k, v] : env)
      out.push_back(k + "=" + v);
    return out;
  }

  pid_t spawn(int rank) {
    std::vector<std::string> envStrings = environmentFor(rank);
    std::vector<char *> envp;
    for (auto &s : envStrings)
      envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string argv0 = spec_.workerBinary;
    char *argv[] = {argv0.data(), nullptr};
    pid_t parent = ::getpid();
    pid_t child = ::fork();
    if (child != 0)
      return child;
    // Child: async-signal-safe calls only until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(125);
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
    }
    ::close_range(3, ~0U, 0);
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }

  void run() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int r = 0; r < spec_.worldSize; ++r) {
        pid_t child = spawn(r);
        if (child < 0) {
          launchStatus_ = Status(StatusCode::Internal,
                                 std::string("local launcher: fork failed: ") +
                                     std::strerror(errno));
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
    bool killed = false;
    while (true) {
      std::vector<WorkerExit> exits;
      bool anyAlive = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t r = 0; r < pids_.size(); ++r) {
          if (!alive_[r])
            continue;
          int status = 0;
          pid_t got = ::waitpid(pids_[r], &status, WNOHANG);
          if (got == pids_[r] || (got < 0 && errno == ECHILD)) {
            alive_[r] = false;
            WorkerExit exit;
            exit.rank = static_cast<int>(r);
            exit.pid = pids_[r];
            if (got > 0 && WIFSIGNALED(status))
              exit.signal = WTERMSIG(status);
            else if (got > 0 && WIFEXITED(status))
              exit.exitCode = WEXITSTATUS(status);
            exits.push_back(exit);
          } else {
            anyAlive = true;
          }
        }
        if (stopping_ && !killed && anyAlive &&
            std::chrono::steady_clock::now() >= graceDeadline_) {
          for (size_t r = 0; r < pids_.size(); ++r)
            if (alive_[r]) {
              ::kill(pids_[r], SIGKILL);
              // A stopped process dies of SIGKILL; CONT is harmless.
              ::kill(pids_[r], SIGCONT);
            }
          killed = true;
        }
      }
      for (const WorkerExit &exit : exits) {
        spdlog::debug("local launcher: rank {} (pid {}) {}", exit.rank,
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

  LaunchSpec spec_;
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

} // namespace

std::unique_ptr<Launcher> createLocalLauncher() {
  return std::make_unique<LocalLauncher>();
}

} // namespace monarch::executor
