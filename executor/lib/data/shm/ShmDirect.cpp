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
//      chunk, reading the peers' slots directly in rank order; all_reduce
//      writes the result into the rank's own slot and publishes `reduced`;
//   3. each rank copies what it needs from the peers' slots into its output
//      and publishes `consumed`.
// A slot is written again two chunks later, once every peer consumed it.
// Every block is reduced by one rank, in rank order, so all members get the
// same bits, and each byte crosses between processes once per phase (about
// 2.5 passes over the buffer for all_reduce, against one for memcpy).
//
// Waiting spins briefly on the peers' counters (yielding the core instead
// when the members outnumber this process's cores), then sleeps on the
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

#include <cstring>
#include <thread>

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

struct alignas(64) AreaHeader {
  alignas(64) std::atomic<uint64_t> posted;
  alignas(64) std::atomic<uint64_t> reduced;
  alignas(64) std::atomic<uint64_t> consumed;
  alignas(64) Descriptor desc[2];
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
};

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
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
  Where mine{int64_t(::getpid()), -1, 0};
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
  // Everyone says whether it mapped every area; one "no" and all use
  // messages. After this exchange the peers hold their mappings.
  std::vector<int32_t> flags(n, 0);
  flags[r] = ok ? 1 : 0;
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
  for (int32_t f : flags)
    if (!f)
      return Status::ok();
  direct->oversubscribed = n > usableCores();
  direct_ = std::move(direct);
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
  SegmentHeader &bell = group_->header(r);
  auto where = [&] {
    return "shm " + op.describe() + " on '" + name_ + "' (rank " +
           std::to_string(r) + " of " + std::to_string(n) + ")";
  };

  // Waits until `counter` of every peer reaches `value`.
  auto waitAll = [&](std::atomic<uint64_t> AreaHeader::*counter,
                     uint64_t value) -> Status {
    auto arrived = [&](int p) {
      return (header(d, p).*counter).load(std::memory_order_acquire) >= value;
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
        return Status(StatusCode::Aborted,
                      where() + ": " + group_->brokenStatus().message());
      bool checkProcess = now - lastCheck >= kSlice;
      if (checkProcess)
        lastCheck = now;
      Status gone = group_->peerGone(next, checkProcess);
      if (!gone)
        return Status(gone.code(), where() + ": " + gone.message());
      if (now >= deadline)
        return Status(StatusCode::DeadlineExceeded,
                      where() + ": " + group_->describeRank(next) +
                          " did not arrive within " +
                          std::to_string(group_->timeout().count()) + " ms");
      if (now - start < kSpin) {
        // Spin on the peer's counter; yield the core where the members
        // outnumber them (the peer may need it to arrive).
        if (d.oversubscribed)
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
  };
  auto publish = [&](std::atomic<uint64_t> AreaHeader::*counter,
                     uint64_t value) {
    (header(d, r).*counter).store(value, std::memory_order_seq_cst);
    for (int p = 0; p < n; ++p)
      if (p != r)
        ringDoorbell(group_->header(p));
  };

  // The windows: elements of the buffer (of each rank's block for
  // reduce_scatter) that one chunk covers.
  size_t slotElems = kSlotBytes / elem;
  size_t window = kind == CommOpKind::ReduceScatter
                      ? std::max<size_t>(1, slotElems / n)
                      : slotElems;
  Descriptor desc{
      d.seq, op.count, uint32_t(kind), uint32_t(op.dtype), uint32_t(op.reduce),
      root,  tag};
  bool first = true;
  for (size_t off = 0; off < op.count; off += window) {
    const size_t len = std::min(window, op.count - off);
    const uint64_t k = d.seq++;
    char *mySlot = slot(d, r, k);
    // 0. The slot is free once every peer consumed chunk k - 2.
    if (k >= 2)
      if (Status st = waitAll(&AreaHeader::consumed, k - 1); !st)
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
      return Status(StatusCode::Internal, where() + ": not a direct kind");
    }
    if (first)
      header(d, r).desc[k % 2] = desc;
    publish(&AreaHeader::posted, k + 1);
    if (Status st = waitAll(&AreaHeader::posted, k + 1); !st)
      return st;
    if (first) {
      for (int p = 0; p < n; ++p)
        if (p != r && !(header(d, p).desc[k % 2] == desc))
          return Status(
              StatusCode::InvalidArgument,
              where() + ": " + group_->describeRank(p) + " posted " +
                  describeDescriptor(header(d, p).desc[k % 2]) +
                  " at the same point; every member must post the same "
                  "collective (kind, count, type, reduction, root) in the "
                  "same order");
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
      if (blen) {
        data::reduceElements(dst, source(0), source(1), blen, op.dtype,
                             op.reduce);
        for (int p = 2; p < n; ++p)
          data::reduceElements(dst, dst, source(p), blen, op.dtype, op.reduce);
      }
      if (kind == CommOpKind::AllReduce) {
        publish(&AreaHeader::reduced, k + 1);
        if (Status st = waitAll(&AreaHeader::reduced, k + 1); !st)
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
    publish(&AreaHeader::consumed, k + 1);
  }
  return Status::ok();
}

} // namespace monarch::executor::shm_backend
