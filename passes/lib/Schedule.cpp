//===- Schedule.cpp - Order rank programs, replan their arenas --*- C++ -*-===//
//
// monarch-schedule works on one monarch.rank_program at a time, in four
// steps: build the dependency graph of its instructions (Boost.Graph), list
// schedule it so that communication and its producers are issued first,
// estimate the critical path of the result, and replan the arena over the
// new order. The execution contract is docs/plan-semantics.md; the rules
// this pass keeps, and why they are enough, are in docs/passes.md
// ("## monarch-schedule"). Instructions, stream entries, buffers and byte
// segments are those of the rank-program model (RankProgramModel.h), shared
// with monarch-verify-plan.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/MemoryPlan.h"
#include "monarch/Transforms/Passes.h"

#include "RankProgramModel.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

#include <cmath>
#include <map>
#include <queue>
#include <tuple>

#define DEBUG_TYPE "monarch-schedule"

namespace monarch {
#define GEN_PASS_DEF_MONARCHSCHEDULE
#include "monarch/Transforms/Passes.h.inc"
} // namespace monarch

using namespace mlir;
using namespace monarch;
using namespace monarch::rankmodel;

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//
//
// Deliberately simple; it only has to rank schedules, not predict them:
//  * launch: bytes of its ins and outs / 10 GB/s (a memory-bound kernel);
//  * send, recv: 20 us + bytes / 2 GB/s;
//  * collective: 20 us + max(input, output) bytes / 2 GB/s * 2(n-1)/n on a
//    communicator of n ranks (the bytes a ring moves per rank);
//  * when the mesh has a monarch.topology, a transfer labelled with a link
//    takes that link's latency and bandwidth instead of 20 us and 2 GB/s;
//  * a group (one stream entry) pays the latency of its first member once
//    plus the sum of its members' bandwidth terms;
//  * feed_buffer, fetch_buffer, state_buffer and wait take no time; a wait
//    ends when the events it waits for have completed.
// Partners are assumed ready: a transfer takes its cost from the moment it
// starts on this rank.

static constexpr double kLaunchBytesPerUs = 10e9 / 1e6;
static constexpr double kLinkBytesPerUs = 2e9 / 1e6;
static constexpr double kLatencyUs = 20.0;

namespace {

/// What scheduling adds to an instruction of the model (same index).
struct InstrInfo {
  int unit = -1;
  /// Cost alone; for communication only the bandwidth term.
  double cost = 0;
  /// Communication: the latency its stream entry pays once.
  double latency = 0;
  /// First wait (original order) after which this op is known complete: it
  /// waits for this op's event (via == self) or for a later entry `via` of
  /// the same stream.
  int coverWait = -1;
  int coverVia = -1;
  /// Keeps an instruction between two entries with the same group id and
  /// stream (so that they never become one): set on the entry after it
  /// (`after`) and on the instruction itself (`before`, the entry before).
  int separatedAfter = -1;
  int separatesBefore = -1;
};

/// A scheduling unit: one instruction, or a group of communication
/// instructions (one stream entry) that must stay adjacent.
struct Unit {
  int first, last;
  bool comm = false;
  double cost = 0;
};

/// A distinct (offset, type) buffer of the program.
struct BufferInfo {
  BufferAttr attr;
  int64_t lo, hi;
  /// State, or read before any write in the program: the bytes carry a
  /// value across steps.
  bool persistent = false;
  /// Fed or fetched by the controller.
  bool io = false;
};

/// Last writer and readers since of a segment of bytes. Readers form
/// persistent singly linked lists in a pool so that splitting a segment
/// copies one index.
struct Users {
  int writer = -1;
  int writerBuffer = -1;
  int readers = -1;
};

struct TopoVisitor : boost::default_dfs_visitor {
  std::vector<int> *finished;
  bool *cyclic;
  template <typename Vertex, typename Graph>
  void finish_vertex(Vertex v, const Graph &) {
    finished->push_back(v);
  }
  template <typename Edge, typename Graph> void back_edge(Edge, const Graph &) {
    *cyclic = true;
  }
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

/// Schedules one rank program.
class RankScheduler {
public:
  /// `topology`: the plan mesh's monarch.topology, or null.
  RankScheduler(RankProgramOp program, SymbolTableCollection &symbols,
                TopologyOp topology)
      : program(program), symbols(symbols), topology(topology) {}

  LogicalResult run();

  int64_t bytesSaved = 0;

private:
  LogicalResult collect();
  void buildGraph();
  void buildOrder();
  void reorder();
  void planBuffers();
  double simulate(llvm::ArrayRef<int> unitOrder) const;

  void addEdge(int from, int to);
  void addHazard(int from, int to);
  void cover(int producer, int wait);
  void read(int instr, const Access &access);
  void write(int instr, const Access &access);

