//===- NcclCommunicator.cpp - The NCCL (GPU) communicator -------*- C++ -*-===//
//
// One NCCL communicator and one CUDA stream per Communicator object; a worker
// thread posts each group between ncclGroupStart/End, records an event and
// polls it (and ncclCommGetAsyncError) against the op deadline, so every
// wait is bounded even when a peer is gone. Communicators are created
// non-blocking for the same reason: the unique id travels through the Store,
// and a rank that never arrives turns into DeadlineExceeded, not a hang.
// abort() calls ncclCommAbort. Buffers are device pointers, and post() does
// not order against the caller's CUDA streams: their data must be ready when
// the group starts (a completed Work means the communicator's stream is done
// with them). Tags are not used: NCCL matches ops in posting order.
//
// Without MONARCH_HAVE_CUDA every creation fails with Unavailable.
//
//===----------------------------------------------------------------------===//

#include "NcclCommunicator.h"
#include "core/Reduction.h"

#ifdef MONARCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#endif

namespace monarch::executor::nccl_backend {

#ifndef MONARCH_HAVE_CUDA

Status ncclAvailable() {
  return Status(StatusCode::Unavailable, "nccl: this build has no CUDA");
}

StatusOr<std::unique_ptr<Communicator>>
createNcclCommunicator(Store &, int, const std::vector<int> &,
                       const std::string &, const CommOptions &) {
  return ncclAvailable();
}

#else

namespace {

using Clock = std::chrono::steady_clock;

Status cudaStatus(cudaError_t err, const std::string &what) {
  return Status(StatusCode::Unavailable,
                "nccl: " + what + ": " + cudaGetErrorString(err));
}

Status ncclStatus(ncclResult_t res, const std::string &what) {
  return Status(res == ncclInvalidArgument || res == ncclInvalidUsage
                    ? StatusCode::InvalidArgument
                    : StatusCode::Unavailable,
                "nccl: " + what + ": " + ncclGetErrorString(res));
}

ncclDataType_t ncclType(DType t) {
  switch (t) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::I1:
  case DType::UI8:
    return ncclUint8;
  case DType::I16: // moved as bytes; reductions are refused in issue()
    return ncclUint8;
  case DType::I8:
    return ncclInt8;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return ncclSum;
  case ReduceOp::Prod:
    return ncclProd;
  case ReduceOp::Max:
    return ncclMax;
  case ReduceOp::Min:
    return ncclMin;
  case ReduceOp::Avg:
    return ncclAvg;
  }
  return ncclSum;
}

/// Polls a non-blocking communicator until its pending call settles.
ncclResult_t settle(ncclComm_t comm, Clock::time_point deadline,
                    const std::atomic<bool> *aborted) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t res = ncclCommGetAsyncError(comm, &state);
    if (res != ncclSuccess)
      return res;
    if (state != ncclInProgress)
      return state;
    if (Clock::now() >= deadline || (aborted && aborted->load()))
      return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream, int device, int rank,
                   std::vector<int> worldRanks, std::string name,
                   std::chrono::milliseconds timeout)
      : comm_(comm), stream_(stream), device_(device), rank_(rank),
        worldRanks_(std::move(worldRanks)), name_(std::move(name)),
        timeout_(timeout) {
    worker_ = std::thread([this] { run(); });
  }

  ~NcclCommunicator() override {
    // A posting blocked in NCCL holds mutex_; let it give up first.
    abortRequested_ = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      if (busy_ || !queue_.empty())
        abortLocked("communicator destroyed with work pending");
    }
    cv_.notify_all();
    completeFailed();
    worker_.join();
    completeFailed();
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_)
      ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

  Backend backend() const override { return Backend::Nccl; }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(worldRanks_.size()); }
  const std::vector<int> &worldRanks() const override { return worldRanks_; }
  const std::string &name() const override { return name_; }

  std::shared_ptr<Work> post(std::vector<CommOp> ops) override {
    for (const CommOp &op : ops) {
      Status st = data::validateOp(op, rank_, size(), "nccl");
      if (!st)
        return Work::completed(st);
    }
    auto work = std::make_shared<Work>();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_)
        return Work::completed(broken());
      queue_.emplace_back(std::move(ops), work);
    }
    cv_.notify_all();
    return work;
  }

  void abort(const std::string &reason) override {
    // Stops a posting that is waiting for NCCL (under mutex_) first.
    abortRequested_ = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abortLocked("aborted on rank " + std::to_string(rank_) + ": " + reason);
    }
    completeFailed();
  }

  bool isAborted() const override { return aborted_.load(); }

  StatusOr<std::unique_ptr<Communicator>>
  duplicate(const std::string &name) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_)
      return broken();
    cudaSetDevice(device_);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t split = nullptr;
    ncclResult_t res = ncclCommSplit(comm_, 0, rank_, &split, &config);
    if (res == ncclSuccess || res == ncclInProgress)
      res = settle(split, Clock::now() + timeout_, nullptr);
    if (res != ncclSuccess) {
      if (split)
        ncclCommAbort(split);
      return res == ncclInProgress
                 ? Status(StatusCode::DeadlineExceeded,
                          "nccl communicator '" + name_ +
                              "': duplicate not completed within " +
                              std::to_string(timeout_.count()) + " ms")
                 : ncclStatus(res, "ncclCommSplit");
    }
    cudaStream_t stream;
    cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
      ncclCommDestroy(split);
      return cudaStatus(err, "cudaStreamCreate");
    }
    return std::unique_ptr<Communicator>(std::make_unique<NcclCommunicator>(
        split, stream, device_, rank_, worldRanks_, name, timeout_));
  }

