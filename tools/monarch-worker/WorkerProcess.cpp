//===- WorkerProcess.cpp - The monarch-worker process ---------------------===//
//
// Threads: the Thrift server's (one per connection: the controller's
// dispatch connection runs loadPlan/runStep, short-lived ones abort and
// shutdown), the heartbeat thread, the interpreters' stream threads, and
// the main thread, which waits for the exit request and then leaves with
// _Exit after aborting every communicator and flushing logs (no destructor
// may hang a dying worker).
//
//===----------------------------------------------------------------------===//
#include "WorkerProcess.h"

#include "Interpreter.h"
#include "PlanLoader.h"

#include "ControlStore.h"
#include "Control_constants.h"
#include "ThriftGlue.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <map>
#include <sys/socket.h>
#include <unistd.h>

using namespace monarch::executor;

namespace monarch::worker {
namespace {

using Clock = std::chrono::steady_clock;

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string envOr(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

/// Log lines queue up here and ride on heartbeats to the controller; before
/// registration and after the controller is lost they go to stderr.
class ForwardingSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit ForwardingSink(int rank) : rank_(rank) {}
  std::atomic<bool> forwarding{false};

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
    control::LogRecord record;
    record.level = static_cast<int32_t>(msg.level);
    record.message = std::move(text);
    record.timeUs = nowUs();
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (queue_.size() >= 10000)
      queue_.pop_front();
    queue_.push_back(std::move(record));
  }
  void flush_() override {}

private:
  int rank_;
  std::mutex queueMutex_;
  std::deque<control::LogRecord> queue_;
};

struct LoadedPlan {
  std::unique_ptr<Interpreter> interpreter;
  std::vector<std::pair<int, std::string>> lastFetches;
};

class Worker {
public:
  Status init();
  int run();

  // Shared with the handler.
  std::string token;
  int rank = 0;
  int worldSize = 1;
  WireLimits limits;
  std::string controllerHost;
  int controllerPort = 0;
  control::WorkerConfig config;
  FaultInjection fault;
  std::shared_ptr<ForwardingSink> sink;

  std::mutex plansMutex;
  std::map<std::string, std::shared_ptr<LoadedPlan>> plans;
  std::mutex progressMutex;
  std::string runningPlan;
  std::shared_ptr<LoadedPlan> running;

  std::unique_ptr<ControlStore> store;
  std::shared_ptr<ActorStates> states = std::make_shared<ActorStates>();
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>>
      stateTypes;

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

[[noreturn]] void throwStatus(const Status &status) {
  throw toControlError(status);
}

class WorkerHandler final : public control::WorkerServiceIf {
public:
  explicit WorkerHandler(Worker &w) : w_(w) {}

