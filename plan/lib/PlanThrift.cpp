//===- PlanThrift.cpp - Plain plan model <-> generated Thrift ---*- C++ -*-===//
//
// Field-by-field copies between Plan.h and ExecutionPlan.thrift. Enums cross
// as integers; optional fields map to std::optional and Thrift's __isset.
//
//===----------------------------------------------------------------------===//

#include "PlanThrift.h"
#include "RankClasses.h"

#include "monarch/Support/RankSearch.h"

#include <algorithm>
#include <set>
#include <string>

namespace monarch::plan::detail {
namespace t = ::monarch::plan::wire;

static_assert(kPlanFormatVersion == 7,
              "bump FORMAT_VERSION in ExecutionPlan.thrift together with "
              "kPlanFormatVersion");

// Enums convert by value: support's DType is numbered as the IDL's.
#define MONARCH_SAME_DTYPE(name)                                               \
  static_assert(static_cast<int32_t>(DType::name) ==                           \
                static_cast<int32_t>(t::DType::name));
MONARCH_SAME_DTYPE(F32)
MONARCH_SAME_DTYPE(F16)
MONARCH_SAME_DTYPE(BF16)
MONARCH_SAME_DTYPE(F64)
MONARCH_SAME_DTYPE(I1)
MONARCH_SAME_DTYPE(I8)
MONARCH_SAME_DTYPE(I16)
MONARCH_SAME_DTYPE(I32)
MONARCH_SAME_DTYPE(I64)
MONARCH_SAME_DTYPE(UI8)
#undef MONARCH_SAME_DTYPE

template <typename To, typename From> static To cast(From v) {
  return static_cast<To>(static_cast<int32_t>(v));
}

template <typename To, typename From, typename Fn>
static std::vector<To> mapAll(const std::vector<From> &from, Fn fn) {
  std::vector<To> out;
  out.reserve(from.size());
  for (const From &f : from)
    out.push_back(fn(f));
  return out;
}

//===----------------------------------------------------------------------===//
// To Thrift
//===----------------------------------------------------------------------===//

namespace {
/// The (communicator, stream) of a communicating instruction, by index.
struct CommUse {
  int32_t instruction;
  int32_t communicator;
  int64_t stream;
};

std::vector<CommUse> commUses(const std::vector<Instruction> &instructions) {
  std::vector<CommUse> uses;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction &in = instructions[i];
    if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv)
      uses.push_back(
          {static_cast<int32_t>(i), in.p2p.communicator, in.p2p.stream});
    else if (in.kind == InstrKind::Collective)
      uses.push_back({static_cast<int32_t>(i), in.collective.communicator,
                      in.collective.stream});
  }
  return uses;
}

} // namespace

/// Format 7: `ranks` as a box where it is one (rankBox), else listed.
static t::RankSet toT(const std::vector<int64_t> &ranks) {
  t::RankSet set;
  if (std::optional<RankBox> box = rankBox(ranks)) {
    std::vector<int64_t> flat = {box->offset};
    for (size_t d = 0; d < box->sizes.size(); ++d) {
      flat.push_back(box->sizes[d]);
      flat.push_back(box->strides[d]);
    }
    set.__set_box(std::move(flat));
  } else {
    set.__set_ranks(ranks);
  }
  return set;
}

std::vector<std::vector<int64_t>> boxPieces(const std::vector<int64_t> &ranks) {
  // The numbers a piece is stored in: a box's offset, sizes and strides,
  // or the list.
  auto cost = [](const std::vector<int64_t> &piece) {
    std::optional<RankBox> box = rankBox(piece);
    return box ? 1 + 2 * box->sizes.size() : piece.size();
  };
  std::vector<std::vector<int64_t>> pieces;
  size_t pos = 0, numbers = 0;
  bool covered = false;
  while (!covered && pos < ranks.size() && pieces.size() < 4) {
    std::vector<int64_t> rest(ranks.begin() + static_cast<ptrdiff_t>(pos),
                              ranks.end());
    int64_t first, step;
    if (rest.size() < 2 || rankBox(rest) ||
        __builtin_sub_overflow(ranks[pos + 1], ranks[pos], &first)) {
      numbers += cost(rest);
      pieces.push_back(std::move(rest));
      covered = true;
      break;
    }
    // The run of equal steps that starts the rest (a box of one dimension).
    size_t end = pos + 2;
    while (end < ranks.size() &&
           !__builtin_sub_overflow(ranks[end], ranks[end - 1], &step) &&
           step == first)
      ++end;
    pieces.emplace_back(ranks.begin() + static_cast<ptrdiff_t>(pos),
                        ranks.begin() + static_cast<ptrdiff_t>(end));
    numbers += cost(pieces.back());
    pos = end;
    covered = pos == ranks.size();
  }
  // Split only where every rank is in a piece and the pieces are fewer
  // numbers than the list.
  if (!covered || numbers >= cost(ranks))
    return {ranks};
  return pieces;
}

static t::SourceLoc toT(const SourceLoc &l) {
  t::SourceLoc r;
  r.__set_file(l.file);
  r.__set_line(l.line);
  r.__set_col(l.col);
  r.__set_opName(l.opName);
  return r;
}

static t::ValueType toT(const ValueType &v) {
  t::ValueType r;
  r.__set_dtype(cast<t::DType::type>(v.dtype));
  r.__set_shape(v.shape);
  r.__set_isTensor(v.isTensor);
  return r;
}

static t::Buffer toT(const Buffer &b) {
  t::Buffer r;
  r.__set_offset(b.offset);
  r.__set_dtype(cast<t::DType::type>(b.dtype));
  r.__set_shape(b.shape);
  return r;
}

static std::vector<t::Buffer> toT(const std::vector<Buffer> &bs) {
  return mapAll<t::Buffer>(bs, [](const Buffer &b) { return toT(b); });
}

static t::ValueRef toT(const ValueRef &v) {
  t::ValueRef r;
  r.__set_kind(cast<t::ValueKind::type>(v.kind));
  r.__set_index(v.index);
  r.__set_constant(v.constant);
  return r;
}

static t::P2PInstr toT(const P2PInstr &p) {
  t::P2PInstr r;
  r.__set_buffer(toT(p.buffer));
  r.__set_peer(p.peer);
  r.__set_communicator(p.communicator);
  r.__set_stream(p.stream);
  if (p.group)
    r.__set_group(*p.group);
  return r;
}

