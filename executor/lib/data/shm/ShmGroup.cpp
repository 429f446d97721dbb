//===- ShmGroup.cpp - Matching, progress and fail-fast state ----*- C++ -*-===//
//
// The progress engine: each pass writes as much of every peer's outgoing
// frame queue as its ring has room for and reads everything that arrived,
// publishing ring positions chunk by chunk so that sender and receiver copy
// at the same time. Frames: Eager (header + payload), Rts (header), Data
// (header + payload, after a Cts), Ack and Cts (headers only).
//
//===----------------------------------------------------------------------===//

#include "ShmGroup.h"
#include "ShmCommunicator.h"

#include <cstring>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MONARCH_CPU_RELAX() _mm_pause()
#else
#define MONARCH_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace monarch::executor::shm_backend {
namespace {

/// How long a waiter polls before it sleeps on the futex, and how often a
/// sleeper wakes to check that the peers it waits for still live.
constexpr auto kSpin = std::chrono::microseconds(20);
constexpr auto kSlice = std::chrono::milliseconds(20);

} // namespace

ShmGroup::~ShmGroup() {
  if (rank_ < int(segments_.size()) && segments_[rank_].valid()) {
    SegmentHeader &mine = segments_[rank_].header();
    uint32_t expected = 0;
    if (mine.stateClaim.compare_exchange_strong(expected, 1)) {
      std::snprintf(mine.reason, sizeof(mine.reason),
                    "rank %d destroyed communicator '%s'", rank_,
                    name_.c_str());
      mine.state.store(uint32_t(PeerState::Left), std::memory_order_release);
    }
    for (int p = 0; p < size(); ++p)
      if (p != rank_ && segments_[p].valid())
        ringDoorbell(segments_[p].header());
  }
  for (Peer &peer : peers_)
    if (peer.pidfd >= 0)
      ::close(peer.pidfd);
}

std::string ShmGroup::describeRank(int r) const {
  return "rank " + std::to_string(r) + " (world rank " +
         std::to_string(worldRanks_[r]) + ")";
}

void ShmGroup::post(ShmRequest *req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.load())
    return;
  req->done = false;
  Peer &peer = peers_[req->peer];
  if (req->isSend) {
    req->msgId = peer.nextMsgId++;
    bool eager = req->bytes <= kEagerBytes;
    peer.out.push_back({eager ? FrameType::Eager : FrameType::Rts, req->tag,
                        req->bytes, req->msgId, eager ? req->src : nullptr,
                        req});
    return;
  }
  bool completed = false;
  matchRecv(req->peer, req, completed);
}

void ShmGroup::tryProgress() {
  bool completed = false;
  {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock || broken_.load())
      return;
    // A protocol error resurfaces in the waiting thread's next pass.
    (void)progress(completed);
  }
  if (completed && localWaiters_.load() > 0)
    ringDoorbell(segments_[rank_].header());
}

void ShmGroup::matchRecv(int p, ShmRequest *req, bool &completed) {
  Peer &peer = peers_[p];
  for (auto it = peer.unexpected.begin(); it != peer.unexpected.end(); ++it) {
    Unexpected &u = **it;
    if (u.tag != req->tag || u.bytes != req->bytes)
      continue;
    if (u.rts) {
      peer.incoming[u.msgId] = req;
      peer.out.push_back({FrameType::Cts, 0, 0, u.msgId, nullptr, nullptr});
    } else {
      std::memcpy(req->dst, u.data.data(), u.bytes);
      req->done = true;
      completed = true;
      peer.out.push_back({FrameType::Ack, 0, 0, u.msgId, nullptr, nullptr});
    }
    peer.unexpected.erase(it);
    return;
  }
  peer.posted.push_back(req);
}