private:
  Status broken() const {
    return Status(StatusCode::Aborted,
                  "nccl communicator '" + name_ + "' is broken: " + reason_);
  }

  /// Aborts NCCL and moves the pending work to toFail_; the caller
  /// completes it (completeFailed) after releasing mutex_, since completion
  /// callbacks may call back into this communicator.
  void abortLocked(const std::string &reason) {
    if (aborted_.exchange(true))
      return;
    reason_ = reason;
    ncclCommAbort(comm_);
    for (auto &e : queue_)
      toFail_.push_back(e.second);
    queue_.clear();
    if (inFlight_)
      toFail_.push_back(inFlight_);
  }

  void completeFailed() {
    std::vector<std::shared_ptr<Work>> works;
    Status st;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      works.swap(toFail_);
      st = broken();
    }
    for (auto &w : works)
      w->complete(st);
  }

  Status issue(const CommOp &op) {
    ncclDataType_t t = ncclType(op.dtype);
    size_t bytes = op.count * dtypeSize(op.dtype);
    size_t count = op.count;
    ncclRedOp_t red = ncclOp(op.reduce);
    bool reduces = op.kind == CommOpKind::AllReduce ||
                   op.kind == CommOpKind::ReduceScatter;
    if (op.dtype == DType::I16) {
      // NCCL has no 16-bit integers: move them as bytes.
      if (reduces)
        return Status(StatusCode::InvalidArgument,
                      "nccl: no reduction of int16 (NCCL lacks the type)");
      count *= 2;
    } else if (op.dtype == DType::I1) {
      // Bools are bytes of 0 or 1: sum is "any" (max), prod "all" (min).
      if (op.reduce == ReduceOp::Sum)
        red = ncclMax;
      else if (op.reduce == ReduceOp::Prod)
        red = ncclMin;
    }
    int n = size();
    switch (op.kind) {
    case CommOpKind::Send:
      return check(ncclSend(op.input, count, t, op.peer, comm_, stream_));
    case CommOpKind::Recv:
      return check(ncclRecv(op.output, count, t, op.peer, comm_, stream_));
    case CommOpKind::AllReduce:
      return check(
          ncclAllReduce(op.input, op.output, count, t, red, comm_, stream_));
    case CommOpKind::AllGather:
      return check(
          ncclAllGather(op.input, op.output, count, t, comm_, stream_));
    case CommOpKind::ReduceScatter:
      return check(ncclReduceScatter(op.input, op.output, count, t, red, comm_,
                                     stream_));
    case CommOpKind::Broadcast:
      return check(ncclBroadcast(op.input, op.output, count, t, op.peer, comm_,
                                 stream_));
    case CommOpKind::AllToAll:
      for (int p = 0; p < n; ++p) {
        Status st =
            check(ncclSend(static_cast<const char *>(op.input) + p * bytes,
                           count, t, p, comm_, stream_));
        if (st)
          st = check(ncclRecv(static_cast<char *>(op.output) + p * bytes, count,
                              t, p, comm_, stream_));
        if (!st)
          return st;
      }
      return Status::ok();
    }
    return Status(StatusCode::Internal, "nccl: unknown op");
  }

  Status check(ncclResult_t res) {
    if (res == ncclSuccess || res == ncclInProgress)
      return Status::ok();
    return ncclStatus(res, "posting");
  }

  Status runGroup(const std::vector<CommOp> &ops) {
    auto deadline = Clock::now() + timeout_;
    Status st;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_)
        return broken();
      ncclGroupStart();
      for (const CommOp &op : ops)
        if (st && op.count != 0)
          st = issue(op);
      ncclResult_t res = ncclGroupEnd();
      if (st && res != ncclSuccess && res != ncclInProgress)
        st = ncclStatus(res, "ncclGroupEnd");
      if (st && res == ncclInProgress &&
          (res = settle(comm_, deadline, &abortRequested_)) != ncclSuccess)
        st = abortRequested_
                 ? Status(StatusCode::Aborted, "nccl communicator '" + name_ +
                                                   "': aborted while posting")
             : res == ncclInProgress
                 ? Status(StatusCode::DeadlineExceeded,
                          "nccl communicator '" + name_ +
                              "': posting not completed within " +
                              std::to_string(timeout_.count()) + " ms")
                 : ncclStatus(res, "ncclGroupEnd");
      if (st) {
        cudaError_t err = cudaEventRecord(event_, stream_);
        if (err != cudaSuccess)
          st = cudaStatus(err, "cudaEventRecord");
      }
    }
    while (st) {
      if (aborted_)
        return broken();
      cudaError_t err = cudaEventQuery(event_);
      if (err == cudaSuccess)
        break;
      if (err != cudaErrorNotReady) {
        st = cudaStatus(err, "waiting for the stream");
        break;
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        st = ncclStatus(state, "a peer failed");
        break;
      }
      if (Clock::now() >= deadline) {
        st = Status(StatusCode::DeadlineExceeded,
                    "nccl communicator '" + name_ + "': not completed within " +
                        std::to_string(timeout_.count()) + " ms");
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return st;
  }

  void run() {
    cudaSetDevice(device_);
    if (cudaEventCreateWithFlags(&event_, cudaEventDisableTiming) !=
        cudaSuccess)
      event_ = nullptr;
    for (;;) {
      std::pair<std::vector<CommOp>, std::shared_ptr<Work>> entry;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty())
          break;
        entry = std::move(queue_.front());
        queue_.pop_front();
        inFlight_ = entry.second;
        busy_ = true;
      }
      Status st = event_ ? runGroup(entry.first)
                         : Status(StatusCode::Unavailable,
                                  "nccl: cudaEventCreate failed");
      entry.second->complete(st);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        inFlight_.reset();
        busy_ = false;
        // A failed or timed-out group leaves NCCL in an unknown state: break
        // the communicator so that the peers fail fast too.
        if (!st && st.code() != StatusCode::InvalidArgument && !abortRequested_)
          abortLocked(st.message());
      }
      completeFailed();
    }
    if (event_)
      cudaEventDestroy(event_);
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  cudaEvent_t event_ = nullptr;
  int device_;
  int rank_;
  std::vector<int> worldRanks_;
  std::string name_;
  std::chrono::milliseconds timeout_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<std::vector<CommOp>, std::shared_ptr<Work>>> queue_;
  std::shared_ptr<Work> inFlight_;
  std::vector<std::shared_ptr<Work>> toFail_;
  bool busy_ = false;
  bool stopping_ = false;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> abortRequested_{false};
  std::string reason_;
  std::thread worker_;
};

} // namespace

