//===- ControllerCalls.cpp - Load plans, run steps, actor state ---------===//
//
// One attempt of each call that reaches every rank; the public calls wrap
// them with the restart policy (ControllerRecovery.cpp). A step is one
// WorkerService.runStep per worker, all written before any reply is read;
// other calls go through the per-rank dispatcher threads. Either way the caller
// returns as soon as the job fails (Supervisor.cpp), without waiting for the
// other ranks.
//
//===----------------------------------------------------------------------===//
#include "ControllerImpl.h"

#include "monarch/Plan/PlanFile.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <optional>

namespace pm = monarch::plan;

namespace monarch::executor {
//===--- Calls on every rank ----------------------------------------------===//

namespace {

HostTensor fromWire(control::Tensor tensor) {
  HostTensor out;
  out.dtype = std::move(tensor.dtype);
  out.shape = std::move(tensor.shape);
  out.data = std::move(tensor.data);
  return out;
}

std::string shapeText(const std::string &dtype,
                      const std::vector<int64_t> &shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  return t.describe();
}

/// Results of one call on every rank, shared with the dispatchers (which
/// may finish after the caller returned on a failure).
template <typename Reply> struct Gather {
  explicit Gather(int n) : replies(n), statuses(n), pending(n) {}
  std::vector<Reply> replies;
  std::vector<Status> statuses;
  int pending;
};

/// Turns a failed call on rank `r` into the job's terms: a dropped
/// connection names the rank and where it was, a worker's error names its
/// op and source location; job failures are reported to the supervisor.
Status classifyLocked(Controller::Impl &s, int r, Status status,
                      const CallFailure &failure,
                      const std::pair<std::string, int64_t> &context,
                      const std::function<bool(const Status &)> &isJobFailure) {
  if (failure.transportFailed)
    // A crash also drops the connection: wait for the launcher's word.
    status = Status(StatusCode::Unavailable,
                    "lost connection to " + s.describeRankLocked(r) + " " +
                        s.whereLocked(r) + ": " + status.message());
  else
    status = s.rankFailureLocked(r, context.first, context.second,
                                 failure.instruction, failure.op,
                                 failure.location, failure.worker);
  if (isJobFailure(status))
    s.reportFailureLocked(status, status.code() != StatusCode::Aborted &&
                                      status.code() != StatusCode::Unavailable);
  return status;
}

/// After every rank answered: an error that fails the job may still be
/// waiting for its root cause (a crash seen by a peer first). Returns the
/// job's failure if there is one.
Status settleLocked(Controller::Impl &s, std::unique_lock<std::mutex> &lock,
                    const std::vector<Status> &statuses,
                    const std::function<bool(const Status &)> &isJobFailure) {
  if (!s.supervisor.failed) {
    bool jobFailure = false;
    for (const Status &st : statuses)
      jobFailure |= !st.isOk() && isJobFailure(st);
    if (jobFailure)
      s.cv.wait_for(
          lock, s.options.rootCauseGrace * 2 + std::chrono::milliseconds(500),
          [&] { return s.supervisor.failed; });
  }
  return s.supervisor.failed ? s.supervisor.failure : Status::ok();
}

/// Runs `call(rank, client, reply, failure)` on every rank in `ranks`
/// concurrently and waits until all finished or the job failed. Returns the
/// failure, or Ok with per-rank statuses in the gather.
template <typename Reply>
Status callAll(
    Controller::Impl &s, const std::vector<int> &ranks,
    std::shared_ptr<Gather<Reply>> gather, const std::string &what,
    std::pair<std::string, int64_t> context, std::chrono::milliseconds timeout,
    std::function<Status(int, ControlClient &, Reply &, CallFailure *)> call,
    std::function<bool(const Status &)> isJobFailure) {
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    gather->pending = static_cast<int>(ranks.size());
  }
  for (int r : ranks) {
    ControlClient *client;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      client = s.workers.ranks[r].client.get();
    }
    s.workers.dispatchers[r]->post([&s, r, client, gather, call, isJobFailure,
                                    context] {
      CallFailure failure;
      Status status = call(r, *client, gather->replies[r], &failure);
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!status)
        status = classifyLocked(s, r, status, failure, context, isJobFailure);
      gather->statuses[r] = status;
      if (--gather->pending == 0)
        s.cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(s.mutex);
  bool done = s.cv.wait_for(lock, timeout, [&] {
    return s.supervisor.failed || gather->pending == 0;
  });
  if (done)
    if (Status failure = settleLocked(s, lock, gather->statuses, isJobFailure);
        !failure)
      return failure;
  if (s.supervisor.failed)
    return s.supervisor.failure;
  if (!done) {
    Status status(StatusCode::DeadlineExceeded,
                  what + " did not finish within " +
                      std::to_string(timeout.count()) + " ms");
    s.reportFailureLocked(status, true);
    return status;
  }
  return Status::ok();
}

/// Elements of `shard` in a tensor of `shape` (checked to lie inside it),
/// or -1.
int64_t shardElements(const std::vector<int64_t> &shape,
                      const PlanSignature::Shard &shard) {
  size_t rank = shape.size();
  if (shard.offsets.size() != rank || shard.shape.size() != rank)
    return -1;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (shard.offsets[d] < 0 || shard.shape[d] < 0 ||
        shard.offsets[d] + shard.shape[d] > shape[d])
      return -1;
    count *= shard.shape[d];
  }
  return count;
}

/// Calls `row(byte offset in the whole tensor, bytes)` for each row of
/// `shard` (its innermost dimension, contiguous in both), in the shard's
/// row-major order. The shard was checked to fit (shardElements).
template <typename Row>
void forEachShardRow(const std::vector<int64_t> &shape,
                     const PlanSignature::Shard &shard, size_t elem, Row row) {
  size_t rank = shape.size();
  if (rank == 0) {
    row(0, elem);
    return;
  }
  if (shard.shape[rank - 1] == 0)
    return;
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    stride[d - 1] = stride[d] * shape[d];
  size_t bytes = static_cast<size_t>(shard.shape[rank - 1]) * elem;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= shard.shape[d];
  std::vector<int64_t> at(rank, 0); // index within the shard
  for (; rows > 0; --rows) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (shard.offsets[d] + at[d]) * stride[d];
    row(static_cast<size_t>(offset) * elem, bytes);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++at[d] < shard.shape[d])
        break;
      at[d] = 0;
    }
  }
}