bool ShmGroup::progressOut(int p, bool &completed) {
  Peer &peer = peers_[p];
  if (peer.out.empty())
    return false;
  Segment &seg = segments_[p];
  RingHeader &ring = seg.ring(rank_);
  char *data = seg.ringData(rank_);
  const uint64_t cap = seg.ringBytes();
  bool wrote = false;
  auto publish = [&] {
    ring.head.store(peer.head, std::memory_order_release);
    ringDoorbell(seg.header());
    wrote = true;
  };
  auto room = [&](uint64_t need) {
    uint64_t free =
        cap - (peer.head - ring.tail.load(std::memory_order_acquire));
    if (free >= need)
      return free;
    // Ask the reader for a doorbell when it frees space, then look again
    // (it may have freed some before seeing the request).
    ring.writerBlocked.store(1, std::memory_order_seq_cst);
    free = cap - (peer.head - ring.tail.load(std::memory_order_seq_cst));
    return free >= need ? free : uint64_t(0);
  };
  while (!peer.out.empty()) {
    OutFrame &f = peer.out.front();
    if (!peer.headerWritten) {
      if (!room(sizeof(FrameHeader)))
        break;
      FrameHeader h{uint32_t(f.type), 0, f.tag, f.bytes, f.msgId};
      ringCopyIn(data, cap, peer.head, &h, sizeof(h));
      peer.head += sizeof(h);
      peer.headerWritten = true;
      peer.payloadWritten = 0;
    }
    bool hasPayload = f.type == FrameType::Eager || f.type == FrameType::Data;
    while (hasPayload && peer.payloadWritten < f.bytes) {
      uint64_t free = room(1);
      if (!free)
        break;
      uint64_t n = std::min(
          {free, f.bytes - peer.payloadWritten, uint64_t(kChunkBytes)});
      ringCopyIn(data, cap, peer.head, f.payload + peer.payloadWritten, n);
      peer.head += n;
      peer.payloadWritten += n;
      if (peer.payloadWritten < f.bytes)
        publish(); // let the reader start on this chunk
    }
    if (hasPayload && peer.payloadWritten < f.bytes) {
      publish();
      break;
    }
    switch (f.type) {
    case FrameType::Eager:
      peer.awaitingAck[f.msgId] = f.req;
      break;
    case FrameType::Rts:
      peer.awaitingCts[f.msgId] = f.req;
      break;
    case FrameType::Data:
      f.req->done = true;
      completed = true;
      break;
    case FrameType::Ack:
    case FrameType::Cts:
      break;
    }
    peer.out.pop_front();
    peer.headerWritten = false;
    publish();
  }
  return wrote;
}

