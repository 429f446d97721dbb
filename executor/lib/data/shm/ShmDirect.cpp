//===- ShmDirect.cpp - Collectives through the peers' mapped areas -*- C++
//-*-=//
//
// all_reduce, reduce_scatter, all_gather and broadcast among the members of
// one host without messages. On its first collective a communicator object
// creates one area (a memfd, like the segments) and maps every member's,
// learning where they are through one exchange of the group's messages.
// A collective then runs as a pipeline of chunks through two slots of each
// area, with three counters per member:
//   1. each rank copies into its slot what the peers will read of its chunk
//      and publishes `posted`;
//   2. (all_reduce, reduce_scatter) each rank reduces its block of the
//      chunk, reading the peers' slots directly in rank order (an average
//      divides the block there, while it is in cache); all_reduce writes
//      the result into the rank's own slot and publishes `reduced`;
//   3. each rank copies what it needs from the peers' slots into its output
//      and publishes `consumed`.
// A slot is written again two chunks later, once every peer consumed it.
// Every block is reduced by one rank, in rank order, so all members get the
// same bits, and each byte crosses between processes once per phase (about
// 2.5 passes over the buffer for all_reduce, against one for memcpy).
//
// Waiting spins briefly on the peers' counters (yielding the core instead
// when the job's processes on this host outnumber this process's cores,
// CommOptions::processesOnHost), then sleeps on the
// rank's doorbell, which every publish rings; a sleeper wakes at least every
// 20 ms to check that the peers it waits for still live. The first chunk of
// each collective carries its descriptor (kind, count, type, reduction,
// root), so members that post different collectives fail at once.
//
//===----------------------------------------------------------------------===//