Status ncclAvailable() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return cudaStatus(err, "no usable CUDA device (cudaGetDeviceCount)");
  if (count == 0)
    return Status(StatusCode::Unavailable, "nccl: no CUDA device visible");
  return Status::ok();
}

StatusOr<std::unique_ptr<Communicator>>
createNcclCommunicator(Store &store, int worldRank,
                       const std::vector<int> &ranks, const std::string &name,
                       const CommOptions &options) {
  Status avail = ncclAvailable();
  if (!avail)
    return avail;
  int rank =
      int(std::find(ranks.begin(), ranks.end(), worldRank) - ranks.begin());
  int size = int(ranks.size());
  cudaError_t err = cudaSetDevice(options.cudaDevice);
  if (err != cudaSuccess)
    return cudaStatus(err, "cudaSetDevice(" +
                               std::to_string(options.cudaDevice) + ")");
  std::string key = "nccl/" + name + "/unique-id";
  ncclUniqueId id;
  if (rank == 0) {
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess)
      return ncclStatus(res, "ncclGetUniqueId");
    Status st = store.set(key, std::string(id.internal, sizeof(id.internal)));
    if (!st)
      return st.withContext("nccl communicator '" + name + "'");
  } else {
    StatusOr<std::string> got = store.get(key, options.timeout);
    if (!got)
      return Status(
          got.status().code(),
          "nccl communicator '" + name + "': rank 0 (world rank " +
              std::to_string(ranks[0]) +
              ") did not publish the unique id: " + got.status().message());
    if (got->size() != sizeof(id.internal))
      return Status(StatusCode::InvalidArgument,
                    "nccl communicator '" + name + "': malformed unique id");
    std::memcpy(id.internal, got->data(), sizeof(id.internal));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (res == ncclSuccess || res == ncclInProgress)
    res = settle(comm, Clock::now() + options.timeout, nullptr);
  if (res != ncclSuccess) {
    if (comm)
      ncclCommAbort(comm);
    if (res == ncclInProgress)
      return Status(StatusCode::DeadlineExceeded,
                    "nccl communicator '" + name + "': not all " +
                        std::to_string(size) + " ranks arrived within " +
                        std::to_string(options.timeout.count()) + " ms");
    return ncclStatus(res, "ncclCommInitRank");
  }
  cudaStream_t stream;
  err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    ncclCommDestroy(comm);
    return cudaStatus(err, "cudaStreamCreate");
  }
  return std::unique_ptr<Communicator>(std::make_unique<NcclCommunicator>(
      comm, stream, options.cudaDevice, rank, ranks, name, options.timeout));
}

#endif // MONARCH_HAVE_CUDA

} // namespace monarch::executor::nccl_backend
