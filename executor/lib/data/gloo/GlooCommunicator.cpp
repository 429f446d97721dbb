//===- GlooCommunicator.cpp - The Gloo (CPU, TCP) communicator --*- C++ -*-===//
//
// A group runs in three phases: every point-to-point op is posted to its
// pair at once (so sends and receives in one group cannot deadlock against
// each other), then the collectives run one after another, then the
// point-to-point ops are waited for against the group's deadline. Sends to
// self are matched with receives from self of the same group by tag and
// copied. Every Gloo exception is caught here and becomes a status; the
// first failure breaks the group so that the peers fail fast as well.
//
//===----------------------------------------------------------------------===//

#include "GlooCommunicator.h"
#include "core/Reduction.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/math.h>
#include <gloo/transport/unbound_buffer.h>

#include <cstring>

namespace monarch::executor::gloo_backend {
namespace {

/// Gloo's own slot prefixes are 1..8 in the top byte; ours for send/recv.
constexpr uint64_t kP2PSlotPrefix = uint64_t(0x80) << 56;
/// Our ring reduce-scatter: the collective's tag and the step below it.
constexpr uint64_t kRingSlotPrefix = uint64_t(0x81) << 56;

/// The slot of a send or recv: the tag and the byte count mixed into the low
/// 56 bits. Gloo terminates the process when a message is longer than the
/// receive posted for it; with the size in the slot, a send and a recv of
/// different sizes never match and both fail at their deadline instead.
uint64_t p2pSlot(uint64_t tag, size_t bytes) {
  uint64_t x =
      tag * 0x9E3779B97F4A7C15ull ^ (uint64_t(bytes) + 0x632BE59BD9B4E019ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return kP2PSlotPrefix | (x >> 8);
}

using data::isP2P;

/// Calls `fn` with a null pointer of the unsigned type as wide as `dtype`, so
/// Gloo sees element counts and sizes that match our reduce callback.
template <typename Fn> void withElementType(DType dtype, Fn &&fn) {
  switch (dtypeSize(dtype)) {
  case 1:
    return fn(static_cast<uint8_t *>(nullptr));
  case 2:
    return fn(static_cast<uint16_t *>(nullptr));
  case 4:
    return fn(static_cast<uint32_t *>(nullptr));
  default:
    return fn(static_cast<uint64_t *>(nullptr));
  }
}

void glooAllReduce(const std::shared_ptr<::gloo::Context> &ctx, const void *in,
                   void *out, size_t count, DType dtype, ReduceOp reduce,
                   uint32_t tag, std::chrono::milliseconds timeout) {
  ::gloo::AllreduceOptions opts(ctx);
  withElementType(dtype, [&](auto *typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    if (in != out)
      opts.setInput<T>(static_cast<T *>(const_cast<void *>(in)), count);
    opts.setOutput<T>(static_cast<T *>(out), count);
  });
  if (reduce == ReduceOp::Sum && dtype == DType::F32)
    opts.setReduceFunction(
        static_cast<void (*)(void *, const void *, const void *, size_t)>(
            &::gloo::sum<float>));
  else
    opts.setReduceFunction(
        [dtype, reduce](void *o, const void *a, const void *b, size_t n) {
          data::reduceElements(o, a, b, n, dtype, reduce);
        });
  opts.setTag(tag);
  opts.setTimeout(timeout);
  ::gloo::allreduce(opts);
}

} // namespace

GlooCommunicator::GlooCommunicator(std::shared_ptr<GlooGroup> group,
                                   std::string name, uint32_t duplicateId)
    : GroupCommunicator(std::move(group), std::move(name), duplicateId,
                        "gloo") {
  group_->attach(this);
}

GlooCommunicator::~GlooCommunicator() {
  shutDown();
  group_->detach(this);
}

std::shared_ptr<Work> GlooCommunicator::post(std::vector<CommOp> ops) {
  if (std::shared_ptr<Work> refused = refusal(ops))
    return refused;
  Entry entry;
  entry.ops = std::move(ops);
  entry.work = std::make_shared<Work>();
  std::shared_ptr<Work> work = entry.work;
  queue_.push([&](bool) {
    entry.collectiveTags =
        data::collectiveTags(entry.ops, duplicateId_, collectiveSeq_);
    return std::move(entry);
  });
  return work;
}

void GlooCommunicator::ringReduceScatter(const CommOp &op, uint32_t tag) {
  // Gloo has no reduce-scatter with options. A ring: at step s this rank
  // sends its running sum of block (r - s - 1) to the right, receives the
  // left neighbour's running sum of block (r - s - 2) and adds its own input
  // block; after n - 1 steps it holds the full reduction of block r. Each
  // rank sends and receives (n - 1) blocks, like an optimal reduce-scatter.
  const auto &ctx = group_->context();
  int n = size(), r = rank();
  size_t bytes = op.count * dtypeSize(op.dtype);
  const char *in = static_cast<const char *>(op.input);
  scratch_.resize(2 * bytes);
  char *acc = scratch_.data(), *incoming = scratch_.data() + bytes;
  auto block = [&](int i) { return in + size_t((i % n + n) % n) * bytes; };
  std::memcpy(acc, block(r - 1), bytes);
  auto deadline = std::chrono::steady_clock::now() + group_->timeout();
  auto sendBuf = ctx->createUnboundBuffer(acc, bytes);
  auto recvBuf = ctx->createUnboundBuffer(incoming, bytes);
  for (int s = 0; s < n - 1; ++s) {
    uint64_t slot = kRingSlotPrefix | uint64_t(tag) << 16 | uint64_t(s);
    sendBuf->send((r + 1) % n, slot);
    recvBuf->recv((r + n - 1) % n, slot);
    auto left = std::max(std::chrono::milliseconds(1),
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now()));
    if (!recvBuf->waitRecv(left) || !sendBuf->waitSend(left))
      throw std::runtime_error("reduce_scatter wait aborted");
    bool last = s == n - 2;
    data::reduceElements(last ? op.output : acc, incoming, block(r - s - 2),
                         op.count, op.dtype, op.reduce);
  }
}

Status GlooCommunicator::runCollective(const CommOp &op, uint32_t tag) {
  const auto &ctx = group_->context();
  auto timeout = group_->timeout();
  size_t elem = dtypeSize(op.dtype);
  size_t bytes = op.count * elem;
  int n = size();
  switch (op.kind) {
  case CommOpKind::AllReduce:
    if (n == 1) {
      if (op.input != op.output)
        std::memmove(op.output, op.input, bytes);
    } else {
      glooAllReduce(ctx, op.input, op.output, op.count, op.dtype, op.reduce,
                    tag, timeout);
    }
    if (op.reduce == ReduceOp::Avg)
      data::finishAverage(op.output, op.count, op.dtype, n);
    return Status::ok();
  case CommOpKind::ReduceScatter:
    if (n == 1)
      std::memmove(op.output, op.input, bytes);
    else
      ringReduceScatter(op, tag);
    if (op.reduce == ReduceOp::Avg)
      data::finishAverage(op.output, op.count, op.dtype, n);
    return Status::ok();
  case CommOpKind::AllGather: {
    if (n == 1) {
      std::memmove(op.output, op.input, bytes);
      return Status::ok();
    }
    ::gloo::AllgatherOptions opts(ctx);
    opts.setInput<uint8_t>(static_cast<uint8_t *>(const_cast<void *>(op.input)),
                           bytes);
    opts.setOutput<uint8_t>(static_cast<uint8_t *>(op.output), bytes * n);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    ::gloo::allgather(opts);
    return Status::ok();
  }
  case CommOpKind::Broadcast: {
    if (rank() == op.peer && op.input != op.output)
      std::memmove(op.output, op.input, bytes);
    if (n == 1)
      return Status::ok();
    ::gloo::BroadcastOptions opts(ctx);
    opts.setOutput<uint8_t>(static_cast<uint8_t *>(op.output), bytes);
    opts.setRoot(op.peer);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    ::gloo::broadcast(opts);
    return Status::ok();
  }
  case CommOpKind::AllToAll: {
    if (n == 1) {
      std::memmove(op.output, op.input, bytes);
      return Status::ok();
    }
    ::gloo::AlltoallOptions opts(ctx);
    opts.setInput<uint8_t>(static_cast<uint8_t *>(const_cast<void *>(op.input)),
                           bytes * n);
    opts.setOutput<uint8_t>(static_cast<uint8_t *>(op.output), bytes * n);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    ::gloo::alltoall(opts);
    return Status::ok();
  }
  case CommOpKind::Send:
  case CommOpKind::Recv:
    break;
  }
  return Status(StatusCode::Internal, "gloo: not a collective");
}

Status GlooCommunicator::runEntry(Entry &entry) {
  const auto &ctx = group_->context();
  auto deadline = std::chrono::steady_clock::now() + group_->timeout();
  struct Pending {
    const CommOp *op;
    std::unique_ptr<::gloo::transport::UnboundBuffer> buffer;
  };
  std::vector<Pending> pending;
  std::vector<const CommOp *> selfSends, selfRecvs;
  const CommOp *current = nullptr;
  for (const CommOp &op : entry.ops) {
    if (isP2P(op) && op.count != 0 && op.peer == rank())
      (op.kind == CommOpKind::Send ? selfSends : selfRecvs).push_back(&op);
  }
  // Self sends pair with self receives of the same tag, in order.
  for (const CommOp *send : selfSends) {
    auto it =
        std::find_if(selfRecvs.begin(), selfRecvs.end(),
                     [&](const CommOp *r) { return r->tag == send->tag; });
    if (it == selfRecvs.end())
      return Status(StatusCode::InvalidArgument,
                    "gloo " + send->describe() +
                        ": a send to self needs a receive from self with the "
                        "same tag in the same group");
    if ((*it)->count * dtypeSize((*it)->dtype) !=
        send->count * dtypeSize(send->dtype))
      return Status(StatusCode::InvalidArgument,
                    "gloo " + send->describe() +
                        ": size differs from the matching receive from self");
    std::memmove((*it)->output, send->input,
                 send->count * dtypeSize(send->dtype));
    selfRecvs.erase(it);
  }
  if (!selfRecvs.empty())
    return Status(StatusCode::InvalidArgument,
                  "gloo " + selfRecvs.front()->describe() +
                      ": a receive from self needs a send to self with the "
                      "same tag in the same group");
  try {
    for (const CommOp &op : entry.ops) {
      if (!isP2P(op) || op.count == 0)
        continue;
      if (op.peer == rank())
        continue;
      current = &op;
      size_t bytes = op.count * dtypeSize(op.dtype);
      uint64_t slot = p2pSlot(op.tag == kAutoTag ? 0 : op.tag, bytes);
      if (op.kind == CommOpKind::Send) {
        auto buf =
            ctx->createUnboundBuffer(const_cast<void *>(op.input), bytes);
        buf->send(op.peer, slot);
        pending.push_back({&op, std::move(buf)});
      } else {
        auto buf = ctx->createUnboundBuffer(op.output, bytes);
        buf->recv(op.peer, slot);
        pending.push_back({&op, std::move(buf)});
      }
    }
    size_t c = 0;
    for (const CommOp &op : entry.ops) {
      if (isP2P(op))
        continue;
      uint32_t tag = entry.collectiveTags[c++];
      if (op.count == 0)
        continue;
      current = &op;
      Status st = runCollective(op, tag);
      if (!st)
        return st;
    }
    for (Pending &p : pending) {
      current = p.op;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() < 1)
        left = std::chrono::milliseconds(1);
      bool ok = p.op->kind == CommOpKind::Send ? p.buffer->waitSend(left)
                                               : p.buffer->waitRecv(left);
      if (!ok)
        throw std::runtime_error("wait aborted");
    }
  } catch (...) {
    std::string what = current ? current->describe() : "group";
    Status st = group_->statusFromException(std::current_exception(), what);
    if (st.code() == StatusCode::DeadlineExceeded && current &&
        !isP2P(*current))
      st = Status(st.code(), st.message() + "; every member must post the "
                                            "same collective (kind, count, "
                                            "type, reduction, root) in the "
                                            "same order");
    else if (st.code() == StatusCode::DeadlineExceeded && current &&
             isP2P(*current))
      st = Status(
          st.code(),
          st.message() + "; the peer posted no matching " +
              (current->kind == CommOpKind::Send ? "recv" : "send") + " of " +
              std::to_string(current->count * dtypeSize(current->dtype)) +
              " bytes with tag " +
              std::to_string(current->tag == kAutoTag ? 0 : current->tag) +
              " (sizes and tags must agree)");
    // Complete first so that this op reports its own failure, not the
    // Aborted that breaking the group gives everything else.
    entry.work->complete(st);
    group_->breakWith(st);
    return st;
  }
  return Status::ok();
}

StatusOr<std::unique_ptr<Communicator>>
createGlooCommunicator(Store &store, int worldRank,
                       const std::vector<int> &ranks, const std::string &name,
                       const CommOptions &options) {
  try {
    StatusOr<std::shared_ptr<GlooGroup>> group =
        GlooGroup::connect(store, worldRank, ranks, name, options);
    if (!group)
      return group.status();
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(std::move(*group), name, 0));
  } catch (const std::exception &e) {
    // Gloo's and the standard library's (a thread that cannot start).
    return Status(StatusCode::Internal,
                  "gloo communicator '" + name + "': " + e.what());
  }
}

} // namespace monarch::executor::gloo_backend
