//===- ControllerService.cpp - What workers call on the controller --------===//
//
// The ControllerService handler: registration (token, protocol version,
// rank and world size checked), heartbeats carrying progress and log lines,
// the rendezvous store over an in-process table, error reports and log
// forwarding. Every request's token is checked first.
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"
#include "ThriftGlue.h"

#include "Control_constants.h"

#include <spdlog/spdlog.h>

namespace monarch::executor {
namespace {

using control::ControlError;

[[noreturn]] void throwStatus(const Status &status) {
  throw toControlError(status);
}

class ControllerHandler final : public control::ControllerServiceIf {
public:
  explicit ControllerHandler(Controller::Impl &impl) : impl_(impl) {}

  void registerWorker(control::WorkerConfig &reply,
                      const control::RegisterRequest &request) override {
    requireToken(impl_.token, request.token, "registerWorker");
    if (request.protocolVersion !=
        control::g_Control_constants.PROTOCOL_VERSION)
      throwStatus(Status(
          StatusCode::InvalidArgument,
          "worker speaks control protocol " +
              std::to_string(request.protocolVersion) + ", the controller " +
              std::to_string(control::g_Control_constants.PROTOCOL_VERSION)));
    std::lock_guard<std::mutex> lock(impl_.mutex);
    int worldSize = static_cast<int>(impl_.workers.ranks.size());
    if (request.worldSize != worldSize)
      throwStatus(Status(
          StatusCode::InvalidArgument,
          "worker believes the world has " + std::to_string(request.worldSize) +
              " ranks, the job has " + std::to_string(worldSize)));
    if (request.rank < 0 || request.rank >= worldSize)
      throwStatus(Status(StatusCode::InvalidArgument,
                         "rank " + std::to_string(request.rank) +
                             " is outside 0.." +
                             std::to_string(worldSize - 1)));
    if (impl_.supervisor.failed || impl_.stopping)
      throwStatus(Status(StatusCode::Aborted, "the job is no longer running"));
    RankState &rank = impl_.workers.ranks[request.rank];
    if (rank.registered)
      throwStatus(Status(StatusCode::InvalidArgument,
                         "rank " + std::to_string(request.rank) +
                             " is already registered by pid " +
                             std::to_string(rank.pid)));
    if (impl_.launcher && impl_.launcher->ownsProcesses()) {
      pid_t expected = impl_.launcher->pid(request.rank);
      if (expected != 0 && expected != request.pid)
        throwStatus(Status(StatusCode::PermissionDenied,
                           "rank " + std::to_string(request.rank) +
                               " was launched as pid " +
                               std::to_string(expected) + ", not " +
                               std::to_string(request.pid)));
    }
    rank.registered = true;
    rank.host = request.host;
    if (rank.host.empty() || rank.host == "0.0.0.0") {
      // Dial the address the worker connected from.
      std::string peer = ControlServer::currentPeer();
      rank.host = peer.substr(0, peer.rfind(':'));
    }
    rank.port = request.port;
    rank.pid = request.pid;
    rank.hostname = request.hostname;
    // A worker that shares our host, kernel, pid namespace and user is
    // reached through its local socket and stages feeds and fetches in
    // shared memory (docs/executor.md, "Same-host fast path").
    rank.remote = request.hostIdentity != impl_.hostIdentity;
    rank.sameHost = localControlEnabled() && !rank.remote;
    rank.local = rank.sameHost ? request.localSocket : std::string();
    // Where its threads are, readable after it died or while it hangs.
    if (!rank.remote && request.progressFd >= 0) {
      auto area = SharedArea::open(request.pid, request.progressFd,
                                   sizeof(ProgressPage));
      if (area.isOk()) {
        rank.progressArea =
            std::make_shared<SharedArea>(std::move(area).value());
        auto *page =
            reinterpret_cast<const ProgressPage *>(rank.progressArea->data());
        if (page->magic.load() == ProgressPage::kMagic)
          rank.progressPage = page;
      } else {
        spdlog::debug("rank {}: no progress page: {}", request.rank,
                      area.status().toString());
      }
    }
    rank.lastSeen = Clock::now();
    ++impl_.workers.numRegistered;
    impl_.cv.notify_all();
    spdlog::debug("rank {} registered: pid {} on {} serving {}:{}",
                  request.rank, request.pid, request.hostname, rank.host,
                  rank.port);
    reply.jobId = impl_.jobId;
    reply.heartbeatIntervalMs =
        static_cast<int32_t>(impl_.options.heartbeatInterval.count());
    reply.controllerTimeoutMs =
        static_cast<int32_t>(impl_.options.controllerTimeout.count());
    reply.logLevel = impl_.options.logLevel;
    reply.trace = !impl_.options.tracePath.empty();
    reply.generation = impl_.generationStore->generation();
  }

  void heartbeat(control::HeartbeatReply &reply,
                 const control::HeartbeatRequest &request) override {
    requireToken(impl_.token, request.token, "heartbeat");
    if (stale(request.generation)) {
      // Killed already, or about to be: it must not pass for the live rank.
      reply.shutdown = true;
      reply.reason = "replaced by generation " +
                     std::to_string(impl_.generationStore->generation());
      return;
    }
    {
      std::lock_guard<std::mutex> lock(impl_.mutex);
      RankState *rank = rankLocked(request.rank);
      rank->lastSeen = Clock::now();
      rank->progress = request.progress;
      reply.shutdown = impl_.supervisor.failed || impl_.stopping;
      if (impl_.supervisor.failed)
        reply.reason = impl_.supervisor.failure.message();
      else if (impl_.stopping)
        reply.reason = "the controller is stopping";
    }
    for (const control::LogRecord &record : request.logs)
      impl_.logForwarded(request.rank, record.level, record.message);
  }

