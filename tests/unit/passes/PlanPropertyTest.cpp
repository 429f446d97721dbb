//===- PlanPropertyTest.cpp - verify-plan against simulation ----*- C++ -*-===//
//
// Property test of monarch-verify-plan: thousands of random plans over 2-8
// ranks, built as real MLIR modules, are checked by `verifyPlan` and run by
// the discrete-event simulator of PlanSimulator.h under several random
// duration seeds. Well-formed plans are generated in one global topological
// order that every rank follows (launches, point-to-point transfers,
// collectives on random communicators, groups and waits); broken ones are
// derived from them by mutations (swap two sends, drop a recv, change a
// shape, reorder collectives on one rank, remove a group). The claims:
//   - the verifier accepts a plan iff the simulation completes;
//   - every rejected plan deadlocks or mismatches in the simulation, with
//     the same diagnosis;
//   - the outcome does not depend on the durations.
//
//===----------------------------------------------------------------------===//

#include "MonarchTestUtils.h"
#include "PlanSimulator.h"
#include "TestRandom.h"

#include "monarch/Transforms/VerifyPlan.h"

#include "llvm/ADT/DenseMap.h"

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace monarch;
using namespace monarch::test;

namespace {

template <typename T> T &pick(Rng &rng, std::vector<T> &list) {
  return list[uniform(rng, 0, static_cast<int64_t>(list.size()) - 1)];
}

//===----------------------------------------------------------------------===//
// Generator of well-formed plans
//===----------------------------------------------------------------------===//

struct GenOptions {
  int64_t minRanks = 2, maxRanks = 8;
  int64_t minSteps = 6, maxSteps = 30;
};

/// Builds a random plan step by step in one global order: every rank emits
/// its part of step k after its parts of steps < k, which makes the plan
/// deadlock-free; reads of values produced on another stream are preceded
/// by a wait, and every write goes to a fresh buffer, which makes it free of
/// data races.
class PlanGenerator {
public:
  PlanGenerator(MLIRContext &ctx, uint64_t seed, GenOptions options = {})
      : ctx(ctx), b(&ctx), loc(UnknownLoc::get(&ctx)), rng(seed),
        options(options) {}

  OwningOpRef<ModuleOp> generate();

private:
  /// A buffer holding a value on one rank and how it was produced.
  struct Val {
    BufferAttr buf;
    int64_t stream;     // -1: written on the host
    unsigned event = 0; // index into Rank::events when stream >= 0
  };
  struct Rank {
    RankProgramOp program;
    int64_t top = 0;
    std::vector<Val> values;
    llvm::DenseMap<Type, std::vector<unsigned>> byType;
    /// Events produced so far and whether a wait already covers them.
    std::vector<std::pair<Value, bool>> events;
  };
  enum class PartKind { Launch, Send, Recv, Collective };
  /// One rank's instruction in a step.
  struct Part {
    Part(PartKind kind, int64_t rank) : kind(kind), rank(rank) {}
    PartKind kind;
    int64_t rank;
    SmallVector<unsigned> reads; // values of `rank` read
    SmallVector<RankedTensorType> outs;
    int64_t peer = -1;
    StringRef comm;
    RankedTensorType type; // recv buffer type
    CollectiveKind collective = CollectiveKind::AllReduce;
    std::optional<ReductionKind> reduction;
    std::optional<int64_t> root;
    RankedTensorType inType; // collective input when not reading a value
  };
  struct Comm {
    std::string name;
    std::vector<int64_t> ranks;
  };

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  RankedTensorType randomType() {
    static const int64_t dims[] = {1, 2, 4, 8};
    if (chance(rng, 0.5))
      return tensor({dims[uniform(rng, 0, 3)]});
    return tensor({dims[uniform(rng, 0, 3)], dims[uniform(rng, 0, 2)]});
  }
  BufferAttr alloc(Rank &r, RankedTensorType type) {
    BufferAttr buf = BufferAttr::get(&ctx, r.top, type);
    r.top += (buf.getSizeInBytes() + 15) / 16 * 16;
    return buf;
  }
  unsigned addValue(Rank &r, Val v) {
    unsigned id = r.values.size();
    r.values.push_back(v);
    r.byType[v.buf.getType()].push_back(id);
    return id;
  }
  /// A value of `type` on `r` (half the time), if there is one.
  std::optional<unsigned> valueOfType(Rank &r, Type type) {
    auto it = r.byType.find(type);
    if (it == r.byType.end() || !chance(rng, 0.5))
      return std::nullopt;
    return pick(rng, it->second);
  }
  int64_t randomStream() { return uniform(rng, 0, 3); }
  StringRef kernelFor(ArrayRef<Type> types);

  Part collectivePart(const Comm &comm, int64_t rank, CollectiveKind kind,
                      std::optional<ReductionKind> reduction,
                      std::optional<int64_t> root, RankedTensorType in,
                      RankedTensorType out);
  void addCollective(std::vector<Part> &parts);
  void addTransfer(std::vector<Part> &parts);
  /// Emits the parts of one step on one rank: a wait for what they read
  /// from other streams, then the parts (as one group when `group`).
  void emit(Rank &r, std::vector<Part *> parts, std::optional<uint64_t> group);
  void waitFor(Rank &r, ArrayRef<unsigned> events);