  /// Bytes per microsecond and latency of a transfer over `link`: the
  /// mesh's monarch.topology when it has one, else the defaults above.
  std::pair<double, double> linkCost(std::optional<LinkKind> link);

  RankProgramOp program;
  SymbolTableCollection &symbols;
  TopologyOp topology;

  RankProgramModel model;
  /// Views of the model (one rank program), and what scheduling adds.
  llvm::ArrayRef<Instr> instrs;
  std::vector<InstrInfo> info;
  std::vector<Unit> units;
  /// Indexed like the model's buffers.
  std::vector<BufferInfo> buffers;
  llvm::DenseSet<int64_t> commStreams;

  // Graph construction.
  std::vector<std::pair<int, int>> edges;
  std::vector<int> edgeStamp;
  std::vector<char> fifoEdgeAdded;
  SegmentMap<Users> segments;
  std::vector<std::pair<int, int>> readerPool; // (instr, next)
  std::vector<int> readerVisit;
  int visitStamp = 0;
  int lastWait = -1;
  llvm::DenseMap<int64_t, int> coveredUpTo;
  /// Pairs of buffers through which the same bytes are written and read.
  llvm::DenseSet<std::pair<unsigned, unsigned>> aliases;

  std::vector<int> order; // units in the new order
};

} // namespace

//===----------------------------------------------------------------------===//
// Collecting instructions, units and buffers
//===----------------------------------------------------------------------===//

std::pair<double, double>
RankScheduler::linkCost(std::optional<LinkKind> link) {
  if (!topology || !link)
    return {kLinkBytesPerUs, kLatencyUs};
  bool intra = *link == topology.getIntra();
  double gbps = (intra ? topology.getIntraGbps() : topology.getInterGbps())
                    .convertToDouble();
  double latency =
      (intra ? topology.getIntraLatencyUs() : topology.getInterLatencyUs())
          .convertToDouble();
  return {gbps * 1e9 / 1e6, latency};
}

LogicalResult RankScheduler::collect() {
  model.addProgram(program);
  instrs = model.instrs;
  for (const Instr &in : instrs)
    if (in.kind == InstrKind::Unknown)
      return in.op->emitOpError("is not a plan instruction; monarch-schedule "
                                "cannot order it");
  for (BufferAttr attr : model.buffers) {
    int64_t lo = attr.getOffset();
    buffers.push_back({attr, lo, lo + attr.getSizeInBytes()});
  }
  info.resize(instrs.size());
  for (auto [i, in] : llvm::enumerate(instrs)) {
    for (const Access &access : in.accesses) {
      BufferInfo &buf = buffers[access.buffer];
      if (in.kind == InstrKind::FeedBuffer || in.kind == InstrKind::FetchBuffer)
        buf.io = true;
      // Binding state defines the buffer's contents across steps.
      if (in.kind == InstrKind::StateBuffer)
        buf.persistent = true;
    }
    if (in.isComm())
      commStreams.insert(in.stream);
    InstrInfo &cost = info[i];
    llvm::TypeSwitch<Operation *>(in.op)
        .Case([&](LaunchOp launch) {
          int64_t bytes = 0;
          for (Attribute a : launch.getIns())
            bytes += cast<BufferAttr>(a).getSizeInBytes();
          for (Attribute a : launch.getOuts())
            bytes += cast<BufferAttr>(a).getSizeInBytes();
          cost.cost = bytes / kLaunchBytesPerUs;
        })
        .Case<SendOp, RecvOp>([&](auto p2p) {
          auto [rate, latency] = linkCost(p2p.getLink());
          cost.cost = p2p.getBuffer().getSizeInBytes() / rate;
          cost.latency = latency;
        })
        .Case([&](CollectiveOp coll) {
          double n = 1;
          if (auto comm = symbols.lookupNearestSymbolFrom<CommunicatorOp>(
                  coll, coll.getCommAttr()))
            n = std::max<size_t>(1, comm.getRanks().size());
          int64_t bytes = std::max(coll.getInput().getSizeInBytes(),
                                   coll.getOutput().getSizeInBytes());
          auto [rate, latency] = linkCost(coll.getLink());
          cost.cost = bytes / rate * 2 * (n - 1) / n;
          cost.latency = latency;
        });
  }

  // Units: the model's stream entries (adjacent communication instructions
  // with the same group on the same stream), every other instruction alone.
  // Two instructions with the same group and stream with only other
  // instructions between them are two entries; the one right after the
  // first stays between them.
  int lastComm = -1;
  for (int i = 0, e = instrs.size(); i < e; ++i) {
    const Instr &in = instrs[i];
    InstrInfo &ii = info[i];
    bool sameEntry =
        in.isAsync() && model.entries[in.entry].first != unsigned(i);
    if (!sameEntry && in.isComm() && in.group && lastComm >= 0 &&
        lastComm != i - 1 && instrs[lastComm].group == in.group &&
        instrs[lastComm].stream == in.stream) {
      info[lastComm + 1].separatesBefore = lastComm;
      ii.separatedAfter = lastComm + 1;
    }
    if (sameEntry) {
      Unit &unit = units.back();
      unit.last = i;
      unit.cost += ii.cost;
    } else {
      Unit unit{i, i, in.isComm(), ii.cost};
      if (in.isComm())
        unit.cost += ii.latency;
      units.push_back(unit);
    }
    ii.unit = units.size() - 1;
    if (in.isComm())
      lastComm = i;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Dependency graph
//===----------------------------------------------------------------------===//

void RankScheduler::addEdge(int from, int to) {
  int u = info[from].unit, v = info[to].unit;
  if (u == v || edgeStamp[u] == v)
    return;
  // Every edge into unit v is added while its instructions are visited, so
  // one stamp per source unit removes duplicates.
  edgeStamp[u] = v;
  edges.emplace_back(u, v);
}

/// Orders `to` after `from` (earlier, touching overlapping bytes) so that
/// `to` cannot run before `from` has completed: directly when the stream or
/// the host already serializes them, else after the wait that made the
/// original program safe.
void RankScheduler::addHazard(int from, int to) {
  const Instr &a = instrs[from], &b = instrs[to];
  const InstrInfo &ai = info[from];
  if (ai.unit == info[to].unit)
    return;
  if (!a.isAsync() || (b.isAsync() && a.stream == b.stream)) {
    addEdge(from, to);
    return;
  }
  if (ai.coverWait >= 0) {
    // The wait comes before `to`: waits are visited before later ops.
    addEdge(ai.coverWait, to);
    if (ai.coverVia != from && !fifoEdgeAdded[from]) {
      // The wait proves `from` complete only while `from` is issued before
      // `via` on their stream.
      fifoEdgeAdded[from] = 1;
      int u = ai.unit, v = info[ai.coverVia].unit;
      if (u != v)
        edges.emplace_back(u, v);
    }
    return;
  }
  // Not synchronized by a local wait (racy, or ordered through another
  // rank): keep the issue order and the last wait before `to`.
  addEdge(from, to);
  if (lastWait > from)
    addEdge(lastWait, to);
}

void RankScheduler::cover(int producer, int wait) {
  const Instr &p = instrs[producer];
  const Unit &unit = units[info[producer].unit];
  // The event of a grouped instruction fires when its whole group has
  // completed (docs/plan-semantics.md).
  for (int m = unit.first; m <= unit.last; ++m) {
    if (info[m].coverWait < 0) {
      info[m].coverWait = wait;
      info[m].coverVia = m;
    }
  }
  // Streams are FIFO: every earlier entry of the stream has completed too.
  ArrayRef<unsigned> list =
      model.programs.front().streams.find(p.stream)->second;
  int entryStart = instrs[unit.first].streamPos;
  for (int &ptr = coveredUpTo[p.stream]; ptr < entryStart; ++ptr) {
    InstrInfo &earlier = info[list[ptr]];
    if (earlier.coverWait < 0) {
      earlier.coverWait = wait;
      earlier.coverVia = producer;
    }
  }
}

void RankScheduler::read(int instr, const Access &access) {
  BufferInfo &buf = buffers[access.buffer];
  if (buf.lo == buf.hi)
    return;
  forEachSegmentIn(segments, buf.lo, buf.hi, [&](Segment<Users> &segment) {
    Users &seg = segment.value;
    if (seg.writer < 0) {
      // Never written in this program: the value comes from before it.
      buf.persistent = true;
    } else {
      if (seg.writer != instr)
        addHazard(seg.writer, instr);
      // A value written through another buffer is read through this one:
      // they alias and must move together.
      if (seg.writerBuffer != static_cast<int>(access.buffer))
        aliases.insert(std::minmax<unsigned>(seg.writerBuffer, access.buffer));
    }
    if (seg.readers < 0 || readerPool[seg.readers].first != instr) {
      readerPool.emplace_back(instr, seg.readers);
      readerVisit.push_back(-1);
      seg.readers = readerPool.size() - 1;
    }
  });
}

void RankScheduler::write(int instr, const Access &access) {
  const BufferInfo &buf = buffers[access.buffer];
  if (buf.lo == buf.hi)
    return;
  ++visitStamp;
  findOverlapping(segments, buf.lo, buf.hi, [&](Segment<Users> &segment) {
    const Users &seg = segment.value;
    if (seg.writer >= 0 && seg.writer != instr)
      addHazard(seg.writer, instr);
    // Reader lists share tails after splits: stop at a visited entry.
    for (int r = seg.readers; r >= 0 && readerVisit[r] != visitStamp;
         r = readerPool[r].second) {
      readerVisit[r] = visitStamp;
      if (readerPool[r].first != instr)
        addHazard(readerPool[r].first, instr);
    }
    return false;
  });
  assignSegments(segments, buf.lo, buf.hi,
                 Users{instr, static_cast<int>(access.buffer), -1});
}

void RankScheduler::buildGraph() {
  edgeStamp.assign(units.size(), -1);
  fifoEdgeAdded.assign(instrs.size(), 0);
  int lastComm = -1, lastPrint = -1;
  llvm::DenseMap<int64_t, int> lastOnCommStream;
  for (int i = 0, e = instrs.size(); i < e; ++i) {
    const Instr &in = instrs[i];
    // Communication keeps its issue order: it fixes matching and the
    // global per-communicator order that makes plans deadlock-free.
    if (in.isComm()) {
      if (lastComm >= 0)
        addEdge(lastComm, i);
      lastComm = i;
    }
    if (info[i].separatesBefore >= 0)
      addEdge(info[i].separatesBefore, i);
    if (info[i].separatedAfter >= 0)
      addEdge(info[i].separatedAfter, i);
    // A stream carrying communication keeps its whole order, since its
    // FIFO order is part of the happens-before graph across ranks.
    if (in.isAsync() && commStreams.contains(in.stream)) {
      auto [it, inserted] = lastOnCommStream.try_emplace(in.stream, i);
      if (!inserted) {
        addEdge(it->second, i);
        it->second = i;
      }
    }
    // Prints keep their order: it is the order of the lines.
    if (in.kind == InstrKind::PrintBuffers) {
      if (lastPrint >= 0)
        addEdge(lastPrint, i);
      lastPrint = i;
    }
    if (in.kind == InstrKind::Wait) {
      // Communication never moves below a wait it was issued before (that
      // would make it wait on the waited events), and waits keep their
      // order (a later one may rely on an earlier one).
      if (lastComm >= 0)
        addEdge(lastComm, i);
      if (lastWait >= 0)
        addEdge(lastWait, i);
      for (Value event : cast<WaitOp>(in.op).getEvents()) {
        int producer = model.idOf.lookup(event.getDefiningOp());
        addEdge(producer, i);
        cover(producer, i);
      }
      lastWait = i;
      continue;
    }
    for (const Access &access : in.accesses)
      if (!access.write)
        read(i, access);
    for (const Access &access : in.accesses)
      if (access.write)
        write(i, access);
  }
}

//===----------------------------------------------------------------------===//
// List scheduling
//===----------------------------------------------------------------------===//

void RankScheduler::buildOrder() {
  int n = units.size();
  Graph graph(n);
  std::vector<int> inDegree(n, 0);
  for (auto [u, v] : edges) {
    boost::add_edge(u, v, graph);
    ++inDegree[v];
  }

  // Reverse topological order from a DFS (edges all point forward in the
  // original order, so there is no cycle).
  std::vector<int> finished;
  finished.reserve(n);
  bool cyclic = false;
  TopoVisitor visitor;
  visitor.finished = &finished;
  visitor.cyclic = &cyclic;
  boost::depth_first_search(graph, boost::visitor(visitor));
  assert(!cyclic && "dependency edges point forward in program order");

  // Priority: feed_buffer and state_buffer first (they take no time and
  // only unblock others), then units that communication depends on, then the
  // longest cost-weighted path to a sink, then the original order.
  std::vector<double> bottom(n, 0);
  std::vector<char> feedsComm(n, 0);
  for (int u : finished) {
    double longest = 0;
    bool comm = units[u].comm;
    for (auto e : llvm::make_range(boost::out_edges(u, graph))) {
      int v = boost::target(e, graph);
      longest = std::max(longest, bottom[v]);
      comm |= feedsComm[v];
    }
    bottom[u] = units[u].cost + longest;
    feedsComm[u] = comm;
  }
  LLVM_DEBUG(
      llvm::dbgs() << "rank " << program.getRank() << ": " << instrs.size()
                   << " instructions, " << n << " units, " << edges.size()
                   << " edges, dependency critical path "
                   << (finished.empty()
                           ? 0
                           : *std::max_element(bottom.begin(), bottom.end()))
                   << " us\n");

  order.clear();
  order.reserve(n);
  auto defines = [&](int u) {
    return isa<FeedBufferOp, StateBufferOp>(instrs[units[u].first].op);
  };
  // (defines, feedsComm, bottom, -unit)
  using Key = std::tuple<bool, bool, double, int>;
  std::priority_queue<Key> ready;
  auto push = [&](int u) {
    ready.emplace(defines(u), feedsComm[u], bottom[u], -u);
  };
  for (int u = 0; u < n; ++u)
    if (inDegree[u] == 0)
      push(u);
  while (!ready.empty()) {
    int u = -std::get<3>(ready.top());
    ready.pop();
    order.push_back(u);
    for (auto e : llvm::make_range(boost::out_edges(u, graph))) {
      int v = boost::target(e, graph);
      if (--inDegree[v] == 0)
        push(v);
    }
  }
  assert(static_cast<int>(order.size()) == n && "graph is a DAG");
  if (static_cast<int>(order.size()) != n) {
    order.clear();
    for (int u = 0; u < n; ++u)
      order.push_back(u);
  }
}

void RankScheduler::reorder() {
  Block &block = program.getBody().front();
  bool same = true;
  for (auto [i, u] : llvm::enumerate(order))
    same &= static_cast<int>(i) == u;
  if (same)
    return;
  for (int u : order)
    for (int i = units[u].first; i <= units[u].last; ++i)
      instrs[i].op->moveBefore(&block, block.end());
}

/// Runs the program in `unitOrder` under the cost model: the host issues in
/// order and blocks at waits, each stream runs its entries one at a time.
/// The finish time is the length of the critical path of the schedule.
double RankScheduler::simulate(llvm::ArrayRef<int> unitOrder) const {
  std::vector<double> done(instrs.size(), 0);
  llvm::DenseMap<int64_t, double> streamFree;
  double host = 0, finish = 0;
  for (int u : unitOrder) {
    const Instr &head = instrs[units[u].first];
    if (head.kind == InstrKind::Wait) {
      for (Value event : cast<WaitOp>(head.op).getEvents())
        host = std::max(host, done[model.idOf.lookup(event.getDefiningOp())]);
      continue;
    }
    if (head.isHost())
      continue;
    double &free = streamFree[head.stream];
    double end = std::max(host, free) + units[u].cost;
    free = end;
    finish = std::max(finish, end);
    for (int i = units[u].first; i <= units[u].last; ++i)
      done[i] = end;
  }
  return std::max(finish, host);
}

//===----------------------------------------------------------------------===//
// Memory plan
//===----------------------------------------------------------------------===//

void RankScheduler::planBuffers() {
  int n = instrs.size();
  std::vector<int> pos(n);
  {
    int p = 0;
    for (int u : order)
      for (int i = units[u].first; i <= units[u].last; ++i)
        pos[i] = p++;
  }

  // When each instruction is known complete to the host, in the new order:
  // host instructions at once, asynchronous ones at the first wait for them
  // (or a member of their group) or for a later entry of their stream, else
  // only at program end (n).
  std::vector<int> complete(n, n);
  llvm::DenseMap<int64_t, std::vector<int>> newStreamOps;
  llvm::DenseMap<int64_t, int> newCovered;
  std::vector<int> newStreamPos(n, -1), entryStart(n, -1);
  for (int u : order) {
    for (int i = units[u].first; i <= units[u].last; ++i) {
      const Instr &in = instrs[i];
      if (in.isHost()) {
        complete[i] = pos[i];
      } else if (in.isAsync()) {
        std::vector<int> &list = newStreamOps[in.stream];
        newStreamPos[i] = list.size();
        entryStart[i] = newStreamPos[units[u].first];
        list.push_back(i);
      } else {
        for (Value event : cast<WaitOp>(in.op).getEvents()) {
          int p = model.idOf.lookup(event.getDefiningOp());
          const Unit &entry = units[info[p].unit];
          for (int m = entry.first; m <= entry.last; ++m)
            complete[m] = std::min(complete[m], pos[i]);
          std::vector<int> &list = newStreamOps[instrs[p].stream];
          for (int &ptr = newCovered[instrs[p].stream]; ptr < entryStart[p];
               ++ptr)
            complete[list[ptr]] = std::min(complete[list[ptr]], pos[i]);
        }
      }
    }
  }

  // Live range of each buffer: first access to the point where its last
  // user is known complete.
  int numBuffers = buffers.size();
  std::vector<ArenaBuffer> arenaBuffers(numBuffers);
  for (int b = 0; b < numBuffers; ++b) {
    ArenaBuffer &ab = arenaBuffers[b];
    ab.offset = buffers[b].lo;
    ab.size = buffers[b].hi - buffers[b].lo;
    ab.start = n;
    ab.persistent = buffers[b].persistent;
    ab.io = buffers[b].io;
  }
  for (int i = 0; i < n; ++i)
    for (const Access &access : instrs[i].accesses) {
      ArenaBuffer &ab = arenaBuffers[access.buffer];
      ab.start = std::min<int64_t>(ab.start, pos[i]);
      ab.end = std::max<int64_t>(ab.end, complete[i]);
    }
  std::vector<std::pair<unsigned, unsigned>> aliasList(aliases.begin(),
                                                       aliases.end());
  llvm::sort(aliasList);

  ArenaPlan plan = planArena(arenaBuffers, aliasList, /*alignment=*/64);
  int64_t arena = program.getArena();
  LLVM_DEBUG(llvm::dbgs() << "rank " << program.getRank() << ": " << numBuffers
                          << " buffers, " << aliasList.size()
                          << " aliased pairs, arena " << arena << " -> "
                          << plan.peakBytes << " bytes\n");
  Builder builder(program.getContext());
  if (plan.peakBytes >= arena) {
    // Never worse than the input: its layout stays valid under the new
    // order, since the graph kept every hazard between its buffers.
    program->setAttr("monarch.peak_bytes", builder.getI64IntegerAttr(arena));
    return;
  }

  llvm::DenseMap<Attribute, Attribute> remap;
  for (int b = 0; b < numBuffers; ++b)
    remap[buffers[b].attr] = BufferAttr::get(
        program.getContext(), plan.offsets[b], buffers[b].attr.getType());
  auto map = [&](BufferAttr attr) { return cast<BufferAttr>(remap[attr]); };
  auto mapList = [&](ArrayAttr list) {
    SmallVector<Attribute> out;
    for (Attribute a : list)
      out.push_back(remap[a]);
    return builder.getArrayAttr(out);
  };
  for (const Instr &in : instrs)
    llvm::TypeSwitch<Operation *>(in.op)
        .Case([&](LaunchOp op) {
          op.setInsAttr(mapList(op.getIns()));
          op.setOutsAttr(mapList(op.getOuts()));
        })
        .Case<SendOp, RecvOp, FeedBufferOp, FetchBufferOp, StateBufferOp>(
            [&](auto op) { op.setBufferAttr(map(op.getBuffer())); })
        .Case([&](PrintBuffersOp op) {
          op.setBuffersAttr(mapList(op.getBuffers()));
        })
        .Case([&](CollectiveOp op) {
          op.setInputAttr(map(op.getInput()));
          op.setOutputAttr(map(op.getOutput()));
        });
  program.setArena(plan.peakBytes);
  program->setAttr("monarch.peak_bytes",
                   builder.getI64IntegerAttr(plan.peakBytes));
  bytesSaved = arena - plan.peakBytes;
}

LogicalResult RankScheduler::run() {
  if (failed(collect()))
    return failure();
  buildGraph();
  buildOrder();
  LLVM_DEBUG({
    std::vector<int> original(units.size());
    for (int u = 0, e = units.size(); u < e; ++u)
      original[u] = u;
    llvm::dbgs() << "rank " << program.getRank() << ": critical path "
                 << simulate(original) << " us -> " << simulate(order)
                 << " us\n";
  });
  reorder();
  // Rounded to the nanosecond: the model is not more precise than that.
  double criticalPath = std::round(simulate(order) * 1e3) / 1e3;
  program->setAttr(
      "monarch.critical_path_us",
      FloatAttr::get(Float64Type::get(program.getContext()), criticalPath));
  planBuffers();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
/// The buffers `op` reads and writes, in the order of its attributes.
SmallVector<Attribute> buffersOf(Operation *op) {
  SmallVector<Attribute> out;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](LaunchOp launch) {
        llvm::append_range(out, launch.getIns());
        llvm::append_range(out, launch.getOuts());
      })
      .Case<SendOp, RecvOp, FeedBufferOp, FetchBufferOp, StateBufferOp>(
          [&](auto io) { out.push_back(io.getBuffer()); })
      .Case([&](PrintBuffersOp print) {
        llvm::append_range(out, print.getBuffers());
      })
      .Case([&](CollectiveOp coll) {
        out.push_back(coll.getInput());
        out.push_back(coll.getOutput());
      });
  return out;
}

/// Gives `op` the buffers `bufs` (buffersOf's order).
void setBuffers(Operation *op, ArrayRef<Attribute> bufs) {
  Builder b(op->getContext());
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](LaunchOp launch) {
        size_t n = launch.getIns().size();
        launch.setInsAttr(b.getArrayAttr(bufs.take_front(n)));
        launch.setOutsAttr(b.getArrayAttr(bufs.drop_front(n)));
      })
      .Case<SendOp, RecvOp, FeedBufferOp, FetchBufferOp, StateBufferOp>(
          [&](auto io) { io.setBufferAttr(cast<BufferAttr>(bufs[0])); })
      .Case([&](PrintBuffersOp print) {
        print.setBuffersAttr(b.getArrayAttr(bufs));
      })
      .Case([&](CollectiveOp coll) {
        coll.setInputAttr(cast<BufferAttr>(bufs[0]));
        coll.setOutputAttr(cast<BufferAttr>(bufs[1]));
      });
}

