//===- Communicator.cpp - Work handles, op helpers and names ----*- C++ -*-===//
//
// The backend-independent parts of Communicator.h: the Work completion
// object every backend and the fake share, CommOp constructors and sizes,
// and the spellings used in plans and error messages.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Communicator.h"

namespace monarch::executor {

const char *backendName(Backend backend) {
  return backend == Backend::Gloo ? "gloo" : "nccl";
}

std::optional<Backend> parseBackend(std::string_view name) {
  if (name == "gloo")
    return Backend::Gloo;
  if (name == "nccl")
    return Backend::Nccl;
  return std::nullopt;
}

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Avg:
    return "avg";
  }
  return "unknown";
}

const char *commOpKindName(CommOpKind kind) {
  switch (kind) {
  case CommOpKind::Send:
    return "send";
  case CommOpKind::Recv:
    return "recv";
  case CommOpKind::AllReduce:
    return "all_reduce";
  case CommOpKind::AllGather:
    return "all_gather";
  case CommOpKind::ReduceScatter:
    return "reduce_scatter";
  case CommOpKind::Broadcast:
    return "broadcast";
  case CommOpKind::AllToAll:
    return "all_to_all";
  }
  return "unknown";
}

static CommOp makeOp(CommOpKind kind, const void *in, void *out, size_t count,
                     DType dtype) {
  CommOp op;
  op.kind = kind;
  op.input = in;
  op.output = out;
  op.count = count;
  op.dtype = dtype;
  return op;
}

CommOp CommOp::send(const void *buf, size_t count, DType dtype, int peer,
                    uint64_t tag) {
  CommOp op = makeOp(CommOpKind::Send, buf, nullptr, count, dtype);
  op.peer = peer;
  op.tag = tag;
  return op;
}

CommOp CommOp::recv(void *buf, size_t count, DType dtype, int peer,
                    uint64_t tag) {
  CommOp op = makeOp(CommOpKind::Recv, nullptr, buf, count, dtype);
  op.peer = peer;
  op.tag = tag;
  return op;
}

CommOp CommOp::allReduce(const void *in, void *out, size_t count, DType dtype,
                         ReduceOp reduce) {
  CommOp op = makeOp(CommOpKind::AllReduce, in, out, count, dtype);
  op.reduce = reduce;
  return op;
}

CommOp CommOp::allGather(const void *in, void *out, size_t countPerRank,
                         DType dtype) {
  return makeOp(CommOpKind::AllGather, in, out, countPerRank, dtype);
}

CommOp CommOp::reduceScatter(const void *in, void *out, size_t countPerRank,
                             DType dtype, ReduceOp reduce) {
  CommOp op = makeOp(CommOpKind::ReduceScatter, in, out, countPerRank, dtype);
  op.reduce = reduce;
  return op;
}

CommOp CommOp::broadcast(const void *in, void *out, size_t count, DType dtype,
                         int root) {
  CommOp op = makeOp(CommOpKind::Broadcast, in, out, count, dtype);
  op.peer = root;
  return op;
}

CommOp CommOp::allToAll(const void *in, void *out, size_t countPerRank,
                        DType dtype) {
  return makeOp(CommOpKind::AllToAll, in, out, countPerRank, dtype);
}

size_t CommOp::inputBytes(int size) const {
  size_t elems = count;
  if (kind == CommOpKind::Recv)
    elems = 0;
  else if (kind == CommOpKind::ReduceScatter || kind == CommOpKind::AllToAll)
    elems = count * size;
  return elems * dtypeSize(dtype);
}

size_t CommOp::outputBytes(int size) const {
  size_t elems = count;
  if (kind == CommOpKind::Send)
    elems = 0;
  else if (kind == CommOpKind::AllGather || kind == CommOpKind::AllToAll)
    elems = count * size;
  return elems * dtypeSize(dtype);
}

std::string CommOp::describe() const {
  std::string s = commOpKindName(kind);
  if (kind == CommOpKind::AllReduce || kind == CommOpKind::ReduceScatter)
    s += std::string(" ") + reduceOpName(reduce);
  s += " of " + std::to_string(count) + " x " + dtypeName(dtype);
  if (kind == CommOpKind::Send)
    s += " to rank " + std::to_string(peer);
  else if (kind == CommOpKind::Recv)
    s += " from rank " + std::to_string(peer);
  else if (kind == CommOpKind::Broadcast)
    s += " from root " + std::to_string(peer);
  return s;
}

Status Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [&] { return status_.has_value(); }))
    return Status(StatusCode::DeadlineExceeded,
                  "communication not completed within " +
                      std::to_string(timeout.count()) + " ms");
  return *status_;
}

std::optional<Status> Work::poll() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void Work::onComplete(std::function<void(const Status &)> fn) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!status_) {
    callbacks_.push_back(std::move(fn));
    return;
  }
  Status status = *status_;
  lock.unlock();
  fn(status);
}

void Work::complete(Status status) {
  std::vector<std::function<void(const Status &)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_)
      return;
    status_ = std::move(status);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto &fn : callbacks)
    fn(*status_);
}

std::shared_ptr<Work> Work::completed(Status status) {
  auto work = std::make_shared<Work>();
  work->complete(std::move(status));
  return work;
}

} // namespace monarch::executor