static t::Instruction toT(const Instruction &in) {
  t::InstrOp op;
  switch (in.kind) {
  case InstrKind::Launch: {
    t::LaunchInstr l;
    l.__set_kernel(in.launch.kernel);
    l.__set_ins(toT(in.launch.ins));
    l.__set_outs(toT(in.launch.outs));
    l.__set_stream(in.launch.stream);
    op.__set_launch(l);
    break;
  }
  case InstrKind::Send:
    op.__set_send(toT(in.p2p));
    break;
  case InstrKind::Recv:
    op.__set_recv(toT(in.p2p));
    break;
  case InstrKind::Collective: {
    const CollectiveInstr &c = in.collective;
    t::CollectiveInstr r;
    r.__set_kind(cast<t::CollectiveKind::type>(c.kind));
    if (c.reduction)
      r.__set_reduction(cast<t::ReductionKind::type>(*c.reduction));
    if (c.root)
      r.__set_root(*c.root);
    r.__set_communicator(c.communicator);
    r.__set_input(toT(c.input));
    r.__set_output(toT(c.output));
    r.__set_stream(c.stream);
    if (c.group)
      r.__set_group(*c.group);
    op.__set_collective(r);
    break;
  }
  case InstrKind::Wait: {
    t::WaitInstr w;
    w.__set_events(in.wait.events);
    op.__set_wait(w);
    break;
  }
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer: {
    t::IOInstr io;
    io.__set_index(in.io.index);
    io.__set_buffer(toT(in.io.buffer));
    if (!in.io.offsets.empty())
      io.__set_offsets(in.io.offsets);
    if (in.io.keepOnly)
      io.__set_keepOnly(true);
    if (in.kind == InstrKind::FeedBuffer)
      op.__set_feedBuffer(io);
    else
      op.__set_fetchBuffer(io);
    break;
  }
  case InstrKind::StateBuffer: {
    t::StateBufferInstr s;
    s.__set_actorMesh(in.stateBuffer.actorMesh);
    s.__set_state(in.stateBuffer.state);
    s.__set_buffer(toT(in.stateBuffer.buffer));
    if (!in.stateBuffer.offsets.empty())
      s.__set_offsets(in.stateBuffer.offsets);
    op.__set_stateBuffer(s);
    break;
  }
  case InstrKind::PrintBuffers: {
    t::PrintInstr p;
    p.__set_format(in.print.format);
    std::vector<t::Buffer> buffers;
    for (const Buffer &b : in.print.buffers)
      buffers.push_back(toT(b));
    p.__set_values(buffers);
    op.__set_printBuffers(p);
    break;
  }
  }
  t::Instruction r;
  r.__set_op(op);
  r.__set_loc(toT(in.loc));
  return r;
}

static t::ControlStep toT(const ControlStep &s) {
  t::ControlStep r;
  r.__set_kind(cast<t::ControlStepKind::type>(s.kind));
  r.__set_mesh(s.mesh);
  r.__set_plans(s.plans);
  r.__set_scalars(mapAll<t::ScalarArg>(s.scalars, [](const ScalarArg &a) {
    t::ScalarArg x;
    x.__set_value(toT(a.value));
    x.__set_type(toT(a.type));
    x.__set_plan(a.plan);
    x.__set_input(a.input);
    return x;
  }));
  r.__set_plan(s.plan);
  r.__set_index(s.index);
  r.__set_value(toT(s.value));
  r.__set_tokens(s.tokens);
  r.__set_type(toT(s.type));
  r.__set_loc(toT(s.loc));
  return r;
}

static std::vector<t::ValueType> toT(const std::vector<ValueType> &vs) {
  return mapAll<t::ValueType>(vs, [](const ValueType &v) { return toT(v); });
}