/// What scheduling reads of a rank program, as words: per instruction its
/// op, buffers, stream, group, link and communicator size, and the
/// positions of the instructions its events come from; the arena. Not a
/// transfer's peer or communicator, an offset or a kernel: the members of
/// a class of ranks (docs/spmd-classes.md) differ there and are scheduled
/// alike. Empty for a program with an op that is not an instruction (the
/// scheduler reports it).
SmallVector<int64_t> scheduleShape(RankProgramOp program,
                                   SymbolTableCollection &symbols) {
  SmallVector<int64_t> words{static_cast<int64_t>(program.getArena())};
  DenseMap<Operation *, int64_t> position;
  auto word = [&](const void *p) {
    words.push_back(reinterpret_cast<intptr_t>(p));
  };
  auto optional = [&](std::optional<uint64_t> v) {
    words.push_back(v ? static_cast<int64_t>(*v) : -1);
  };
  bool ok = true;
  for (Operation &op : program.getBody().front()) {
    position[&op] = position.size();
    word(op.getName().getAsOpaquePointer());
    for (Attribute a : buffersOf(&op))
      word(a.getAsOpaquePointer());
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](LaunchOp launch) { words.push_back(launch.getStream()); })
        .Case<SendOp, RecvOp>([&](auto p2p) {
          words.push_back(p2p.getStream());
          optional(p2p.getGroup());
          word(p2p.getLinkAttr().getAsOpaquePointer());
        })
        .Case([&](CollectiveOp coll) {
          word(coll.getKindAttr().getAsOpaquePointer());
          word(coll.getReductionAttr().getAsOpaquePointer());
          optional(coll.getRoot());
          words.push_back(coll.getStream());
          optional(coll.getGroup());
          word(coll.getLinkAttr().getAsOpaquePointer());
          auto comm = symbols.lookupNearestSymbolFrom<CommunicatorOp>(
              coll, coll.getCommAttr());
          words.push_back(comm ? static_cast<int64_t>(comm.getRanks().size())
                               : -1);
        })
        .Case([&](WaitOp wait) {
          for (Value e : wait.getEvents()) {
            auto it = position.find(e.getDefiningOp());
            words.push_back(it == position.end() ? -1 : it->second);
          }
        })
        .Case<FeedBufferOp, FetchBufferOp>([&](auto io) {
          words.push_back(io.getIndex());
          word(op.getAttr("keep_only").getAsOpaquePointer());
        })
        .Case([&](StateBufferOp state) {
          word(state.getStateAttr().getAsOpaquePointer());
        })
        .Case([&](PrintBuffersOp print) {
          word(print.getFormatAttr().getAsOpaquePointer());
        })
        .Default([&](Operation *) { ok = false; });
    // Discardable attributes the copies would not share.
    ok &= op.getDiscardableAttrDictionary().empty();
    words.push_back(-2); // end of instruction
  }
  if (!ok || !program->getDiscardableAttrDictionary().empty())
    words.clear();
  return words;
}

