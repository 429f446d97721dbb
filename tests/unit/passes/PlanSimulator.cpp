//===- PlanSimulator.cpp - Discrete-event simulation of plans ---*- C++ -*-===//
//
// An event queue ordered by time drives three kinds of actors: the host
// thread of each rank (issues one instruction per step, blocks on `wait`),
// the streams of each rank (start their head entry once the previous one
// completed) and the rendezvous points (a send/recv sequence number per
// channel, a collective sequence number per communicator), where started
// instructions meet their partners. Nothing here shares code with the
// verifier; the point is to check its graph argument by running the rules.
//
//===----------------------------------------------------------------------===//

#include "PlanSimulator.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

llvm::StringRef monarch::test::stringifySimOutcome(SimOutcome outcome) {
  switch (outcome) {
  case SimOutcome::Completed:
    return "completed";
  case SimOutcome::Deadlocked:
    return "deadlocked";
  case SimOutcome::Mismatched:
    return "mismatched";
  }
  return "?";
}

namespace {

enum class Kind { Launch, Send, Recv, Collective, Wait, Host };

struct SimInstr {
  Operation *op = nullptr;
  Kind kind = Kind::Host;
  int64_t stream = -1;
  std::optional<uint64_t> group;
  int64_t peer = -1;
  StringAttr comm;
  /// Instructions (of the same rank) a wait waits for.
  SmallVector<unsigned> waitsFor;
  /// Position on its channel or communicator, set when issued.
  unsigned seq = 0;
  unsigned entry = ~0u;
  bool done = false;  // the instruction itself completed
  bool event = false; // its event fired (with its whole stream entry)
};

struct SimEntry {
  int64_t rank;
  int64_t stream;
  SmallVector<unsigned> members;
  unsigned pending = 0;
};

struct SimRank {
  int64_t id;
  std::vector<SimInstr> instrs;
  unsigned pc = 0;
  bool blocked = false;       // at a wait whose events are pending
  unsigned open = ~0u;        // entry of a group still being issued
  size_t finishedEntries = 0; // completed stream entries
  size_t numEntries = 0;
  std::map<int64_t, std::deque<unsigned>> streams; // queued entries
};

/// (communicator, sender, receiver, sequence number)
using P2PKey = std::tuple<StringAttr, int64_t, int64_t, unsigned>;
struct Rendezvous {
  std::optional<std::pair<int64_t, unsigned>> send, recv;
};
struct CollRendezvous {
  SmallVector<std::pair<int64_t, unsigned>> started;
};

enum class EvKind { Issue, Complete };
struct Event {
  double time;
  uint64_t order;
  EvKind kind;
  int64_t rank;
  unsigned instr;
  bool operator>(const Event &o) const {
    return std::tie(time, order) > std::tie(o.time, o.order);
  }
};

class Simulator {
public:
  Simulator(PlanOp plan, SymbolTableCollection &tables, uint64_t seed)
      : plan(plan), tables(tables), rng(seed) {}

