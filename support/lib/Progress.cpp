//===- Progress.cpp - One line of progress for long work ------------------===//
//
// See Progress.h.
//
//===----------------------------------------------------------------------===//
#include "monarch/Support/Progress.h"
#include "monarch/Support/Knobs.h"

#include <cstdio>
#include <unistd.h>

namespace monarch {

namespace {
using Clock = std::chrono::steady_clock;

/// MONARCH_LOG_LEVEL set to info or below (its default, info, does not
/// count: without a terminal, progress is asked for).
bool logsInfo() {
  std::optional<std::string> level = knobs::raw(knobs::Id::LogLevel);
  return level && (*level == "trace" || *level == "debug" || *level == "info");
}
} // namespace

ProgressLine::ProgressLine(std::string what, std::chrono::milliseconds after)
    : what_(std::move(what)), start_(Clock::now()), after_(after) {
  terminal_ = ::isatty(STDERR_FILENO) == 1;
  lines_ = !terminal_ && logsInfo();
  if (terminal_ || lines_)
    thread_ = std::thread([this] { run(); });
}

ProgressLine::~ProgressLine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void ProgressLine::update(std::string text) {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ = std::move(text);
    changed_ = true;
  }
  cv_.notify_all();
}

void ProgressLine::showLocked(bool final) {
  double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (terminal_) {
    // \r and erase-to-end-of-line: one line, rewritten.
    if (final)
      std::fprintf(stderr, "\rmonarch: %s: done in %.1f s\x1b[K\n",
                   what_.c_str(), seconds);
    else
      std::fprintf(stderr, "\rmonarch: %s: %s (%.1f s)\x1b[K", what_.c_str(),
                   text_.c_str(), seconds);
  } else if (final) {
    std::fprintf(stderr, "monarch: %s: done in %.1f s\n", what_.c_str(),
                 seconds);
  } else {
    std::fprintf(stderr, "monarch: %s: %s (%.1f s)\n", what_.c_str(),
                 text_.c_str(), seconds);
    lastLine_ = Clock::now();
  }
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Silent while the work is short.
  if (cv_.wait_until(lock, start_ + after_, [&] { return done_; }))
    return;
  showLocked(false);
  changed_ = false;
  while (!done_) {
    if (terminal_) {
      // Five refreshes a second at most, however often the text changes.
      if (cv_.wait_for(lock, std::chrono::milliseconds(200),
                       [&] { return done_; }))
        break;
      showLocked(false);
      changed_ = false;
      continue;
    }
    // Lines: at most one a second, and only for something new.
    if (cv_.wait_until(lock, lastLine_ + std::chrono::seconds(1),
                       [&] { return done_; }))
      break;
    cv_.wait(lock, [&] { return done_ || changed_; });
    if (done_)
      break;
    showLocked(false);
    changed_ = false;
  }
  if (shown_)
    showLocked(true);
}

} // namespace monarch