t::ExecutionPlan toThrift(const ExecutionPlan &p) {
  t::ExecutionPlan r;
  r.__set_formatVersion(p.formatVersion);
  r.__set_compilerVersion(p.compilerVersion);
  r.__set_source(p.source);
  r.__set_meshes(mapAll<t::ProcMesh>(p.meshes, [](const ProcMesh &m) {
    t::ProcMesh x;
    x.__set_name(m.name);
    x.__set_dims(mapAll<t::MeshDim>(m.dims, [](const MeshDim &d) {
      t::MeshDim y;
      y.__set_name(d.name);
      y.__set_size(d.size);
      return y;
    }));
    if (m.parent)
      x.__set_parent(*m.parent);
    x.__set_sliceStart(m.sliceStart);
    x.__set_sliceEnd(m.sliceEnd);
    x.__set_rootRanks(toT(m.rootRanks));
    return x;
  }));
  r.__set_topology(
      mapAll<t::MeshTopology>(p.topology, [](const MeshTopology &m) {
        t::MeshTopology x;
        x.__set_mesh(m.mesh);
        x.__set_hosts(mapAll<t::Host>(m.hosts, [](const Host &h) {
          t::Host y;
          y.__set_name(h.name);
          y.__set_ranks(toT(h.ranks));
          return y;
        }));
        return x;
      }));
  // A name that numbers on from the previous one and the previous mesh
  // are left out, and a communicator that is the previous one shifted by
  // the same amount as that one from its own previous joins its entry
  // (format 7): 4,096 ranks have hundreds of communicators.
  std::vector<t::Communicator> communicators;
  for (size_t i = 0; i < p.communicators.size(); ++i) {
    const Communicator &c = p.communicators[i];
    const Communicator *previous = i ? &p.communicators[i - 1] : nullptr;
    bool numbered = previous && !c.name.empty() &&
                    c.name == nextNumberedName(previous->name);
    std::optional<int64_t> shift =
        previous ? shiftedCommunicator(*previous, c) : std::nullopt;
    if (shift && !communicators.empty()) {
      t::Communicator &run = communicators.back();
      int64_t repeat = run.__isset.repeat ? run.repeat : 1;
      if (repeat == 1 || (run.__isset.shift && run.shift == *shift)) {
        run.__set_repeat(repeat + 1);
        run.__set_shift(*shift);
        continue;
      }
    }
    t::Communicator x;
    if (!numbered)
      x.__set_name(c.name);
    if (!previous || c.mesh != previous->mesh)
      x.__set_mesh(c.mesh);
    x.__set_ranks(toT(c.ranks));
    x.__set_backend(cast<t::Backend::type>(c.backend));
    communicators.push_back(std::move(x));
  }
  r.__set_communicators(std::move(communicators));
  r.__set_kernels(mapAll<t::Kernel>(p.kernels, [](const Kernel &k) {
    t::Kernel x;
    x.__set_name(k.name);
    x.__set_numInputs(k.numInputs);
    x.__set_numOutputs(k.numOutputs);
    if (k.flops > 0)
      x.__set_flops(k.flops);
    return x;
  }));
  r.__set_plans(mapAll<t::StepPlan>(p.plans, [&p](const StepPlan &s) {
    t::StepPlan x;
    x.__set_symbol(s.symbol);
    x.__set_mesh(s.mesh);
    x.__set_inputs(toT(s.inputs));
    x.__set_outputs(toT(s.outputs));
    // Ranks of one class store their stream once (RankClasses.h).
    std::vector<int32_t> shares = findRankClasses(s);
    // Fields that follow from the rank are rules of the class, not
    // patches of each rank (format 6).
    RankGeometry geo(p, s.mesh);
    std::vector<std::vector<RankRule>> rules(s.programs.size());
    for (size_t i = 0; i < s.programs.size(); ++i)
      if (shares[i] < 0)
        rules[i] = findRankRules(s, shares, static_cast<int32_t>(i), geo);
    // Ranks that run their class's stream exactly (no patch, the holder's
    // sizes) are listed as the class's members, not one entry each
    // (format 7), where the programs are in rank order (the reader lists
    // them so).
    bool inOrder = true;
    for (size_t i = 1; i < s.programs.size(); ++i)
      inOrder = inOrder && s.programs[i - 1].rank < s.programs[i].rank;
    std::vector<t::RankProgram> programs;
    std::vector<int32_t> wireIndex(s.programs.size(), -1);
    std::map<int32_t, std::vector<int64_t>> members;
    for (size_t i = 0; i < s.programs.size(); ++i) {
      const RankProgram &rp = s.programs[i];
      t::RankProgram y;
      y.__set_rank(rp.rank);
      const RankProgram *holder =
          shares[i] < 0 ? nullptr : &s.programs[shares[i]];
      if (!holder || holder->arenaBytes != rp.arenaBytes)
        y.__set_arenaBytes(rp.arenaBytes);
      if (!holder || holder->peakBytes != rp.peakBytes)
        y.__set_peakBytes(rp.peakBytes);
      if (!holder || holder->criticalPathUs != rp.criticalPathUs)
        y.__set_criticalPathUs(rp.criticalPathUs);
      if (shares[i] < 0) {
        y.__set_instructions(mapAll<t::Instruction>(
            rp.instructions, [](const Instruction &in) { return toT(in); }));
        if (!rules[i].empty()) {
          std::vector<t::RankRule> wire;
          for (const RankRule &rule : rules[i]) {
            t::RankRule z;
            z.__set_instruction(rule.instruction);
            if (rule.peerShift)
              z.__set_peerShift(true);
            if (rule.communicatorOfRank)
              z.__set_communicatorOfRank(true);
            if (!rule.offsetSlopes.empty())
              z.__set_offsetSlopes(rule.offsetSlopes);
            wire.push_back(std::move(z));
          }
          y.__set_rules(std::move(wire));
        }
      } else {
        y.__set_sharesWith(wireIndex[shares[i]]);
        std::vector<t::RankPatch> patches;
        for (const RankPatch &patch :
             patchesAfterRules(*holder, rules[shares[i]], rp, geo)) {
          t::RankPatch z;
          z.__set_instruction(patch.instruction);
          if (patch.peer)
            z.__set_peer(*patch.peer);
          if (patch.communicator)
            z.__set_communicator(*patch.communicator);
          if (patch.root)
            z.__set_root(*patch.root);
          if (patch.offsets)
            z.__set_offsets(*patch.offsets);
          if (patch.kernel)
            z.__set_kernel(*patch.kernel);
          patches.push_back(std::move(z));
        }
        if (patches.empty() && inOrder && !y.__isset.arenaBytes &&
            !y.__isset.peakBytes && !y.__isset.criticalPathUs) {
          members[wireIndex[shares[i]]].push_back(rp.rank);
          continue;
        }
        if (!patches.empty())
          y.__set_patches(std::move(patches));
      }
      wireIndex[i] = static_cast<int32_t>(programs.size());
      programs.push_back(std::move(y));
    }
    if (!members.empty()) {
      std::vector<t::ClassMembers> wire;
      for (const auto &[program, ranks] : members)
        for (const std::vector<int64_t> &piece : boxPieces(ranks)) {
          t::ClassMembers z;
          z.__set_program(program);
          z.__set_ranks(toT(piece));
          wire.push_back(std::move(z));
        }
      x.__set_members(std::move(wire));
    }
    // The streams each communicator is used on, grouped by stream set.
    std::map<int32_t, std::set<int64_t>> used;
    for (const RankProgram &rp : s.programs)
      for (const CommUse &use : commUses(rp.instructions))
        used[use.communicator].insert(use.stream);
    std::map<std::set<int64_t>, std::vector<int64_t>> byStreams;
    for (const auto &[c, streams] : used)
      byStreams[streams].push_back(c);
    std::vector<t::CommStreams> commStreams;
    for (const auto &[streams, comms] : byStreams) {
      t::CommStreams z;
      z.__set_communicators(toT(comms));
      z.__set_streams(std::vector<int64_t>(streams.begin(), streams.end()));
      commStreams.push_back(std::move(z));
    }
    x.__set_commStreams(std::move(commStreams));
    x.__set_programs(std::move(programs));
    x.__set_loc(toT(s.loc));
    return x;
  }));
  r.__set_controllers(mapAll<t::ControllerProgram>(
      p.controllers, [](const ControllerProgram &c) {
        t::ControllerProgram x;
        x.__set_name(c.name);
        x.__set_inputs(toT(c.inputs));
        x.__set_outputs(toT(c.outputs));
        x.__set_steps(mapAll<t::ControlStep>(
            c.steps, [](const ControlStep &s) { return toT(s); }));
        x.__set_results(mapAll<t::ValueRef>(
            c.results, [](const ValueRef &v) { return toT(v); }));
        x.__set_loc(toT(c.loc));
        return x;
      }));
  r.__set_libraries(
      mapAll<t::KernelLibrary>(p.libraries, [](const KernelLibraryBlob &l) {
        t::KernelLibrary x;
        x.__set_target(cast<t::KernelTarget::type>(l.target));
        x.__set_code(l.code);
        x.__set_kernels(mapAll<t::CompiledKernel>(
            l.kernels, [](const CompiledKernelRef &k) {
              t::CompiledKernel y;
              y.__set_kernel(k.kernel);
              y.__set_symbol(k.symbol);
              y.__set_params(k.params);
              y.__set_gemms(mapAll<t::GemmCall>(k.gemms, [](const GemmCall &g) {
                t::GemmCall z;
                z.__set_transA(g.transA);
                z.__set_transB(g.transB);
                z.__set_m(g.m);
                z.__set_n(g.n);
                z.__set_k(g.k);
                z.__set_lda(g.lda);
                z.__set_ldb(g.ldb);
                z.__set_ldc(g.ldc);
                z.__set_strideA(g.strideA);
                z.__set_strideB(g.strideB);
                z.__set_strideC(g.strideC);
                z.__set_batch(g.batch);
                z.__set_typeA(cast<t::DType::type>(g.typeA));
                z.__set_typeB(cast<t::DType::type>(g.typeB));
                z.__set_typeC(cast<t::DType::type>(g.typeC));
                z.__set_alpha(g.alpha);
                z.__set_beta(g.beta);
                z.__set_a(g.a);
                z.__set_b(g.b);
                z.__set_c(g.c);
                return z;
              }));
              return y;
            }));
        return x;
      }));
  return r;
}