size_t elementBytes(const std::string &dtype) {
  std::optional<DType> type = parseDType(dtype);
  return type ? dtypeSize(*type) : 0;
}

/// Copies one rank's shard (`bytes`, row-major, `shard.shape`) into
/// `whole` at `shard.offsets`, after checking that it fits.
Status placeShard(HostTensor &whole, const PlanSignature::Shard &shard,
                  const std::string &bytes) {
  size_t elem = elementBytes(whole.dtype);
  int64_t count = shardElements(whole.shape, shard);
  if (elem == 0 || count < 0 ||
      bytes.size() != static_cast<size_t>(count) * elem ||
      whole.data.size() != static_cast<size_t>(whole.numElements()) * elem)
    return Status(StatusCode::Internal,
                  "rank " + std::to_string(shard.rank) +
                      " returned a shard that does not fit " +
                      whole.describe());
  const char *src = bytes.data();
  forEachShardRow(whole.shape, shard, elem, [&](size_t at, size_t n) {
    std::memcpy(whole.data.data() + at, src, n);
    src += n;
  });
  return Status::ok();
}

/// The bytes of `shard` of `whole` (row-major), for the rank fed it.
StatusOr<std::string> cutShard(const HostTensor &whole,
                               const PlanSignature::Shard &shard) {
  size_t elem = elementBytes(whole.dtype);
  int64_t count = shardElements(whole.shape, shard);
  if (elem == 0 || count < 0 ||
      whole.data.size() != static_cast<size_t>(whole.numElements()) * elem)
    return Status(StatusCode::InvalidArgument,
                  "the shard of rank " + std::to_string(shard.rank) +
                      " does not fit " + whole.describe());
  std::string out(static_cast<size_t>(count) * elem, '\0');
  char *dst = out.data();
  forEachShardRow(whole.shape, shard, elem, [&](size_t at, size_t n) {
    std::memcpy(dst, whole.data.data() + at, n);
    dst += n;
  });
  return out;
}

} // namespace