#include "ShmCommunicator.h"
#include "core/Reduction.h"
#include "core/SharedArea.h"
#include "monarch/Support/Knobs.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MONARCH_DIRECT_RELAX() _mm_pause()
#else
#define MONARCH_DIRECT_RELAX()                                                 \
  std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace monarch::executor::shm_backend {
namespace {

/// Bytes of one slot: a chunk of an all_reduce, all_gather or broadcast
/// (n blocks of a reduce_scatter). Two per area.
constexpr size_t kSlotBytes = size_t(64) << 10;
constexpr size_t kDataOffset = 4096;
constexpr size_t kAreaBytes = kDataOffset + 2 * kSlotBytes;
constexpr auto kSpin = std::chrono::microseconds(30);
constexpr auto kSlice = std::chrono::milliseconds(20);
/// Steps of the set-up messages (a collective's own steps stay far below).
constexpr uint32_t kSetUpStep = 0xfffff0;

/// What a member posted: equal on every member, or the collectives differ.
struct Descriptor {
  uint64_t seq;
  uint64_t count;
  uint32_t kind;
  uint32_t dtype;
  uint32_t reduce;
  int32_t root;
  uint32_t tag;
  uint32_t reserved = 0;
  bool operator==(const Descriptor &) const = default;
};

/// Where a member's buffers of a window collective are: offsets into its
/// registered memory, -1 where they are not in it.
struct WindowPost {
  int64_t in;
  int64_t out;
};

struct alignas(64) AreaHeader {
  alignas(64) std::atomic<uint64_t> posted;
  alignas(64) std::atomic<uint64_t> reduced;
  alignas(64) std::atomic<uint64_t> consumed;
  alignas(64) Descriptor desc[2];
  alignas(64) WindowPost window[2];
};
static_assert(sizeof(AreaHeader) <= kDataOffset);

/// Start and length of block `i` when `count` elements split into `n`.
std::pair<size_t, size_t> blockOf(size_t count, int n, int i) {
  size_t base = count / n, extra = count % n;
  size_t start = i * base + std::min<size_t>(i, extra);
  return {start, base + (size_t(i) < extra ? 1 : 0)};
}

/// The set-up message: where this member's area is, and whether it mapped
/// every peer's.
struct Where {
  int64_t pid;
  int32_t fd;
  int32_t ok;
  /// registerMemory(): its memfd and size (-1 and 0: none).
  int32_t windowFd;
  int32_t reserved;
  int64_t windowBytes;
};

/// Set-up flags: this member mapped every area; and every window.
constexpr int32_t kAreasMapped = 1;
constexpr int32_t kWindowsMapped = 2;

/// Whether `extent` bytes at offset `off` lie inside a window of `bytes`.
bool inWindow(int64_t off, size_t extent, size_t bytes) {
  return off >= 0 && size_t(off) <= bytes && extent <= bytes - size_t(off);
}

/// What a member posts for collective `op` at chunk `seq`: equal on every
/// member, or the collectives differ.
Descriptor descriptorOf(const CommOp &op, uint64_t seq, uint32_t tag) {
  return {seq,
          op.count,
          uint32_t(op.kind),
          uint32_t(op.dtype),
          uint32_t(op.reduce),
          op.kind == CommOpKind::Broadcast ? op.peer : -1,
          tag};
}

/// Bytes of a window collective's input and output on each member (0:
/// not read by the peers; broadcast: the root's input only).
std::pair<size_t, size_t> windowExtent(const CommOp &op, int n, int member) {
  size_t bytes = op.count * dtypeSize(op.dtype);
  switch (op.kind) {
  case CommOpKind::AllReduce:
    return {bytes, bytes};
  case CommOpKind::ReduceScatter:
    return {bytes * n, 0};
  case CommOpKind::AllGather:
    return {bytes, 0};
  case CommOpKind::Broadcast:
    return {member == op.peer ? bytes : 0, 0};
  default:
    return {0, 0};
  }
}

std::string describeDescriptor(const Descriptor &d) {
  std::string s = commOpKindName(CommOpKind(d.kind));
  s += " of " + std::to_string(d.count) + " " +
       dtypeName(monarch::DType(d.dtype));
  if (CommOpKind(d.kind) == CommOpKind::AllReduce ||
      CommOpKind(d.kind) == CommOpKind::ReduceScatter)
    s += std::string(" (") + reduceOpName(ReduceOp(d.reduce)) + ")";
  if (CommOpKind(d.kind) == CommOpKind::Broadcast)
    s += " from rank " + std::to_string(d.root);
  return s + " with tag " + std::to_string(d.tag);
}

/// dst = source(0) op source(1) op ... op source(n-1), in rank order, for
/// `len` elements (n >= 2; `source(p)` is rank p's block); an average is
/// then divided by n while the block is in cache, once, by the one rank that
/// reduces it, so its peers copy the same bits. dst may be one of the
/// sources (an all_reduce in place): then more than two go through a
/// cache-sized scratch chunk, so no source is read after dst overwrote it.
template <typename Source>
void reduceBlock(char *dst, int n, Source source, size_t len, DType dtype,
                 ReduceOp op) {
  const size_t elem = dtypeSize(dtype);
  const size_t bytes = len * elem;
  bool aliased = false;
  for (int p = 0; p < n && n > 2; ++p)
    aliased |= source(p) < dst + bytes && dst < source(p) + bytes;
  if (!aliased) {
    data::reduceElements(dst, source(0), source(1), len, dtype, op);
    for (int p = 2; p < n; ++p)
      data::reduceElements(dst, dst, source(p), len, dtype, op);
  } else {
    alignas(64) char scratch[16384];
    const size_t chunk = sizeof(scratch) / elem;
    for (size_t i = 0; i < len; i += chunk) {
      size_t c = std::min(chunk, len - i), at = i * elem;
      data::reduceElements(scratch, source(0) + at, source(1) + at, c, dtype,
                           op);
      for (int p = 2; p < n; ++p)
        data::reduceElements(scratch, scratch, source(p) + at, c, dtype, op);
      std::memcpy(dst + at, scratch, c * elem);
    }
  }
  if (op == ReduceOp::Avg)
    data::finishAverage(dst, len, dtype, n);
}

} // namespace

static AreaHeader &header(const ShmCommunicator::Direct &d, int r) {
  return *reinterpret_cast<AreaHeader *>(d.areas[r].data());
}
static char *slot(const ShmCommunicator::Direct &d, int r, uint64_t chunk) {
  return d.areas[r].data() + kDataOffset + (chunk % 2) * kSlotBytes;
}

Status ShmCommunicator::setUpDirect(uint32_t tag, const CommOp &op,
                                    Clock::time_point deadline) {
  directTried_ = true;
  if (knobs::getString(knobs::Id::ShmCollectives).value != "direct")
    return Status::ok();
  int n = size(), r = rank();
  auto direct = std::make_unique<Direct>();
  direct->areas.resize(n);
  Where mine{
      int64_t(::getpid()), -1, 0,
      windowFd_,           0,  int64_t(windowFd_ >= 0 ? windowBytes_ : 0)};
  auto area = SharedArea::create("monarch-shm-coll", kAreaBytes);
  if (area) {
    direct->areas[r] = std::move(*area);
    mine.fd = direct->areas[r].fd();
    mine.ok = 1;
  }
  std::vector<Where> theirs(n);
  Exchange ex;
  uint64_t t = collectiveMatchTag(tag, kSetUpStep);
  for (int p = 0; p < n; ++p) {
    if (p == r)
      continue;
    ex.recv(p, t, &theirs[p], sizeof(Where));
    ex.send(p, t, &mine, sizeof(Where));
  }
  Status st = exchange(ex, op, deadline);
  if (!st)
    return st;
  bool ok = mine.ok != 0;
  for (int p = 0; p < n && ok; ++p) {
    if (p == r)
      continue;
    auto peer =
        theirs[p].ok
            ? SharedArea::open(theirs[p].pid, theirs[p].fd, kAreaBytes)
            : StatusOr<SharedArea>(Status(StatusCode::Unavailable, "no area"));
    if (!peer)
      ok = false;
    else
      direct->areas[p] = std::move(*peer);
  }
  // Windows: every member's registered memory, where every member has some.
  bool windows = ok;
  for (int p = 0; p < n && windows; ++p)
    windows = p == r ? windowFd_ >= 0 : theirs[p].windowFd >= 0;
  if (windows) {
    direct->windows.resize(n);
    direct->windows[r].base = windowBase_;
    direct->windows[r].bytes = windowBytes_;
    for (int p = 0; p < n && windows; ++p) {
      if (p == r)
        continue;
      auto peer = SharedArea::open(theirs[p].pid, theirs[p].windowFd,
                                   size_t(theirs[p].windowBytes));
      if (!peer) {
        windows = false;
        break;
      }
      Direct::Window &w = direct->windows[p];
      w.base = peer->data();
      w.bytes = size_t(theirs[p].windowBytes);
      w.mapping = std::move(*peer);
    }
  }
  // Everyone says whether it mapped every area (and window); one "no" and
  // all use messages (and the slots). After this exchange the peers hold
  // their mappings.
  std::vector<int32_t> flags(n, 0);
  flags[r] = (ok ? kAreasMapped : 0) | (ok && windows ? kWindowsMapped : 0);
  t = collectiveMatchTag(tag, kSetUpStep + 1);
  for (int p = 0; p < n; ++p) {
    if (p == r)
      continue;
    ex.recv(p, t, &flags[p], sizeof(int32_t));
    ex.send(p, t, &flags[r], sizeof(int32_t));
  }
  st = exchange(ex, op, deadline);
  if (!st)
    return st;
  if (direct->areas[r].valid())
    direct->areas[r].closeFd();
  bool allWindows = true;
  for (int32_t f : flags) {
    if (!(f & kAreasMapped))
      return Status::ok();
    allWindows = allWindows && (f & kWindowsMapped);
  }
  if (!allWindows)
    direct->windows.clear();
  direct_ = std::move(direct);
  return Status::ok();
}

std::string ShmCommunicator::describeDirect(const CommOp &op) const {
  return "shm " + op.describe() + " on '" + name_ + "' (rank " +
         std::to_string(rank()) + " of " + std::to_string(size()) + ")";
}

static std::atomic<uint64_t> &counterOf(AreaHeader &h,
                                        ShmCommunicator::Counter c) {
  switch (c) {
  case ShmCommunicator::Counter::Posted:
    return h.posted;
  case ShmCommunicator::Counter::Reduced:
    return h.reduced;
  case ShmCommunicator::Counter::Consumed:
    break;
  }
  return h.consumed;
}

Status ShmCommunicator::waitAll(Counter counter, uint64_t value,
                                const CommOp &op, Clock::time_point deadline) {
  Direct &d = *direct_;
  const int n = size(), r = rank();
  SegmentHeader &bell = group_->header(r);
  auto arrived = [&](int p) {
    return counterOf(header(d, p), counter).load(std::memory_order_acquire) >=
           value;
  };
  int next = 0; // peers below have arrived (counters never go back)
  auto all = [&] {
    for (; next < n; ++next)
      if (next != r && !arrived(next))
        return false;
    return true;
  };
  if (all())
    return Status::ok();
  auto start = Clock::now();
  auto lastCheck = start;
  for (;;) {
    uint32_t seen = bell.doorbell.load(std::memory_order_acquire);
    if (all())
      return Status::ok();
    auto now = Clock::now();
    if (group_->isBroken())
      return Status(StatusCode::Aborted, describeDirect(op) + ": " +
                                             group_->brokenStatus().message());
    bool checkProcess = now - lastCheck >= kSlice;
    if (checkProcess)
      lastCheck = now;
    Status gone = group_->peerGone(next, checkProcess);
    if (!gone)
      return Status(gone.code(), describeDirect(op) + ": " + gone.message());
    if (now >= deadline)
      return Status(StatusCode::DeadlineExceeded,
                    describeDirect(op) + ": " + group_->describeRank(next) +
                        " did not arrive within " +
                        std::to_string(group_->timeout().count()) + " ms");
    if (now - start < kSpin) {
      // Spin on the peer's counter; yield the core where the job's
      // processes on this host outnumber them (the peer may need it to
      // arrive).
      if (group_->oversubscribed())
        std::this_thread::yield();
      else
        for (int i = 0; i < 64 && !arrived(next); ++i)
          MONARCH_DIRECT_RELAX();
      continue;
    }
    // Others of this process may wait on messages: keep them moving.
    group_->tryProgress();
    if (arrived(next))
      continue;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        std::min(deadline, now + kSlice) - now);
    waitDoorbell(bell, seen, std::max(left, std::chrono::microseconds(1)));
  }
}

