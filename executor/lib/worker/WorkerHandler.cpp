//===- WorkerHandler.cpp - The WorkerService of a monarch-worker ----------===//
//
// loadPlan (decode, create interpreters: kernels, communicators, arenas),
// runStep (one step of one plan; its first failure is reported to the
// controller before the communicators abort), fetch, set/getState, abort,
// ping and shutdown. Every request's token is checked first.
//
//===----------------------------------------------------------------------===//
#include "WorkerState.h"
#include "monarch/Support/Knobs.h"

#include <algorithm>

#include "monarch/Executor/Device.h"

using namespace monarch::executor;

namespace monarch::worker {
namespace {

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
        if ((in.kind != OpKind::Feed && in.kind != OpKind::Fetch) ||
            in.keepOnly)
          continue;
        control::BufferSpec spec;
        spec.index = in.index;
        spec.dtype = in.buffer.numpy;
        spec.shape = in.buffer.shape;
        (in.kind == OpKind::Feed ? info.feeds : info.fetches).push_back(spec);
      }
      for (const Instruction &in : program.instructions) {
        info.instructionNames.push_back(in.name);
        info.instructionLocations.push_back(in.location);
      }
      Interpreter::Options options;
      options.progress = w_.progressPage;
      options.issuingProgress = w_.issuingProgress;
      options.store = w_.store.get();
      options.states = w_.states;
      options.worldSize = w_.worldSize;
      options.trace = w_.config.trace;
      options.fault = w_.fault;
      if (knobs::Value<std::chrono::milliseconds> t =
              knobs::getMs(knobs::Id::CommTimeoutMs);
          t.isSet)
        options.comm.timeout = t.value;
      options.waitTimeout = knobs::getMs(knobs::Id::WaitTimeoutMs).value;
      options.comm.hostname = w_.address;
      options.comm.processesOnHost = processesOnHost();
      if (program.device)
        options.comm.cudaDevice = cudaOrdinal();
      std::string name = program.planName;
      options.dropConnections = [this] { w_.dropConnections(); };
      options.residents = w_.residentPool;
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