StatusOr<std::vector<std::string>>
Controller::loadPlanOnce(const pm::SharedPlan &shared) {
  Impl &s = *impl_;
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  if (Status h = health(); !h)
    return h;
  // Decoded and validated by decodeSharedPlan: a bad file never reaches
  // the workers.
  const std::shared_ptr<const std::string> &planBytes = shared.bytes;
  const std::shared_ptr<const pm::ExecutionPlan> &file = shared.plan;
  if (!planBytes || !file)
    return Status(StatusCode::InvalidArgument, "an empty plan");
  if (static_cast<int64_t>(planBytes->size()) + 4096 > s.limits.maxMessageBytes)
    return Status(StatusCode::InvalidArgument,
                  "the plan is " + std::to_string(planBytes->size()) +
                      " bytes, above the control message limit of " +
                      std::to_string(s.limits.maxMessageBytes) +
                      " (MONARCH_MAX_MESSAGE_BYTES)");
  int n = s.options.worldSize;
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r)
    all[r] = r;
  auto gather = std::make_shared<Gather<std::vector<control::PlanInfo>>>(n);
  // The first rank to refuse the plan is the cause. The others may be
  // waiting for it in a communicator's rendezvous: the store fails their
  // waits at once (loadAborted), and what they then report is a
  // consequence, not a failure of the job.
  auto firstRefusal = std::make_shared<Status>();
  Status status = callAll<std::vector<control::PlanInfo>>(
      s, all, gather, "loadPlan", {"", -1}, s.options.startTimeout,
      [planBytes](int, ControlClient &client,
                  std::vector<control::PlanInfo> &reply, CallFailure *failure) {
        return client.loadPlan(*planBytes, reply, failure);
      },
      // Called under s.mutex for each rank that failed.
      [&s, firstRefusal](const Status &st) {
        bool refusal = st.code() == StatusCode::InvalidArgument ||
                       st.code() == StatusCode::Unimplemented;
        if (refusal && firstRefusal->isOk()) {
          *firstRefusal = st;
          s.supervisor.loadAbortReason = st.message();
          s.supervisor.loadAborted = true;
          spdlog::debug("abandoning the plan load: {}", st.toString());
        }
        // A plan a rank rejects is the caller's error, not the job's.
        return !refusal && firstRefusal->isOk();
      });
  if (s.supervisor.loadAborted.exchange(false)) {
    // Every rank has answered: nothing of this load still uses the store.
    s.generationStore->nextEpoch();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.supervisor.failed)
      return *firstRefusal;
  }
  if (!status)
    return status;
  for (int r = 0; r < n; ++r)
    if (!gather->statuses[r])
      return gather->statuses[r];

  std::vector<PlanSignature> sigs;
  for (size_t p = 0; p < gather->replies[0].size(); ++p) {
    PlanSignature sig;
    sig.name = gather->replies[0][p].name;
    // Feeds and fetches of a shard, from the plan itself (the ranks'
    // PlanInfo names only their piece's shape): the whole value's type
    // (which the per-rank entries below then leave as it is), and where
    // each rank's piece is.
    for (const pm::StepPlan &step : file->plans) {
      if (step.symbol != sig.name)
        continue;
      for (const pm::RankProgram &program : step.programs)
        for (const pm::Instruction &in : program.instructions) {
          if (in.kind == pm::InstrKind::StateBuffer &&
              !in.stateBuffer.offsets.empty()) {
            auto rank = static_cast<int>(program.rank);
            sig.stateShards["@" + in.stateBuffer.actorMesh + "::@" +
                            in.stateBuffer.state][rank] = {
                rank, in.stateBuffer.offsets, in.stateBuffer.buffer.shape};
            continue;
          }
          bool feed = in.kind == pm::InstrKind::FeedBuffer;
          if (!feed && in.kind == pm::InstrKind::FetchBuffer &&
              in.io.index >= 0 &&
              in.io.index < static_cast<int64_t>(step.outputs.size()))
            sig.fetchPieces[static_cast<int>(in.io.index)][static_cast<int>(
                program.rank)] = {static_cast<int>(program.rank), in.io.offsets,
                                  in.io.buffer.shape};
          if ((!feed && in.kind != pm::InstrKind::FetchBuffer) ||
              in.io.offsets.empty() || in.io.keepOnly)
            continue;
          const std::vector<pm::ValueType> &values =
              feed ? step.inputs : step.outputs;
          if (in.io.index < 0 ||
              in.io.index >= static_cast<int64_t>(values.size()))
            continue; // refused below
          int index = static_cast<int>(in.io.index);
          auto rank = static_cast<int>(program.rank);
          PlanSignature::Shard shard{rank, in.io.offsets, in.io.buffer.shape};
          (feed ? sig.feeds : sig.fetches)[index] = {
              dtypeName(in.io.buffer.dtype), values[index].shape};
          if (feed)
            sig.feedShards[index][rank] = std::move(shard);
          else
            sig.fetchShards[index].push_back(std::move(shard));
        }
    }
    for (int r = 0; r < n; ++r) {
      if (gather->replies[r].size() != gather->replies[0].size())
        return Status(StatusCode::Internal,
                      "ranks loaded different numbers of plans");
      const control::PlanInfo &info = gather->replies[r][p];
      if (info.name != sig.name)
        return Status(StatusCode::InvalidArgument,
                      "ranks disagree on the plan's name ('" + sig.name +
                          "' and '" + info.name + "')");
      if (info.meshSize != n)
        return Status(StatusCode::InvalidArgument,
                      "plan '" + sig.name + "' runs on a mesh of " +
                          std::to_string(info.meshSize) +
                          " ranks, the job has " + std::to_string(n) +
                          " workers");
      for (const control::BufferSpec &feed : info.feeds) {
        auto &readers = sig.feedRanks[feed.index];
        if (readers.empty() || readers.back() != r)
          readers.push_back(r);
        if (sig.feedShards.count(feed.index))
          continue; // shapes differ by rank; the whole type is the plan's
        auto [it, inserted] =
            sig.feeds.insert({feed.index, {feed.dtype, feed.shape}});
        if (!inserted && it->second != std::make_pair(feed.dtype, feed.shape))
          return Status(
              StatusCode::InvalidArgument,
              "plan '" + sig.name + "': feed " + std::to_string(feed.index) +
                  " is " + shapeText(it->second.first, it->second.second) +
                  " on one rank and " + shapeText(feed.dtype, feed.shape) +
                  " on rank " + std::to_string(r));
      }
      for (const control::BufferSpec &fetch : info.fetches)
        if (sig.fetches.insert({fetch.index, {fetch.dtype, fetch.shape}})
                .second)
          sig.fetchRank[fetch.index] = r;
      for (const control::StateSpec &state : info.states) {
        sig.states[state.key] = {state.dtype, state.shape};
        auto &holders = sig.stateRanks[state.key];
        if (holders.empty() || holders.back() != r)
          holders.push_back(r);
      }
    }
    // Feeds and fetches index the plan's inputs and outputs. An input no
    // rank reads (a scalar only dead work used) has no feed.
    size_t numInputs = sig.feeds.size(), numOutputs = sig.fetches.size();
    for (const pm::StepPlan &step : file->plans)
      if (step.symbol == sig.name) {
        numInputs = std::max(numInputs, step.inputs.size());
        numOutputs = std::max(numOutputs, step.outputs.size());
      }
    for (auto &[index, _] : sig.feeds)
      if (index < 0 || index >= static_cast<int>(numInputs))
        return Status(StatusCode::InvalidArgument,
                      "plan '" + sig.name + "': feed " + std::to_string(index) +
                          " is not one of its " + std::to_string(numInputs) +
                          " inputs");
    for (auto &[index, _] : sig.fetches)
      if (index < 0 || index >= static_cast<int>(numOutputs))
        return Status(StatusCode::InvalidArgument,
                      "plan '" + sig.name + "': fetch " +
                          std::to_string(index) + " is not one of its " +
                          std::to_string(numOutputs) + " outputs");
    sigs.push_back(std::move(sig));
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<std::string> names;
  for (size_t p = 0; p < sigs.size(); ++p) {
    PlanSignature &sig = sigs[p];
    for (auto &[key, type] : sig.states)
      s.registry.states[key] = type;
    for (auto &[key, pieces] : sig.stateShards)
      for (auto &[rank, piece] : pieces)
        s.registry.stateShards[key][rank] = piece;
    for (auto &[key, holders] : sig.stateRanks) {
      auto &all = s.registry.stateRanks[key];
      for (int r : holders)
        if (std::find(all.begin(), all.end(), r) == all.end())
          all.push_back(r);
      std::sort(all.begin(), all.end());
    }
    names.push_back(sig.name);
    s.registry.nextStep.emplace(sig.name, 0);
    {
      // What progress pages point at (ranks that have one).
      std::vector<InstructionTable::Names> text(n);
      for (int r = 0; r < n; ++r) {
        if (!s.workers.ranks[r].progressPage)
          continue;
        const control::PlanInfo &info = gather->replies[r][p];
        for (size_t i = 0; i < info.instructionNames.size(); ++i)
          text[r].emplace_back(info.instructionNames[i],
                               i < info.instructionLocations.size()
                                   ? info.instructionLocations[i]
                                   : std::string());
      }
      s.instructionTable.record(sig.name, std::move(text));
    }
    s.registry.plans[sig.name] = std::move(sig);
  }
  for (const pm::StepPlan &step : file->plans)
    s.registry.planInputs[step.symbol] = step.inputs.size();
  for (const pm::ControllerProgram &program : file->controllers)
    s.registry.programs[program.name] = {file, &program};
  return names;
}

