//===- Progress.h - One line of progress for long work ---------*- C++ -*-===//
//
// A compile that takes seconds, a long `monarch-run --steps K`: work a user
// waits on says what it is doing. A ProgressLine stays silent for its first
// `after`; then, on a terminal (stderr), it shows one line updated in place,
// "monarch: compiling: monarch-plan-transfers (3.1 s)", refreshed as the
// text changes and at most five times a second, ended with the total time;
// elsewhere, with MONARCH_LOG_LEVEL set to info or below, it writes the
// same as lines, at most one a second. Thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_PROGRESS_H
#define MONARCH_SUPPORT_PROGRESS_H

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace monarch {

class ProgressLine {
public:
  /// `what` heads the line ("compiling"); nothing shows before `after`.
  ProgressLine(std::string what, std::chrono::milliseconds after);
  /// Clears the line (or, when it showed, ends it with the total time).
  ~ProgressLine();
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  /// What is being done now ("monarch-partition", "step 3 of 10").
  void update(std::string text);

private:
  void run();
  void showLocked(bool final);

  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds after_;
  bool terminal_ = false;
  bool lines_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string text_;
  bool changed_ = false;
  bool done_ = false;
  bool shown_ = false;
  std::chrono::steady_clock::time_point lastLine_;
  std::thread thread_;
};

} // namespace monarch

#endif // MONARCH_SUPPORT_PROGRESS_H