Status ShmGroup::progressIn(int p, bool &completed) {
  Peer &peer = peers_[p];
  Segment &mine = segments_[rank_];
  RingHeader &ring = mine.ring(p);
  char *data = mine.ringData(p);
  const uint64_t cap = mine.ringBytes();
  bool consumed = false;
  auto release = [&] {
    ring.tail.store(peer.tail, std::memory_order_seq_cst);
    if (ring.writerBlocked.load(std::memory_order_seq_cst) &&
        ring.writerBlocked.exchange(0))
      ringDoorbell(segments_[p].header());
  };
  auto protocol = [&](const std::string &why) {
    return Status(StatusCode::Internal, "shm communicator '" + name_ +
                                            "': from " + describeRank(p) +
                                            ": " + why);
  };
  for (;;) {
    uint64_t avail = ring.head.load(std::memory_order_acquire) - peer.tail;
    if (!peer.inPayload) {
      if (avail < sizeof(FrameHeader))
        break;
      FrameHeader h;
      ringCopyOut(data, cap, peer.tail, &h, sizeof(h));
      peer.tail += sizeof(h);
      consumed = true;
      peer.current = h;
      switch (FrameType(h.type)) {
      case FrameType::Eager: {
        auto it = std::find_if(peer.posted.begin(), peer.posted.end(),
                               [&](ShmRequest *r) {
                                 return r->tag == h.tag && r->bytes == h.bytes;
                               });
        if (it != peer.posted.end()) {
          peer.target = *it;
          peer.dst = (*it)->dst;
          peer.posted.erase(it);
        } else {
          peer.arriving = std::make_unique<Unexpected>();
          peer.arriving->tag = h.tag;
          peer.arriving->bytes = h.bytes;
          peer.arriving->msgId = h.msgId;
          peer.arriving->data.resize(h.bytes);
          peer.target = nullptr;
          peer.dst = peer.arriving->data.data();
        }
        peer.remaining = h.bytes;
        peer.inPayload = true;
        break;
      }
      case FrameType::Rts: {
        auto u = std::make_unique<Unexpected>();
        u->rts = true;
        u->tag = h.tag;
        u->bytes = h.bytes;
        u->msgId = h.msgId;
        auto it = std::find_if(peer.posted.begin(), peer.posted.end(),
                               [&](ShmRequest *r) {
                                 return r->tag == h.tag && r->bytes == h.bytes;
                               });
        if (it != peer.posted.end()) {
          peer.incoming[h.msgId] = *it;
          peer.posted.erase(it);
          peer.out.push_back({FrameType::Cts, 0, 0, h.msgId, nullptr, nullptr});
        } else {
          peer.unexpected.push_back(std::move(u));
        }
        break;
      }
      case FrameType::Data: {
        auto it = peer.incoming.find(h.msgId);
        if (it == peer.incoming.end() || it->second->bytes != h.bytes)
          return protocol("data for unknown message " +
                          std::to_string(h.msgId));
        peer.target = it->second;
        peer.dst = it->second->dst;
        peer.incoming.erase(it);
        peer.remaining = h.bytes;
        peer.inPayload = true;
        break;
      }
      case FrameType::Ack:
      case FrameType::Cts: {
        auto &waiting = FrameType(h.type) == FrameType::Ack ? peer.awaitingAck
                                                            : peer.awaitingCts;
        auto it = waiting.find(h.msgId);
        if (it == waiting.end())
          return protocol("unexpected acknowledgement");
        ShmRequest *req = it->second;
        waiting.erase(it);
        if (FrameType(h.type) == FrameType::Ack) {
          req->done = true;
          completed = true;
        } else {
          peer.out.push_back(
              {FrameType::Data, 0, req->bytes, req->msgId, req->src, req});
        }
        break;
      }
      default:
        return protocol("bad frame type " + std::to_string(h.type));
      }
      if (!peer.inPayload || peer.remaining > 0)
        continue;
    }
    uint64_t n = std::min({avail, peer.remaining, uint64_t(kChunkBytes)});
    if (peer.remaining > 0 && n == 0)
      break;
    if (n > 0) {
      ringCopyOut(data, cap, peer.tail, peer.dst, n);
      peer.tail += n;
      peer.dst += n;
      peer.remaining -= n;
      consumed = true;
      release();
    }
    if (peer.remaining > 0)
      continue;
    peer.inPayload = false;
    if (FrameType(peer.current.type) == FrameType::Data) {
      peer.target->done = true;
      completed = true;
    } else if (peer.target) { // eager into a posted receive
      peer.target->done = true;
      completed = true;
      peer.out.push_back(
          {FrameType::Ack, 0, 0, peer.current.msgId, nullptr, nullptr});
    } else { // eager, kept until its receive is posted
      std::unique_ptr<Unexpected> u = std::move(peer.arriving);
      auto it = std::find_if(peer.posted.begin(), peer.posted.end(),
                             [&](ShmRequest *r) {
                               return r->tag == u->tag && r->bytes == u->bytes;
                             });
      if (it != peer.posted.end()) {
        std::memcpy((*it)->dst, u->data.data(), u->bytes);
        (*it)->done = true;
        completed = true;
        peer.posted.erase(it);
        peer.out.push_back({FrameType::Ack, 0, 0, u->msgId, nullptr, nullptr});
      } else {
        peer.unexpected.push_back(std::move(u));
      }
    }
    peer.target = nullptr;
  }
  if (consumed)
    release();
  return Status::ok();
}

Status ShmGroup::progress(bool &completed) {
  for (int p = 0; p < size(); ++p) {
    if (p == rank_)
      continue;
    Status st = progressIn(p, completed);
    if (!st)
      return st;
    progressOut(p, completed);
  }
  return Status::ok();
}

Status ShmGroup::peerGone(int p, bool checkProcess) {
  SegmentHeader &h = segments_[p].header();
  uint32_t state = h.state.load(std::memory_order_acquire);
  std::string why;
  if (state != uint32_t(PeerState::Alive)) {
    why = std::string(h.reason, strnlen(h.reason, sizeof(h.reason)));
  } else if (checkProcess && peers_[p].pid != ::getpid()) {
    bool dead = false;
    if (peers_[p].pidfd >= 0) {
      struct pollfd pfd = {peers_[p].pidfd, POLLIN, 0};
      dead = ::poll(&pfd, 1, 0) > 0;
    } else {
      dead = ::kill(peers_[p].pid, 0) != 0 && errno == ESRCH;
    }
    if (dead)
      why = "process " + std::to_string(peers_[p].pid) + " exited";
  }
  if (why.empty())
    return Status::ok();
  return Status(StatusCode::Unavailable,
                "connection to " + describeRank(p) + " lost (" + why + ")");
}