  MLIRContext &ctx;
  OpBuilder b;
  Location loc;
  Rng rng;
  GenOptions options;
  OpBuilder kernels{&ctx};
  std::map<std::string, std::string> kernelNames;
  std::vector<Comm> comms;
  std::vector<Rank> ranks;
};

StringRef PlanGenerator::kernelFor(ArrayRef<Type> types) {
  std::string key;
  llvm::raw_string_ostream os(key);
  llvm::interleaveComma(types, os);
  auto [it, inserted] =
      kernelNames.try_emplace(key, "k" + std::to_string(kernelNames.size()));
  if (inserted) {
    auto fn = func::FuncOp::create(kernels, loc, it->second,
                                   kernels.getFunctionType(types, {}));
    fn.setPrivate();
  }
  return it->second;
}

PlanGenerator::Part PlanGenerator::collectivePart(
    const Comm &comm, int64_t rank, CollectiveKind kind,
    std::optional<ReductionKind> reduction, std::optional<int64_t> root,
    RankedTensorType in, RankedTensorType out) {
  Part part(PartKind::Collective, rank);
  part.comm = comm.name;
  part.collective = kind;
  part.reduction = reduction;
  part.root = root;
  part.inType = in;
  part.outs.push_back(out);
  if (auto v = valueOfType(ranks[rank], in))
    part.reads.push_back(*v);
  return part;
}

void PlanGenerator::addCollective(std::vector<Part> &parts) {
  const Comm &comm = pick(rng, comms);
  int64_t n = comm.ranks.size();
  int64_t d = std::int64_t(1) << uniform(rng, 0, 2);
  static const ReductionKind reductions[] = {
      ReductionKind::Sum, ReductionKind::Prod, ReductionKind::Max,
      ReductionKind::Min, ReductionKind::Avg};
  ReductionKind reduction = reductions[uniform(rng, 0, 4)];
  auto kind = static_cast<CollectiveKind>(uniform(rng, 0, 4));
  RankedTensorType in, out;
  std::optional<ReductionKind> red;
  std::optional<int64_t> root;
  switch (kind) {
  case CollectiveKind::AllReduce:
    in = out = randomType();
    red = reduction;
    break;
  case CollectiveKind::AllGather:
    in = tensor({d, 4});
    out = tensor({d * n, 4});
    break;
  case CollectiveKind::ReduceScatter:
    in = tensor({d * n, 4});
    out = tensor({d, 4});
    red = reduction;
    break;
  case CollectiveKind::Broadcast:
    in = out = randomType();
    root = uniform(rng, 0, n - 1);
    break;
  case CollectiveKind::AllToAll:
    in = out = tensor({d * n, 4});
    break;
  }
  for (int64_t rank : comm.ranks)
    parts.push_back(collectivePart(comm, rank, kind, red, root, in, out));
}

void PlanGenerator::addTransfer(std::vector<Part> &parts) {
  int64_t n = ranks.size();
  int64_t src = uniform(rng, 0, n - 1);
  int64_t dst = (src + uniform(rng, 1, n - 1)) % n;
  std::vector<const Comm *> both;
  for (const Comm &c : comms)
    if (llvm::is_contained(c.ranks, src) && llvm::is_contained(c.ranks, dst))
      both.push_back(&c);
  const Comm &comm = *pick(rng, both);
  unsigned value = uniform(rng, 0, ranks[src].values.size() - 1);
  Part send(PartKind::Send, src);
  send.reads.push_back(value);
  send.peer = dst;
  send.comm = comm.name;
  Part recv(PartKind::Recv, dst);
  recv.peer = src;
  recv.comm = comm.name;
  recv.type = ranks[src].values[value].buf.getType();
  parts.push_back(send);
  parts.push_back(recv);
}

void PlanGenerator::waitFor(Rank &r, ArrayRef<unsigned> events) {
  SmallVector<Value> operands;
  for (unsigned e : events)
    if (!r.events[e].second) {
      r.events[e].second = true;
      operands.push_back(r.events[e].first);
    }
  if (!operands.empty())
    WaitOp::create(b, loc, operands);
}

void PlanGenerator::emit(Rank &r, std::vector<Part *> parts,
                         std::optional<uint64_t> group) {
  b.setInsertionPointToEnd(&r.program.getBody().front());
  int64_t groupStream = randomStream();
  SmallVector<int64_t> streams;
  for (size_t i = 0; i < parts.size(); ++i)
    streams.push_back(group ? groupStream : randomStream());

  // Reads of values produced on another stream need a wait first (before
  // the group, which must stay adjacent).
  SmallVector<unsigned> needed;
  for (auto [part, stream] : llvm::zip(parts, streams))
    for (unsigned v : part->reads) {
      const Val &val = r.values[v];
      if (val.stream >= 0 && val.stream != stream)
        needed.push_back(val.event);
    }
  waitFor(r, needed);

  IntegerAttr groupAttr = group ? b.getI64IntegerAttr(*group) : IntegerAttr();
  for (auto [part, stream] : llvm::zip(parts, streams)) {
    Value event;
    SmallVector<BufferAttr> outs;
    for (RankedTensorType type : part->outs)
      outs.push_back(alloc(r, type));
    switch (part->kind) {
    case PartKind::Launch: {
      SmallVector<Attribute> ins, outAttrs;
      SmallVector<Type> types;
      for (unsigned v : part->reads) {
        ins.push_back(r.values[v].buf);
        types.push_back(r.values[v].buf.getType());
      }
      for (BufferAttr buf : outs) {
        outAttrs.push_back(buf);
        types.push_back(buf.getType());
      }
      event = LaunchOp::create(b, loc, kernelFor(types), b.getArrayAttr(ins),
                               b.getArrayAttr(outAttrs), stream);
      break;
    }
    case PartKind::Send:
      event = SendOp::create(b, loc, r.values[part->reads[0]].buf, part->peer,
                             part->comm, stream, groupAttr, LinkKindAttr());
      break;
    case PartKind::Recv: {
      BufferAttr buf = alloc(r, part->type);
      outs.push_back(buf);
      event = RecvOp::create(b, loc, buf, part->peer, part->comm, stream,
                             groupAttr, LinkKindAttr());
      break;
    }
    case PartKind::Collective: {
      BufferAttr in = part->reads.empty() ? alloc(r, part->inType)
                                          : r.values[part->reads[0]].buf;
      event = CollectiveOp::create(
          b, loc, part->collective,
          part->reduction ? ReductionKindAttr::get(&ctx, *part->reduction)
                          : ReductionKindAttr(),
          in, outs[0], part->comm,
          part->root ? b.getI64IntegerAttr(*part->root) : IntegerAttr(), stream,
          groupAttr, LinkKindAttr());
      break;
    }
    }
    unsigned eventId = r.events.size();
    r.events.emplace_back(event, false);
    for (BufferAttr buf : outs)
      addValue(r, {buf, stream, eventId});
  }
}

OwningOpRef<ModuleOp> PlanGenerator::generate() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  int64_t n = uniform(rng, options.minRanks, options.maxRanks);
  shard::GridOp::create(b, loc, "g", ArrayRef<int64_t>{n});
  ProcMeshOp::create(b, loc, "m", b.getStrArrayAttr({"gpus"}),
                     ArrayRef<int64_t>{n}, "g");

