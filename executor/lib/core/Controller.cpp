//===- Controller.cpp - Start and stop a job
//-------------------------------===//
//
// Options from the environment, starting the controller service and the
// workers (waiting for every registration), stopping them (asking, then
// killing), and the small accessors. Calls that reach every rank are in
// ControllerCalls.cpp, compiled functions in ControllerProgram.cpp.
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"
#include "ThriftGlue.h"

#include "monarch/Support/Knobs.h"
#include "monarch/Support/Progress.h"

#include "Control_constants.h"
#include "monarch/Plan/PlanFile.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <optional>
#include <unistd.h>

namespace monarch::executor {

//===--- Small types ------------------------------------------------------===//

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string HostTensor::describe() const {
  std::string text = dtype + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Dispatcher::Dispatcher() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty())
        return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  });
}

Dispatcher::~Dispatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Dispatcher::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

namespace {

std::string knobText(knobs::Id id) { return knobs::getString(id).value; }

std::string findWorkerBinary(const std::string &configured) {
  if (!configured.empty())
    return configured;
  std::string fromEnv = knobText(knobs::Id::WorkerBin);
  if (!fromEnv.empty())
    return fromEnv;
  char self[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, n);
    dir = dir.substr(0, dir.rfind('/'));
    std::string candidate = dir + "/monarch-worker";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  if (const char *path = std::getenv("PATH")) {
    std::string all(path);
    size_t start = 0;
    while (start <= all.size()) {
      size_t end = all.find(':', start);
      if (end == std::string::npos)
        end = all.size();
      std::string candidate =
          all.substr(start, end - start) + "/monarch-worker";
      if (end > start && ::access(candidate.c_str(), X_OK) == 0)
        return candidate;
      start = end + 1;
    }
  }
  return "monarch-worker";
}

} // namespace

ControllerOptions ControllerOptions::fromEnv() {
  ControllerOptions o;
  // Bad values are refused by Controller::start (knobs::validate); here an
  // unset or bad variable keeps the option's default.
  auto ms = [](knobs::Id id, std::chrono::milliseconds fallback) {
    knobs::Value<std::chrono::milliseconds> v = knobs::getMs(id);
    return v.isSet ? v.value : fallback;
  };
  o.heartbeatInterval = ms(knobs::Id::HeartbeatMs, o.heartbeatInterval);
  o.heartbeatTimeout = ms(knobs::Id::HeartbeatTimeoutMs, o.heartbeatTimeout);
  o.remoteHeartbeatTimeout =
      ms(knobs::Id::RemoteHeartbeatTimeoutMs, o.remoteHeartbeatTimeout);
  o.controllerTimeout = ms(knobs::Id::ControllerTimeoutMs, o.controllerTimeout);
  o.startTimeout = ms(knobs::Id::StartTimeoutMs, o.startTimeout);
  o.tracePath = knobText(knobs::Id::Trace);
  if (knobs::Value<std::string> level = knobs::getString(knobs::Id::LogLevel);
      level.isSet)
    o.logLevel = level.value;
  if (knobs::Value<std::string> launcher =
          knobs::getString(knobs::Id::Launcher);
      launcher.isSet)
    o.launcherName = launcher.value;
  o.bindHost = knobText(knobs::Id::BindHost);
  o.jobToken = knobText(knobs::Id::JobToken);
  o.workerBinary = knobText(knobs::Id::WorkerBin);
  if (knobs::Value<int64_t> size = knobs::getInt(knobs::Id::WorldSize);
      size.isSet)
    o.worldSize = static_cast<int>(size.value);
  if (std::optional<std::string> controller =
          knobs::raw(knobs::Id::ControllerAddress)) {
    // Workers dial this address; the controller listens on its port.
    auto hostPort = parseHostPort(*controller);
    if (hostPort.isOk()) {
      o.advertiseHost = hostPort->first;
      o.port = hostPort->second;
    }
  }
  return o;
}

