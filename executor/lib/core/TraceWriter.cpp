//===- TraceWriter.cpp - Chrome trace of a job's steps --------------------===//
#include "TraceWriter.h"

#include "monarch/Support/JsonText.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

namespace monarch::executor {

void TraceWriter::add(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

size_t TraceWriter::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

int64_t TraceWriter::nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {
/// Chrome trace pids: the controller is 0, rank r is r + 1.
int tracePid(int rank) { return rank + 1; }
/// tids: the issuing thread is 0, stream s is s + 1.
int traceTid(int stream) { return stream + 1; }
} // namespace

Status TraceWriter::write(const std::string &path, int worldSize) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ofstream out(path);
  if (!out)
    return Status(StatusCode::InvalidArgument,
                  "cannot write the trace to '" + path + "'");
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first)
      out << ",\n";
    first = false;
  };
  sep();
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":"
         "\"controller\"}}";
  std::set<std::pair<int, int>> threads;
  for (int r = 0; r < worldSize; ++r) {
    sep();
    out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << tracePid(r)
        << ",\"args\":{\"name\":\"rank " << r << "\"}}";
    sep();
    out << "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":"
        << tracePid(r) << ",\"args\":{\"sort_index\":" << tracePid(r) << "}}";
  }
  for (const Event &e : events_)
    threads.insert({e.rank, e.stream});
  for (auto [rank, stream] : threads) {
    sep();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << tracePid(rank)
        << ",\"tid\":" << traceTid(stream) << ",\"args\":{\"name\":\""
        << (stream < 0 ? std::string(rank < 0 ? "steps" : "issue")
                       : "stream " + std::to_string(stream))
        << "\"}}";
  }
  for (const Event &e : events_) {
    sep();
    out << "{\"name\":\"" << jsonEscape(e.name) << "\",\"cat\":\""
        << jsonEscape(e.category) << "\",\"ph\":\"X\",\"ts\":" << e.startUs
        << ",\"dur\":" << e.durationUs << ",\"pid\":" << tracePid(e.rank)
        << ",\"tid\":" << traceTid(e.stream);
    if (!e.location.empty())
      out << ",\"args\":{\"loc\":\"" << jsonEscape(e.location) << "\"}";
    out << "}";
  }
  out << "\n]}\n";
  if (!out)
    return Status(StatusCode::Internal,
                  "error writing the trace '" + path + "'");
  return Status::ok();
}

} // namespace monarch::executor