  // @world with all ranks plus sub-groups, each in a random rank order.
  std::vector<int64_t> all(n);
  for (int64_t i = 0; i < n; ++i)
    all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  comms.push_back({"world", all});
  for (int64_t c = 0, e = uniform(rng, 1, 3); c < e; ++c) {
    std::shuffle(all.begin(), all.end(), rng);
    comms.push_back(
        {"c" + std::to_string(c),
         std::vector<int64_t>(all.begin(), all.begin() + uniform(rng, 2, n))});
  }
  for (const Comm &c : comms)
    CommunicatorOp::create(b, loc, c.name, "m", c.ranks,
                           chance(rng, 0.5) ? Backend::Nccl : Backend::Gloo);

  // Kernels are declared before the plan as they are needed.
  auto plan = PlanOp::create(b, loc, "step", "m");
  kernels.setInsertionPoint(plan);
  b.setInsertionPointToEnd(&plan.getBody().front());
  ranks.resize(n);
  for (int64_t i = 0; i < n; ++i)
    ranks[i].program = RankProgramOp::create(b, loc, i, /*arena=*/0);

  // Inputs from the controller.
  for (Rank &r : ranks) {
    b.setInsertionPointToEnd(&r.program.getBody().front());
    for (int64_t i = 0, e = uniform(rng, 1, 2); i < e; ++i) {
      BufferAttr buf = alloc(r, randomType());
      FeedBufferOp::create(b, loc, static_cast<uint64_t>(i), buf);
      addValue(r, {buf, -1});
    }
  }

  for (int64_t step = 0, e = uniform(rng, options.minSteps, options.maxSteps);
       step < e; ++step) {
    std::vector<Part> parts;
    int64_t what = uniform(rng, 0, 9);
    bool group = what >= 8;
    if (what < 3) {
      int64_t rank = uniform(rng, 0, n - 1);
      Part launch(PartKind::Launch, rank);
      for (int64_t i = 0, e = uniform(rng, 0, 2); i < e; ++i)
        launch.reads.push_back(uniform(rng, 0, ranks[rank].values.size() - 1));
      launch.outs.push_back(randomType());
      parts.push_back(launch);
    } else if (what < 6) {
      addTransfer(parts);
    } else if (what < 8) {
      addCollective(parts);
    } else {
      for (int64_t i = 0, e = uniform(rng, 2, 4); i < e; ++i)
        chance(rng, 0.7) ? addTransfer(parts) : addCollective(parts);
    }
    // Each rank emits its parts of the step; a group keeps them together.
    // Group ids are per rank; using the step's number on every participant
    // lets a mutation find the whole group.
    uint64_t groupId = step;
    std::vector<std::vector<Part *>> byRank(n);
    for (Part &part : parts)
      byRank[part.rank].push_back(&part);
    for (int64_t rank = 0; rank < n; ++rank) {
      if (byRank[rank].empty())
        continue;
      if (group) {
        // Any order within the group, except that transfers on one channel
        // and collectives on one communicator keep the global order (they
        // match by program order).
        std::vector<Part *> order = byRank[rank];
        std::shuffle(order.begin(), order.end(), rng);
        std::map<std::tuple<StringRef, PartKind, int64_t>, unsigned> next;
        auto key = [](Part *p) {
          return std::make_tuple(p->comm, p->kind, p->peer);
        };
        for (Part *&slot : order) {
          unsigned &k = next[key(slot)];
          Part *original = nullptr;
          for (unsigned seen = 0; Part *p : byRank[rank])
            if (key(p) == key(slot) && seen++ == k) {
              original = p;
              break;
            }
          ++k;
          slot = original;
        }
        emit(ranks[rank], order, groupId);
      } else {
        for (Part *part : byRank[rank])
          emit(ranks[rank], {part}, std::nullopt);
      }
    }
    // Random waits on events produced so far.
    for (Rank &r : ranks)
      if (!r.events.empty() && chance(rng, 0.15)) {
        b.setInsertionPointToEnd(&r.program.getBody().front());
        SmallVector<unsigned> events;
        for (int64_t i = 0, e = uniform(rng, 1, 3); i < e; ++i)
          events.push_back(uniform(rng, 0, r.events.size() - 1));
        waitFor(r, events);
      }
  }

