//===- RankLines.h - Lines from many ranks, as a user reads them -*- C++
//-*-===//
//
// What the controller shows of its workers' output: each line prefixed by
// the ranks it came from, and a line that several ranks wrote alike shown
// once ("[ranks 0-63] loading plan 'step'"), as Monarch's log aggregation
// does. mc.debug_print lines of one step are folded by position
// (foldRankLines); forwarded log lines, which arrive one rank at a time on
// heartbeats, are folded over a short window (LogFolder).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_RANKLINES_H
#define MONARCH_EXECUTOR_RANKLINES_H

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace monarch::executor {

/// "[rank 3] " or "[ranks 0-2,5] " for sorted, distinct `ranks`.
std::string rankPrefix(const std::vector<int> &ranks);

/// Lines several ranks printed in one step, as the user reads them: the
/// k-th line of every rank together, each distinct text once, prefixed by
/// the ranks that printed it ("[rank 2] x", "[ranks 0-1,3] y"), in order of
/// k and then of the first rank.
std::vector<std::string>
foldRankLines(const std::vector<std::vector<std::string>> &perRank);

/// Forwarded log lines folded across ranks: a line is held for `window`
/// after the first rank sent it, and the ranks that send the same text (at
/// the same level) meanwhile join it. Lines come out in the order they
/// first arrived; a rank repeating a line starts a new one. Thread-safe.
class LogFolder {
public:
  using Clock = std::chrono::steady_clock;
  /// Receives each folded line: level, then "[ranks 0-3] text".
  using Emit = std::function<void(int level, const std::string &line)>;

  LogFolder(std::chrono::milliseconds window, Emit emit)
      : window_(window), emit_(std::move(emit)) {}

  void add(int rank, int level, const std::string &line,
           Clock::time_point now = Clock::now());
  /// Emits the lines held for `window` by `now` (all of them with `all`).
  void flush(Clock::time_point now = Clock::now(), bool all = false);

private:
  struct Entry {
    int level;
    std::string line;
    std::vector<int> ranks;
    Clock::time_point first;
  };
  std::chrono::milliseconds window_;
  Emit emit_;
  std::mutex mutex_;
  std::deque<Entry> pending_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_RANKLINES_H