  /// The job's workers on this host: LOCAL_WORLD_SIZE (torchrun),
  /// SLURM_NTASKS_PER_NODE ("4" or "4(x2)"), every rank under the local
  /// launcher, else 0 (unknown).
  int processesOnHost() const {
    for (const char *name : {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"})
      if (std::string v = foreignEnv(name, ""); !v.empty())
        return std::max(0, std::atoi(v.c_str()));
    knobs::Value<std::string> launcher = knobs::getString(knobs::Id::Launcher);
    return launcher.isSet && launcher.value == "local" ? w_.worldSize : 0;
  }

  /// The CUDA device of this worker's device plans (and their NCCL
  /// communicators): MONARCH_CUDA_DEVICE, else the local rank
  /// (LOCAL_RANK, SLURM_LOCALID, else the rank) modulo the devices visible.
  int cudaOrdinal() const {
    if (knobs::Value<int64_t> d = knobs::getInt(knobs::Id::CudaDevice); d.isSet)
      return static_cast<int>(d.value);
    int local = w_.rank;
    for (const char *name : {"LOCAL_RANK", "SLURM_LOCALID"})
      if (std::string v = foreignEnv(name, ""); !v.empty()) {
        local = std::atoi(v.c_str());
        break;
      }
    DeviceInfo info = probeDevices();
    return info.cudaDevices > 0 ? local % info.cudaDevices : 0;
  }

  /// The staging area the request names, mapped once per area.
  std::shared_ptr<SharedArea> mapStaging(const control::Staging &staging) {
    std::lock_guard<std::mutex> lock(w_.stagingMutex);
    std::pair<int64_t, int> key{staging.pid, staging.fd};
    if (w_.staging && w_.stagingKey == key &&
        static_cast<int64_t>(w_.staging->bytes()) == staging.bytes)
      return w_.staging;
    if (staging.bytes <= 0)
      throwStatus(
          Status(StatusCode::InvalidArgument, "runStep: empty staging area"));
    auto area = SharedArea::open(staging.pid, staging.fd,
                                 static_cast<size_t>(staging.bytes));
    if (!area.isOk())
      throwStatus(area.status().withContext(
          "runStep: the controller's staging area (MONARCH_LOCAL_CONTROL=0 "
          "sends tensors in the messages instead)"));
    w_.staging = std::make_shared<SharedArea>(std::move(area).value());
    w_.stagingKey = key;
    return w_.staging;
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
    std::shared_ptr<SharedArea> area;
    FetchArea fetchArea;
    if (request.__isset.staging) {
      area = mapStaging(request.staging);
      fetchArea.area = area;
      fetchArea.next = request.staging.fetchOffset;
      fetchArea.end = static_cast<int64_t>(area->bytes());
      fetchArea.minBytes = request.staging.minFetchBytes;
      if (fetchArea.next < 0 || fetchArea.next > fetchArea.end)
        throwStatus(Status(StatusCode::InvalidArgument,
                           "runStep: staging fetchOffset " +
                               std::to_string(fetchArea.next) +
                               " is outside the area"));
    }
    std::map<int, ResidentPtr> residentFeeds;
    {
      std::lock_guard<std::mutex> lock(w_.slotsMutex);
      for (int64_t slot : request.releases)
        w_.slots.erase(slot);
    }
    std::map<int, std::string_view> feeds;
    for (const control::Feed &feed : request.feeds) {
      if (feed.slot >= 0) {
        ResidentPtr value;
        {
          std::lock_guard<std::mutex> lock(w_.slotsMutex);
          if (auto it = w_.slots.find(feed.slot); it != w_.slots.end())
            value = it->second;
        }
        if (!value)
          throwStatus(Status(StatusCode::NotFound,
                             "runStep: feed " + std::to_string(feed.index) +
                                 " names resident value " +
                                 std::to_string(feed.slot) +
                                 ", which this worker does not hold"));
        feeds[feed.index] = value->view();
        residentFeeds[feed.index] = std::move(value);
        continue;
      }
      if (feed.stagingOffset < 0) {
        feeds[feed.index] = feed.tensor.data;
        continue;
      }
      if (!area || feed.stagingBytes < 0 ||
          feed.stagingOffset + feed.stagingBytes >
              static_cast<int64_t>(area->bytes()))
        throwStatus(Status(StatusCode::InvalidArgument,
                           "runStep: feed " + std::to_string(feed.index) +
                               " points outside the staging area"));
      feeds[feed.index] = std::string_view(area->data() + feed.stagingOffset,
                                           feed.stagingBytes);
    }
    {
      std::lock_guard<std::mutex> lock(w_.progressMutex);
      w_.runningPlan = request.plan;
      w_.running = plan;
    }
    std::vector<FetchResult> fetches;
    std::vector<TraceRecord> trace;
    std::vector<int> keepIndices;
    for (const control::Keep &keep : request.keeps)
      keepIndices.push_back(keep.index);
    plan->interpreter->setKeeps(keepIndices);
    plan->interpreter->setResidentFeeds(std::move(residentFeeds));
    int64_t start = nowUs();
    StepFailure failure = plan->interpreter->runStep(
        request.step, feeds, area ? &fetchArea : nullptr, fetches, trace);
    {
      std::lock_guard<std::mutex> lock(w_.progressMutex);
      w_.running.reset();
    }
    std::vector<std::string> prints = plan->interpreter->takePrints();
    if (!failure.status) {
      // What the step printed before it failed reaches the controller as
      // log records (the reply that would carry it is an error).
      if (w_.sink)
        for (std::string &line : prints)
          w_.sink->pushPrint(std::move(line));
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
    reply.prints = std::move(prints);
    const RankProgram &p = plan->interpreter->program();
    // Kept fetches become resident values instead of replies.
    if (!request.keeps.empty()) {
      std::lock_guard<std::mutex> lock(w_.slotsMutex);
      for (const control::Keep &keep : request.keeps)
        for (FetchResult &result : fetches)
          if (result.index == keep.index && result.resident)
            w_.slots[keep.slot] = std::move(result.resident);
      std::erase_if(fetches, [&](const FetchResult &result) {
        return std::any_of(
            request.keeps.begin(), request.keeps.end(),
            [&](const control::Keep &k) { return k.index == result.index; });
      });
    }
    for (const FetchResult &result : fetches) {
      control::Fetch fetch;
      fetch.index = result.index;
      for (const Instruction &in : p.instructions)
        if (in.kind == OpKind::Fetch && in.index == result.index) {
          fetch.tensor.dtype = in.buffer.numpy;
          fetch.tensor.shape = in.buffer.shape;
          break;
        }
      if (result.area) {
        fetch.stagingOffset = result.offset;
        fetch.stagingBytes = result.size;
      } else {
        fetch.tensor.data = result.bytes;
      }
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
      if (!t.location.empty()) {
        e.location = std::move(t.location);
        e.__isset.location = true;
      }
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
      for (const FetchResult &result : it->second->lastFetches)
        if (result.index == index) {
          control::Fetch f;
          f.index = result.index;
          f.tensor.data = std::string(result.view());
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

  void readSlots(std::vector<std::string> &reply, const std::string &token,
                 const std::vector<int64_t> &slots) override {
    requireToken(w_.token, token, "readSlots");
    std::lock_guard<std::mutex> lock(w_.slotsMutex);
    for (int64_t slot : slots) {
      auto it = w_.slots.find(slot);
      if (it == w_.slots.end())
        throwStatus(Status(StatusCode::NotFound,
                           "readSlots: this worker holds no resident value " +
                               std::to_string(slot)));
      reply.push_back(std::string(it->second->view()));
    }
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

} // namespace

std::shared_ptr<control::WorkerServiceIf> makeWorkerHandler(Worker &worker) {
  return std::make_shared<WorkerHandler>(worker);
}

} // namespace monarch::worker