//===----------------------------------------------------------------------===//
// From Thrift
//===----------------------------------------------------------------------===//

static SourceLoc fromT(const t::SourceLoc &l) {
  return SourceLoc{l.file, l.line, l.col, l.opName};
}

static ValueType fromT(const t::ValueType &v) {
  return ValueType{cast<DType>(v.dtype), v.shape, v.isTensor};
}

static Buffer fromT(const t::Buffer &b) {
  return Buffer{b.offset, cast<DType>(b.dtype), b.shape};
}

static std::vector<Buffer> fromT(const std::vector<t::Buffer> &bs) {
  return mapAll<Buffer>(bs, [](const t::Buffer &b) { return fromT(b); });
}

static std::vector<ValueType> fromT(const std::vector<t::ValueType> &vs) {
  return mapAll<ValueType>(vs, [](const t::ValueType &v) { return fromT(v); });
}

static ValueRef fromT(const t::ValueRef &v) {
  return ValueRef{cast<ValueKind>(v.kind), v.index, v.constant};
}

static P2PInstr fromT(const t::P2PInstr &p) {
  P2PInstr r;
  r.buffer = fromT(p.buffer);
  r.peer = p.peer;
  r.communicator = p.communicator;
  r.stream = p.stream;
  if (p.__isset.group)
    r.group = p.group;
  return r;
}

/// Nullopt when the union holds no member or more than one.
static std::optional<Instruction> fromT(const t::Instruction &in) {
  const t::InstrOp &op = in.op;
  const auto &set = op.__isset;
  int members = set.launch + set.send + set.recv + set.collective + set.wait +
                set.feedBuffer + set.fetchBuffer + set.stateBuffer +
                set.printBuffers;
  if (members != 1)
    return std::nullopt;
  Instruction r;
  r.loc = fromT(in.loc);
  if (set.launch) {
    r.kind = InstrKind::Launch;
    r.launch.kernel = op.launch.kernel;
    r.launch.ins = fromT(op.launch.ins);
    r.launch.outs = fromT(op.launch.outs);
    r.launch.stream = op.launch.stream;
  } else if (set.send || set.recv) {
    r.kind = set.send ? InstrKind::Send : InstrKind::Recv;
    r.p2p = fromT(set.send ? op.send : op.recv);
  } else if (set.collective) {
    const t::CollectiveInstr &c = op.collective;
    r.kind = InstrKind::Collective;
    r.collective.kind = cast<CollectiveKind>(c.kind);
    if (c.__isset.reduction)
      r.collective.reduction = cast<ReductionKind>(c.reduction);
    if (c.__isset.root)
      r.collective.root = c.root;
    r.collective.communicator = c.communicator;
    r.collective.input = fromT(c.input);
    r.collective.output = fromT(c.output);
    r.collective.stream = c.stream;
    if (c.__isset.group)
      r.collective.group = c.group;
  } else if (set.wait) {
    r.kind = InstrKind::Wait;
    r.wait.events = op.wait.events;
  } else if (set.feedBuffer || set.fetchBuffer) {
    r.kind = set.feedBuffer ? InstrKind::FeedBuffer : InstrKind::FetchBuffer;
    const t::IOInstr &io = set.feedBuffer ? op.feedBuffer : op.fetchBuffer;
    r.io.index = io.index;
    r.io.buffer = fromT(io.buffer);
    if (io.__isset.offsets)
      r.io.offsets = io.offsets;
    r.io.keepOnly = io.__isset.keepOnly && io.keepOnly;
  } else if (set.printBuffers) {
    r.kind = InstrKind::PrintBuffers;
    r.print.format = op.printBuffers.format;
    r.print.buffers = fromT(op.printBuffers.values);
  } else {
    r.kind = InstrKind::StateBuffer;
    r.stateBuffer.actorMesh = op.stateBuffer.actorMesh;
    r.stateBuffer.state = op.stateBuffer.state;
    r.stateBuffer.buffer = fromT(op.stateBuffer.buffer);
    r.stateBuffer.offsets = op.stateBuffer.offsets;
  }
  return r;
}

static ControlStep fromT(const t::ControlStep &s) {
  ControlStep r;
  r.kind = cast<ControlStepKind>(s.kind);
  r.mesh = s.mesh;
  r.plans = s.plans;
  r.scalars = mapAll<ScalarArg>(s.scalars, [](const t::ScalarArg &a) {
    return ScalarArg{fromT(a.value), fromT(a.type), a.plan, a.input};
  });
  r.plan = s.plan;
  r.index = s.index;
  r.value = fromT(s.value);
  r.tokens = s.tokens;
  r.type = fromT(s.type);
  r.loc = fromT(s.loc);
  return r;
}