  // Outputs to the controller (a host read needs a wait), final waits and
  // the arena sizes.
  for (Rank &r : ranks) {
    b.setInsertionPointToEnd(&r.program.getBody().front());
    if (chance(rng, 0.5)) {
      const Val &v = pick(rng, r.values);
      if (v.stream >= 0)
        waitFor(r, {v.event});
      FetchBufferOp::create(b, loc, uint64_t{0}, v.buf);
    }
    if (chance(rng, 0.8)) {
      SmallVector<unsigned> rest;
      for (unsigned e = 0; e < r.events.size(); ++e)
        rest.push_back(e);
      waitFor(r, rest);
    }
    r.program.setArena(r.top);
  }
  return module;
}

//===----------------------------------------------------------------------===//
// Mutations
//===----------------------------------------------------------------------===//

enum class Mutation {
  SwapSends,
  DropRecv,
  ChangeShape,
  ReorderCollectives,
  RemoveGroup,
  DelayRecv,
  HoistSend,
};

const char *mutationName(Mutation m) {
  switch (m) {
  case Mutation::SwapSends:
    return "swap-sends";
  case Mutation::DropRecv:
    return "drop-recv";
  case Mutation::ChangeShape:
    return "change-shape";
  case Mutation::ReorderCollectives:
    return "reorder-collectives";
  case Mutation::RemoveGroup:
    return "remove-group";
  case Mutation::DelayRecv:
    return "delay-recv";
  case Mutation::HoistSend:
    return "hoist-send";
  }
  return "?";
}

/// Mutations that reorder communication are the ones that can deadlock;
/// they are drawn more often than those that only break matching.
Mutation randomMutation(Rng &rng) {
  static const Mutation weighted[] = {
      Mutation::SwapSends,          Mutation::SwapSends,
      Mutation::DropRecv,           Mutation::ChangeShape,
      Mutation::ReorderCollectives, Mutation::ReorderCollectives,
      Mutation::RemoveGroup,        Mutation::RemoveGroup,
      Mutation::DelayRecv,          Mutation::DelayRecv,
      Mutation::HoistSend,          Mutation::HoistSend};
  return weighted[uniform(rng, 0, std::size(weighted) - 1)];
}

/// True when `a` and `b` are members of one group (so nothing may be moved
/// between them).
bool sameGroup(Operation *a, Operation *b) {
  auto ga = a->getAttrOfType<IntegerAttr>("group");
  auto gb = b->getAttrOfType<IntegerAttr>("group");
  return ga && ga == gb && a->getAttr("stream") == b->getAttr("stream");
}

/// Moves `op` (a send or recv) to a random position in [lo, hi] of `ops`
/// (its block) other than inside a group; it leaves its own group.
bool move(Operation *op, std::vector<Operation *> &ops, size_t lo, size_t hi,
          Rng &rng) {
  std::vector<size_t> slots; // insert before ops[slot]; size() = at the end
  for (size_t j = lo; j <= hi; ++j)
    if (ops[j - 1] != op && (j == ops.size() || ops[j] != op) &&
        (j == ops.size() || !sameGroup(ops[j - 1], ops[j])))
      slots.push_back(j);
  if (slots.empty())
    return false;
  size_t j = pick(rng, slots);
  op->removeAttr("group");
  if (j == ops.size())
    op->moveAfter(ops.back());
  else
    op->moveBefore(ops[j]);
  return true;
}