  void loadPlan(std::vector<control::PlanInfo> &reply, const std::string &token,
                const std::string &bytes) override {
    requireToken(w_.token, token, "loadPlan");
    w_.waitConfigured();
    auto programs = loadRankPrograms(bytes, w_.rank, w_.worldSize);
    if (!programs.isOk())
      throwStatus(programs.status());
    {
      std::lock_guard<std::mutex> lock(w_.plansMutex);
      for (const RankProgram &p : *programs)
        if (w_.plans.count(p.planName))
          throwStatus(Status(StatusCode::InvalidArgument,
                             "plan '" + p.planName + "' is already loaded"));
    }
    for (RankProgram &program : *programs) {
      control::PlanInfo info;
      info.name = program.planName;
      info.meshSize = program.meshSize;
      info.arenaBytes = program.arenaBytes;
      info.numInstructions = static_cast<int32_t>(program.instructions.size());
      for (const Instruction &in : program.instructions) {
        if (in.kind == OpKind::State) {
          control::StateSpec spec;
          spec.key = in.stateKey;
          spec.dtype = in.buffer.numpy;
          spec.shape = in.buffer.shape;
          info.states.push_back(spec);
          std::lock_guard<std::mutex> lock(w_.plansMutex);
          w_.stateTypes[in.stateKey] = {in.buffer.numpy, in.buffer.shape};
          continue;
        }
        if (in.kind != OpKind::Feed && in.kind != OpKind::Fetch)
          continue;
        control::BufferSpec spec;
        spec.index = in.index;
        spec.dtype = in.buffer.numpy;
        spec.shape = in.buffer.shape;
        (in.kind == OpKind::Feed ? info.feeds : info.fetches).push_back(spec);
      }
      Interpreter::Options options;
      options.store = w_.store.get();
      options.states = w_.states;
      options.worldSize = w_.worldSize;
      options.trace = w_.config.trace;
      options.fault = w_.fault;
      if (const char *ms = std::getenv("MONARCH_COMM_TIMEOUT_MS"))
        options.comm.timeout = std::chrono::milliseconds(std::atol(ms));
      options.comm.hostname = envOr("MONARCH_WORKER_HOST", "127.0.0.1");
      std::string name = program.planName;
      options.dropConnections = [this] { w_.dropConnections(); };
      // The first failure of a step is reported before the communicators
      // abort, so the controller hears the cause before its consequences.
      options.onFailure = [this, name](const StepFailure &f, int64_t step,
                                       const Instruction *instr) {
        spdlog::error("step {} of plan '{}' failed at instruction {}: {}", step,
                      name, f.instruction, f.status.toString());
        w_.report(name, step, f, instr);
      };
      auto interp = Interpreter::create(std::move(program), std::move(options));
      if (!interp.isOk()) {
        Status st = interp.status().withContext("loading plan '" + name + "'");
        spdlog::error("{}", st.toString());
        throwStatus(st);
      }
      auto loaded = std::make_shared<LoadedPlan>();
      loaded->interpreter = std::move(interp).value();
      {
        std::lock_guard<std::mutex> lock(w_.plansMutex);
        w_.plans[name] = loaded;
      }
      spdlog::debug("loaded plan '{}': {} instructions, arena {} bytes", name,
                    info.numInstructions, info.arenaBytes);
      reply.push_back(std::move(info));
    }
  }

  void runStep(control::RunStepReply &reply,
               const control::RunStepRequest &request) override {
    requireToken(w_.token, request.token, "runStep");
    w_.waitConfigured();
    std::shared_ptr<LoadedPlan> plan;
    {
      std::lock_guard<std::mutex> lock(w_.plansMutex);
      auto it = w_.plans.find(request.plan);
      if (it == w_.plans.end())
        throwStatus(Status(StatusCode::NotFound,
                           "no plan named '" + request.plan + "' is loaded"));
      plan = it->second;
    }
    std::map<int, const std::string *> feeds;
    for (const control::Feed &feed : request.feeds)
      feeds[feed.index] = &feed.tensor.data;
    {
      std::lock_guard<std::mutex> lock(w_.progressMutex);
      w_.runningPlan = request.plan;
      w_.running = plan;
    }
    std::vector<std::pair<int, std::string>> fetches;
    std::vector<TraceRecord> trace;
    int64_t start = nowUs();
    StepFailure failure =
        plan->interpreter->runStep(request.step, feeds, fetches, trace);
    {
      std::lock_guard<std::mutex> lock(w_.progressMutex);
      w_.running.reset();
    }
    if (!failure.status) {
      const RankProgram &p = plan->interpreter->program();
      const Instruction *instr =
          failure.instruction >= 0 &&
                  failure.instruction < static_cast<int>(p.instructions.size())
              ? &p.instructions[failure.instruction]
              : nullptr;
      control::ControlError error = toControlError(failure.status);
      error.rank = w_.rank;
      error.instruction = failure.instruction;
      if (instr) {
        error.op = instr->name;
        error.location = instr->location;
      }
      throw error;
    }
    reply.elapsedUs = nowUs() - start;
    const RankProgram &p = plan->interpreter->program();
    for (auto &[index, bytes] : fetches) {
      control::Fetch fetch;
      fetch.index = index;
      for (const Instruction &in : p.instructions)
        if (in.kind == OpKind::Fetch && in.index == index) {
          fetch.tensor.dtype = in.buffer.numpy;
          fetch.tensor.shape = in.buffer.shape;
          break;
        }
      fetch.tensor.data = bytes;
      reply.fetches.push_back(std::move(fetch));
    }
    plan->lastFetches = std::move(fetches);
    for (TraceRecord &t : trace) {
      control::TraceEvent e;
      e.name = std::move(t.name);
      e.category = std::move(t.category);
      e.stream = t.stream;
      e.startUs = t.startUs;
      e.durationUs = t.durationUs;
      reply.trace.push_back(std::move(e));
    }
  }