void ShmCommunicator::publish(Counter counter, uint64_t value) {
  Direct &d = *direct_;
  counterOf(header(d, rank()), counter).store(value, std::memory_order_seq_cst);
  for (int p = 0; p < size(); ++p)
    if (p != rank())
      ringDoorbell(group_->header(p));
}

Status ShmCommunicator::checkDescriptors(uint64_t k, const CommOp &op) {
  Direct &d = *direct_;
  const Descriptor &mine = header(d, rank()).desc[k % 2];
  for (int p = 0; p < size(); ++p)
    if (p != rank() && !(header(d, p).desc[k % 2] == mine))
      return Status(StatusCode::InvalidArgument,
                    describeDirect(op) + ": " + group_->describeRank(p) +
                        " posted " +
                        describeDescriptor(header(d, p).desc[k % 2]) +
                        " at the same point; every member must post the "
                        "same collective (kind, count, type, reduction, "
                        "root) in the same order");
  return Status::ok();
}

Status ShmCommunicator::runDirect(const CommOp &op, uint32_t tag,
                                  Clock::time_point deadline) {
  Direct &d = *direct_;
  const int n = size(), r = rank();
  const size_t elem = dtypeSize(op.dtype);
  const char *in = static_cast<const char *>(op.input);
  char *out = static_cast<char *>(op.output);
  const CommOpKind kind = op.kind;
  const bool reduces =
      kind == CommOpKind::AllReduce || kind == CommOpKind::ReduceScatter;
  const int root = kind == CommOpKind::Broadcast ? op.peer : -1;

  // The windows: elements of the buffer (of each rank's block for
  // reduce_scatter) that one chunk covers.
  size_t slotElems = kSlotBytes / elem;
  size_t window = kind == CommOpKind::ReduceScatter
                      ? std::max<size_t>(1, slotElems / n)
                      : slotElems;
  Descriptor desc = descriptorOf(op, d.seq, tag);
  bool first = true;
  for (size_t off = 0; off < op.count; off += window) {
    const size_t len = std::min(window, op.count - off);
    const uint64_t k = d.seq++;
    char *mySlot = slot(d, r, k);
    // 0. The slot is free once every peer consumed chunk k - 2.
    if (k >= 2)
      if (Status st = waitAll(Counter::Consumed, k - 1, op, deadline); !st)
        return st;
    // 1. What the peers will read of this rank.
    switch (kind) {
    case CommOpKind::AllReduce:
      for (int p = 0; p < n; ++p) {
        auto [start, blen] = blockOf(len, n, p);
        if (p != r && blen)
          std::memcpy(mySlot + start * elem, in + (off + start) * elem,
                      blen * elem);
      }
      break;
    case CommOpKind::ReduceScatter:
      for (int p = 0; p < n; ++p)
        std::memcpy(mySlot + p * len * elem, in + (p * op.count + off) * elem,
                    len * elem);
      break;
    case CommOpKind::AllGather:
      std::memcpy(mySlot, in + off * elem, len * elem);
      break;
    case CommOpKind::Broadcast:
      if (r == root)
        std::memcpy(mySlot, in + off * elem, len * elem);
      break;
    default:
      return Status(StatusCode::Internal,
                    describeDirect(op) + ": not a direct kind");
    }
    if (first)
      header(d, r).desc[k % 2] = desc;
    publish(Counter::Posted, k + 1);
    if (Status st = waitAll(Counter::Posted, k + 1, op, deadline); !st)
      return st;
    if (first) {
      if (Status st = checkDescriptors(k, op); !st)
        return st;
      first = false;
    }
    // 2. Reduce this rank's block, in rank order.
    if (reduces) {
      size_t start = 0, blen = len;
      char *dst = out + off * elem;
      auto source = [&](int p) -> const char * {
        if (kind == CommOpKind::ReduceScatter)
          return slot(d, p, k) + r * len * elem;
        return p == r ? in + (off + start) * elem
                      : slot(d, p, k) + start * elem;
      };
      if (kind == CommOpKind::AllReduce) {
        std::tie(start, blen) = blockOf(len, n, r);
        dst = mySlot + start * elem;
      }
      if (blen)
        reduceBlock(dst, n, source, blen, op.dtype, op.reduce);
      if (kind == CommOpKind::AllReduce) {
        publish(Counter::Reduced, k + 1);
        if (Status st = waitAll(Counter::Reduced, k + 1, op, deadline); !st)
          return st;
      }
    }
    // 3. What this rank needs from the peers' slots.
    switch (kind) {
    case CommOpKind::AllReduce:
      for (int p = 0; p < n; ++p) {
        auto [start, blen] = blockOf(len, n, p);
        if (blen)
          std::memcpy(out + (off + start) * elem, slot(d, p, k) + start * elem,
                      blen * elem);
      }
      break;
    case CommOpKind::AllGather:
      for (int p = 0; p < n; ++p)
        std::memmove(out + (p * op.count + off) * elem, slot(d, p, k),
                     len * elem);
      break;
    case CommOpKind::Broadcast:
      std::memmove(out + off * elem, slot(d, root, k), len * elem);
      break;
    default:
      break;
    }
    publish(Counter::Consumed, k + 1);
  }
  return Status::ok();
}

