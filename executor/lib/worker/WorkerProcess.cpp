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
#include "monarch/Executor/Communicator.h"
#include "monarch/Executor/Worker.h"
#include "monarch/Support/Knobs.h"

#include "WorkerState.h"

#include "Control_constants.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <optional>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace monarch::executor;

namespace monarch::worker {
namespace {
/// How long the local control connection polls for the next request after
/// answering one (docs/executor.md, "Same-host fast path"):
/// MONARCH_WORKER_SPIN_US when set, else 20 us when every worker and the
/// controller can have a core of their own, else 0 (spinning workers would
/// take the cores the others need).
int requestSpinUs(int worldSize) {
  if (knobs::Value<int64_t> spin = knobs::getInt(knobs::Id::WorkerSpinUs);
      spin.isSet)
    return static_cast<int>(spin.value);
  return aCoreEach(worldSize) ? 20 : 0;
}

/// MONARCH_WORKER_SCHED: under SCHED_BATCH (`batch`, or `auto` when the
/// job's workers and the controller outnumber the cores) a woken worker
/// does not preempt the thread that is running. The controller hands a
/// step to each worker in turn; preempted by the first worker it woke, it
/// sent the next one's request a scheduler slice later, and on this 2-core
/// machine the second of two data-parallel workers started 2-4 ms late in
/// a tenth or more of the steps (the MLP's 90th-percentile skew 1.7-3.4 ms;
/// 60 us under SCHED_BATCH). Called before the worker starts a thread:
/// every thread it starts inherits the policy. Where the host refuses it, the
/// worker runs as it is and says so.
void applySchedulingPolicy(int worldSize) {
  std::string policy = knobs::getString(knobs::Id::WorkerSched).value;
  bool batch = policy == "batch" || (policy == "auto" && !aCoreEach(worldSize));
  if (!batch)
    return;
  sched_param param{};
  param.sched_priority = 0;
  if (sched_setscheduler(0, SCHED_BATCH, &param) != 0 && policy == "batch")
    std::fprintf(stderr,
                 "monarch-worker: MONARCH_WORKER_SCHED=batch: "
                 "sched_setscheduler: %s; running under the default policy\n",
                 std::strerror(errno));
}
} // namespace

using Clock = std::chrono::steady_clock;

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
  report.generation = config.generation;
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

namespace {

/// MONARCH_WORKER_HOST when set; otherwise the local address of the route
/// to the controller (a UDP socket "connected" there sends nothing, and
/// getsockname names the interface the kernel would use), so a worker
/// started by SLURM or torchrun on another host advertises an address the
/// controller and its peers reach, never its host name (which containers
/// and network namespaces often resolve to 127.0.0.1). 127.0.0.1 when the
/// controller is on loopback or the route cannot be found.
std::string ownAddress(const std::string &controllerHost) {
  if (std::optional<std::string> set = knobs::raw(knobs::Id::WorkerHost))
    return *set;
  addrinfo hints = {};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo *found = nullptr;
  if (::getaddrinfo(controllerHost.c_str(), "9", &hints, &found) != 0 || !found)
    return "127.0.0.1";
  std::string address = "127.0.0.1";
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in local = {};
  socklen_t length = sizeof(local);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &length) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)))
      address = text;
  }
  if (fd >= 0)
    ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

} // namespace