Status Controller::setActorStateOnce(const std::string &key,
                                     const HostTensor &value, int rank) {
  Impl &s = *impl_;
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  if (Status h = health(); !h)
    return h;
  // What the loaded plans say of the state, copied under the lock; the
  // checks and the cutting of a global value into the ranks' pieces run
  // after it (cutting 4,096 shards held the controller's mutex).
  std::string dtype;
  std::vector<int64_t> localShape;
  std::optional<std::map<int, PlanSignature::Shard>> shards;
  std::vector<int> holders;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.registry.states.find(key);
    if (it == s.registry.states.end())
      return Status(StatusCode::NotFound,
                    "no loaded plan declares actor state " + key);
    dtype = it->second.first;
    localShape = it->second.second;
    auto split = s.registry.stateShards.find(key);
    if (rank < 0 && split != s.registry.stateShards.end() &&
        value.shape != localShape)
      shards = split->second;
    holders = s.registry.stateRanks[key];
  }
  // Split state given whole (every rank, rank -1): each rank's piece.
  std::map<int, std::string> pieces;
  if (shards) {
    // The global shape: where the furthest shard ends, per dimension.
    std::vector<int64_t> global(localShape.size(), 0);
    for (auto &[r, piece] : *shards)
      for (size_t d = 0; d < global.size() && d < piece.offsets.size(); ++d)
        global[d] = std::max(global[d], piece.offsets[d] + piece.shape[d]);
    if (value.dtype != dtype || value.shape != global)
      return Status(StatusCode::InvalidArgument,
                    "actor state " + key +
                        " is split: " + shapeText(dtype, global) + " whole, " +
                        shapeText(dtype, localShape) + " per rank; got " +
                        value.describe());
    for (auto &[r, piece] : *shards) {
      auto cut = cutShard(value, piece);
      if (!cut.isOk())
        return cut.status().withContext("actor state " + key);
      pieces[r] = std::move(cut).value();
    }
  } else if (value.dtype != dtype || value.shape != localShape) {
    return Status(StatusCode::InvalidArgument,
                  "actor state " + key + " is " + shapeText(dtype, localShape) +
                      ", got " + value.describe());
  }
  std::vector<int> ranks;
  for (int r : holders)
    if (rank < 0 || r == rank)
      ranks.push_back(r);
  for (int r : ranks)
    if (shards && !pieces.count(r))
      return Status(StatusCode::InvalidArgument,
                    "actor state " + key + " is split, but rank " +
                        std::to_string(r) + " holds no piece of it");
  if (ranks.empty())
    return Status(StatusCode::NotFound, "rank " + std::to_string(rank) +
                                            " holds no actor state " + key);
  // Refused before anything is sent: a message above the limit is one the
  // worker closes the connection on, which reads as a lost rank.
  size_t sent = value.data.size();
  if (!pieces.empty()) {
    sent = 0;
    for (auto &[r, piece] : pieces)
      sent = std::max(sent, piece.size());
  }
  if (static_cast<int64_t>(sent) + 4096 > s.limits.maxMessageBytes)
    return Status(StatusCode::InvalidArgument,
                  "actor state " + key + " is " + std::to_string(sent) +
                      " bytes, above the control message limit of " +
                      std::to_string(s.limits.maxMessageBytes) +
                      " (MONARCH_MAX_MESSAGE_BYTES)");
  auto gather = std::make_shared<Gather<int>>(s.options.worldSize);
  control::Tensor tensor;
  tensor.dtype = value.dtype;
  tensor.shape = value.shape;
  if (pieces.empty())
    tensor.data = value.data;
  else
    tensor.shape = localShape;
  auto perRank =
      std::make_shared<const std::map<int, std::string>>(std::move(pieces));
  Status status = callAll<int>(
      s, ranks, gather, "setState", {"", -1}, s.options.startTimeout,
      [key, tensor, perRank](int r, ControlClient &client, int &,
                             CallFailure *failure) {
        if (perRank->empty())
          return client.setState(key, tensor, failure);
        control::Tensor piece = tensor;
        piece.data = perRank->at(r);
        return client.setState(key, piece, failure);
      },
      [](const Status &st) {
        return st.code() != StatusCode::InvalidArgument &&
               st.code() != StatusCode::NotFound;
      });
  if (!status)
    return status;
  for (int r : ranks)
    if (!gather->statuses[r])
      return gather->statuses[r];
  return Status::ok();
}