/// Applies mutation `m` to a random place of `plan`; false when the plan
/// has no place for it. Waits keep their events (a moved recv stays before
/// its first wait) and groups stay adjacent.
bool mutate(PlanOp plan, Mutation m, Rng &rng) {
  std::vector<RankProgramOp> programs;
  for (auto p : plan.getBody().getOps<RankProgramOp>())
    programs.push_back(p);
  std::shuffle(programs.begin(), programs.end(), rng);
  auto retype = [](BufferAttr buf, Type element) {
    return BufferAttr::get(
        buf.getContext(), buf.getOffset(),
        RankedTensorType::get(buf.getType().getShape(), element));
  };

  switch (m) {
  case Mutation::SwapSends:
  case Mutation::ReorderCollectives:
    for (RankProgramOp p : programs) {
      std::vector<Operation *> ops;
      for (Operation &op : p.getBody().front())
        if (m == Mutation::SwapSends ? isa<SendOp>(op) : isa<CollectiveOp>(op))
          ops.push_back(&op);
      if (ops.size() < 2)
        continue;
      std::shuffle(ops.begin(), ops.end(), rng);
      if (auto x = dyn_cast<SendOp>(ops[0])) {
        auto y = cast<SendOp>(ops[1]);
        BufferAttr buf = x.getBuffer();
        uint64_t peer = x.getPeer();
        FlatSymbolRefAttr comm = x.getCommAttr();
        x.setBufferAttr(y.getBuffer());
        x.setPeer(y.getPeer());
        x.setCommAttr(y.getCommAttr());
        y.setBufferAttr(buf);
        y.setPeer(peer);
        y.setCommAttr(comm);
        return true;
      }
      // Swap everything but stream and group.
      auto x = cast<CollectiveOp>(ops[0]), y = cast<CollectiveOp>(ops[1]);
      for (StringRef name :
           {"kind", "reduction", "input", "output", "comm", "root"}) {
        Attribute ax = x->getAttr(name), ay = y->getAttr(name);
        ax ? y->setAttr(name, ax) : (void)y->removeAttr(name);
        ay ? x->setAttr(name, ay) : (void)x->removeAttr(name);
      }
      return true;
    }
    return false;
  case Mutation::DropRecv: {
    std::vector<RecvOp> recvs;
    plan.walk([&](RecvOp op) { recvs.push_back(op); });
    if (recvs.empty())
      return false;
    RecvOp recv = pick(rng, recvs);
    for (OpOperand &use : llvm::make_early_inc_range(recv->getUses())) {
      auto wait = cast<WaitOp>(use.getOwner());
      wait.getEventsMutable().erase(use.getOperandNumber());
      if (wait.getEvents().empty())
        wait.erase();
    }
    recv.erase();
    return true;
  }
  case Mutation::ChangeShape: {
    std::vector<Operation *> ops;
    plan.walk([&](Operation *op) {
      if (isa<SendOp, RecvOp, CollectiveOp>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return false;
    Operation *op = pick(rng, ops);
    Builder b(op->getContext());
    // A smaller element type keeps every buffer inside its arena.
    auto smaller = [&](BufferAttr buf) {
      return retype(buf, buf.getType().getElementType().isF32()
                             ? Type(b.getF16Type())
                             : Type(b.getI8Type()));
    };
    if (auto coll = dyn_cast<CollectiveOp>(op)) {
      coll.setInputAttr(smaller(coll.getInput()));
      coll.setOutputAttr(smaller(coll.getOutput()));
    } else if (auto send = dyn_cast<SendOp>(op)) {
      send.setBufferAttr(smaller(send.getBuffer()));
    } else {
      auto recv = cast<RecvOp>(op);
      ArrayRef<int64_t> shape = recv.getBuffer().getType().getShape();
      // Halve the first dimension when possible, else shrink the elements.
      if (!shape.empty() && shape[0] % 2 == 0 && chance(rng, 0.5)) {
        SmallVector<int64_t> half(shape);
        half[0] /= 2;
        recv.setBufferAttr(BufferAttr::get(
            op->getContext(), recv.getBuffer().getOffset(),
            RankedTensorType::get(
                half, recv.getBuffer().getType().getElementType())));
      } else {
        recv.setBufferAttr(smaller(recv.getBuffer()));
      }
    }
    return true;
  }
  case Mutation::RemoveGroup: {
    // One rank's group, or (half the time) that group on every rank.
    bool everywhere = chance(rng, 0.5);
    for (RankProgramOp p : programs) {
      std::vector<IntegerAttr> groups;
      for (Operation &op : p.getBody().front())
        if (auto g = op.getAttrOfType<IntegerAttr>("group"))
          groups.push_back(g);
      if (groups.empty())
        continue;
      IntegerAttr group = pick(rng, groups);
      for (RankProgramOp q : programs)
        if (q == p || everywhere)
          for (Operation &op : q.getBody().front())
            if (op.getAttr("group") == group)
              op.removeAttr("group");
      return true;
    }
    return false;
  }
  case Mutation::DelayRecv:
  case Mutation::HoistSend:
    for (RankProgramOp p : programs) {
      std::vector<Operation *> ops;
      std::vector<size_t> candidates;
      for (Operation &op : p.getBody().front()) {
        if (m == Mutation::DelayRecv ? isa<RecvOp>(op) : isa<SendOp>(op))
          candidates.push_back(ops.size());
        ops.push_back(&op);
      }
      if (candidates.empty())
        continue;
      size_t i = pick(rng, candidates);
      if (m == Mutation::HoistSend)
        return i > 0 && move(ops[i], ops, 1, i - 1, rng);
      // Later, but not past the first wait for it.
      size_t limit = ops.size();
      for (Operation *user : ops[i]->getUsers())
        limit = std::min<size_t>(limit, llvm::find(ops, user) - ops.begin());
      return i + 2 <= limit && move(ops[i], ops, i + 2, limit, rng);
    }
    return false;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// A naive data-race oracle
//===----------------------------------------------------------------------===//

/// The data-hazard rule of docs/plan-semantics.md checked pairwise (cubic,
/// fine for small plans): instruction i before j conflicts when their
/// buffers overlap and one writes, unless i is a host instruction, or both
/// run on one stream in different entries, or a wait between them covers
/// i's entry (or a later one of its stream).
bool hasDataRace(PlanOp plan) {
  struct Access {
    int64_t lo, hi;
    bool write;
  };
  struct Item {
    bool async = false, isWait = false;
    int64_t stream = -1, entry = -1;
    std::vector<Access> accesses;
    std::vector<std::pair<int64_t, int64_t>> covers; // waits: (stream, entry)
  };
  for (auto program : plan.getBody().getOps<RankProgramOp>()) {
    std::vector<Item> items;
    llvm::DenseMap<Operation *, unsigned> index;
    std::map<int64_t, int64_t> entriesOf;
    Operation *prev = nullptr;
    for (Operation &op : program.getBody().front()) {
      Item item;
      auto add = [&](Attribute a, bool write) {
        auto buf = cast<BufferAttr>(a);
        item.accesses.push_back(
            {buf.getOffset(), buf.getOffset() + buf.getSizeInBytes(), write});
      };
      if (auto launch = dyn_cast<LaunchOp>(op)) {
        for (Attribute a : launch.getIns())
          add(a, false);
        for (Attribute a : launch.getOuts())
          add(a, true);
      } else if (auto send = dyn_cast<SendOp>(op)) {
        add(send.getBuffer(), false);
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        add(recv.getBuffer(), true);
      } else if (auto coll = dyn_cast<CollectiveOp>(op)) {
        add(coll.getInput(), false);
        add(coll.getOutput(), true);
      } else if (auto feed = dyn_cast<FeedBufferOp>(op)) {
        add(feed.getBuffer(), true);
      } else if (auto fetch = dyn_cast<FetchBufferOp>(op)) {
        add(fetch.getBuffer(), false);
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        item.isWait = true;
        for (Value event : wait.getEvents()) {
          const Item &e = items[index.lookup(event.getDefiningOp())];
          item.covers.emplace_back(e.stream, e.entry);
        }
      }
      if (auto stream = op.getAttrOfType<IntegerAttr>("stream")) {
        item.async = true;
        item.stream = stream.getInt();
        bool joins = prev && prev->getAttr("group") && sameGroup(prev, &op);
        int64_t &count = entriesOf[item.stream];
        item.entry = joins ? count - 1 : count++;
      }
      prev = &op;
      index[&op] = items.size();
      items.push_back(std::move(item));
    }
    for (size_t j = 0; j < items.size(); ++j)
      for (size_t i = 0; i < j; ++i) {
        const Item &a = items[i], &b = items[j];
        bool conflict = false;
        for (const Access &x : a.accesses)
          for (const Access &y : b.accesses)
            conflict |= (x.write || y.write) && x.lo < y.hi && y.lo < x.hi;
        if (!conflict || !a.async)
          continue;
        bool ordered = b.async && b.stream == a.stream && a.entry < b.entry;
        for (size_t w = i + 1; w < j && !ordered; ++w)
          for (auto [stream, entry] : items[w].covers)
            ordered |= stream == a.stream && entry >= a.entry;
        if (!ordered)
          return true;
      }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// The properties
//===----------------------------------------------------------------------===//

struct Verdict {
  bool ok = false;
  bool deadlock = false, mismatch = false, race = false;
  std::string diagnostics;
};

class PlanPropertyTest : public testing::Test {
protected:
  PlanPropertyTest() {
    ctx.loadDialect<MonarchDialect, func::FuncDialect, shard::ShardDialect>();
    ctx.printOpOnDiagnostic(false);
  }

  static PlanOp planOf(ModuleOp module) {
    return *module.getBody()->getOps<PlanOp>().begin();
  }

  Verdict verify(ModuleOp module, bool hazards) {
    DiagnosticCapture diags(ctx);
    SymbolTableCollection tables;
    VerifyPlanOptions options;
    options.checkDataHazards = hazards;
    Verdict v;
    v.ok = succeeded(verifyPlan(planOf(module), tables, options));
    for (const std::string &m : diags.messages) {
      StringRef text(m);
      if (text.starts_with("note:"))
        continue;
      if (text.starts_with("deadlock:"))
        v.deadlock = true;
      else if (text.starts_with("data race:"))
        v.race = true;
      else
        v.mismatch = true;
    }
    v.diagnostics = diags.joined();
    return v;
  }

  /// Simulates `module` under `kSeeds` duration seeds; fails the test when
  /// the outcomes differ.
  SimResult simulate(ModuleOp module, uint64_t seed,
                     const std::string &context) {
    SymbolTableCollection tables;
    SimResult first;
    for (int s = 0; s < kSeeds; ++s) {
      SimResult r = simulatePlan(planOf(module), tables, seed * 7919 + s);
      if (s == 0)
        first = r;
      else
        EXPECT_EQ(r.outcome, first.outcome)
            << "outcome depends on durations (" << first.detail << " vs "
            << r.detail << ")\n"
            << context;
    }
    return first;
  }

  static constexpr int kSeeds = 3;
  MLIRContext ctx;
};

TEST_F(PlanPropertyTest, VerifierAgreesWithSimulation) {
  constexpr uint64_t kPlans = 2000;
  constexpr int kMutantsPerPlan = 3;
  struct {
    unsigned plans = 0, instrs = 0, maxInstrs = 0;
    unsigned mutants = 0, skipped = 0, accepted = 0, deadlocks = 0,
             mismatches = 0, races = 0;
    std::map<std::string, std::pair<unsigned, unsigned>> byMutation;
  } stats;
  unsigned failures = 0;
  auto start = std::chrono::steady_clock::now();

  for (uint64_t seed = 1; seed <= kPlans && failures < 5; ++seed) {
    OwningOpRef<ModuleOp> module = PlanGenerator(ctx, seed).generate();
    ++stats.plans;
    unsigned size = 0;
    planOf(*module).walk([&](Operation *op) {
      size += op->getParentOfType<RankProgramOp>() != nullptr;
    });
    stats.instrs += size;
    stats.maxInstrs = std::max(stats.maxInstrs, size);

    // Well-formed plans verify (data hazards included) and complete.
    {
      std::string context = "seed " + std::to_string(seed) + "\n";
      ASSERT_TRUE(verifies(*module)) << context << printOp(*module);
      Verdict v = verify(*module, /*hazards=*/true);
      SimResult sim = simulate(*module, seed, context);
      EXPECT_FALSE(hasDataRace(planOf(*module))) << context;
      if (!v.ok || sim.outcome != SimOutcome::Completed) {
        ++failures;
        ADD_FAILURE() << "well-formed plan: verifier "
                      << (v.ok ? "accepts" : "rejects") << ", simulation "
                      << stringifySimOutcome(sim.outcome).str() << " ("
                      << sim.detail << ")\n"
                      << v.diagnostics << context << printOp(*module);
        continue;
      }
    }

    Rng rng(seed * 104729);
    for (int k = 0; k < kMutantsPerPlan; ++k) {
      OwningOpRef<ModuleOp> mutant(cast<ModuleOp>((*module)->clone()));
      std::string applied;
      for (int i = 0, e = chance(rng, 0.3) ? 2 : 1; i < e; ++i) {
        for (int attempt = 0; attempt < 10; ++attempt) {
          Mutation m = randomMutation(rng);
          if (mutate(planOf(*mutant), m, rng)) {
            applied += applied.empty() ? "" : "+";
            applied += mutationName(m);
            break;
          }
        }
      }
      ++stats.mutants;
      std::string context = "seed " + std::to_string(seed) + ", mutant " +
                            std::to_string(k) + " (" + applied + ")\n";
      {
        DiagnosticCapture quiet(ctx);
        if (applied.empty() || failed(mlir::verify(*mutant))) {
          ++stats.skipped;
          continue;
        }
      }

      // Deadlocks and mismatches against the simulation (which knows
      // nothing of data), data races against the naive oracle.
      Verdict v = verify(*mutant, /*hazards=*/false);
      SimResult sim = simulate(*mutant, seed * 31 + k, context);
      Verdict withRaces = verify(*mutant, /*hazards=*/true);
      bool race = hasDataRace(planOf(*mutant));
      for (StringRef name : llvm::split(applied, '+')) {
        auto &perMutation = stats.byMutation[name.str()];
        ++(v.ok ? perMutation.first : perMutation.second);
      }
      stats.accepted += v.ok;
      stats.deadlocks += v.deadlock;
      stats.mismatches += v.mismatch;
      stats.races += race;
      if (withRaces.race != race) {
        ++failures;
        ADD_FAILURE() << "verifier " << (withRaces.race ? "reports" : "misses")
                      << " a data race\n"
                      << withRaces.diagnostics << context << printOp(*mutant);
      }

      bool agree = v.ok == (sim.outcome == SimOutcome::Completed);
      // The diagnosis matches: a mismatch found statically shows up as a
      // mismatch or (when the pair is never reached) a deadlock; a
      // deadlock alone is a deadlock.
      if (!v.ok && !v.mismatch)
        agree &= sim.outcome == SimOutcome::Deadlocked;
      if (sim.outcome == SimOutcome::Mismatched)
        agree &= v.mismatch;
      if (!agree) {
        ++failures;
        ADD_FAILURE() << "verifier " << (v.ok ? "accepts" : "rejects")
                      << " but simulation "
                      << stringifySimOutcome(sim.outcome).str() << " ("
                      << sim.detail << ")\n"
                      << v.diagnostics << context << printOp(*mutant);
      }
    }
  }

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::outs() << "plans: " << stats.plans << " well-formed (avg "
               << (stats.plans ? stats.instrs / stats.plans : 0)
               << " instructions, max " << stats.maxInstrs << "), "
               << stats.mutants << " mutants (" << stats.skipped
               << " skipped): " << stats.accepted << " accepted, "
               << stats.mutants - stats.skipped - stats.accepted
               << " rejected (" << stats.deadlocks << " deadlocks, "
               << stats.mismatches << " mismatches), " << stats.races
               << " with data races; " << seconds << " s\n  by mutation:";
  for (auto &[name, counts] : stats.byMutation)
    llvm::outs() << " " << name << " " << counts.first << "/"
                 << counts.first + counts.second << " accepted;";
  llvm::outs() << "\n";
  // The mutations must exercise both sides of the property.
  EXPECT_GT(stats.accepted, stats.mutants / 20);
  EXPECT_GT(stats.deadlocks, stats.mutants / 20);
  EXPECT_GT(stats.mismatches, stats.mutants / 20);
  EXPECT_GT(stats.races, stats.mutants / 50);
}

//===----------------------------------------------------------------------===//
// Cases worth pinning down
//===----------------------------------------------------------------------===//

class PlanCaseTest : public PlanPropertyTest {
protected:
  OwningOpRef<ModuleOp> parse(StringRef body) {
    std::string text = R"mlir(
      shard.grid @g(shape = 2)
      monarch.proc_mesh @m(gpus = 2) grid @g
      monarch.communicator @c on @m ranks [0, 1] backend nccl
      monarch.communicator @d on @m ranks [0, 1] backend gloo
    )mlir";
    text += body;
    DiagnosticCapture diags(ctx);
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
    EXPECT_TRUE(module) << diags.joined();
    return module;
  }
};

// Rank 1 groups the partners of rank 0's send and later receive: the send
// completes when the group is posted, so the receive behind it can start. A
// graph that merged whole instructions would report a cycle.
TEST_F(PlanCaseTest, GroupedPartnersOfQueuedTransfersDoNotDeadlock) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    monarch.plan @p on @m {
      monarch.rank_program rank 0 arena 32 {
        %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
        %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 1 : !monarch.event
        monarch.wait %s, %r : !monarch.event, !monarch.event
      }
      monarch.rank_program rank 1 arena 32 {
        %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 group 0 : !monarch.event
        %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 group 0 : !monarch.event
        monarch.wait %s, %r : !monarch.event, !monarch.event
      }
    })mlir");
  ASSERT_TRUE(module);
  EXPECT_TRUE(verify(*module, true).ok);
  EXPECT_EQ(simulate(*module, 1, "").outcome, SimOutcome::Completed);
}

// The event of a grouped instruction fires with its whole group.
TEST_F(PlanCaseTest, WaitingForAGroupMemberWaitsForTheGroup) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    monarch.plan @p on @m {
      monarch.rank_program rank 0 arena 64 {
        %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 group 0 : !monarch.event
        %r = monarch.recv <16, tensor<4xf32>> from 1 on @c stream 1 group 0 : !monarch.event
        monarch.wait %s : !monarch.event
        %t = monarch.send <32, tensor<4xf32>> to 1 on @d stream 2 : !monarch.event
        monarch.wait %r, %t : !monarch.event, !monarch.event
      }
      monarch.rank_program rank 1 arena 64 {
        %r = monarch.recv <0, tensor<4xf32>> from 0 on @c stream 1 : !monarch.event
        %t = monarch.recv <32, tensor<4xf32>> from 0 on @d stream 2 : !monarch.event
        monarch.wait %t : !monarch.event
        %s = monarch.send <16, tensor<4xf32>> to 0 on @c stream 1 : !monarch.event
        monarch.wait %r, %s : !monarch.event, !monarch.event
      }
    })mlir");
  ASSERT_TRUE(module);
  Verdict v = verify(*module, true);
  EXPECT_FALSE(v.ok);
  EXPECT_TRUE(v.deadlock) << v.diagnostics;
  EXPECT_EQ(simulate(*module, 2, "").outcome, SimOutcome::Deadlocked);
}

// A send without a receive on a finished peer is a mismatch in both.
TEST_F(PlanCaseTest, UnmatchedSendIsAMismatch) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    monarch.plan @p on @m {
      monarch.rank_program rank 0 arena 32 {
        %s = monarch.send <0, tensor<4xf32>> to 1 on @c stream 1 : !monarch.event
      }
      monarch.rank_program rank 1 arena 32 {
      }
    })mlir");
  ASSERT_TRUE(module);
  Verdict v = verify(*module, true);
  EXPECT_TRUE(v.mismatch && !v.deadlock) << v.diagnostics;
  SimResult sim = simulate(*module, 3, "");
  EXPECT_EQ(sim.outcome, SimOutcome::Mismatched);
  EXPECT_NE(sim.detail.find("has no recv"), std::string::npos) << sim.detail;
}

