//===- TraceWriter.h - Chrome trace of a job's steps -----------*- C++ -*-===//
//
// Collects complete events ("ph":"X") per rank and stream and writes them as
// a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev): one process
// per rank, one thread per stream plus the issuing thread, and a controller
// process with one span per step. Timestamps are wall-clock microseconds so
// ranks on one host line up.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CORE_TRACEWRITER_H
#define MONARCH_EXECUTOR_CORE_TRACEWRITER_H

#include "monarch/Support/Status.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace monarch::executor {

class TraceWriter {
public:
  struct Event {
    /// -1 for the controller.
    int rank = -1;
    /// -1: the rank's issuing thread; otherwise the stream id.
    int stream = -1;
    std::string name;
    std::string category;
    int64_t startUs = 0;
    int64_t durationUs = 0;
    /// The user's source location ("model.py:12:5"; "" when unknown),
    /// written as the event's `args.loc`.
    std::string location;
  };

  void add(Event event);
  size_t size() const;
  /// Writes every event collected so far as JSON.
  Status write(const std::string &path, int worldSize) const;
  /// Wall-clock microseconds.
  static int64_t nowUs();

private:
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CORE_TRACEWRITER_H