//===--- Lifecycle --------------------------------------------------------===//

Controller::Controller(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Controller::~Controller() {
  if (impl_)
    (void)stop();
}

StatusOr<std::unique_ptr<Controller>>
Controller::start(ControllerOptions options) {
  if (options.worldSize <= 0)
    return Status(StatusCode::InvalidArgument,
                  "world size must be positive, got " +
                      std::to_string(options.worldSize));
  if (std::string bad = knobs::validate(knobs::Controller); !bad.empty())
    return Status(StatusCode::InvalidArgument, bad);
  // Every rank costs a dispatcher thread here and, locally, a process: a
  // mesh no launcher can start is refused before anything is allocated.
  constexpr int kMaxWorldSize = 65536;
  if (options.worldSize > kMaxWorldSize)
    return Status(StatusCode::InvalidArgument,
                  "world size " + std::to_string(options.worldSize) +
                      " is more than one controller drives (" +
                      std::to_string(kMaxWorldSize) + " ranks)");
  int64_t maxLocal = knobs::getInt(knobs::Id::MaxLocalWorkers).value;
  if (!options.launcher && options.launcherName == "local" &&
      options.worldSize > maxLocal)
    return Status(StatusCode::InvalidArgument,
                  "the local launcher starts at most " +
                      std::to_string(maxLocal) +
                      " workers on this host, the "
                      "mesh has " +
                      std::to_string(options.worldSize) +
                      " ranks (raise MONARCH_MAX_LOCAL_WORKERS, or start the "
                      "workers elsewhere with the env launcher)");
  auto impl = std::make_unique<Impl>();
  Impl &s = *impl;
  s.options = std::move(options);
  if (knobs::Value<int64_t> spin = knobs::getInt(knobs::Id::ReplySpinUs);
      spin.isSet)
    s.replySpinUs = static_cast<int>(spin.value);
  s.token =
      s.options.jobToken.empty() ? generateJobToken() : s.options.jobToken;
  s.limits = WireOptions::fromEnv(s.token);
  // A worker holds a handful of connections to the controller (heartbeat,
  // store, error reports, logs, registration): room for all of them.
  s.limits.maxConnections = static_cast<int>(
      std::min<int64_t>(8LL * s.options.worldSize + 64, 1 << 20));
  s.jobId = generateJobToken().substr(0, 8);
  auto store = std::make_unique<GenerationStore>(createInProcessStore());
  s.generationStore = store.get();
  s.store = std::move(store);
  s.workers.ranks.resize(s.options.worldSize);
  for (int r = 0; r < s.options.worldSize; ++r)
    s.workers.dispatchers.push_back(std::make_unique<Dispatcher>());

  if (s.options.launcher) {
    s.launcher = s.options.launcher;
  } else {
    auto launcher = createLauncher(s.options.launcherName);
    if (!launcher.isOk())
      return launcher.status();
    s.launcher = std::move(launcher).value();
  }
  const RecoveryPolicy &policy = s.options.recovery;
  if (policy.maxRetries < 0 || policy.checkpointEvery < 1)
    return Status(StatusCode::InvalidArgument,
                  "recovery policy: maxRetries must be >= 0 and "
                  "checkpointEvery >= 1, got " +
                      std::to_string(policy.maxRetries) + " and " +
                      std::to_string(policy.checkpointEvery));
  if (policy.enabled() && !s.launcher->canRelaunch())
    return Status(StatusCode::InvalidArgument,
                  "recovery restarts every worker, which the '" +
                      s.launcher->name() +
                      "' launcher cannot do (it does not start them); use "
                      "the local launcher or turn recovery off");
  s.recovery.policy = policy;
  s.createLogFolder();

  auto server = ControlServer::start(s.makeProcessor(), s.options.bindHost,
                                     s.options.port, s.limits, "controller");
  if (!server.isOk())
    return server.status();
  s.server = std::move(server).value();
  std::string host = s.options.advertiseHost;
  if (host.empty())
    host = s.options.bindHost == "0.0.0.0" ? "127.0.0.1" : s.options.bindHost;
  s.advertisedAddress = host + ":" + std::to_string(s.server->port());

  std::unique_ptr<Controller> controller(new Controller(std::move(impl)));
  s.startMonitor();

  s.spec.worldSize = s.options.worldSize;
  s.spec.hosts = s.options.hosts;
  s.spec.controllerAddress = s.advertisedAddress;
  s.spec.jobToken = s.token;
  s.spec.workerBinary = findWorkerBinary(s.options.workerBinary);
  s.spec.env = s.options.workerEnv;
  if (!s.options.logLevel.empty())
    s.spec.env["MONARCH_LOG_LEVEL"] = s.options.logLevel;
  s.spec.env["MONARCH_CONTROLLER_TIMEOUT_MS"] =
      std::to_string(s.options.controllerTimeout.count());
  s.spec.rankEnv = s.options.rankEnv;
  if (Status st = s.launchWorkers(); !st) {
    (void)controller->stop();
    return st;
  }
  spdlog::debug("controller at {}: {} workers registered", s.advertisedAddress,
                s.options.worldSize);
  return controller;
}

void WorkerSet::interruptCalls() {
  for (RankState &rank : ranks)
    if (rank.client)
      rank.client->interrupt();
}

std::vector<ControlEndpoint> WorkerSet::liveEndpoints() const {
  std::vector<ControlEndpoint> live;
  for (const RankState &rank : ranks)
    if (rank.registered && !rank.exited)
      live.push_back(rank.endpoint());
  return live;
}

Status Controller::Impl::launchWorkers() {
  {
    // Under the lock: a concurrent stop() either sees these workers (and
    // its terminate kills them) or stops the launch.
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping)
      return Status(StatusCode::Aborted, "the controller was stopped");
    Status launched = launcher->launch(
        spec, [this](const WorkerExit &exit) { onWorkerExit(exit); });
    if (!launched)
      return launched.withContext("launching workers");
  }

  // Wait for every rank to register.
  {
    std::unique_lock<std::mutex> lock(mutex);
    auto ready = [&] {
      return supervisor.failed || stopping ||
             workers.numRegistered == options.worldSize;
    };
    // More than 8 workers: how many registered so far (Progress.h).
    std::optional<ProgressLine> line;
    if (options.worldSize > 8)
      line.emplace("starting " + std::to_string(options.worldSize) + " workers",
                   std::chrono::milliseconds(500));
    auto deadline = Clock::now() + options.startTimeout;
    int seen = -1;
    bool done = ready();
    while (!done) {
      if (line && workers.numRegistered != seen) {
        seen = workers.numRegistered;
        line->update(std::to_string(seen) + " registered");
      }
      if (!cv.wait_until(lock, deadline, [&] {
            return ready() || (line && workers.numRegistered != seen);
          }))
        break;
      done = ready();
    }
    line.reset();
    if (supervisor.failed)
      return supervisor.failure.withContext("starting workers");
    if (stopping)
      return Status(StatusCode::Aborted, "the controller was stopped");
    if (!done) {
      std::string missing;
      for (int r = 0; r < options.worldSize; ++r)
        if (!workers.ranks[r].registered)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      return Status(StatusCode::DeadlineExceeded,
                    "ranks " + missing + " did not register within " +
                        std::to_string(options.startTimeout.count()) + " ms (" +
                        launcher->name() + " launcher, controller at " +
                        advertisedAddress + ")");
    }
  }
  // One dispatch connection per worker; no receive timeout (a step may be
  // long: hangs are the heartbeats' business).
  for (int r = 0; r < options.worldSize; ++r) {
    ControlEndpoint endpoint;
    {
      std::lock_guard<std::mutex> lock(mutex);
      endpoint = workers.ranks[r].endpoint();
    }
    auto client = ControlClient::dial(endpoint, limits, 5000, 0);
    if (!client.isOk())
      return client.status().withContext("rank " + std::to_string(r));
    std::lock_guard<std::mutex> lock(mutex);
    workers.ranks[r].client = std::move(client).value();
  }
  return Status::ok();
}