  void fetch(std::vector<control::Fetch> &reply, const std::string &token,
             const std::string &planName,
             const std::vector<int32_t> &indices) override {
    requireToken(w_.token, token, "fetch");
    std::lock_guard<std::mutex> lock(w_.plansMutex);
    auto it = w_.plans.find(planName);
    if (it == w_.plans.end())
      throwStatus(Status(StatusCode::NotFound,
                         "no plan named '" + planName + "' is loaded"));
    for (int32_t index : indices) {
      bool found = false;
      for (auto &[i, bytes] : it->second->lastFetches)
        if (i == index) {
          control::Fetch f;
          f.index = i;
          f.tensor.data = bytes;
          reply.push_back(std::move(f));
          found = true;
        }
      if (!found)
        throwStatus(Status(StatusCode::NotFound,
                           "plan '" + planName + "' has no fetch " +
                               std::to_string(index) + " from its last step"));
    }
  }

  void setState(const std::string &token, const std::string &key,
                const control::Tensor &value) override {
    requireToken(w_.token, token, "setState");
    Status st = w_.states->write(key, value.data);
    if (!st)
      throwStatus(st);
  }

  void getState(control::Tensor &reply, const std::string &token,
                const std::string &key) override {
    requireToken(w_.token, token, "getState");
    auto bytes = w_.states->read(key);
    if (!bytes.isOk())
      throwStatus(bytes.status());
    std::lock_guard<std::mutex> lock(w_.plansMutex);
    auto &[dtype, shape] = w_.stateTypes[key];
    reply.dtype = dtype;
    reply.shape = shape;
    reply.data = std::move(bytes).value();
  }

  void abort(const std::string &token, const std::string &reason) override {
    requireToken(w_.token, token, "abort");
    spdlog::warn("aborting: {}", reason);
    w_.abortAll(reason);
  }

  void ping(control::PingReply &reply, const std::string &token) override {
    requireToken(w_.token, token, "ping");
    reply.rank = w_.rank;
    reply.pid = ::getpid();
    reply.progress = w_.progress();
  }

