//===- VerifyPlan.cpp - monarch-verify-plan ---------------------*- C++ -*-===//
//
// Proves a `monarch.plan` safe by the rules of docs/plan-semantics.md:
// groups are adjacent runs on one stream, sends and receives match with equal
// types, every member of a communicator issues the same collectives, the
// happens-before graph is acyclic (no deadlock whatever the durations) and
// no two unordered instructions of a rank touch overlapping buffers when one
// of them writes.
//
// The happens-before graph gives every asynchronous instruction a node for
// its start and one for its completion, a multi-instruction group a node for
// the completion of the whole stream entry, and a wait a node for its
// completion. Union-find merges nodes that are one moment: the starts of the
// members of a group (posted together), the completions of a matched pair
// and the completions of the members of a collective. Every node happens
// once all its predecessors have, so the plan completes iff the graph is
// acyclic. Keeping start and completion apart is what makes this exact:
// merging whole instructions would join a rank's send with its later receive
// whenever a peer groups the two partners, and report a deadlock that cannot
// happen. The event of an instruction in a group completes with its group
// (one NCCL group is one kernel on the stream).
//
// Everything is linear in the number of instructions, except the hazard
// check's interval map (logarithmic per access). Instructions, stream
// entries and groups come from the rank-program model (RankProgramModel.h),
// shared with monarch-schedule.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/VerifyPlan.h"
#include "monarch/Transforms/Passes.h"

#include "RankProgramModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/IntEqClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>

#define DEBUG_TYPE "monarch-verify-plan"

namespace monarch {
#define GEN_PASS_DEF_MONARCHVERIFYPLAN
#define GEN_PASS_DEF_MONARCHEXPANDRANKMEMBERS
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;
using namespace monarch::rankmodel;

namespace {

enum class EdgeKind : uint8_t {
  Start,  // an instruction's start -> its (possibly shared) completion
  Member, // a member's completion -> its group's completion
  Fifo,   // a stream entry's completion -> the next entry's start
  Issue,  // a wait's completion -> the start of a later instruction
  Event,  // completion of a waited event -> the wait's completion
};

/// A happens-before edge `from -> to`, with the instructions it relates.
struct Edge {
  unsigned from, to;
  EdgeKind kind;
  unsigned fromInstr, toInstr;
};

/// A read or write of a buffer recorded by the hazard check.
struct Use {
  unsigned instr;
  int64_t stream; // -1 for host instructions (done when issued)
  unsigned streamIndex;
  BufferAttr buffer;
};

/// The last writer of a segment of bytes and the latest asynchronous reader
/// per stream since that write.
struct Users {
  std::optional<Use> writer;
  SmallVector<Use, 2> readers;
};

std::string plural(size_t n, StringRef word) {
  return std::to_string(n) + " " + word.str() + (n == 1 ? "" : "s");
}

class PlanVerifier {
public:
  PlanVerifier(PlanOp plan, SymbolTableCollection &tables,
               const VerifyPlanOptions &options)
      : plan(plan), tables(tables), options(options) {}

  LogicalResult run() {
    collect();
    matchTransfers();
    matchCollectives();
    // The graph is only meaningful once matching succeeded.
    if (!failed)
      checkDeadlock();
    if (options.checkDataHazards)
      checkHazards();
    return failure(failed);
  }

private:
  void collect();
  void matchTransfers();
  void matchCollectives();
  void checkDeadlock();
  void checkHazards();
  void checkHazards(const Program &program);
  void reportCycle(ArrayRef<Edge> edges, ArrayRef<unsigned> cycle);

  std::string describe(unsigned id) const;
  std::string describeEntry(unsigned entry) const;
  std::string signature(CollectiveOp op) const;
  bool before(unsigned a, unsigned b) const {
    return std::tie(instrs[a].rank, instrs[a].pos) <
           std::tie(instrs[b].rank, instrs[b].pos);
  }
  bool isGroupEntry(unsigned entry) const {
    return entries[entry].first != entries[entry].last;
  }