void Controller::Impl::endGeneration() {
  if (launcher)
    launcher->terminate(std::chrono::milliseconds(0));
  if (supervisor.teardown.joinable())
    supervisor.teardown.join();
  {
    std::lock_guard<std::mutex> lock(mutex);
    workers.interruptCalls();
  }
  // Dispatcher tasks of a call in flight finish (their calls were
  // interrupted) before the connections they use go away.
  workers.dispatchers.clear();
  std::lock_guard<std::mutex> lock(mutex);
  for (RankState &rank : workers.ranks)
    rank.client.reset();
}

Status Controller::stop() {
  Impl &s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.stopped)
      return s.supervisor.failed ? s.supervisor.failure : Status::ok();
    s.stopping = true;
    s.supervisor.pendingSecondary.reset();
  }
  s.cv.notify_all();
  // Ask every live worker to exit; heartbeat replies say the same to those
  // that miss this.
  std::vector<ControlEndpoint> live;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    live = s.workers.liveEndpoints();
  }
  std::vector<std::thread> askers;
  for (const ControlEndpoint &endpoint : live)
    askers.emplace_back([&s, endpoint] {
      auto client = ControlClient::dial(endpoint, s.limits, 300, 300);
      if (client.isOk())
        (void)(*client)->shutdown();
    });
  for (auto &t : askers)
    t.join();
  if (s.launcher)
    s.launcher->terminate(std::chrono::milliseconds(2000));
  // A call (or a restart) in progress fails now that its workers are gone
  // or its connections are shut; wait for it before taking its connections
  // and dispatchers away.
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.workers.interruptCalls();
  }
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  // The monitor first: it may start a teardown thread until it sees
  // `stopping`, and endGeneration joins that thread.
  if (s.supervisor.monitor.joinable())
    s.supervisor.monitor.join();
  if (s.logFolder)
    s.logFolder->flush(LogFolder::Clock::now(), /*all=*/true);
  s.endGeneration();
  if (s.server)
    s.server->stop();
  // The recycled tensor storage goes with the mesh that used it (a 200 MiB
  // feed left the user's process 250 MB larger after stop).
  s.bufferPool.release();
  Status traceStatus;
  if (!s.options.tracePath.empty())
    traceStatus = s.trace.write(s.options.tracePath, s.options.worldSize);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stopped = true;
  if (s.supervisor.failed)
    return s.supervisor.failure;
  return traceStatus;
}

Status Controller::health() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->supervisor.failed)
    return impl_->supervisor.failure;
  if (impl_->stopping)
    return Status(StatusCode::Aborted, "the controller was stopped");
  return Status::ok();
}

int Controller::worldSize() const { return impl_->options.worldSize; }
const std::string &Controller::jobToken() const { return impl_->token; }
std::string Controller::address() const { return impl_->advertisedAddress; }

std::pair<std::string, int> Controller::workerAddress(int rank) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (rank < 0 || rank >= static_cast<int>(impl_->workers.ranks.size()))
    return {"", 0};
  return {impl_->workers.ranks[rank].host, impl_->workers.ranks[rank].port};
}

int64_t Controller::workerPid(int rank) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (rank < 0 || rank >= static_cast<int>(impl_->workers.ranks.size()))
    return 0;
  return impl_->workers.ranks[rank].pid;
}

const PlanSignature *Controller::signature(const std::string &plan) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->registry.plans.find(plan);
  return it == impl_->registry.plans.end() ? nullptr : &it->second;
}

} // namespace monarch::executor