void ShmCommunicator::registerMemory(const void *base, size_t bytes, int fd) {
  windowBase_ = static_cast<const char *>(base);
  windowBytes_ = bytes;
  windowFd_ = base && bytes && fd >= 0 ? fd : -1;
}

Status ShmCommunicator::runWindow(const CommOp &op, uint32_t tag,
                                  Clock::time_point deadline, bool *ran) {
  *ran = false;
  Direct &d = *direct_;
  const int n = size(), r = rank();
  const size_t elem = dtypeSize(op.dtype);
  const size_t bytes = op.count * elem;
  const CommOpKind kind = op.kind;
  const int root = kind == CommOpKind::Broadcast ? op.peer : -1;
  char *out = static_cast<char *>(op.output);
  // Where this member's buffers are in its registered memory.
  const Direct::Window &mine = d.windows[r];
  auto offsetOf = [&](const void *p, size_t extent) -> int64_t {
    const char *c = static_cast<const char *>(p);
    if (!extent || !c || c < mine.base ||
        !inWindow(c - mine.base, extent, mine.bytes))
      return -1;
    return int64_t(c - mine.base);
  };
  auto [inExtent, outExtent] = windowExtent(op, n, r);
  const uint64_t k = d.seq++;
  // The descriptor and window slots of chunk k were read by the peers
  // before they consumed chunk k - 2.
  if (k >= 2)
    if (Status st = waitAll(Counter::Consumed, k - 1, op, deadline); !st)
      return st;
  header(d, r).desc[k % 2] = descriptorOf(op, k, tag);
  header(d, r).window[k % 2] =
      WindowPost{offsetOf(op.input, inExtent), offsetOf(op.output, outExtent)};
  publish(Counter::Posted, k + 1);
  if (Status st = waitAll(Counter::Posted, k + 1, op, deadline); !st)
    return st;
  if (Status st = checkDescriptors(k, op); !st)
    return st;
  // Every member decides from the same posts: read the peers' buffers only
  // where each one's is in its registered memory (and fits there).
  std::vector<const char *> ins(n), outs(n);
  bool usable = true;
  for (int p = 0; p < n && usable; ++p) {
    const WindowPost &w = header(d, p).window[k % 2];
    auto [needIn, needOut] = windowExtent(op, n, p);
    const Direct::Window &theirs = d.windows[p];
    auto at = [&](int64_t off, size_t extent) -> const char * {
      if (!extent)
        return nullptr;
      if (!inWindow(off, extent, theirs.bytes)) {
        usable = false;
        return nullptr;
      }
      return theirs.base + off;
    };
    ins[p] = at(w.in, needIn);
    outs[p] = at(w.out, needOut);
  }
  if (!usable) {
    // Nothing was read: the caller runs it through messages.
    publish(Counter::Consumed, k + 1);
    return Status::ok();
  }
  switch (kind) {
  case CommOpKind::AllReduce: {
    // Reduce this member's block from every input, in rank order (the same
    // bits on every member), into its output; then copy the others'
    // reduced blocks from their outputs.
    auto [start, len] = blockOf(op.count, n, r);
    if (len)
      reduceBlock(
          out + start * elem, n, [&](int p) { return ins[p] + start * elem; },
          len, op.dtype, op.reduce);
    publish(Counter::Reduced, k + 1);
    if (Status st = waitAll(Counter::Reduced, k + 1, op, deadline); !st)
      return st;
    for (int p = 0; p < n; ++p) {
      auto [ps, pl] = blockOf(op.count, n, p);
      if (p != r && pl)
        std::memcpy(out + ps * elem, outs[p] + ps * elem, pl * elem);
    }
    break;
  }
  case CommOpKind::ReduceScatter: {
    reduceBlock(
        out, n, [&](int p) { return ins[p] + size_t(r) * bytes; }, op.count,
        op.dtype, op.reduce);
    break;
  }
  case CommOpKind::AllGather:
    for (int p = 0; p < n; ++p)
      if (out + p * bytes != ins[p])
        std::memmove(out + p * bytes, ins[p], bytes);
    break;
  case CommOpKind::Broadcast:
    if (out != ins[root])
      std::memmove(out, ins[root], bytes);
    break;
  default:
    return Status(StatusCode::Internal,
                  describeDirect(op) + ": not a window kind");
  }
  // No member returns (and lets its buffers be written again) before every
  // peer finished reading them.
  publish(Counter::Consumed, k + 1);
  if (Status st = waitAll(Counter::Consumed, k + 1, op, deadline); !st)
    return st;
  *ran = true;
  return Status::ok();
}

} // namespace monarch::executor::shm_backend