StatusOr<HostTensor> Controller::getActorStateOnce(const std::string &key,
                                                   int rank) {
  Impl &s = *impl_;
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  if (Status h = health(); !h)
    return h;
  if (rank < 0 || rank >= s.options.worldSize)
    return Status(StatusCode::InvalidArgument,
                  "rank " + std::to_string(rank) + " is not in the job");
  auto gather = std::make_shared<Gather<control::Tensor>>(s.options.worldSize);
  Status status = callAll<control::Tensor>(
      s, {rank}, gather, "getState", {"", -1}, s.options.startTimeout,
      [key](int, ControlClient &client, control::Tensor &reply,
            CallFailure *failure) {
        return client.getState(key, reply, failure);
      },
      [](const Status &st) {
        return st.code() != StatusCode::InvalidArgument &&
               st.code() != StatusCode::NotFound;
      });
  if (!status)
    return status;
  if (!gather->statuses[rank])
    return gather->statuses[rank];
  return fromWire(std::move(gather->replies[rank]));
}

StatusOr<HostTensor> Controller::fetchResident(const HostTensor &value) {
  Impl &s = *impl_;
  if (!value.resident)
    return value;
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  if (Status h = health(); !h)
    return h;
  const ResidentValue &where = *value.resident;
  if (where.generation != s.generationStore->generation())
    return Status(StatusCode::NotFound,
                  "a value kept on the workers (donate_argnums) was lost "
                  "when the job restarted");
  // One rank per distinct piece: a replicated value is read from one.
  std::vector<int> ranks;
  std::vector<PlanSignature::Shard> shards;
  for (auto &[r, piece] : where.pieces) {
    std::vector<int64_t> offsets = piece.offsets;
    if (offsets.empty())
      offsets.assign(value.shape.size(), 0);
    bool seen = false;
    for (const PlanSignature::Shard &shard : shards)
      seen |= shard.offsets == offsets && shard.shape == piece.shape;
    if (seen)
      continue;
    ranks.push_back(r);
    shards.push_back({r, offsets, piece.shape});
  }
  auto gather =
      std::make_shared<Gather<std::vector<std::string>>>(s.options.worldSize);
  std::vector<int64_t> slots{where.slot};
  Status status = callAll<std::vector<std::string>>(
      s, ranks, gather, "readSlots", {"", -1}, s.options.startTimeout,
      [slots](int, ControlClient &client, std::vector<std::string> &reply,
              CallFailure *failure) {
        return client.readSlots(slots, reply, failure);
      },
      [](const Status &st) {
        return st.code() != StatusCode::InvalidArgument &&
               st.code() != StatusCode::NotFound;
      });
  if (!status)
    return status;
  HostTensor whole;
  whole.dtype = value.dtype;
  whole.shape = value.shape;
  whole.data.assign(static_cast<size_t>(whole.numElements()) *
                        elementBytes(value.dtype),
                    '\0');
  for (const PlanSignature::Shard &shard : shards) {
    if (!gather->statuses[shard.rank])
      return gather->statuses[shard.rank];
    std::vector<std::string> &reply = gather->replies[shard.rank];
    if (reply.size() != 1)
      return Status(StatusCode::Internal, "rank " + std::to_string(shard.rank) +
                                              " returned no resident value");
    if (Status st = placeShard(whole, shard, reply[0]); !st)
      return st.withContext("a value kept on the workers");
  }
  return whole;
}