Status ShmGroup::wait(const std::vector<ShmRequest *> &reqs,
                      Clock::time_point deadline, const std::string &what,
                      const ShmRequest **culprit) {
  SegmentHeader &mine = segments_[rank_].header();
  auto where = [&] {
    return "shm " + what + " on '" + name_ + "' (rank " +
           std::to_string(rank_) + " of " + std::to_string(size()) + ")";
  };
  localWaiters_.fetch_add(1);
  struct Leave {
    std::atomic<int> &n;
    ~Leave() { n.fetch_sub(1); }
  } leave{localWaiters_};
  auto lastCheck = Clock::now();
  const ShmRequest *pending = nullptr;
  for (;;) {
    uint32_t seen = mine.doorbell.load(std::memory_order_acquire);
    bool completed = false;
    pending = nullptr;
    Status st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_.load())
        st = progress(completed);
      for (ShmRequest *r : reqs)
        if (!r->done) {
          pending = r;
          break;
        }
    }
    if (completed && localWaiters_.load() > 1)
      ringDoorbell(mine);
    *culprit = pending;
    if (!st)
      return st;
    if (isBroken())
      return Status(StatusCode::Aborted,
                    where() + ": " + brokenStatus().message());
    if (!pending)
      return Status::ok();
    auto now = Clock::now();
    bool checkProcess = now - lastCheck >= kSlice;
    if (checkProcess)
      lastCheck = now;
    // Peers we wait for: the pending requests' (state in shared memory is
    // one load; the process check is a system call, once per slice).
    for (ShmRequest *r : reqs) {
      if (r->done)
        continue;
      Status gone = peerGone(r->peer, checkProcess);
      if (gone.isOk())
        continue;
      // Whatever it wrote before leaving is still in the ring.
      bool more = false;
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_.load())
        (void)progress(more);
      if (r->done)
        continue;
      *culprit = r;
      return Status(gone.code(), where() + ": " + gone.message());
    }
    if (now >= deadline)
      return Status(StatusCode::DeadlineExceeded,
                    where() + ": not completed within " +
                        std::to_string(timeout_.count()) + " ms");
    auto spinEnd = now + kSpin;
    unsigned i = 0;
    while (mine.doorbell.load(std::memory_order_acquire) == seen) {
      // Where the job's processes outnumber the cores, the peer this waits
      // for may need this core to write.
      if (oversubscribed_)
        std::this_thread::yield();
      else
        MONARCH_CPU_RELAX();
      if (((++i & 63) == 0 || oversubscribed_) && Clock::now() >= spinEnd)
        break;
    }
    if (mine.doorbell.load(std::memory_order_acquire) != seen)
      continue;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        std::min(deadline, Clock::now() + kSlice) - Clock::now());
    waitDoorbell(mine, seen, std::max(left, std::chrono::microseconds(1)));
  }
}

void ShmGroup::clearLocked() {
  for (Peer &peer : peers_) {
    peer.out.clear();
    peer.awaitingAck.clear();
    peer.awaitingCts.clear();
    peer.posted.clear();
    peer.incoming.clear();
    peer.target = nullptr;
    peer.dst = nullptr;
  }
}

void ShmGroup::breakLocked() {
  SegmentHeader &mine = segments_[rank_].header();
  uint32_t expected = 0;
  if (mine.stateClaim.compare_exchange_strong(expected, 1)) {
    std::snprintf(mine.reason, sizeof(mine.reason), "rank %d aborted: %s",
                  rank_, brokenStatus_.message().c_str());
    mine.state.store(uint32_t(PeerState::Aborted), std::memory_order_release);
  }
  for (int p = 0; p < size(); ++p)
    ringDoorbell(segments_[p].header());
}

void ShmGroup::afterBreak() {
  // Waits for a progress pass in flight; then no request is referenced.
  std::lock_guard<std::mutex> lock(mu_);
  clearLocked();
}

} // namespace monarch::executor::shm_backend