  void shutdown(const std::string &token) override {
    if (!tokenMatches(w_.token, token)) {
      spdlog::warn("rejected shutdown from {}: wrong job token",
                   ControlServer::currentPeer());
      return;
    }
    w_.requestExit(0, "the controller asked the worker to stop");
  }

private:
  Worker &w_;
};

control::Progress Worker::progress() {
  control::Progress p;
  std::lock_guard<std::mutex> lock(progressMutex);
  if (!running)
    return p;
  p.plan = runningPlan;
  p.step = running->interpreter->currentStep();
  p.instruction = running->interpreter->currentInstruction();
  const RankProgram &program = running->interpreter->program();
  if (p.instruction >= 0 &&
      p.instruction < static_cast<int>(program.instructions.size())) {
    p.op = program.instructions[p.instruction].name;
    p.location = program.instructions[p.instruction].location;
  }
  return p;
}

void Worker::abortAll(const std::string &reason) {
  std::lock_guard<std::mutex> lock(plansMutex);
  for (auto &[name, plan] : plans)
    plan->interpreter->abort(reason);
}

void Worker::report(const std::string &plan, int64_t step, const StepFailure &f,
                    const Instruction *instr) {
  control::ErrorReport report;
  report.token = token;
  report.rank = rank;
  report.code = static_cast<control::ErrorCode::type>(f.status.code());
  report.message = f.status.message();
  report.plan = plan;
  report.step = step;
  report.instruction = f.instruction;
  if (instr) {
    report.op = instr->name;
    report.location = instr->location;
  }
  std::lock_guard<std::mutex> lock(reportMutex_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!reportConn_) {
      auto conn = ControllerConnection::connect(controllerHost, controllerPort,
                                                limits, 1000, 1000);
      if (!conn.isOk())
        continue;
      reportConn_ = std::move(conn).value();
    }
    Status st = callThrift("reportError",
                           [&] { reportConn_->client().reportError(report); });
    if (st)
      return;
    reportConn_.reset();
  }
}

void Worker::dropConnections() {
  spdlog::warn("dropping the control connections (MONARCH_FAULT_INJECT)");
  int fd = ControlServer::currentConnectionFd();
  if (fd >= 0)
    ::shutdown(fd, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(heartbeatMutex_);
  if (heartbeatConn_)
    heartbeatConn_->shutdownSocket();
}

void Worker::requestExit(int code, const std::string &why) {
  {
    std::lock_guard<std::mutex> lock(exitMutex_);
    if (exitRequested_)
      return;
    exitRequested_ = true;
    exitCode_ = code;
  }
  if (code == 0)
    spdlog::debug("exiting: {}", why);
  else
    spdlog::error("exiting: {}", why);
  exitCv_.notify_all();
}

Status Worker::init() {
  std::string controller = envOr("MONARCH_CONTROLLER", "");
  std::string rankText = envOr("MONARCH_RANK", "");
  std::string sizeText = envOr("MONARCH_WORLD_SIZE", "");
  token = envOr("MONARCH_JOB_TOKEN", "");
  if (controller.empty() || rankText.empty() || sizeText.empty() ||
      token.empty())
    return Status(StatusCode::InvalidArgument,
                  "MONARCH_CONTROLLER, MONARCH_RANK, MONARCH_WORLD_SIZE and "
                  "MONARCH_JOB_TOKEN must be set (monarch-worker is started by "
                  "a launcher)");
  auto hostPort = parseHostPort(controller);
  if (!hostPort.isOk())
    return hostPort.status().withContext("MONARCH_CONTROLLER");
  controllerHost = hostPort->first;
  controllerPort = hostPort->second;
  rank = std::atoi(rankText.c_str());
  worldSize = std::atoi(sizeText.c_str());
  if (worldSize <= 0 || rank < 0 || rank >= worldSize)
    return Status(StatusCode::InvalidArgument,
                  "MONARCH_RANK=" + rankText +
                      " is not in 0..MONARCH_WORLD_SIZE-1 (" + sizeText + ")");
  auto parsedFault = FaultInjection::parse(envOr("MONARCH_FAULT_INJECT", ""));
  if (!parsedFault.isOk())
    return parsedFault.status();
  fault = *parsedFault;
  limits = WireLimits::fromEnv();

  sink = std::make_shared<ForwardingSink>(rank);
  auto logger = std::make_shared<spdlog::logger>("worker", sink);
  std::string level = envOr("MONARCH_LOG_LEVEL", "info");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
  redirectThriftLogging();

  // Serve first, so the address we register is live.
  std::string bindHost = envOr("MONARCH_WORKER_HOST", "127.0.0.1");
  auto server = ControlServer::start(
      std::make_shared<control::WorkerServiceProcessor>(
          std::make_shared<WorkerHandler>(*this)),
      bindHost, 0, limits, "worker " + std::to_string(rank));
  if (!server.isOk())
    return server.status();
  server_ = std::move(server).value();

  // Register; the controller may still be coming up (env launcher). The
  // store connection exists before registering: loadPlan may follow at once.
  Clock::time_point storeDeadline = Clock::now() + std::chrono::seconds(10);
  while (!store) {
    auto st =
        ControlStore::connect(controllerHost, controllerPort, token, limits);
    if (st.isOk()) {
      store = std::move(st).value();
      break;
    }
    if (Clock::now() > storeDeadline)
      return st.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  control::RegisterRequest request;
  request.token = token;
  request.protocolVersion = control::g_Control_constants.PROTOCOL_VERSION;
  request.rank = rank;
  request.worldSize = worldSize;
  request.host = bindHost == "0.0.0.0" ? "" : bindHost;
  request.port = server_->port();
  request.pid = ::getpid();
  char hostname[256] = {};
  ::gethostname(hostname, sizeof(hostname) - 1);
  request.hostname = hostname;
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  Status status;
  // Forward from before the controller hears of us: it may send requests
  // (and we may log about them) as soon as registerWorker returns there.
  sink->forwarding = true;
  auto unforward = [&] {
    sink->forwarding = false;
    for (const control::LogRecord &record : sink->drain())
      std::fprintf(stderr, "[monarch-worker rank %d] %s\n", rank,
                   record.message.c_str());
  };
  while (true) {
    auto conn = ControllerConnection::connect(controllerHost, controllerPort,
                                              limits, 1000, 5000);
    if (conn.isOk()) {
      status =
          callThrift("registering with the controller at " + controller, [&] {
            (*conn)->client().registerWorker(config, request);
          });
      if (status) {
        heartbeatConn_ = std::move(conn).value();
        break;
      }
      if (status.code() != StatusCode::Unavailable) {
        unforward();
        return status;
      }
    } else {
      status = conn.status();
    }
    if (Clock::now() > deadline) {
      unforward();
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!config.logLevel.empty())
    logger->set_level(spdlog::level::from_str(config.logLevel));
  setConfigured();
  heartbeat_ = std::thread([this] { heartbeatLoop(); });
  return Status::ok();
}

void Worker::heartbeatLoop() {
  auto interval = std::chrono::milliseconds(std::max(
      10, config.heartbeatIntervalMs > 0 ? config.heartbeatIntervalMs : 200));
  auto timeout = std::chrono::milliseconds(
      config.controllerTimeoutMs > 0 ? config.controllerTimeoutMs : 3000);
  Clock::time_point lastOk = Clock::now();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(exitMutex_);
      if (exitCv_.wait_for(lock, interval, [&] { return exitRequested_; }))
        return;
    }
    control::HeartbeatRequest request;
    request.token = token;
    request.rank = rank;
    request.progress = progress();
    request.logs = sink->drain();
    control::HeartbeatReply reply;
    Status status;
    {
      std::lock_guard<std::mutex> lock(heartbeatMutex_);
      if (!heartbeatConn_) {
        auto conn = ControllerConnection::connect(
            controllerHost, controllerPort, limits, 500,
            static_cast<int>(std::min<int64_t>(timeout.count(), 1000)));
        if (conn.isOk())
          heartbeatConn_ = std::move(conn).value();
        else
          status = conn.status();
      }
      if (heartbeatConn_) {
        heartbeatConn_->setRecvTimeout(
            static_cast<int>(std::min<int64_t>(timeout.count(), 1000)));
        status = callThrift("heartbeat", [&] {
          heartbeatConn_->client().heartbeat(reply, request);
        });
        if (!status)
          heartbeatConn_.reset();
      }
    }
    if (status) {
      lastOk = Clock::now();
      if (reply.shutdown) {
        abortAll("the job ended: " + reply.reason);
        requestExit(0, "the controller ended the job: " + reply.reason);
        return;
      }
      continue;
    }
    if (status.code() == StatusCode::PermissionDenied) {
      sink->forwarding = false;
      requestExit(3, status.toString());
      return;
    }
    auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
        Clock::now() - lastOk);
    if (silent >= timeout) {
      sink->forwarding = false;
      abortAll("lost the controller");
      requestExit(4, "the controller at " + controllerHost + ":" +
                         std::to_string(controllerPort) +
                         " has not answered for " +
                         std::to_string(silent.count()) + " ms (" +
                         status.toString() + ")");
      return;
    }
  }
}

int Worker::run() {
  int code;
  {
    std::unique_lock<std::mutex> lock(exitMutex_);
    exitCv_.wait(lock, [&] { return exitRequested_; });
    code = exitCode_;
  }
  abortAll("the worker is exiting");
  if (heartbeat_.joinable())
    heartbeat_.join();
  // Last log lines, best effort.
  if (sink->forwarding) {
    auto logs = sink->drain();
    if (!logs.empty()) {
      auto conn = ControllerConnection::connect(controllerHost, controllerPort,
                                                limits, 300, 300);
      if (conn.isOk())
        (void)callThrift("forwardLogs", [&] {
          (*conn)->client().forwardLogs(token, rank, logs);
        });
    }
  }
  std::fflush(stderr);
  std::fflush(stdout);
  // Destructors of a worker that is going away may block on peers; none of
  // its state needs saving.
  std::_Exit(code);
}

} // namespace

int runWorker() {
  // A controller that dies writes nothing more to our pipes: never die of
  // SIGPIPE, let the write fail instead.
  std::signal(SIGPIPE, SIG_IGN);
  static Worker worker;
  Status status = worker.init();
  if (!status) {
    std::fprintf(stderr, "monarch-worker rank %s: %s\n",
                 envOr("MONARCH_RANK", "?").c_str(), status.toString().c_str());
    return status.code() == StatusCode::PermissionDenied ? 3 : 2;
  }
  return worker.run();
}

} // namespace monarch::worker