Controller::ResidentStats Controller::residentStats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->residentStats;
}

void Controller::releaseResident(const HostTensor &value) {
  if (!value.resident)
    return;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->residentReleases.push_back(value.resident->slot);
}

StatusOr<Controller::Checkpoint> Controller::checkpointOnce() {
  Impl &s = *impl_;
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  if (Status h = health(); !h)
    return h;
  std::map<std::string, std::vector<int>> holders;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    holders = s.registry.stateRanks;
  }
  // One getState per state key, sent to all its holders at once.
  Checkpoint checkpoint;
  for (auto &[key, ranks] : holders) {
    auto gather =
        std::make_shared<Gather<control::Tensor>>(s.options.worldSize);
    Status status = callAll<control::Tensor>(
        s, ranks, gather, "getState", {"", -1}, s.options.startTimeout,
        [key](int, ControlClient &client, control::Tensor &reply,
              CallFailure *failure) {
          return client.getState(key, reply, failure);
        },
        [](const Status &st) {
          return st.code() != StatusCode::InvalidArgument &&
                 st.code() != StatusCode::NotFound;
        });
    if (!status)
      return status.withContext("checkpoint of " + key);
    for (int r : ranks) {
      if (!gather->statuses[r])
        return gather->statuses[r].withContext("checkpoint of " + key +
                                               " on rank " + std::to_string(r));
      checkpoint.states[{key, r}] = fromWire(std::move(gather->replies[r]));
    }
  }
  return checkpoint;
}