Status Worker::init() {
  if (std::string bad = knobs::validate(knobs::Worker); !bad.empty())
    return Status(StatusCode::InvalidArgument, bad);
  std::string controller = knobs::getString(knobs::Id::ControllerAddress).value;
  // SLURM tasks and torchrun workers carry their rank already.
  std::string rankText =
      knobs::raw(knobs::Id::Rank)
          .value_or(foreignEnv("SLURM_PROCID", foreignEnv("RANK", "")));
  std::string sizeText =
      knobs::raw(knobs::Id::WorldSize)
          .value_or(foreignEnv("SLURM_NTASKS", foreignEnv("WORLD_SIZE", "")));
  token = knobs::getString(knobs::Id::JobToken).value;
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
  address = ownAddress(controllerHost);
  rank = std::atoi(rankText.c_str());
  worldSize = std::atoi(sizeText.c_str());
  if (worldSize <= 0 || rank < 0 || rank >= worldSize)
    return Status(StatusCode::InvalidArgument,
                  "MONARCH_RANK=" + rankText +
                      " is not in 0..MONARCH_WORLD_SIZE-1 (" + sizeText + ")");
  applySchedulingPolicy(worldSize);
  auto parsedFault =
      FaultInjection::parse(knobs::getString(knobs::Id::FaultInject).value);
  if (!parsedFault.isOk())
    return parsedFault.status();
  fault = *parsedFault;
  limits = WireOptions::fromEnv(token);

  sink = std::make_shared<ForwardingSink>(rank);
  auto logger = std::make_shared<spdlog::logger>("worker", sink);
  std::string level = knobs::getString(knobs::Id::LogLevel).value;
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
  redirectThriftLogging();

  // The progress page a same-host controller reads when this worker dies
  // or hangs (Progress.h); without one, heartbeats carry the progress.
  if (auto area = SharedArea::create("monarch-progress",
                                     sizeof(executor::ProgressPage));
      area.isOk()) {
    progressArea = std::move(area).value();
    progressPage = new (progressArea.data()) executor::ProgressPage();
    issuingProgress = progressPage->claim(-1);
    progressPage->magic.store(executor::ProgressPage::kMagic);
  } else {
    spdlog::debug("no progress page: {}", area.status().toString());
  }

  // Serve first, so the address we register is live.
  const std::string &bindHost = address;
  auto handler = makeWorkerHandler(*this);
  auto server = ControlServer::start(
      std::make_shared<control::WorkerServiceProcessor>(handler), bindHost, 0,
      limits, "worker " + std::to_string(rank));
  if (!server.isOk())
    return server.status();
  server_ = std::move(server).value();
  // The same service on a local socket, for a controller on this host.
  if (localControlEnabled()) {
    auto local = ControlServer::startLocal(
        std::make_shared<control::WorkerServiceProcessor>(handler),
        "monarch-worker-" + std::to_string(::getpid()) + "-" +
            std::to_string(server_->port()),
        limits, "worker " + std::to_string(rank), requestSpinUs(worldSize));
    if (local.isOk())
      localServer_ = std::move(local).value();
    else
      spdlog::debug("{}; serving TCP only", local.status().message());
  }

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
    // Only an unreachable controller is worth waiting for.
    if (st.status().code() == StatusCode::PermissionDenied ||
        Clock::now() > storeDeadline)
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
  if (localServer_)
    request.localSocket = localServer_->localName();
  request.hostIdentity = hostIdentity();
  if (progressPage)
    request.progressFd = progressArea.fd();
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
  store->setGeneration(config.generation);
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
    request.generation = config.generation;
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
  {
    // The exit below runs no destructors: the loaded plans' kernel
    // profiles (MONARCH_KERNEL_PROFILE) are written here.
    std::lock_guard<std::mutex> lock(plansMutex);
    for (auto &[name, plan] : plans)
      if (plan && plan->interpreter)
        plan->interpreter->writeKernelProfile();
  }
  // Last log lines, best effort.
  if (sink->forwarding) {
    auto logs = sink->drain();
    if (!logs.empty()) {
      auto conn = ControllerConnection::connect(controllerHost, controllerPort,
                                                limits, 300, 300);
      if (conn.isOk())
        (void)callThrift("forwardLogs", [&] {
          (*conn)->client().forwardLogs(token, rank, logs, config.generation);
        });
    }
  }
  std::fflush(stderr);
  std::fflush(stdout);
  // Destructors of a worker that is going away may block on peers; none of
  // its state needs saving.
  std::_Exit(code);
}

int runWorker() {
  // A controller that dies writes nothing more to our pipes: never die of
  // SIGPIPE, let the write fail instead.
  std::signal(SIGPIPE, SIG_IGN);
  static Worker worker;
  Status status = worker.init();
  if (!status) {
    std::fprintf(stderr, "monarch-worker rank %s: %s\n",
                 knobs::raw(knobs::Id::Rank).value_or("?").c_str(),
                 status.toString().c_str());
    return status.code() == StatusCode::PermissionDenied ? 3 : 2;
  }
  return worker.run();
}

} // namespace monarch::worker