namespace {
std::vector<RankPatch> fromT(const std::vector<t::RankPatch> &in) {
  std::vector<RankPatch> patches;
  for (const t::RankPatch &z : in) {
    RankPatch patch;
    patch.instruction = z.instruction;
    if (z.__isset.peer)
      patch.peer = z.peer;
    if (z.__isset.communicator)
      patch.communicator = z.communicator;
    if (z.__isset.root)
      patch.root = z.root;
    if (z.__isset.offsets)
      patch.offsets = z.offsets;
    if (z.__isset.kernel)
      patch.kernel = z.kernel;
    patches.push_back(std::move(patch));
  }
  return patches;
}

/// Format 7: a RankSet checked, as its list or its box; an error says
/// what is wrong with it.
std::optional<std::string> rankSetOf(const t::RankSet &set,
                                     const std::vector<int64_t> *&list,
                                     RankBox &box) {
  list = nullptr;
  if (set.__isset.ranks == set.__isset.box)
    return std::string("a rank set must either list its ranks or be a box");
  if (set.__isset.ranks) {
    list = &set.ranks;
    return std::nullopt;
  }
  if (set.box.size() % 2 == 0)
    return "a rank box of " + std::to_string(set.box.size()) +
           " numbers (an offset and a size and stride per dimension)";
  box.offset = set.box[0];
  for (size_t i = 1; i < set.box.size(); i += 2) {
    box.sizes.push_back(set.box[i]);
    box.strides.push_back(set.box[i + 1]);
  }
  return std::nullopt;
}

/// A listed RankSet's size spent from `budget`, or what does not fit.
std::optional<std::string> spendList(const std::vector<int64_t> &list,
                                     int64_t &budget) {
  if (static_cast<int64_t>(list.size()) > budget)
    return std::string("more ranks than a plan may hold");
  budget -= static_cast<int64_t>(list.size());
  return std::nullopt;
}

/// Format 7: a RankSet's ranks appended to `out`, spending `budget`; an
/// error says what does not fit.
std::optional<std::string> fromT(const t::RankSet &set, int64_t &budget,
                                 std::vector<int64_t> &out) {
  const std::vector<int64_t> *list;
  RankBox box;
  if (auto bad = rankSetOf(set, list, box))
    return bad;
  if (!list)
    return expandRankBox(box, budget, out);
  if (auto bad = spendList(*list, budget))
    return bad;
  out.insert(out.end(), list->begin(), list->end());
  return std::nullopt;
}

/// Whether a RankSet holds `rank`, spending its size from `budget` and
/// refusing what fromT refuses, without expanding a box.
std::optional<std::string> holdsT(const t::RankSet &set, int64_t rank,
                                  int64_t &budget, bool &holds) {
  holds = false;
  const std::vector<int64_t> *list;
  RankBox box;
  if (auto bad = rankSetOf(set, list, box))
    return bad;
  if (!list)
    return rankBoxHolds(box, rank, budget, holds);
  if (auto bad = spendList(*list, budget))
    return bad;
  holds = std::find(list->begin(), list->end(), rank) != list->end();
  return std::nullopt;
}

/// The least and greatest rank of a RankSet (lo > hi when it is empty) and
/// how many it holds, spending its size from `budget` and refusing what
/// fromT refuses, without expanding a box.
std::optional<std::string> boundsT(const t::RankSet &set, int64_t &budget,
                                   int64_t &lo, int64_t &hi, int64_t &count) {
  const std::vector<int64_t> *list;
  RankBox box;
  if (auto bad = rankSetOf(set, list, box))
    return bad;
  if (!list)
    return rankBoxBounds(box, budget, lo, hi, count);
  if (auto bad = spendList(*list, budget))
    return bad;
  count = static_cast<int64_t>(list->size());
  // An empty list has no bounds: lo > hi.
  lo = 0;
  hi = -1;
  if (!list->empty()) {
    auto [min, max] = std::minmax_element(list->begin(), list->end());
    lo = *min;
    hi = *max;
  }
  return std::nullopt;
}

/// The ranks `mesh`'s dimensions hold, or 0 where one is not positive or
/// they hold over 2^40 (the validator refuses those).
int64_t dimsRanks(const ProcMesh &mesh) {
  int64_t n = 1;
  for (const MeshDim &d : mesh.dims)
    if (d.size <= 0 || n > (int64_t{1} << 40) / d.size)
      return 0;
    else
      n *= d.size;
  return n;
}

/// Whether `set` is stored as the box of ranks 0, 1, ..., `n`-1 in order (a
/// row-major box at offset 0 with `n` ranks; `n` from the mesh's dimensions,
/// 0 where they are invalid).
bool isIdentityBox(const t::RankSet &set, int64_t n) {
  if (n <= 0 || set.__isset.ranks || !set.__isset.box ||
      set.box.size() % 2 == 0 || set.box[0] != 0)
    return false;
  int64_t stride = 1;
  for (size_t i = set.box.size() - 2; i >= 1; i -= 2) {
    int64_t size = set.box[i];
    if (size <= 0 || set.box[i + 1] != stride ||
        __builtin_mul_overflow(stride, size, &stride))
      return false;
    if (i == 1)
      break;
  }
  return stride == n;
}

/// The ranks a decode may expand from boxes and lists (2^24: a mesh of 16M
/// ranks); a hostile file's box of 2^60 ranks is refused, not allocated.
constexpr int64_t kRankBudget = int64_t{1} << 24;
} // namespace