  void storeSet(const std::string &token, const std::string &key,
                const std::string &value, int32_t generation) override {
    requireToken(impl_.token, token, "storeSet");
    refuseStale(generation, "storeSet");
    check(impl_.store->set(key, value));
  }

  void storeGet(std::string &reply, const std::string &token,
                const std::string &key, int32_t timeoutMs,
                int32_t generation) override {
    requireToken(impl_.token, token, "storeGet");
    refuseStale(generation, "storeGet");
    // Wait in slices so a stopping controller does not hang on a waiter.
    Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(std::max(0, timeoutMs));
    while (true) {
      if (impl_.supervisor.loadAborted.load()) {
        std::lock_guard<std::mutex> lock(impl_.mutex);
        throwStatus(Status(StatusCode::Aborted,
                           "store get '" + key +
                               "': the plan load was abandoned (" +
                               impl_.supervisor.loadAbortReason + ")"));
      }
      auto slice = std::min<Clock::duration>(
          std::chrono::milliseconds(100),
          std::max<Clock::duration>(deadline - Clock::now(),
                                    Clock::duration(0)));
      StatusOr<std::string> value = impl_.store->get(
          key, std::chrono::duration_cast<std::chrono::milliseconds>(slice));
      if (value.isOk()) {
        reply = std::move(value).value();
        return;
      }
      if (value.status().code() != StatusCode::DeadlineExceeded)
        throwStatus(value.status());
      if (Clock::now() >= deadline)
        throwStatus(value.status());
      if (impl_.stopping || isFailed())
        throwStatus(Status(StatusCode::Aborted,
                           "store get '" + key + "': the job stopped"));
    }
  }

  void storeWait(const std::string &token, const std::vector<std::string> &keys,
                 int32_t timeoutMs, int32_t generation) override {
    requireToken(impl_.token, token, "storeWait");
    for (const std::string &key : keys) {
      std::string ignored;
      storeGet(ignored, token, key, timeoutMs, generation);
    }
  }

  int64_t storeAdd(const std::string &token, const std::string &key,
                   int64_t delta, int32_t generation) override {
    requireToken(impl_.token, token, "storeAdd");
    refuseStale(generation, "storeAdd");
    StatusOr<int64_t> value = impl_.store->add(key, delta);
    if (!value.isOk())
      throwStatus(value.status());
    return *value;
  }

  void reportError(const control::ErrorReport &report) override {
    requireToken(impl_.token, report.token, "reportError");
    if (stale(report.generation)) {
      spdlog::debug("ignoring an error report of rank {} from generation {}: "
                    "{}",
                    report.rank, report.generation, report.message);
      return;
    }
    Status status = toStatus([&] {
      ControlError e;
      e.code = report.code;
      e.message = report.message;
      return e;
    }());
    std::lock_guard<std::mutex> lock(impl_.mutex);
    rankLocked(report.rank);
    Status failure = impl_.rankFailureLocked(
        report.rank, report.plan, report.step, report.instruction, report.op,
        report.location, status);
    // A rank that only saw the consequence of another's failure is not the
    // cause.
    bool secondary = status.code() == StatusCode::Aborted ||
                     status.code() == StatusCode::Unavailable;
    impl_.reportFailureLocked(failure, !secondary);
  }

  void forwardLogs(const std::string &token, int32_t rank,
                   const std::vector<control::LogRecord> &logs,
                   int32_t generation) override {
    requireToken(impl_.token, token, "forwardLogs");
    if (stale(generation))
      return;
    {
      std::lock_guard<std::mutex> lock(impl_.mutex);
      rankLocked(rank);
    }
    for (const control::LogRecord &record : logs)
      impl_.logForwarded(rank, record.level, record.message);
  }

private:
  /// From a worker of a generation a restart replaced (-1: a worker that
  /// has not registered yet, or an older peer, is taken as current).
  bool stale(int32_t generation) const {
    return generation >= 0 && generation != impl_.generationStore->generation();
  }
  void refuseStale(int32_t generation, const char *request) const {
    if (stale(generation))
      throwStatus(Status(StatusCode::Aborted, std::string(request) +
                                                  " from generation " +
                                                  std::to_string(generation) +
                                                  ", replaced by a restart"));
  }

  RankState *rankLocked(int rank) {
    if (rank < 0 || rank >= static_cast<int>(impl_.workers.ranks.size()) ||
        !impl_.workers.ranks[rank].registered)
      throwStatus(
          Status(StatusCode::InvalidArgument,
                 "rank " + std::to_string(rank) + " is not registered"));
    return &impl_.workers.ranks[rank];
  }
  bool isFailed() {
    std::lock_guard<std::mutex> lock(impl_.mutex);
    return impl_.supervisor.failed;
  }
  void check(const Status &status) {
    if (!status)
      throwStatus(status);
  }

  Controller::Impl &impl_;
};

} // namespace

std::shared_ptr<apache::thrift::TProcessor> Controller::Impl::makeProcessor() {
  return std::make_shared<control::ControllerServiceProcessor>(
      std::make_shared<ControllerHandler>(*this));
}

} // namespace monarch::executor
