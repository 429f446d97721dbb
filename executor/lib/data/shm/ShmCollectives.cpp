//===- ShmCollectives.cpp - Collectives over shm messages -------*- C++ -*-===//
//
// Each collective is a few exchanges of tagged messages (all sends and
// receives of a step posted together, then waited for). On one host the
// direct patterns are as cheap in bytes as rings and need fewer steps:
//  * all_gather, broadcast, all_to_all: one exchange, straight into the
//    output buffers;
//  * reduce_scatter: every rank sends block j to rank j, which reduces the
//    n blocks in rank order (in slices of at most kBlockBytes);
//  * all_reduce: up to kSmallAllReduceBytes every rank sends its whole
//    buffer to every other and reduces all n in rank order (one step);
//    above, per slice, a reduce_scatter then an all_gather of the reduced
//    blocks (2 (n-1)/n of the buffer sent per rank, like a ring).
// Reducing in rank order everywhere gives every rank the same bits whatever
// the path. Small collectives matched per object skip the messages and read
// the peers' mapped areas instead (ShmDirect.cpp); runCollective chooses.
//
//===----------------------------------------------------------------------===//

#include "ShmCommunicator.h"
#include "core/Reduction.h"

#include <cstring>

namespace monarch::executor::shm_backend {
namespace {

constexpr size_t kSmallAllReduceBytes = size_t(32) << 10;
constexpr size_t kBlockBytes = size_t(4) << 20;
/// The largest input that goes through the mapped areas (ShmDirect.cpp).
/// Above it the messages are faster here: on this 2-core EPYC VM a rank
/// reads what its peer just wrote at ~2 GB/s between phases, against
/// ~8 GB/s when the ring streams (docs/executor-data-plane.md).
constexpr size_t kDirectMaxBytes = size_t(64) << 10;

/// Start and length of block `i` when `count` elements split into `n`.
std::pair<size_t, size_t> blockOf(size_t count, int n, int i) {
  size_t base = count / n, extra = count % n;
  size_t start = i * base + std::min<size_t>(i, extra);
  return {start, base + (size_t(i) < extra ? 1 : 0)};
}

} // namespace

void ShmCommunicator::Exchange::send(int peer, uint64_t tag, const void *src,
                                     size_t bytes) {
  if (bytes == 0)
    return;
  ShmRequest r;
  r.isSend = true;
  r.peer = peer;
  r.tag = tag;
  r.bytes = bytes;
  r.src = static_cast<const char *>(src);
  reqs.push_back(r);
}

void ShmCommunicator::Exchange::recv(int peer, uint64_t tag, void *dst,
                                     size_t bytes) {
  if (bytes == 0)
    return;
  ShmRequest r;
  r.peer = peer;
  r.tag = tag;
  r.bytes = bytes;
  r.dst = static_cast<char *>(dst);
  reqs.push_back(r);
}

Status ShmCommunicator::exchange(Exchange &ex, const CommOp &op,
                                 Clock::time_point deadline) {
  std::vector<ShmRequest *> all;
  // Receives first, so that eager messages land in place.
  for (ShmRequest &r : ex.reqs)
    if (!r.isSend)
      all.push_back(&r);
  for (ShmRequest &r : ex.reqs)
    if (r.isSend)
      all.push_back(&r);
  for (ShmRequest *r : all)
    group_->post(r);
  const ShmRequest *culprit = nullptr;
  Status st = group_->wait(all, deadline, op.describe(), &culprit);
  ex.reqs.clear();
  return st.isOk() ? st : failed(st, &op, culprit);
}

void ShmCommunicator::reduceBlocks(void *out, size_t len, size_t stride,
                                   const CommOp &op) {
  int n = size();
  const char *s = scratch_.data();
  data::reduceElements(out, s, s + stride, len, op.dtype, op.reduce);
  for (int p = 2; p < n; ++p)
    data::reduceElements(out, out, s + p * stride, len, op.dtype, op.reduce);
}

Status ShmCommunicator::allReduce(const CommOp &op, uint32_t tag,
                                  Clock::time_point deadline) {
  int n = size(), r = rank();
  size_t elem = dtypeSize(op.dtype);
  size_t bytes = op.count * elem;
  const char *in = static_cast<const char *>(op.input);
  char *out = static_cast<char *>(op.output);
  Exchange ex;
  uint32_t step = 0;
  if (bytes <= kSmallAllReduceBytes) {
    scratch_.resize(n * bytes);
    std::memcpy(scratch_.data() + r * bytes, in, bytes);
    uint64_t t = collectiveMatchTag(tag, step);
    for (int p = 0; p < n; ++p) {
      if (p == r)
        continue;
      ex.recv(p, t, scratch_.data() + p * bytes, bytes);
      ex.send(p, t, in, bytes);
    }
    Status st = exchange(ex, op, deadline);
    if (!st)
      return st;
    reduceBlocks(out, op.count, bytes, op);
    return Status::ok();
  }
  size_t blockElems = std::max<size_t>(1, kBlockBytes / elem);
  size_t sliceElems = blockElems * n;
  scratch_.resize(n * std::min(blockElems, (op.count + n - 1) / n) * elem);
  for (size_t off = 0; off < op.count; off += sliceElems) {
    size_t count = std::min(sliceElems, op.count - off);
    auto [myStart, myLen] = blockOf(count, n, r);
    size_t stride = myLen * elem;
    // Reduce-scatter: block p of the slice to rank p.
    uint64_t t = collectiveMatchTag(tag, step++);
    for (int p = 0; p < n; ++p) {
      auto [start, len] = blockOf(count, n, p);
      if (p == r)
        std::memcpy(scratch_.data() + r * stride, in + (off + start) * elem,
                    len * elem);
      else {
        ex.recv(p, t, scratch_.data() + p * stride, stride);
        ex.send(p, t, in + (off + start) * elem, len * elem);
      }
    }
    Status st = exchange(ex, op, deadline);
    if (!st)
      return st;
    reduceBlocks(out + (off + myStart) * elem, myLen, stride, op);
    // All-gather of the reduced blocks, straight into the output.
    t = collectiveMatchTag(tag, step++);
    for (int p = 0; p < n; ++p) {
      if (p == r)
        continue;
      auto [start, len] = blockOf(count, n, p);
      ex.recv(p, t, out + (off + start) * elem, len * elem);
      ex.send(p, t, out + (off + myStart) * elem, myLen * elem);
    }
    st = exchange(ex, op, deadline);
    if (!st)
      return st;
  }
  return Status::ok();
}

Status ShmCommunicator::reduceScatter(const CommOp &op, uint32_t tag,
                                      Clock::time_point deadline) {
  int n = size(), r = rank();
  size_t elem = dtypeSize(op.dtype);
  const char *in = static_cast<const char *>(op.input);
  char *out = static_cast<char *>(op.output);
  size_t blockElems = std::max<size_t>(1, kBlockBytes / elem);
  scratch_.resize(n * std::min(blockElems, op.count) * elem);
  Exchange ex;
  uint32_t step = 0;
  for (size_t off = 0; off < op.count; off += blockElems) {
    size_t len = std::min(blockElems, op.count - off);
    size_t stride = len * elem;
    uint64_t t = collectiveMatchTag(tag, step++);
    for (int p = 0; p < n; ++p) {
      const char *src = in + (p * op.count + off) * elem;
      if (p == r) {
        std::memcpy(scratch_.data() + r * stride, src, stride);
        continue;
      }
      ex.recv(p, t, scratch_.data() + p * stride, stride);
      ex.send(p, t, src, stride);
    }
    Status st = exchange(ex, op, deadline);
    if (!st)
      return st;
    reduceBlocks(out + off * elem, len, stride, op);
  }
  return Status::ok();
}

Status ShmCommunicator::runCollective(const CommOp &op, uint32_t tag,
                                      Clock::time_point deadline) {
  int n = size(), r = rank();
  size_t bytes = op.count * dtypeSize(op.dtype);
  const char *in = static_cast<const char *>(op.input);
  char *out = static_cast<char *>(op.output);
  // Among members that map each other's areas (the default), every kind
  // but all_to_all reads the peers' buffers directly (ShmDirect.cpp): the
  // areas belong to this object, so only collectives matched per object.
  // Larger ones read the peers' buffers where they are, when every member's
  // lie in memory it registered (registerMemory: a worker's arena); the
  // slots' copies would cost more than the rings.
  bool small =
      bytes * (op.kind == CommOpKind::ReduceScatter ? n : 1) <= kDirectMaxBytes;
  // (The set-up is one exchange at the first collective of either size:
  // whether a member registered memory is only known after it.)
  if (n > 1 && op.kind != CommOpKind::AllToAll &&
      (op.tag == kAutoTag || group_->collectivesInPostingOrder())) {
    if (!directTried_)
      if (Status st = setUpDirect(tag, op, deadline); !st)
        return st;
    // Both divide an average's blocks as they reduce them.
    if (direct_ && small)
      return runDirect(op, tag, deadline);
    if (direct_ && !direct_->windows.empty()) {
      bool ran = false;
      Status st = runWindow(op, tag, deadline, &ran);
      if (!st || ran)
        return st;
    }
  }
  uint64_t t = collectiveMatchTag(tag, 0);
  Exchange ex;
  switch (op.kind) {
  case CommOpKind::AllReduce:
  case CommOpKind::ReduceScatter: {
    Status st = Status::ok();
    if (n == 1) {
      if (in != out)
        std::memmove(out, in, bytes);
    } else {
      st = op.kind == CommOpKind::AllReduce ? allReduce(op, tag, deadline)
                                            : reduceScatter(op, tag, deadline);
    }
    // (Of one rank the average is the value itself.)
    if (st && op.reduce == ReduceOp::Avg && n > 1)
      data::finishAverage(out, op.count, op.dtype, n);
    return st;
  }
  case CommOpKind::AllGather:
    for (int p = 0; p < n; ++p) {
      if (p == r)
        continue;
      ex.recv(p, t, out + p * bytes, bytes);
      ex.send(p, t, in, bytes);
    }
    std::memmove(out + r * bytes, in, bytes);
    return exchange(ex, op, deadline);
  case CommOpKind::Broadcast:
    if (r == op.peer) {
      if (in != out)
        std::memmove(out, in, bytes);
      for (int p = 0; p < n; ++p)
        if (p != r)
          ex.send(p, t, out, bytes);
    } else {
      ex.recv(op.peer, t, out, bytes);
    }
    return exchange(ex, op, deadline);
  case CommOpKind::AllToAll:
    for (int p = 0; p < n; ++p) {
      if (p == r)
        continue;
      ex.recv(p, t, out + p * bytes, bytes);
      ex.send(p, t, in + p * bytes, bytes);
    }
    std::memmove(out + r * bytes, in + r * bytes, bytes);
    return exchange(ex, op, deadline);
  case CommOpKind::Send:
  case CommOpKind::Recv:
    break;
  }
  return Status(StatusCode::Internal, "shm: not a collective");
}

} // namespace monarch::executor::shm_backend