executor::StatusOr<ExecutionPlan> fromThrift(const t::ExecutionPlan &p,
                                             RankFilter *only) {
  auto invalid = [](std::string message) {
    return executor::Status(executor::StatusCode::InvalidArgument,
                            std::move(message));
  };
  int64_t budget = kRankBudget;
  ExecutionPlan r;
  r.formatVersion = p.formatVersion;
  r.compilerVersion = p.compilerVersion;
  r.source = p.source;
  // Decoding for one rank: the meshes a step plan or communicator names,
  // with their parents (a worker maps ranks through those only).
  std::set<std::string> used;
  if (only) {
    std::vector<std::string> work;
    for (const t::StepPlan &s : p.plans)
      work.push_back(s.mesh);
    for (const t::Communicator &c : p.communicators)
      if (c.__isset.mesh)
        work.push_back(c.mesh);
    while (!work.empty()) {
      std::string name = std::move(work.back());
      work.pop_back();
      if (!used.insert(name).second)
        continue;
      for (const t::ProcMesh &m : p.meshes)
        if (m.name == name && m.__isset.parent)
          work.push_back(m.parent);
    }
  }
  for (const t::ProcMesh &m : p.meshes) {
    ProcMesh x;
    x.name = m.name;
    for (const t::MeshDim &d : m.dims)
      x.dims.push_back(MeshDim{d.name, d.size});
    if (m.__isset.parent)
      x.parent = m.parent;
    x.sliceStart = m.sliceStart;
    x.sliceEnd = m.sliceEnd;
    std::string where = "mesh '" + m.name + "' root ranks";
    if (only && x.parent && !used.count(m.name)) {
      // Decoding for one rank: a slice no step or communicator runs on is
      // checked, not expanded (the worker maps no rank through it).
      int64_t lo, hi, count;
      if (auto bad = boundsT(m.rootRanks, budget, lo, hi, count))
        return invalid(where + ": " + *bad);
      x.elided = true;
      // As many as its dimensions hold (0 for dimensions the validator
      // refuses).
      int64_t ranks = x.numRanks();
      if (ranks > 0 && count != ranks)
        return invalid("mesh '" + m.name + "': " + std::to_string(count) +
                       " root ranks for " + std::to_string(ranks) + " ranks");
      if (lo <= hi && lo < 0)
        return invalid("mesh '" + m.name + "': negative root rank");
    } else if (only && !x.parent && isIdentityBox(m.rootRanks, dimsRanks(x))) {
      // Decoding for one rank: a root proc mesh's ranks are its root ranks
      // (stored as the box 0, 1, ..., n-1), left implicit like an elided
      // slice's: its rank count is its dimensions', and a rank maps to
      // itself (4,096 ranks expanded and checked for repeats per bind).
      x.elided = true;
    } else if (auto bad = fromT(m.rootRanks, budget, x.rootRanks)) {
      return invalid(where + ": " + *bad);
    }
    r.meshes.push_back(std::move(x));
  }
  for (const t::MeshTopology &m : p.topology) {
    MeshTopology x{m.mesh, {}};
    // Decoding for one rank: the hosts are checked, not expanded (a worker
    // never reads them); the ranks of a mesh this decode does not know are
    // refused by the validator, which names the mesh.
    int32_t known = only ? r.findMesh(m.mesh) : -1;
    int64_t meshSize = known >= 0 ? r.meshes[known].numRanks() : -1;
    for (const t::Host &h : m.hosts) {
      Host host{h.name, {}};
      std::string where = "topology of '" + m.mesh + "', host '" + h.name + "'";
      if (only && meshSize >= 0) {
        int64_t lo, hi, count;
        if (auto bad = boundsT(h.ranks, budget, lo, hi, count))
          return invalid(where + ": " + *bad);
        for (int64_t rank : {lo, hi})
          if (lo <= hi && (rank < 0 || rank >= meshSize))
            return invalid(where + " lists rank " + std::to_string(rank) +
                           " of " + std::to_string(meshSize));
        host.elided = true;
      } else if (auto bad = fromT(h.ranks, budget, host.ranks)) {
        return invalid(where + ": " + *bad);
      }
      x.hosts.push_back(std::move(host));
    }
    r.topology.push_back(std::move(x));
  }
  // The last communicator's name (an elided repeat's is not stored).
  std::string lastName;
  // Decoding for one rank: the communicators a stored stream or patch
  // names are kept whole (a class's rules find a member's communicator as
  // the translate of its head's), the others only where they hold the rank.
  std::vector<int32_t> named;
  if (only)
    for (const t::StepPlan &s : p.plans)
      for (const t::RankProgram &rp : s.programs) {
        for (const t::Instruction &in : rp.instructions) {
          const t::InstrOp &op = in.op;
          if (op.__isset.send)
            named.push_back(op.send.communicator);
          else if (op.__isset.recv)
            named.push_back(op.recv.communicator);
          else if (op.__isset.collective)
            named.push_back(op.collective.communicator);
        }
        for (const t::RankPatch &z : rp.patches)
          if (z.__isset.communicator)
            named.push_back(z.communicator);
      }
  std::sort(named.begin(), named.end());
  // Room for every repeat at once (reserving entry by entry reallocated
  // hundreds of communicators at each); capped, as a hostile count is only
  // refused below.
  {
    constexpr int64_t kReserveCap = int64_t{1} << 16;
    int64_t total = 0;
    for (const t::Communicator &c : p.communicators)
      total =
          std::min(kReserveCap, total + (c.__isset.repeat && c.repeat > 0
                                             ? std::min(c.repeat, kReserveCap)
                                             : 1));
    r.communicators.reserve(static_cast<size_t>(total));
  }
  for (size_t i = 0; i < p.communicators.size(); ++i) {
    const t::Communicator &c = p.communicators[i];
    std::string which = "communicator entry " + std::to_string(i);
    const Communicator *previous =
        r.communicators.empty() ? nullptr : &r.communicators.back();
    Communicator x;
    x.name = c.__isset.name ? c.name
             : previous     ? nextNumberedName(lastName)
                            : std::string();
    if (!c.__isset.name && x.name.empty())
      return invalid(which +
                     " has no name and the previous one none to number on");
    if (!c.__isset.mesh && !previous)
      return invalid(which + " names no mesh");
    x.mesh = c.__isset.mesh ? c.mesh : previous->mesh;
    x.backend = cast<Backend>(c.backend);
    if (auto bad = fromT(c.ranks, budget, x.ranks))
      return invalid("communicator '" + x.name + "': " + *bad);
    int64_t repeat = c.__isset.repeat ? c.repeat : 1;
    int64_t shift = c.__isset.shift ? c.shift : 0;
    if (repeat < 1 ||
        repeat - 1 >
            budget / std::max<int64_t>(1, static_cast<int64_t>(x.ranks.size())))
      return invalid(which + " repeats " + std::to_string(repeat) +
                     " times: not positive, or more ranks than a plan may "
                     "hold");
    budget -= (repeat - 1) * static_cast<int64_t>(x.ranks.size());
    // Decoding for one rank: the repeats that do not hold it are elided
    // (the k-th repeat holds it when it minus k shifts is a first member).
    // Each repeat's last rank is still checked for overflow, so an elided
    // repeat is refused exactly where an expanded one would be.
    std::vector<int64_t> firsts;
    int64_t me = -1;
    if (only && repeat > 1) {
      firsts = x.ranks;
      std::sort(firsts.begin(), firsts.end());
      me = meshRankOf(r, x.mesh, only->worldRank);
    }
    auto [lo, hi] = std::minmax_element(x.ranks.begin(), x.ranks.end());
    int64_t low = x.ranks.empty() ? 0 : *lo, high = x.ranks.empty() ? 0 : *hi;
    size_t first = r.communicators.size();
    lastName = x.name;
    r.communicators.push_back(std::move(x));
    for (int64_t k = 1; k < repeat; ++k) {
      int64_t delta, bound, start;
      if (__builtin_mul_overflow(k, shift, &delta) ||
          __builtin_add_overflow(low, delta, &bound) ||
          __builtin_add_overflow(high, delta, &bound))
        return invalid(which + ": its shifted ranks overflow");
      Communicator next;
      next.mesh = r.communicators[first].mesh;
      next.backend = r.communicators[first].backend;
      bool kept = !only || std::binary_search(named.begin(), named.end(),
                                              r.communicators.size());
      if (!kept && (me < 0 || __builtin_sub_overflow(me, delta, &start) ||
                    !std::binary_search(firsts.begin(), firsts.end(), start))) {
        next.elided = true;
      } else {
        next.name = numberedName(r.communicators[first].name, k);
        next.ranks = r.communicators[first].ranks;
        for (int64_t &rank : next.ranks)
          rank += delta;
      }
      r.communicators.push_back(std::move(next));
    }
    // The run's last name, which an unnamed next entry numbers on from
    // (elided repeats build none).
    if (repeat > 1) {
      lastName = numberedName(r.communicators[first].name, repeat - 1);
      if (lastName.empty())
        return invalid(which + " repeats a name that does not number on");
    }
  }
  for (const t::Kernel &k : p.kernels)
    r.kernels.push_back(Kernel{k.name, k.numInputs, k.numOutputs,
                               k.__isset.flops ? k.flops : 0});
  for (size_t pi = 0; pi < p.plans.size(); ++pi) {
    const t::StepPlan &s = p.plans[pi];
    StepPlan x;
    x.symbol = s.symbol;
    x.mesh = s.mesh;
    x.inputs = fromT(s.inputs);
    x.outputs = fromT(s.outputs);
    x.loc = fromT(s.loc);
    std::vector<bool> shared(s.programs.size(), false);
    // Decoding for one rank: the rank of the step's mesh that the world
    // rank is (none where the mesh is unknown or does not hold it); the
    // other ranks' programs are not rebuilt.
    int64_t mine = only ? meshRankOf(r, s.mesh, only->worldRank) : -1;
    if (mine < 0)
      mine = INT64_MIN; // no program's rank, however hostile
    // The streams each communicator is used on (format 7: stored, so a
    // worker need not read the other ranks' programs to know them).
    std::vector<std::pair<std::vector<int64_t>, const std::vector<int64_t> *>>
        table;
    for (const t::CommStreams &z : s.commStreams) {
      std::vector<int64_t> comms;
      if (auto bad = fromT(z.communicators, budget, comms))
        return invalid("plan '" + s.symbol + "' communicator streams: " + *bad);
      for (int64_t c : comms)
        if (c < 0 || c >= static_cast<int64_t>(r.communicators.size()))
          return invalid("plan '" + s.symbol +
                         "' lists the streams of "
                         "communicator " +
                         std::to_string(c) + " of " +
                         std::to_string(r.communicators.size()));
      table.emplace_back(std::move(comms), &z.streams);
    }
    std::vector<std::vector<Instruction>> streams(s.programs.size());
    // Per program holding its stream: its sizes and estimate (which the
    // ranks sharing it leave out) and its class's rules (format 6).
    std::vector<RankProgram> heads(s.programs.size());
    std::vector<std::vector<RankRule>> rules(s.programs.size());
    std::optional<RankGeometry> geo;
    // A rank of program j's class: j's stream with the rules and `patches`.
    auto member = [&](size_t j, RankProgram &y,
                      const std::vector<RankPatch> &patches,
                      const std::string &where) -> std::optional<std::string> {
      if (!geo)
        geo.emplace(r, s.mesh);
      y.instructions = streams[j];
      if (auto bad = applyRankRules(y.instructions, rules[j], heads[j].rank,
                                    y.rank, *geo))
        return where + *bad;
      if (auto bad = applyRankPatches(y.instructions, patches))
        return where + *bad;
      return std::nullopt;
    };
    for (size_t k = 0; k < s.programs.size(); ++k) {
      const t::RankProgram &rp = s.programs[k];
      std::string where =
          "plan '" + s.symbol + "' rank " + std::to_string(rp.rank) + ": ";
      RankProgram y;
      y.rank = rp.rank;
      bool keep = !only || rp.rank == mine;
      if (rp.__isset.sharesWith) {
        // A rank of a class: the earlier program's stream, patched.
        int32_t j = rp.sharesWith;
        if (j < 0 || static_cast<size_t>(j) >= k || shared[j])
          return invalid(where + "it shares the instructions of program " +
                         std::to_string(j) +
                         ", which is not an earlier program holding its own");
        if (!rp.instructions.empty())
          return invalid(where +
                         "a program sharing another's instructions has none");
        shared[k] = true;
        y.arenaBytes =
            rp.__isset.arenaBytes ? rp.arenaBytes : heads[j].arenaBytes;
        y.peakBytes = rp.__isset.peakBytes ? rp.peakBytes : heads[j].peakBytes;
        y.criticalPathUs = rp.__isset.criticalPathUs ? rp.criticalPathUs
                                                     : heads[j].criticalPathUs;
        std::vector<RankPatch> patches = fromT(rp.patches);
        if (!keep) {
          for (const RankPatch &patch : patches)
            if (auto bad =
                    outOfStream("patch", patch.instruction, streams[j].size()))
              return invalid(where + *bad);
          continue;
        }
        if (auto bad = member(static_cast<size_t>(j), y, patches, where))
          return invalid(*bad);
        x.programs.push_back(std::move(y));
        continue;
      }
      if (rp.__isset.patches)
        return invalid(where + "patches without a shared stream");
      y.arenaBytes = rp.arenaBytes;
      y.peakBytes = rp.peakBytes;
      y.criticalPathUs = rp.criticalPathUs;
      heads[k] = y; // before its instructions: the sharing ranks' defaults
      for (const t::RankRule &z : rp.rules) {
        RankRule rule;
        rule.instruction = z.instruction;
        rule.peerShift = z.__isset.peerShift && z.peerShift;
        rule.communicatorOfRank =
            z.__isset.communicatorOfRank && z.communicatorOfRank;
        rule.offsetSlopes = z.offsetSlopes;
        rules[k].push_back(std::move(rule));
      }

      y.instructions.reserve(rp.instructions.size());
      for (size_t i = 0; i < rp.instructions.size(); ++i) {
        std::optional<Instruction> in = fromT(rp.instructions[i]);
        if (!in)
          return invalid("plan '" + s.symbol + "' rank " +
                         std::to_string(rp.rank) + " instruction " +
                         std::to_string(i) +
                         ": the instruction must hold exactly one operation");
        y.instructions.push_back(std::move(*in));
      }
      // The stream is kept for the ranks sharing it; a program this rank
      // does not run gives its instructions up instead of copying them.
      if (keep) {
        streams[k] = y.instructions;
        x.programs.push_back(std::move(y));
      } else {
        streams[k] = std::move(y.instructions);
      }
    }
    // Format 7: the ranks that run a class's stream as it is.
    for (const t::ClassMembers &z : s.members) {
      std::string where = "plan '" + s.symbol + "' class of program " +
                          std::to_string(z.program) + ": ";
      if (z.program < 0 ||
          static_cast<size_t>(z.program) >= s.programs.size() ||
          shared[z.program])
        return invalid(where + "not a program holding its own stream");
      std::vector<int64_t> ranks;
      if (only) {
        // One rank: whether the class holds it, not who else it holds.
        bool holds = false;
        if (auto bad = holdsT(z.ranks, mine, budget, holds))
          return invalid(where + *bad);
        if (holds)
          ranks.push_back(mine);
      } else if (auto bad = fromT(z.ranks, budget, ranks)) {
        return invalid(where + *bad);
      }
      size_t j = static_cast<size_t>(z.program);
      for (int64_t rank : ranks) {
        if (only && rank != mine)
          continue;
        RankProgram y = heads[j];
        y.rank = rank;
        if (auto bad =
                member(j, y, {}, where + "rank " + std::to_string(rank) + ": "))
          return invalid(*bad);
        x.programs.push_back(std::move(y));
      }
    }
    if (!s.members.empty())
      std::sort(x.programs.begin(), x.programs.end(),
                [](const RankProgram &a, const RankProgram &b) {
                  return a.rank < b.rank;
                });
    // The stored streams are what the programs use: all of them (a full
    // decode) or, for one rank, at least its own.
    std::map<int32_t, std::set<int64_t>> uses;
    for (const RankProgram &program : x.programs)
      for (const CommUse &use : commUses(program.instructions))
        uses[use.communicator].insert(use.stream);
    auto listed = [&](int32_t c, int64_t stream) {
      for (const auto &[comms, streams] : table)
        if (std::find(comms.begin(), comms.end(), c) != comms.end() &&
            std::find(streams->begin(), streams->end(), stream) !=
                streams->end())
          return true;
      return false;
    };
    for (const auto &[c, streams] : uses)
      for (int64_t stream : streams)
        if (!listed(c, stream))
          return invalid("plan '" + s.symbol + "' uses communicator " +
                         std::to_string(c) + " on stream " +
                         std::to_string(stream) +
                         ", which its communicator streams do not list");
    if (!only) {
      std::map<int32_t, std::set<int64_t>> stored;
      for (const auto &[comms, streams] : table)
        for (int64_t c : comms)
          stored[static_cast<int32_t>(c)].insert(streams->begin(),
                                                 streams->end());
      if (uses != stored)
        return invalid("plan '" + s.symbol +
                       "' lists communicator streams "
                       "that no instruction uses");
    } else {
      // The communicators this rank is a member of (its rank on each
      // communicator's mesh, found once per mesh).
      std::map<std::string, int64_t> local;
      // The last mesh asked about answers first: 529 communicators at 4,096
      // ranks name one or two meshes (an insert per communicator copied the
      // name each time).
      const std::string *lastName = nullptr;
      int64_t lastRank = -1;
      auto localOf = [&](const std::string &name) {
        if (lastName && *lastName == name)
          return lastRank;
        auto it = local.find(name);
        if (it == local.end())
          it = local.emplace(name, meshRankOf(r, name, only->worldRank)).first;
        lastName = &it->first;
        lastRank = it->second;
        return lastRank;
      };
      std::map<int32_t, std::set<int64_t>> &own =
          only->commStreams.emplace_back();
      std::set<Backend> &backends = only->backends.emplace_back();
      for (const auto &[comms, streams] : table)
        for (int64_t c : comms) {
          const Communicator &comm = r.communicators[c];
          backends.insert(comm.backend);
          int64_t me = localOf(comm.mesh);
          if (me >= 0 && positionOfRank(comm.ranks, me) >= 0)
            own[static_cast<int32_t>(c)].insert(streams->begin(),
                                                streams->end());
        }
    }
    r.plans.push_back(std::move(x));
  }
  for (const t::ControllerProgram &c : p.controllers) {
    ControllerProgram x;
    x.name = c.name;
    x.inputs = fromT(c.inputs);
    x.outputs = fromT(c.outputs);
    x.steps = mapAll<ControlStep>(
        c.steps, [](const t::ControlStep &s) { return fromT(s); });
    x.results = mapAll<ValueRef>(c.results,
                                 [](const t::ValueRef &v) { return fromT(v); });
    x.loc = fromT(c.loc);
    r.controllers.push_back(std::move(x));
  }
  for (const t::KernelLibrary &l : p.libraries) {
    KernelLibraryBlob x;
    x.target = cast<PlanTarget>(l.target);
    x.code = l.code;
    for (const t::CompiledKernel &k : l.kernels) {
      CompiledKernelRef y{k.kernel, k.symbol, {}, k.params};
      for (const t::GemmCall &g : k.gemms)
        y.gemms.push_back(GemmCall{g.transA,
                                   g.transB,
                                   g.m,
                                   g.n,
                                   g.k,
                                   g.lda,
                                   g.ldb,
                                   g.ldc,
                                   g.strideA,
                                   g.strideB,
                                   g.strideC,
                                   g.batch,
                                   cast<DType>(g.typeA),
                                   cast<DType>(g.typeB),
                                   cast<DType>(g.typeC),
                                   g.alpha,
                                   g.beta,
                                   g.a,
                                   g.b,
                                   g.c});
      x.kernels.push_back(std::move(y));
    }
    r.libraries.push_back(std::move(x));
  }
  return r;
}

} // namespace monarch::plan::detail
