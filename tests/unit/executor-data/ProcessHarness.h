//===- ProcessHarness.h - N ranks as real processes for tests ---*- C++ -*-===//
//
// Starts data-plane-rank once per rank (fork + exec, stdout on a pipe),
// collects their output, kills (SIGKILL) and reaps whatever is still running
// at the deadline or on destruction, and lists children left behind so that
// every test can check that nothing survives it.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_TESTS_EXECUTOR_DATA_PROCESSHARNESS_H
#define MONARCH_TESTS_EXECUTOR_DATA_PROCESSHARNESS_H

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace monarch::testing {

using Clock = std::chrono::steady_clock;

struct RankProcess {
  int rank = 0;
  pid_t pid = -1;
  int outFd = -1;
  std::string out;
  bool exited = false;
  int exitCode = -1; // -signal when killed by a signal
  Clock::time_point exitTime;
};

/// A parsed "STATUS <rank> <code> <ms> <message>" line.
struct RankStatus {
  int rank = -1;
  std::string code;
  long elapsedMs = -1;
  std::string message;
};

class RankGroup {
public:
  /// A fresh store directory under the test's temporary directory.
  RankGroup();
  ~RankGroup();

  /// Starts `scenario` for each of `ranks` of a world of `size`.
  void start(const std::string &scenario, int size,
             const std::vector<int> &ranks, int timeoutMs,
             const std::string &arg = "");
  void start(const std::string &scenario, int size, int timeoutMs,
             const std::string &arg = "");

  /// Reads output until process `rank` printed `line` or `deadline` passes.
  bool waitForLine(int rank, const std::string &line,
                   Clock::time_point deadline);
  /// Waits for every process to exit; returns false (after killing the rest)
  /// when some are still running at `deadline`.
  bool waitAll(Clock::time_point deadline);
  void kill(int rank);
  /// Waits until every process printed READY (20 s), kills `victim`, then
  /// waits up to `within` for all to exit. Returns the moment of the kill;
  /// nullopt when a process was not ready or did not exit in time.
  std::optional<Clock::time_point>
  killWhenReady(int victim, std::chrono::milliseconds within);
  /// Milliseconds process `rank` took to exit after `since`.
  long exitedAfterMs(int rank, Clock::time_point since);

  RankProcess &process(int rank);
  std::vector<RankStatus> statuses(int rank);
  std::string describe() const;

private:
  void pump(int timeoutMs);
  std::vector<RankProcess> procs_;
  std::string storeDir_;
};

/// Processes whose parent is this process (zombies included).
std::vector<pid_t> childProcesses();

} // namespace monarch::testing

#endif // MONARCH_TESTS_EXECUTOR_DATA_PROCESSHARNESS_H