  SimResult run();

private:
  void load();
  void schedule(double time, EvKind kind, int64_t rank, unsigned instr = 0) {
    queue.push({time, order++, kind, rank, instr});
  }
  double draw(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  SimRank *rankOf(int64_t id) {
    auto it = rankIndex.find(id);
    return it == rankIndex.end() ? nullptr : &ranks[it->second];
  }
  void issue(SimRank &r, double now);
  void post(SimRank &r, unsigned entry, double now);
  void startEntry(SimRank &r, unsigned entry, double now);
  void complete(SimRank &r, unsigned instr, double now);
  void mismatch(const std::string &what) {
    if (mismatchDetail.empty())
      mismatchDetail = what;
  }
  std::string describe(int64_t rank, unsigned instr);
  int64_t commSize(StringAttr comm);
  /// Sends (or receives) `rank` issued on a channel, for the post-mortem.
  unsigned issuedOn(const P2PKey &channel, bool sends) {
    auto it = p2pIssued.find(channel);
    return it == p2pIssued.end()
               ? 0
               : (sends ? it->second.first : it->second.second);
  }
  SimResult finish();

  PlanOp plan;
  SymbolTableCollection &tables;
  std::mt19937_64 rng;
  std::vector<SimRank> ranks;
  llvm::DenseMap<int64_t, unsigned> rankIndex;
  std::vector<SimEntry> entries;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue;
  uint64_t order = 0;
  double lastCompletion = 0;
  llvm::DenseMap<P2PKey, Rendezvous> rendezvous;
  /// (comm, sender, receiver, 0) -> sends and receives issued so far.
  llvm::DenseMap<P2PKey, std::pair<unsigned, unsigned>> p2pIssued;
  llvm::DenseMap<std::pair<StringAttr, unsigned>, CollRendezvous> collectives;
  /// (comm, rank) -> collectives issued so far.
  llvm::DenseMap<std::pair<StringAttr, int64_t>, unsigned> collIssued;
  llvm::DenseMap<StringAttr, int64_t> commSizes;
  std::string mismatchDetail;
};

} // namespace

int64_t Simulator::commSize(StringAttr comm) {
  auto [it, inserted] = commSizes.try_emplace(comm, 0);
  if (inserted) {
    auto op = tables.lookupNearestSymbolFrom<CommunicatorOp>(
        plan, FlatSymbolRefAttr::get(comm));
    it->second = op ? static_cast<int64_t>(op.getRanks().size()) : 0;
  }
  return it->second;
}

void Simulator::load() {
  // A member of a class (monarch.rank_member) runs as the rank program it
  // stands for: written out, then simulated as any rank's.
  plan.expandMembers();
  for (auto program : plan.getBody().getOps<RankProgramOp>()) {
    SimRank r;
    r.id = program.getRank();
    llvm::DenseMap<Operation *, unsigned> index;
    for (Operation &op : program.getBody().front()) {
      SimInstr in;
      in.op = &op;
      in.kind = Kind::Host;
      index[&op] = r.instrs.size();
      llvm::TypeSwitch<Operation *>(&op)
          .Case([&](LaunchOp launch) {
            in.kind = Kind::Launch;
            in.stream = launch.getStream();
          })
          .Case([&](SendOp send) {
            in.kind = Kind::Send;
            in.stream = send.getStream();
            in.group = send.getGroup();
            in.peer = send.getPeer();
            in.comm = send.getCommAttr().getAttr();
          })
          .Case([&](RecvOp recv) {
            in.kind = Kind::Recv;
            in.stream = recv.getStream();
            in.group = recv.getGroup();
            in.peer = recv.getPeer();
            in.comm = recv.getCommAttr().getAttr();
          })
          .Case([&](CollectiveOp coll) {
            in.kind = Kind::Collective;
            in.stream = coll.getStream();
            in.group = coll.getGroup();
            in.comm = coll.getCommAttr().getAttr();
          })
          .Case([&](WaitOp wait) {
            in.kind = Kind::Wait;
            for (Value event : wait.getEvents())
              in.waitsFor.push_back(index.lookup(event.getDefiningOp()));
          });
      r.instrs.push_back(std::move(in));
    }
    rankIndex[r.id] = ranks.size();
    ranks.push_back(std::move(r));
  }
}

std::string Simulator::describe(int64_t rank, unsigned instr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const SimInstr &in = rankOf(rank)->instrs[instr];
  os << "rank " << rank << " #" << instr << " " << in.op->getName();
  if (in.peer >= 0)
    os << (in.kind == Kind::Send ? " to " : " from ") << in.peer;
  if (in.comm)
    os << " on @" << in.comm.getValue();
  if (in.stream >= 0)
    os << " stream " << in.stream;
  return text;
}

void Simulator::issue(SimRank &r, double now) {
  auto closeOpen = [&] {
    if (r.open != ~0u)
      post(r, r.open, now);
    r.open = ~0u;
  };
  if (r.pc == r.instrs.size()) {
    closeOpen();
    return;
  }
  SimInstr &in = r.instrs[r.pc];
  double next = now + draw(0.0, 0.5);
  switch (in.kind) {
  case Kind::Wait: {
    closeOpen();
    bool ready = llvm::all_of(in.waitsFor,
                              [&](unsigned i) { return r.instrs[i].event; });
    r.blocked = !ready;
    if (ready) {
      in.done = true;
      ++r.pc;
      schedule(next, EvKind::Issue, r.id);
    }
    return;
  }
  case Kind::Host:
    closeOpen();
    in.done = true;
    ++r.pc;
    schedule(next, EvKind::Issue, r.id);
    return;
  default:
    break;
  }

  // Sequence numbers on the channel or communicator, in issue order.
  if (in.kind == Kind::Send)
    in.seq = p2pIssued[{in.comm, r.id, in.peer, 0}].first++;
  else if (in.kind == Kind::Recv)
    in.seq = p2pIssued[{in.comm, in.peer, r.id, 0}].second++;
  else if (in.kind == Kind::Collective)
    in.seq = collIssued[{in.comm, r.id}]++;

  unsigned id = r.pc++;
  bool extends = false;
  if (in.group && r.open != ~0u) {
    const SimInstr &last = r.instrs[entries[r.open].members.back()];
    extends = last.group == in.group && last.stream == in.stream;
  }
  if (extends) {
    entries[r.open].members.push_back(id);
    in.entry = r.open;
  } else {
    closeOpen();
    in.entry = entries.size();
    entries.push_back({r.id, in.stream, {id}, 0});
    ++r.numEntries;
    if (in.group)
      r.open = in.entry;
    else
      post(r, in.entry, now);
  }
  schedule(next, EvKind::Issue, r.id);
}

void Simulator::post(SimRank &r, unsigned entry, double now) {
  SimEntry &e = entries[entry];
  e.pending = e.members.size();
  std::deque<unsigned> &fifo = r.streams[e.stream];
  fifo.push_back(entry);
  if (fifo.size() == 1)
    startEntry(r, entry, now);
}

void Simulator::startEntry(SimRank &r, unsigned entry, double now) {
  // Copy: starting a member may complete others and touch `entries`.
  SmallVector<unsigned> members = entries[entry].members;
  for (unsigned id : members) {
    SimInstr &in = r.instrs[id];
    switch (in.kind) {
    case Kind::Launch:
      schedule(now + draw(0.1, 10.0), EvKind::Complete, r.id, id);
      break;
    case Kind::Send:
    case Kind::Recv: {
      bool isSend = in.kind == Kind::Send;
      P2PKey key = isSend ? P2PKey{in.comm, r.id, in.peer, in.seq}
                          : P2PKey{in.comm, in.peer, r.id, in.seq};
      Rendezvous &rv = rendezvous[key];
      (isSend ? rv.send : rv.recv) = std::make_pair(r.id, id);
      if (!rv.send || !rv.recv)
        break;
      // Both started: the pair completes together.
      auto [sr, si] = *rv.send;
      auto [rr, ri] = *rv.recv;
      auto sendOp = cast<SendOp>(rankOf(sr)->instrs[si].op);
      auto recvOp = cast<RecvOp>(rankOf(rr)->instrs[ri].op);
      if (sendOp.getBuffer().getType() != recvOp.getBuffer().getType())
        mismatch("type mismatch: " + describe(sr, si) + " vs " +
                 describe(rr, ri));
      double at = now + draw(0.1, 5.0);
      schedule(at, EvKind::Complete, sr, si);
      schedule(at, EvKind::Complete, rr, ri);
      break;
    }
    case Kind::Collective: {
      CollRendezvous &cr = collectives[{in.comm, in.seq}];
      cr.started.emplace_back(r.id, id);
      auto [r0, i0] = cr.started.front();
      auto first = cast<CollectiveOp>(rankOf(r0)->instrs[i0].op);
      auto mine = cast<CollectiveOp>(in.op);
      if (first.getKind() != mine.getKind() ||
          first.getReduction() != mine.getReduction() ||
          first.getRoot() != mine.getRoot() ||
          first.getInput().getType() != mine.getInput().getType() ||
          first.getOutput().getType() != mine.getOutput().getType())
        mismatch("collective mismatch: " + describe(r0, i0) + " vs " +
                 describe(r.id, id));
      if (static_cast<int64_t>(cr.started.size()) != commSize(in.comm))
        break;
      double at = now + draw(0.1, 8.0);
      for (auto [rank, instr] : cr.started)
        schedule(at, EvKind::Complete, rank, instr);
      break;
    }
    default:
      break;
    }
  }
}

void Simulator::complete(SimRank &r, unsigned id, double now) {
  SimInstr &in = r.instrs[id];
  in.done = true;
  lastCompletion = std::max(lastCompletion, now);
  SimEntry &e = entries[in.entry];
  if (--e.pending != 0)
    return;
  // The whole entry completed: its events fire and the stream moves on.
  for (unsigned m : e.members)
    r.instrs[m].event = true;
  ++r.finishedEntries;
  std::deque<unsigned> &fifo = r.streams[e.stream];
  fifo.pop_front();
  if (!fifo.empty())
    startEntry(r, fifo.front(), now);
  if (r.blocked) {
    r.blocked = false;
    schedule(now, EvKind::Issue, r.id);
  }
}

SimResult Simulator::run() {
  load();
  for (SimRank &r : ranks)
    schedule(draw(0.0, 1.0), EvKind::Issue, r.id);
  while (!queue.empty()) {
    Event ev = queue.top();
    queue.pop();
    SimRank &r = *rankOf(ev.rank);
    if (ev.kind == EvKind::Issue)
      issue(r, ev.time);
    else
      complete(r, ev.instr, ev.time);
  }
  return finish();
}

SimResult Simulator::finish() {
  SimResult result;
  result.makespan = lastCompletion;
  bool all = true;
  for (SimRank &r : ranks) {
    result.total += r.instrs.size();
    for (const SimInstr &in : r.instrs)
      result.completed += in.done;
    all &= r.pc == r.instrs.size() && r.finishedEntries == r.numEntries;
  }
  if (!mismatchDetail.empty()) {
    result.outcome = SimOutcome::Mismatched;
    result.detail = mismatchDetail;
    return result;
  }
  if (all) {
    result.outcome = SimOutcome::Completed;
    return result;
  }

  // Stuck. A partner that will never exist is a mismatch: its rank issued
  // everything (or has no program) and fewer instructions on that channel.
  auto finished = [&](int64_t rank) {
    SimRank *r = rankOf(rank);
    return !r || r->pc == r->instrs.size();
  };
  for (auto &[key, rv] : rendezvous) {
    if (rv.send && rv.recv)
      continue;
    auto [comm, src, dst, seq] = key;
    P2PKey channel{comm, src, dst, 0};
    if (rv.send && finished(dst) && issuedOn(channel, false) <= seq) {
      result.outcome = SimOutcome::Mismatched;
      result.detail = describe(src, rv.send->second) + " has no recv";
      return result;
    }
    if (rv.recv && finished(src) && issuedOn(channel, true) <= seq) {
      result.outcome = SimOutcome::Mismatched;
      result.detail = describe(dst, rv.recv->second) + " has no send";
      return result;
    }
  }
  for (auto &[key, cr] : collectives) {
    auto [comm, seq] = key;
    if (static_cast<int64_t>(cr.started.size()) == commSize(comm))
      continue;
    auto op = tables.lookupNearestSymbolFrom<CommunicatorOp>(
        plan, FlatSymbolRefAttr::get(comm));
    for (int64_t member : op.getRanks()) {
      auto it = collIssued.find({comm, member});
      unsigned issued = it == collIssued.end() ? 0 : it->second;
      if (finished(member) && issued <= seq) {
        result.outcome = SimOutcome::Mismatched;
        result.detail = "collective #" + std::to_string(seq) + " on @" +
                        comm.getValue().str() + " is never issued by rank " +
                        std::to_string(member);
        return result;
      }
    }
  }

  result.outcome = SimOutcome::Deadlocked;
  llvm::raw_string_ostream os(result.detail);
  for (SimRank &r : ranks) {
    if (r.pc == r.instrs.size() && r.finishedEntries == r.numEntries)
      continue;
    os << "rank " << r.id << ": ";
    if (r.pc < r.instrs.size())
      os << "host at " << describe(r.id, r.pc) << "; ";
    for (auto &[stream, fifo] : r.streams)
      if (!fifo.empty())
        os << "stream " << stream << " stuck at "
           << describe(r.id, entries[fifo.front()].members.front()) << "; ";
  }
  return result;
}

SimResult monarch::test::simulatePlan(PlanOp plan,
                                      SymbolTableCollection &tables,
                                      uint64_t seed) {
  return Simulator(plan, tables, seed).run();
}