//===----------------------------------------------------------------------===//
// Scaling
//===----------------------------------------------------------------------===//

// The verifier is near-linear: 4x the instructions take well under 16x the
// time (the best of three runs each, to be robust to a loaded machine).
// Large plans verify (a quadratic verifier would make this test crawl; the
// scaling itself is measured by bench/compile_scaling, not asserted here,
// because these machines are noisy).
TEST_F(PlanPropertyTest, VerifierHandlesLargePlans) {
  auto measure = [&](int64_t steps, unsigned &instrs) {
    GenOptions options;
    options.minRanks = options.maxRanks = 8;
    options.minSteps = options.maxSteps = steps;
    OwningOpRef<ModuleOp> module = PlanGenerator(ctx, 42, options).generate();
    instrs = 0;
    planOf(*module).walk([&](Operation *op) {
      instrs += op->getParentOfType<RankProgramOp>() != nullptr;
    });
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      auto start = std::chrono::steady_clock::now();
      Verdict v = verify(*module, /*hazards=*/true);
      best = std::min(best, std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count());
      EXPECT_TRUE(v.ok) << v.diagnostics;
    }
    return best;
  };
  unsigned smallInstrs, largeInstrs;
  double small = measure(5000, smallInstrs);
  double large = measure(20000, largeInstrs);
  llvm::outs() << "verifyPlan: " << smallInstrs << " instructions in " << small
               << " s, " << largeInstrs << " in " << large << " s\n";
  EXPECT_GT(largeInstrs, 50000u);
}

} // namespace