StatusOr<std::vector<HostTensor>>
Controller::runStepOnce(const std::string &plan,
                        const std::vector<const HostTensor *> &givenInputs,
                        int64_t &step, const std::set<int> *keeps) {
  Impl &s = *impl_;
  std::lock_guard<std::recursive_mutex> call(s.callMutex);
  if (Status h = health(); !h)
    return h;
  const PlanSignature *sig = signature(plan);
  if (!sig)
    return Status(StatusCode::NotFound,
                  "no plan named '" + plan + "' is loaded");
  size_t expected = sig->feeds.size();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto it = s.registry.planInputs.find(plan);
        it != s.registry.planInputs.end())
      expected = std::max(expected, it->second);
  }
  if (givenInputs.size() != expected)
    return Status(StatusCode::InvalidArgument,
                  "plan '" + plan + "' takes " + std::to_string(expected) +
                      " inputs, got " + std::to_string(givenInputs.size()));
  // A resident input is fed from where it is when every rank reading it
  // holds exactly the piece it reads; otherwise its whole value is fetched
  // first and sent as any other input.
  std::vector<const HostTensor *> inputs = givenInputs;
  std::deque<HostTensor> materialized;
  int generation = s.generationStore->generation();
  auto feedsInPlace = [&](int index, const ResidentValue &value) {
    if (value.generation != generation)
      return false;
    auto readers = sig->feedRanks.find(index);
    if (readers == sig->feedRanks.end())
      return true;
    const std::vector<int64_t> &whole = inputs[index]->shape;
    for (int r : readers->second) {
      auto piece = value.pieces.find(r);
      if (piece == value.pieces.end())
        return false;
      std::vector<int64_t> offsets(whole.size(), 0), shape = whole;
      if (auto it = sig->feedShards.find(index); it != sig->feedShards.end())
        if (auto mine = it->second.find(r); mine != it->second.end()) {
          offsets = mine->second.offsets;
          shape = mine->second.shape;
        }
      std::vector<int64_t> held = piece->second.offsets;
      if (held.empty())
        held.assign(whole.size(), 0);
      if (held != offsets || piece->second.shape != shape)
        return false;
    }
    return true;
  };
  std::set<int> inPlace;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] || !inputs[i]->resident)
      continue;
    if (feedsInPlace(static_cast<int>(i), *inputs[i]->resident)) {
      inPlace.insert(static_cast<int>(i));
      continue;
    }
    auto whole = fetchResident(*inputs[i]);
    if (!whole.isOk())
      return whole.status().withContext("input " + std::to_string(i) +
                                        " of plan '" + plan + "'");
    materialized.push_back(std::move(whole).value());
    inputs[i] = &materialized.back();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.residentStats.fetchedToFeed;
  }
  for (auto &[index, type] : sig->feeds) {
    const HostTensor &in = *inputs[index];
    if (in.dtype != type.first || in.shape != type.second)
      return Status(StatusCode::InvalidArgument,
                    "input " + std::to_string(index) + " of plan '" + plan +
                        "' must be " + shapeText(type.first, type.second) +
                        ", got " + in.describe());
    // No size helper for every dtype here: the worker checks bytes exactly.
    if (in.data.empty() && in.numElements() != 0 && !inPlace.count(index))
      return Status(StatusCode::InvalidArgument,
                    "input " + std::to_string(index) + " has no data");
  }
  int n = s.options.worldSize;
  std::vector<control::RunStepRequest> requests(n);
  if (step < 0) {
    std::lock_guard<std::mutex> lock(s.mutex);
    step = s.registry.nextStep[plan]++;
  }
  std::vector<int64_t> bytes(n, 0);
  std::vector<int64_t> releases;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    releases.swap(s.residentReleases);
    s.residentStats.released += static_cast<int64_t>(releases.size());
    s.residentStats.fedInPlace += static_cast<int64_t>(inPlace.size());
  }
  for (int r = 0; r < n; ++r) {
    requests[r].plan = plan;
    requests[r].step = step;
    requests[r].releases = releases;
  }
  // Outputs kept resident: each rank holding a copy keeps it as a new slot.
  std::map<int, std::shared_ptr<ResidentValue>> keptOutputs;
  if (keeps)
    for (int index : *keeps) {
      auto pieces = sig->fetchPieces.find(index);
      if (pieces == sig->fetchPieces.end() || pieces->second.empty())
        continue;
      auto value = std::make_shared<ResidentValue>();
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        value->slot = s.nextResidentSlot++;
      }
      value->generation = generation;
      for (auto &[r, shard] : pieces->second) {
        value->pieces[r] = {shard.offsets, shard.shape};
        control::Keep keep;
        keep.index = index;
        keep.slot = value->slot;
        requests[r].keeps.push_back(keep);
      }
      keptOutputs[index] = std::move(value);
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.residentStats.kept;
    }
  // Ranks fed a shard get only that piece of the input.
  std::map<std::pair<int, int>, std::string> shards;
  for (auto &[index, ranks] : sig->feedRanks)
    for (int r : ranks) {
      control::Feed feed;
      feed.index = index;
      feed.tensor.dtype = inputs[index]->dtype;
      feed.tensor.shape = inputs[index]->shape;
      if (inPlace.count(index)) {
        feed.slot = inputs[index]->resident->slot;
        requests[r].feeds.push_back(std::move(feed));
        continue;
      }
      if (auto it = sig->feedShards.find(index); it != sig->feedShards.end())
        if (auto piece = it->second.find(r); piece != it->second.end()) {
          auto cut = cutShard(*inputs[index], piece->second);
          if (!cut.isOk())
            return cut.status().withContext("input " + std::to_string(index) +
                                            " of plan '" + plan + "'");
          shards[{r, index}] = std::move(cut).value();
          feed.tensor.shape = piece->second.shape;
        }
      // The bytes: in the message or staged (below).
      requests[r].feeds.push_back(std::move(feed));
    }
  if (Status st = s.stageRequests(*sig, inputs, shards, requests); !st)
    return st;
  for (int r = 0; r < n; ++r)
    for (const control::Feed &feed : requests[r].feeds)
      bytes[r] += static_cast<int64_t>(feed.tensor.data.size());
  for (int r = 0; r < n; ++r)
    if (bytes[r] + 65536 > s.limits.maxMessageBytes)
      return Status(StatusCode::InvalidArgument,
                    "the inputs rank " + std::to_string(r) + " reads are " +
                        std::to_string(bytes[r]) +
                        " bytes, above the control message limit of " +
                        std::to_string(s.limits.maxMessageBytes) +
                        " (MONARCH_MAX_MESSAGE_BYTES)");
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r)
    all[r] = r;
  auto shared = std::make_shared<std::vector<control::RunStepRequest>>(
      std::move(requests));
  auto gather = std::make_shared<Gather<control::RunStepReply>>(n);
  int64_t startUs = TraceWriter::nowUs();
  // One message per worker, every one sent before any reply is read: the
  // workers run the step concurrently and no thread hand-off is paid. A
  // failure elsewhere unblocks a pending read (the supervisor shuts the
  // dispatch sockets down first thing).
  auto always = [](const Status &) { return true; };
  std::vector<ControlClient *> clients(n);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (int r = 0; r < n; ++r)
      clients[r] = s.workers.ranks[r].client.get();
  }
  std::vector<bool> sent(n, false);
  int spinUs = s.replySpin(n);
  for (int phase = 0; phase < 2; ++phase)
    for (int r = 0; r < n; ++r) {
      if (phase == 1 && !sent[r])
        continue;
      CallFailure failure;
      Status st = phase == 0 ? clients[r]->sendRunStep((*shared)[r], &failure)
                             : clients[r]->recvRunStep(gather->replies[r],
                                                       spinUs, &failure);
      if (phase == 0)
        sent[r] = st.isOk();
      if (!st) {
        std::lock_guard<std::mutex> lock(s.mutex);
        gather->statuses[r] =
            classifyLocked(s, r, st, failure, {plan, step}, always);
      }
    }
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    if (Status failure = settleLocked(s, lock, gather->statuses, always);
        !failure)
      return failure;
  }
  for (int r = 0; r < n; ++r)
    if (!gather->statuses[r])
      return gather->statuses[r];
  int64_t endUs = TraceWriter::nowUs();

  std::vector<HostTensor> outputs(sig->fetches.size());
  for (auto &[index, value] : keptOutputs) {
    const auto &[dtype, shape] = sig->fetches.at(index);
    outputs[index].dtype = dtype;
    outputs[index].shape = shape;
    outputs[index].resident = std::move(value);
  }
  for (auto &[index, shards] : sig->fetchShards) {
    if (keptOutputs.count(index))
      continue;
    const auto &[dtype, shape] = sig->fetches.at(index);
    HostTensor &whole = outputs[index];
    whole.dtype = dtype;
    whole.shape = shape;
    whole.data.assign(
        static_cast<size_t>(whole.numElements()) * elementBytes(dtype), '\0');
    for (const PlanSignature::Shard &shard : shards) {
      control::Fetch *fetch = nullptr;
      for (control::Fetch &f : gather->replies[shard.rank].fetches)
        if (f.index == index)
          fetch = &f;
      if (!fetch)
        return Status(StatusCode::Internal,
                      "rank " + std::to_string(shard.rank) +
                          " did not return its shard of fetch " +
                          std::to_string(index) + " of plan '" + plan + "'");
      auto data = s.fetchedBytes(shard.rank, *fetch);
      if (!data.isOk())
        return data.status();
      if (Status st = placeShard(whole, shard, *data); !st)
        return st.withContext("fetch " + std::to_string(index) + " of plan '" +
                              plan + "'");
    }
  }
  for (auto &[index, rank] : sig->fetchRank) { // not the sharded ones
    if (keptOutputs.count(index))
      continue;
    bool found = false;
    for (control::Fetch &fetch : gather->replies[rank].fetches)
      if (fetch.index == index) {
        auto data = s.fetchedBytes(rank, fetch);
        if (!data.isOk())
          return data.status();
        fetch.tensor.data = std::move(data).value();
        outputs[index] = fromWire(std::move(fetch.tensor));
        found = true;
        break;
      }
    if (!found)
      return Status(StatusCode::Internal,
                    "rank " + std::to_string(rank) + " did not return fetch " +
                        std::to_string(index) + " of plan '" + plan + "'");
  }
  {
    std::vector<std::vector<std::string>> prints(n);
    bool any = false;
    for (int r = 0; r < n; ++r) {
      prints[r] = std::move(gather->replies[r].prints);
      any |= !prints[r].empty();
    }
    if (any)
      s.deliverPrints(prints);
  }
  if (!s.options.tracePath.empty()) {
    s.trace.add({-1, -1, plan + " step " + std::to_string(step), "step",
                 startUs, endUs - startUs, std::string()});
    for (int r = 0; r < n; ++r)
      for (const control::TraceEvent &e : gather->replies[r].trace)
        s.trace.add({r, e.stream, e.name, e.category, e.startUs, e.durationUs,
                     e.__isset.location ? e.location : std::string()});
  }
  return outputs;
}

} // namespace monarch::executor