  PlanOp plan;
  SymbolTableCollection &tables;
  const VerifyPlanOptions &options;

  /// The instructions of every rank program of the plan.
  RankProgramModel model;
  ArrayRef<Instr> instrs;
  ArrayRef<Entry> entries;
  /// Instructions whose completions are one moment (pairs, collectives).
  SmallVector<std::pair<unsigned, unsigned>> sameCompletion;
  bool failed = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Descriptions used in diagnostics
//===----------------------------------------------------------------------===//

std::string PlanVerifier::describe(unsigned id) const {
  const Instr &in = instrs[id];
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "rank " << in.rank << " ";
  TypeSwitch<Operation *>(in.op)
      .Case([&](LaunchOp op) { os << "launch @" << op.getKernel(); })
      .Case([&](SendOp) {
        os << "send to " << in.peer << " on @" << in.comm.getValue();
      })
      .Case([&](RecvOp) {
        os << "recv from " << in.peer << " on @" << in.comm.getValue();
      })
      .Case([&](CollectiveOp op) {
        os << stringifyCollectiveKind(op.getKind()) << " on @"
           << in.comm.getValue();
      })
      .Case([&](WaitOp) { os << "wait (instruction " << in.pos + 1 << ")"; })
      .Default([&](Operation *op) {
        os << op->getName().stripDialect() << " (instruction " << in.pos + 1
           << ")";
      });
  if (in.isAsync()) {
    os << " (stream " << in.stream;
    if (in.group)
      os << ", group " << *in.group;
    os << ")";
  }
  return text;
}

std::string PlanVerifier::describeEntry(unsigned entry) const {
  const Instr &first = instrs[entries[entry].first];
  if (!isGroupEntry(entry))
    return describe(entries[entry].first);
  return "group " + std::to_string(*first.group) + " of rank " +
         std::to_string(first.rank) + " (stream " +
         std::to_string(first.stream) + ")";
}

std::string PlanVerifier::signature(CollectiveOp op) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << stringifyCollectiveKind(op.getKind());
  if (auto reduction = op.getReduction())
    os << " " << stringifyReductionKind(*reduction);
  if (auto root = op.getRoot())
    os << " root " << *root;
  os << " " << op.getInput().getType() << " -> " << op.getOutput().getType();
  return text;
}

//===----------------------------------------------------------------------===//
// Instructions, stream entries and groups
//===----------------------------------------------------------------------===//

void PlanVerifier::collect() {
  // Room for every instruction first (4,096 programs of 20: growing the
  // model moved each instruction a dozen times).
  // A member of a class (monarch.rank_member) has its program's
  // instructions, with its own rank, peers and communicators.
  size_t total = 0, own = 0;
  DenseMap<int64_t, std::pair<unsigned, size_t>> programOf;
  for (Operation &op : plan.getBody().front()) {
    if (auto program = dyn_cast<RankProgramOp>(op)) {
      size_t n = program.getBody().front().getOperations().size();
      programOf[program.getRank()] = {programOf.size(), n};
      total += n;
      own += n;
    } else if (auto member = dyn_cast<RankMemberOp>(op)) {
      total += programOf.lookup(member.getOf()).second;
    }
  }
  model.instrs.reserve(total);
  model.idOf.reserve(own);
  programOf.clear();
  for (Operation &op : plan.getBody().front()) {
    if (auto program = dyn_cast<RankProgramOp>(op)) {
      programOf[program.getRank()] = {model.programs.size(), 0};
      model.addProgram(program);
    } else if (auto member = dyn_cast<RankMemberOp>(op)) {
      auto it = programOf.find(member.getOf());
      if (it != programOf.end())
        model.addMember(member, it->second.first);
    }
  }
  instrs = model.instrs;
  entries = model.entries;
  for (const GroupIssue &issue : model.groupIssues) {
    const Instr &in = instrs[issue.instr];
    if (issue.kind == GroupIssue::SpansStreams) {
      const Instr &prev = instrs[issue.other];
      InFlightDiagnostic diag =
          in.op->emitError("group ")
          << *in.group << " of rank " << in.rank << " spans streams "
          << prev.stream << " and " << in.stream
          << ": the instructions of a group form one stream entry";
      diag.attachNote(prev.op->getLoc()) << "previous instruction of the group";
    } else {
      InFlightDiagnostic diag =
          in.op->emitError("group ")
          << *in.group << " of rank " << in.rank
          << " is not adjacent: " << describe(issue.other + 1)
          << " separates this instruction from the earlier ones of the "
             "group; the instructions of a group must be consecutive in "
             "program order";
      diag.attachNote(instrs[issue.other].op->getLoc())
          << "previous instruction of group " << *in.group;
    }
    failed = true;
  }
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

void PlanVerifier::matchTransfers() {
  // (communicator, sender, receiver) -> sends and receives in program order.
  using Key = std::tuple<StringAttr, int64_t, int64_t>;
  struct Channel {
    SmallVector<unsigned> sends, recvs;
  };
  llvm::MapVector<Key, Channel> channels;
  for (auto [id, in] : llvm::enumerate(instrs)) {
    if (in.kind == InstrKind::Send)
      channels[{in.comm, in.rank, in.peer}].sends.push_back(id);
    else if (in.kind == InstrKind::Recv)
      channels[{in.comm, in.peer, in.rank}].recvs.push_back(id);
  }

  for (auto &[key, channel] : channels) {
    auto [comm, src, dst] = key;
    size_t numSends = channel.sends.size(), numRecvs = channel.recvs.size();
    size_t matched = std::min(numSends, numRecvs);
    for (size_t k = 0; k < matched; ++k) {
      auto send = cast<SendOp>(instrs[channel.sends[k]].op);
      auto recv = cast<RecvOp>(instrs[channel.recvs[k]].op);
      sameCompletion.emplace_back(channel.sends[k], channel.recvs[k]);
      if (send.getBuffer().getType() == recv.getBuffer().getType())
        continue;
      InFlightDiagnostic diag = send.emitError("send #")
                                << k + 1 << " from rank " << src << " to rank "
                                << dst << " on @" << comm.getValue()
                                << " sends " << send.getBuffer().getType()
                                << " but the matching recv on rank " << dst
                                << " receives " << recv.getBuffer().getType();
      diag.attachNote(recv.getLoc()) << "matching recv";
      failed = true;
    }
    if (numSends > matched) {
      instrs[channel.sends[matched]].op->emitError("send #")
          << matched + 1 << " from rank " << src << " to rank " << dst
          << " on @" << comm.getValue() << " has no matching recv: rank " << src
          << " posts " << plural(numSends, "send") << " to rank " << dst
          << " but rank " << dst << " posts " << plural(numRecvs, "recv")
          << " from rank " << src;
      failed = true;
    }
    if (numRecvs > matched) {
      instrs[channel.recvs[matched]].op->emitError("recv #")
          << matched + 1 << " on rank " << dst << " from rank " << src
          << " on @" << comm.getValue() << " has no matching send: rank " << dst
          << " posts " << plural(numRecvs, "recv") << " from rank " << src
          << " but rank " << src << " posts " << plural(numSends, "send")
          << " to rank " << dst;
      failed = true;
    }
  }
}

void PlanVerifier::matchCollectives() {
  struct Comm {
    CommunicatorOp op;
    DenseMap<int64_t, SmallVector<unsigned>> byRank;
  };
  llvm::MapVector<StringAttr, Comm> comms;
  for (auto [id, in] : llvm::enumerate(instrs)) {
    auto coll = dyn_cast<CollectiveOp>(in.op);
    if (!coll)
      continue;
    auto [it, inserted] = comms.try_emplace(in.comm);
    if (inserted)
      it->second.op = tables.lookupNearestSymbolFrom<CommunicatorOp>(
          plan, FlatSymbolRefAttr::get(in.comm));
    if (!it->second.op) {
      coll.emitError("communicator @")
          << in.comm.getValue() << " does not name a monarch.communicator";
      failed = true;
      continue;
    }
    it->second.byRank[in.rank].push_back(id);
  }

  for (auto &[name, comm] : comms) {
    if (!comm.op)
      continue;
    ArrayRef<int64_t> members = comm.op.getRanks();
    auto issued = [&](int64_t rank) -> ArrayRef<unsigned> {
      auto it = comm.byRank.find(rank);
      return it == comm.byRank.end() ? ArrayRef<unsigned>() : it->second;
    };
    size_t count = 0;
    for (int64_t rank : members)
      count = std::max(count, issued(rank).size());
    bool ok = true;
    for (size_t k = 0; k < count && ok; ++k) {
      // Compare with the first member (in communicator order) that issues a
      // k-th collective.
      unsigned ref = kNone;
      for (int64_t rank : members)
        if (issued(rank).size() > k) {
          ref = issued(rank)[k];
          break;
        }
      auto refOp = cast<CollectiveOp>(instrs[ref].op);
      for (int64_t rank : members) {
        ArrayRef<unsigned> list = issued(rank);
        if (list.size() <= k) {
          refOp.emitError("collective #")
              << k + 1 << " on @" << name.getValue() << " of rank "
              << instrs[ref].rank << " (" << signature(refOp)
              << ") has no counterpart on rank " << rank << ", which issues "
              << plural(list.size(), "collective") << " on @"
              << name.getValue();
          ok = false;
          break;
        }
        auto other = cast<CollectiveOp>(instrs[list[k]].op);
        if (other.getKind() == refOp.getKind() &&
            other.getReduction() == refOp.getReduction() &&
            other.getRoot() == refOp.getRoot() &&
            other.getInput().getType() == refOp.getInput().getType() &&
            other.getOutput().getType() == refOp.getOutput().getType()) {
          sameCompletion.emplace_back(ref, list[k]);
          continue;
        }
        InFlightDiagnostic diag = other.emitError("collective #")
                                  << k + 1 << " on @" << name.getValue()
                                  << " differs across ranks: rank " << rank
                                  << " issues " << signature(other)
                                  << " but rank " << instrs[ref].rank
                                  << " issues " << signature(refOp);
        diag.attachNote(refOp.getLoc())
            << "collective #" << k + 1 << " on @" << name.getValue()
            << " of rank " << instrs[ref].rank;
        ok = false;
        break;
      }
    }
    failed |= !ok;
  }
}

//===----------------------------------------------------------------------===//
// Deadlocks: cycles of the happens-before graph
//===----------------------------------------------------------------------===//

void PlanVerifier::checkDeadlock() {
  unsigned numInstrs = instrs.size();
  // Node 2i is the start of instruction i, node 2i+1 its completion (for a
  // wait: the wait's completion). Groups add one completion node each.
  auto start = [](unsigned i) { return 2 * i; };
  auto done = [](unsigned i) { return 2 * i + 1; };
  unsigned numNodes = 2 * numInstrs;
  SmallVector<unsigned> entryDone(entries.size());
  for (auto [e, entry] : llvm::enumerate(entries))
    entryDone[e] = isGroupEntry(e) ? numNodes++ : done(entry.first);

  llvm::IntEqClasses classes(numNodes);
  for (const Entry &entry : entries)
    for (unsigned m = entry.first + 1; m <= entry.last; ++m)
      classes.join(start(entry.first), start(m));
  for (auto [a, b] : sameCompletion)
    classes.join(done(a), done(b));

  SmallVector<Edge> edges;
  edges.reserve(3 * numInstrs);
  for (auto [id, in] : llvm::enumerate(instrs)) {
    unsigned i = id;
    if (in.gate != kNone && !in.isHost())
      edges.push_back({done(in.gate), in.isAsync() ? start(i) : done(i),
                       EdgeKind::Issue, in.gate, i});
    if (in.isAsync()) {
      edges.push_back({start(i), done(i), EdgeKind::Start, i, i});
      if (isGroupEntry(in.entry))
        edges.push_back({done(i), entryDone[in.entry], EdgeKind::Member, i,
                         entries[in.entry].first});
      continue;
    }
    auto wait = dyn_cast<WaitOp>(in.op);
    if (!wait)
      continue;
    for (Value event : wait.getEvents()) {
      auto it = model.idOf.find(event.getDefiningOp());
      unsigned producer =
          it == model.idOf.end() ? kNone : it->second + in.delta;
      if (producer >= instrs.size() || !instrs[producer].isAsync() ||
          instrs[producer].rank != in.rank) {
        wait.emitError("waits on an event that no earlier instruction of "
                       "rank ")
            << in.rank << " produces";
        failed = true;
        return;
      }
      edges.push_back({entryDone[instrs[producer].entry], done(i),
                       EdgeKind::Event, producer, i});
    }
  }
  for (auto [e, entry] : llvm::enumerate(entries))
    if (entry.prev != kNone)
      edges.push_back({entryDone[entry.prev], start(entry.first),
                       EdgeKind::Fifo, entries[entry.prev].first, entry.first});

  classes.compress();
  unsigned numClasses = classes.getNumClasses();
  for (Edge &edge : edges) {
    edge.from = classes[edge.from];
    edge.to = classes[edge.to];
  }

  // Kahn's algorithm over the merged graph (CSR adjacency).
  SmallVector<unsigned> outBegin(numClasses + 1, 0), indegree(numClasses, 0);
  for (const Edge &edge : edges) {
    ++outBegin[edge.from + 1];
    ++indegree[edge.to];
  }
  for (unsigned v = 0; v < numClasses; ++v)
    outBegin[v + 1] += outBegin[v];
  SmallVector<unsigned> outEdges(edges.size());
  {
    SmallVector<unsigned> fill(outBegin.begin(), outBegin.end() - 1);
    for (auto [e, edge] : llvm::enumerate(edges))
      outEdges[fill[edge.from]++] = e;
  }
  SmallVector<unsigned> worklist;
  for (unsigned v = 0; v < numClasses; ++v)
    if (indegree[v] == 0)
      worklist.push_back(v);
  SmallVector<bool> finished(numClasses, false);
  unsigned processed = 0;
  while (!worklist.empty()) {
    unsigned v = worklist.pop_back_val();
    finished[v] = true;
    ++processed;
    for (unsigned k = outBegin[v]; k < outBegin[v + 1]; ++k)
      if (--indegree[edges[outEdges[k]].to] == 0)
        worklist.push_back(edges[outEdges[k]].to);
  }
  if (processed == numClasses)
    return;

  // Every node left has a predecessor that is left too: walking back along
  // such edges must close a cycle.
  SmallVector<unsigned> inEdge(numClasses, kNone);
  for (auto [e, edge] : llvm::enumerate(edges))
    if (!finished[edge.from] && !finished[edge.to] && inEdge[edge.to] == kNone)
      inEdge[edge.to] = e;
  unsigned v = 0;
  while (finished[v])
    ++v;
  SmallVector<int> step(numClasses, -1);
  SmallVector<unsigned> path;
  while (step[v] < 0) {
    step[v] = path.size();
    path.push_back(inEdge[v]);
    v = edges[inEdge[v]].from;
  }
  reportCycle(edges, ArrayRef<unsigned>(path).drop_front(step[v]));
  failed = true;
}

void PlanVerifier::reportCycle(ArrayRef<Edge> edges, ArrayRef<unsigned> cycle) {
  // Each phrase says why its subject waits for the next subject; a subject
  // is an instruction or (negative) a group entry.
  struct Phrase {
    int64_t subject;
    std::string text;
  };
  auto entrySubject = [](unsigned entry) { return -1 - int64_t(entry); };
  auto subjectOf = [&](unsigned instr) {
    unsigned entry = instrs[instr].entry;
    return entry != kNone && isGroupEntry(entry) ? entrySubject(entry)
                                                 : int64_t(instr);
  };
  auto instrOf = [&](int64_t subject) {
    return subject >= 0 ? unsigned(subject)
                        : entries[unsigned(-1 - subject)].first;
  };
  auto describeSubject = [&](int64_t subject) {
    return subject >= 0 ? describe(unsigned(subject))
                        : describeEntry(unsigned(-1 - subject));
  };

  // Nodes merge several instructions, so the subject an edge leaves from
  // depends on how the walk arrived: go around once to learn the subject at
  // which the cycle closes, then again to write the phrases.
  SmallVector<Phrase> phrases;
  int64_t cur = edges[cycle.front()].toInstr;
  for (int pass = 0; pass < 2; ++pass) {
    phrases.clear();
    for (unsigned e : cycle) {
      const Edge &edge = edges[e];
      unsigned a = edge.fromInstr;
      switch (edge.kind) {
      case EdgeKind::Start:
        if (int64_t(a) != cur)
          phrases.push_back(
              {cur, "cannot complete before " + describe(a) + " starts"});
        cur = a;
        break;
      case EdgeKind::Member:
        phrases.push_back(
            {cur, "cannot complete before " + describe(a) + " completes"});
        cur = a;
        break;
      case EdgeKind::Fifo:
        phrases.push_back(
            {cur, "is queued behind " + describeEntry(instrs[a].entry)});
        cur = subjectOf(a);
        break;
      case EdgeKind::Issue:
        phrases.push_back(
            {cur, "cannot be issued before " + describe(a) + " completes"});
        cur = a;
        break;
      case EdgeKind::Event:
        phrases.push_back({cur, "cannot complete before " +
                                    describeEntry(instrs[a].entry) +
                                    " completes"});
        cur = subjectOf(a);
        break;
      }
    }
  }
  if (phrases.empty())
    return;

  // Start at the earliest instruction (by rank, then position).
  size_t lead = 0;
  for (size_t i = 1; i < phrases.size(); ++i)
    if (before(instrOf(phrases[i].subject), instrOf(phrases[lead].subject)))
      lead = i;
  std::rotate(phrases.begin(), phrases.begin() + lead, phrases.end());

  constexpr size_t kMaxPhrases = 12;
  std::string message = "deadlock: " + describeSubject(phrases[0].subject);
  for (auto [i, phrase] : llvm::enumerate(phrases)) {
    if (i == kMaxPhrases) {
      message += ", ... (" + std::to_string(phrases.size() - i) +
                 " more steps around the cycle)";
      break;
    }
    message += (i ? ", which " : " ") + phrase.text;
  }
  unsigned lead0 = instrOf(phrases[0].subject);
  InFlightDiagnostic diag = instrs[lead0].op->emitError(message);
  DenseSet<unsigned> noted = {lead0};
  constexpr size_t kMaxNotes = 8;
  for (const Phrase &phrase : phrases) {
    unsigned id = instrOf(phrase.subject);
    if (noted.size() > kMaxNotes || !noted.insert(id).second)
      continue;
    diag.attachNote(instrs[id].op->getLoc())
        << describe(id) << " is part of the cycle";
  }
}

//===----------------------------------------------------------------------===//
// Data hazards
//===----------------------------------------------------------------------===//

/// Everything the hazard check reads of `program`, relative to its first
/// instruction: per instruction its kind, stream and position on it, the
/// instructions a wait waits for, and the bytes it reads and writes. Two
/// programs with equal words have the same hazards; empty when a wait names
/// an instruction of another program (then the program is checked itself).
static SmallVector<int64_t> hazardWords(const RankProgramModel &model,
                                        ArrayRef<int64_t> bufferBytes,
                                        const Program &program) {
  SmallVector<int64_t> words;
  ArrayRef<Instr> instrs = model.instrs;
  for (unsigned j = program.begin; j < program.end; ++j) {
    const Instr &in = instrs[j];
    words.push_back(static_cast<int64_t>(in.kind));
    if (in.isAsync()) {
      words.push_back(in.stream);
      words.push_back(model.entries[in.entry].streamIndex);
    }
    if (auto wait = dyn_cast<WaitOp>(in.op)) {
      for (Value event : wait.getEvents()) {
        auto it = model.idOf.find(event.getDefiningOp());
        if (it == model.idOf.end())
          continue;
        if (it->second < program.begin || it->second >= program.end)
          return {};
        words.push_back(static_cast<int64_t>(it->second - program.begin));
      }
      words.push_back(-1);
      continue;
    }
    for (const Access &access : in.accesses) {
      BufferAttr buf = model.buffers[access.buffer];
      words.push_back(buf.getOffset());
      words.push_back(bufferBytes[access.buffer]);
      words.push_back(access.write);
    }
    words.push_back(-2);
  }
  return words;
}

void PlanVerifier::checkHazards() {
  // The programs of a class have the same hazards (4,096 ranks, a handful
  // of shapes): a program whose words equal one checked without a race is
  // not checked again; one with a race reports its own.
  DenseMap<llvm::hash_code, SmallVector<SmallVector<int64_t>, 1>> clean;
  SmallVector<int64_t> bufferBytes;
  bufferBytes.reserve(model.buffers.size());
  for (BufferAttr buf : model.buffers)
    bufferBytes.push_back(buf.getSizeInBytes());
  for (const Program &program : model.programs) {
    // A member's instructions, streams, waits and buffers are its
    // program's: it has the program's hazards, reported there.
    if (program.member)
      continue;
    SmallVector<int64_t> words = hazardWords(model, bufferBytes, program);
    llvm::hash_code key = llvm::hash_combine_range(words.begin(), words.end());
    if (!words.empty())
      if (auto it = clean.find(key);
          it != clean.end() && llvm::is_contained(it->second, words))
        continue;
    bool wasFailed = failed;
    failed = false;
    checkHazards(program);
    if (!failed && !words.empty())
      clean[key].push_back(std::move(words));
    failed |= wasFailed;
  }
}

void PlanVerifier::checkHazards(const Program &program) {
  {
    // Per stream: the last entry index known complete through a wait.
    DenseMap<int64_t, unsigned> waited;
    SegmentMap<Users> segments;

    auto streamIndex = [&](unsigned id) {
      return entries[instrs[id].entry].streamIndex;
    };
    auto ordered = [&](const Use &a, unsigned j) {
      if (a.stream < 0)
        return true;
      const Instr &in = instrs[j];
      if (in.isAsync() && in.stream == a.stream)
        return a.streamIndex < streamIndex(j);
      // `waited` holds one past the last stream index known complete.
      auto it = waited.find(a.stream);
      return it != waited.end() && it->second > a.streamIndex;
    };
    for (unsigned j = program.begin; j < program.end; ++j) {
      const Instr &in = instrs[j];
      if (auto wait = dyn_cast<WaitOp>(in.op)) {
        for (Value event : wait.getEvents()) {
          auto it = model.idOf.find(event.getDefiningOp());
          if (it == model.idOf.end() || !instrs[it->second].isAsync())
            continue;
          unsigned producer = it->second;
          unsigned &upTo =
              waited.try_emplace(instrs[producer].stream, 0).first->second;
          upTo = std::max(upTo, streamIndex(producer) + 1);
        }
        continue;
      }
      // `state_buffer` only declares where actor state lives: it touches
      // no bytes when issued.
      SmallVector<BufferAttr, 4> reads, writes;
      if (in.kind != InstrKind::StateBuffer)
        for (const Access &access : in.accesses)
          (access.write ? writes : reads)
              .push_back(model.buffers[access.buffer]);

      // Find the first conflict of this instruction, if any.
      std::optional<Use> conflict;
      BufferAttr mine;
      bool mineWrites = false, otherWrites = false;
      auto check = [&](BufferAttr buf, bool writes) {
        int64_t lo = buf.getOffset(), hi = lo + buf.getSizeInBytes();
        if (conflict || lo == hi)
          return;
        findOverlapping(segments, lo, hi, [&](Segment<Users> &segment) {
          Users &seg = segment.value;
          if (seg.writer && !ordered(*seg.writer, j)) {
            conflict = seg.writer;
            otherWrites = true;
          } else if (writes) {
            for (const Use &r : seg.readers)
              if (!ordered(r, j)) {
                conflict = r;
                break;
              }
          }
          if (conflict) {
            mine = buf;
            mineWrites = writes;
          }
          return conflict.has_value();
        });
      };
      for (BufferAttr buf : reads)
        check(buf, false);
      for (BufferAttr buf : writes)
        check(buf, true);
      if (conflict) {
        std::string how =
            in.isAsync() && conflict->stream == in.stream
                ? "; both are in one group, whose members run concurrently"
                : " with no wait in between";
        InFlightDiagnostic diag =
            in.op->emitError("data race: ")
            << describe(j) << (mineWrites ? " writes " : " reads ") << mine
            << ", which overlaps " << conflict->buffer
            << (otherWrites ? " written by " : " read by ")
            << describe(conflict->instr) << how;
        diag.attachNote(instrs[conflict->instr].op->getLoc())
            << "conflicting " << (otherWrites ? "write" : "read");
        failed = true;
      }

      // Record this instruction's accesses.
      Use self{j,
               in.isAsync() ? in.stream : -1,
               in.isAsync() ? streamIndex(j) : 0,
               {}};
      for (BufferAttr buf : reads) {
        int64_t lo = buf.getOffset(), hi = lo + buf.getSizeInBytes();
        if (lo == hi || self.stream < 0)
          continue;
        Use read = self;
        read.buffer = buf;
        // Gaps are filled, so that the read is remembered everywhere.
        forEachSegmentIn(segments, lo, hi, [&](Segment<Users> &segment) {
          SmallVector<Use, 2> &readers = segment.value.readers;
          auto same = llvm::find_if(
              readers, [&](const Use &r) { return r.stream == self.stream; });
          if (same == readers.end())
            readers.push_back(read);
          else if (same->streamIndex <= read.streamIndex)
            *same = read;
        });
      }
      for (BufferAttr buf : writes) {
        int64_t lo = buf.getOffset(), hi = lo + buf.getSizeInBytes();
        if (lo == hi)
          continue;
        Use write = self;
        write.buffer = buf;
        assignSegments(segments, lo, hi, Users{write, {}});
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

LogicalResult monarch::verifyPlan(PlanOp plan, SymbolTableCollection &tables,
                                  const VerifyPlanOptions &options) {
  return PlanVerifier(plan, tables, options).run();
}

LogicalResult monarch::verifyPlan(PlanOp plan, SymbolTableCollection &tables) {
  return verifyPlan(plan, tables, VerifyPlanOptions());
}

namespace {
struct MonarchVerifyPlanPass
    : monarch::impl::MonarchVerifyPlanBase<MonarchVerifyPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    SymbolTableCollection tables;
    bool anyFailed = false;
    getOperation().walk([&](PlanOp plan) {
      anyFailed |= failed(verifyPlan(plan, tables));
      return WalkResult::skip();
    });
    if (anyFailed)
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

struct MonarchExpandRankMembersPass
    : monarch::impl::MonarchExpandRankMembersBase<
          MonarchExpandRankMembersPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().walk([](PlanOp plan) {
      plan.expandMembers();
      return WalkResult::skip();
    });
  }
};
} // namespace