struct MonarchSchedulePass
    : monarch::impl::MonarchScheduleBase<MonarchSchedulePass> {
  using Base::Base;

  /// A program scheduled: its shape, and what scheduling did to it (the
  /// new position of each instruction, its buffers' new offsets, its
  /// attributes), given to every later program of the same shape instead
  /// of scheduling it again (the copies of a class's program that
  /// monarch-plan-transfers makes: 4,096 programs, 4 shapes).
  struct Scheduled {
    SmallVector<int64_t> shape;
    SmallVector<unsigned> order;
    DenseMap<Attribute, Attribute> remap;
    RankProgramOp program;
    int64_t bytesSaved;
  };

  void runOnOperation() override {
    SymbolTableCollection symbols;
    // Each plan mesh's topology, found once (a scan of the module per rank
    // program is quadratic in the ranks).
    llvm::DenseMap<Attribute, TopologyOp> topologies;
    for (auto t : getOperation().getOps<TopologyOp>())
      topologies[t.getMeshAttr()] = t;
    std::vector<Scheduled> scheduled;
    DenseMap<std::pair<Operation *, llvm::hash_code>, SmallVector<size_t, 1>>
        byShape;
    // The members of a class (monarch.rank_member) run their program in
    // its new order: their tables are permuted with it.
    DenseMap<Operation *, SmallVector<RankMemberOp>> membersOf;
    getOperation().walk([&](PlanOp plan) {
      DenseMap<int64_t, RankProgramOp> programs;
      for (Operation &op : plan.getBody().front()) {
        if (auto program = dyn_cast<RankProgramOp>(op))
          programs[program.getRank()] = program;
        else if (auto member = dyn_cast<RankMemberOp>(op))
          if (RankProgramOp of = programs.lookup(member.getOf()))
            membersOf[of].push_back(member);
      }
    });
    WalkResult result = getOperation().walk([&](RankProgramOp program) {
      auto members = membersOf.find(program);
      if (members == membersOf.end())
        return scheduleProgram(program, symbols, topologies, scheduled,
                               byShape);
      SlotOrder slots(program);
      WalkResult r =
          scheduleProgram(program, symbols, topologies, scheduled, byShape);
      slots.permute(program, members->second);
      return r;
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// The position of each instruction of a program in its member tables
  /// (`peers`, `comms`, `offsets`), taken before it is scheduled; `permute`
  /// then puts the members' tables in the program's new order.
  struct SlotOrder {
    DenseMap<Operation *, unsigned> slot;
    explicit SlotOrder(RankProgramOp program) {
      unsigned peers = 0, comms = 0, offsets = 0;
      for (Operation &op : program.getBody().front()) {
        if (RankMemberOp::isPeerSlot(&op))
          slot[&op] = peers++;
        else if (RankMemberOp::isCommSlot(&op))
          slot[&op] = comms++;
        else if (RankMemberOp::isOffsetsSlot(&op))
          slot[&op] = offsets++;
      }
    }
    void permute(RankProgramOp program, ArrayRef<RankMemberOp> members) {
      SmallVector<unsigned> peers, comms, offsets;
      for (Operation &op : program.getBody().front()) {
        if (RankMemberOp::isPeerSlot(&op))
          peers.push_back(slot.lookup(&op));
        else if (RankMemberOp::isCommSlot(&op))
          comms.push_back(slot.lookup(&op));
        else if (RankMemberOp::isOffsetsSlot(&op))
          offsets.push_back(slot.lookup(&op));
      }
      auto inOrder = [](auto table, ArrayRef<unsigned> order) {
        SmallVector<std::decay_t<decltype(table[0])>> out;
        for (unsigned i : order)
          out.push_back(table[i]);
        return out;
      };
      auto unchanged = [](ArrayRef<unsigned> order) {
        for (auto [i, o] : llvm::enumerate(order))
          if (i != o)
            return false;
        return true;
      };
      Builder b(program.getContext());
      for (RankMemberOp member : members) {
        if (!unchanged(peers))
          member.setPeersAttr(
              b.getDenseI64ArrayAttr(inOrder(member.getPeers(), peers)));
        if (!unchanged(comms))
          member.setCommsAttr(
              b.getArrayAttr(inOrder(member.getComms().getValue(), comms)));
        if (!unchanged(offsets))
          member.setOffsetsAttr(
              b.getArrayAttr(inOrder(member.getOffsets().getValue(), offsets)));
      }
    }
  };

  /// Schedules `program`, or gives it the schedule of an earlier program
  /// of its shape.
  WalkResult scheduleProgram(
      RankProgramOp program, SymbolTableCollection &symbols,
      const llvm::DenseMap<Attribute, TopologyOp> &topologies,
      std::vector<Scheduled> &scheduled,
      DenseMap<std::pair<Operation *, llvm::hash_code>, SmallVector<size_t, 1>>
          &byShape) {
    TopologyOp topology;
    auto plan = program->getParentOfType<PlanOp>();
    if (plan)
      topology = topologies.lookup(plan.getMeshAttr());
    SmallVector<int64_t> shape = scheduleShape(program, symbols);
    std::pair<Operation *, llvm::hash_code> key{
        plan, llvm::hash_combine_range(shape.begin(), shape.end())};
    if (!shape.empty())
      for (size_t i : byShape.lookup(key))
        if (scheduled[i].shape == shape) {
          apply(scheduled[i], program);
          return WalkResult::advance();
        }
    // What scheduling changes, to record it.
    SmallVector<Operation *> ops;
    SmallVector<SmallVector<Attribute>> before;
    for (Operation &op : program.getBody().front()) {
      ops.push_back(&op);
      before.push_back(buffersOf(&op));
    }
    RankScheduler scheduler(program, symbols, topology);
    if (failed(scheduler.run()))
      return WalkResult::interrupt();
    bytesSaved += scheduler.bytesSaved;
    if (shape.empty())
      return WalkResult::advance();
    Scheduled done;
    done.shape = std::move(shape);
    done.program = program;
    done.bytesSaved = scheduler.bytesSaved;
    DenseMap<Operation *, unsigned> was;
    for (auto [i, op] : llvm::enumerate(ops)) {
      was[op] = i;
      for (auto [old, now] : llvm::zip(before[i], buffersOf(op)))
        done.remap[old] = now;
    }
    for (Operation &op : program.getBody().front())
      done.order.push_back(was.lookup(&op));
    byShape[key].push_back(scheduled.size());
    scheduled.push_back(std::move(done));
    return WalkResult::advance();
  }

  /// Schedules `program` as `done` was: same order, same offsets.
  void apply(Scheduled &done, RankProgramOp program) {
    Block &block = program.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (unsigned i : done.order)
      ops[i]->moveBefore(&block, block.end());
    for (Operation *op : ops) {
      SmallVector<Attribute> bufs = buffersOf(op);
      // Every buffer of an equal shape was one of `done`'s: remapped.
      for (Attribute &b : bufs)
        b = done.remap.lookup(b);
      setBuffers(op, bufs);
    }
    program.setArena(done.program.getArena());
    for (StringRef name : {"monarch.peak_bytes", "monarch.critical_path_us"})
      if (Attribute a = done.program->getAttr(name))
        program->setAttr(name, a);
    bytesSaved += done.bytesSaved;
  }
};
} // namespace
