//===- WorkerState.h - The monarch-worker process's state ------*- C++ -*-===//
//
// Shared by WorkerProcess.cpp (registration, heartbeats, exit) and
// WorkerHandler.cpp (the WorkerService the controller calls).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_WORKER_WORKERSTATE_H
#define MONARCH_WORKER_WORKERSTATE_H

#include "monarch/Executor/Worker.h"
#include "monarch/Support/Knobs.h"

#include "ControlStore.h"
#include "ThriftGlue.h"
#include "core/Progress.h"
#include "core/SharedArea.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <thread>

namespace monarch::worker {

using executor::ControllerConnection;
using executor::ControlServer;
using executor::ControlStore;
using executor::Status;
using executor::StatusCode;
using executor::WireOptions;
namespace control = executor::control;

inline int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A variable of another system (SLURM_PROCID, RANK, LOCAL_RANK), which the
/// MONARCH_* registry (Knobs.h) does not own; `fallback` when unset.
inline std::string foreignEnv(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

class ForwardingSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit ForwardingSink(int rank) : rank_(rank) {}
  std::atomic<bool> forwarding{false};

  /// A debug_print line of a step that failed: forwarded like a log line,
  /// at kPrintLevel, whatever the log level.
  static constexpr int32_t kPrintLevel = 7;
  void pushPrint(std::string text) {
    if (!forwarding) {
      std::fprintf(stderr, "[rank %d] %s\n", rank_, text.c_str());
      return;
    }
    enqueue(kPrintLevel, std::move(text));
  }

  std::vector<control::LogRecord> drain() {
    std::lock_guard<std::mutex> lock(queueMutex_);
    std::vector<control::LogRecord> out(queue_.begin(), queue_.end());
    queue_.clear();
    return out;
  }

protected:
  void sink_it_(const spdlog::details::log_msg &msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    if (!forwarding) {
      std::fprintf(stderr, "[monarch-worker rank %d] %s: %s\n", rank_,
                   spdlog::level::to_string_view(msg.level).data(),
                   text.c_str());
      return;
    }
    enqueue(static_cast<int32_t>(msg.level), std::move(text));
  }
  void flush_() override {}

private:
  /// Queues a record for the next heartbeat (the oldest go past 10,000).
  void enqueue(int32_t level, std::string text) {
    control::LogRecord record;
    record.level = level;
    record.message = std::move(text);
    record.timeUs = nowUs();
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (queue_.size() >= 10000)
      queue_.pop_front();
    queue_.push_back(std::move(record));
  }
  int rank_;
  std::mutex queueMutex_;
  std::deque<control::LogRecord> queue_;
};

struct LoadedPlan {
  std::unique_ptr<Interpreter> interpreter;
  std::vector<FetchResult> lastFetches;
};

class Worker {
public:
  Status init();
  int run();

  // Shared with the handler.
  std::string token;
  int rank = 0;
  int worldSize = 1;
  WireOptions limits;
  std::string controllerHost;
  int controllerPort = 0;
  /// The address this worker's services listen on and advertise, and its
  /// Gloo pairs use (ownAddress in WorkerProcess.cpp).
  std::string address;
  control::WorkerConfig config;
  FaultInjection fault;
  std::shared_ptr<ForwardingSink> sink;

  std::mutex plansMutex;
  std::map<std::string, std::shared_ptr<LoadedPlan>> plans;
  std::mutex progressMutex;
  std::string runningPlan;
  std::shared_ptr<LoadedPlan> running;

  /// The controller's staging area for this worker (RunStepRequest.staging),
  /// mapped at its first use and again when the controller replaces it.
  std::mutex stagingMutex;
  std::shared_ptr<executor::SharedArea> staging;
  std::pair<int64_t, int> stagingKey{-1, -1};

  /// This worker's progress page (Progress.h), mapped by a same-host
  /// controller; slot 0 is the issuing thread's. Null when it could not be
  /// made.
  executor::SharedArea progressArea;
  executor::ProgressPage *progressPage = nullptr;
  executor::ProgressSlot *issuingProgress = nullptr;

  std::unique_ptr<ControlStore> store;
  std::shared_ptr<ActorStates> states = std::make_shared<ActorStates>();
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>>
      stateTypes;
  /// Resident values (fetches kept by earlier steps: donation), by the
  /// controller's slot id. Shared pointers: a step feeding from a slot
  /// holds it while another request may release it.
  std::mutex slotsMutex;
  std::map<int64_t, ResidentPtr> slots;
  /// Where kept values' bytes come from, and released ones go back to.
  std::shared_ptr<ResidentPool> residentPool = ResidentPool::create();

  void requestExit(int code, const std::string &why);
  /// Handlers wait here: the controller may call us as soon as it has
  /// registered us, before our registerWorker call returned its config.
  void waitConfigured() {
    std::unique_lock<std::mutex> lock(configMutex_);
    configCv_.wait_for(lock, std::chrono::seconds(10),
                       [&] { return configured_; });
  }
  void setConfigured() {
    {
      std::lock_guard<std::mutex> lock(configMutex_);
      configured_ = true;
    }
    configCv_.notify_all();
  }
  void abortAll(const std::string &reason);
  void report(const std::string &plan, int64_t step, const StepFailure &f,
              const Instruction *instr);
  void dropConnections();
  control::Progress progress();

private:
  void heartbeatLoop();
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<ControlServer> localServer_;
  std::thread heartbeat_;
  std::mutex heartbeatMutex_;
  std::unique_ptr<ControllerConnection> heartbeatConn_;
  std::mutex reportMutex_;
  std::unique_ptr<ControllerConnection> reportConn_;
  std::mutex configMutex_;
  std::condition_variable configCv_;
  bool configured_ = false;
  std::mutex exitMutex_;
  std::condition_variable exitCv_;
  bool exitRequested_ = false;
  int exitCode_ = 0;
};

/// The WorkerService handler of `worker`.
std::shared_ptr<control::WorkerServiceIf> makeWorkerHandler(Worker &worker);

} // namespace monarch::worker

#endif // MONARCH_WORKER_WORKERSTATE_H
