//===- PlanValidate.cpp - Consistency checks of a decoded plan --*- C++ -*-===//
//
// A plan file comes from disk and may be damaged or forged; the executor
// indexes arenas, communicators and kernels with the numbers in it. Every
// number that is used as an index or a size is checked here, with a message
// that says where in the plan the problem is.
//
//===----------------------------------------------------------------------===//

#include "monarch/Plan/PlanFile.h"
#include "monarch/Support/PrintFormat.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace monarch::plan {
namespace {

Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

bool validDType(DType d) { return dtypeSize(d) != 0; }
bool validBackend(Backend b) {
  return b == Backend::Gloo || b == Backend::Nccl;
}
bool validCollective(CollectiveKind k) {
  return static_cast<int32_t>(k) >= 0 && static_cast<int32_t>(k) <= 4;
}
bool validReduction(ReductionKind k) {
  return static_cast<int32_t>(k) >= 0 && static_cast<int32_t>(k) <= 4;
}
bool validTarget(PlanTarget t) {
  return t == PlanTarget::Cpu || t == PlanTarget::Cuda;
}

template <typename T> bool inRange(T index, size_t size) {
  return index >= 0 && static_cast<uint64_t>(index) < size;
}

/// Whether `ranks` strictly ascend (every list the compiler writes).
bool strictlyAscending(const std::vector<int64_t> &ranks) {
  return std::adjacent_find(ranks.begin(), ranks.end(),
                            std::greater_equal<int64_t>()) == ranks.end();
}

/// The smallest rank `ranks` lists twice, if any: none when they ascend,
/// else found sorted (a set of every member of every communicator was a
/// third of a 4,096-rank worker's load).
std::optional<int64_t> repeatedRank(const std::vector<int64_t> &ranks) {
  if (strictlyAscending(ranks))
    return std::nullopt;
  std::vector<int64_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  auto at = std::adjacent_find(sorted.begin(), sorted.end());
  return at == sorted.end() ? std::nullopt : std::optional<int64_t>(*at);
}

class Validator {
public:
  Validator(const ExecutionPlan &plan, ValidateScope scope)
      : plan(plan), scope(scope) {}

private:
  mutable std::vector<std::unordered_set<int64_t>> members;
  /// Per communicator: whether its members ascend (-1 while unknown).
  mutable std::vector<int8_t> ascending;

public:
  Status run() {
    if (plan.formatVersion != kPlanFormatVersion)
      return invalid("format version " + std::to_string(plan.formatVersion) +
                     " (this build reads " +
                     std::to_string(kPlanFormatVersion) + ")");
    if (Status s = meshes(); !s)
      return s;
    if (Status s = communicators(); !s)
      return s;
    for (size_t i = 0; i < plan.kernels.size(); ++i)
      if (plan.kernels[i].numInputs < 0 || plan.kernels[i].numOutputs < 0)
        return invalid("kernel " + std::to_string(i) +
                       ": negative argument count");
    std::set<std::string> symbols;
    for (const StepPlan &step : plan.plans) {
      if (!symbols.insert(step.symbol).second)
        return invalid("plan '" + step.symbol + "' appears twice");
      if (Status s = stepPlan(step); !s)
        return s;
    }
    for (const ControllerProgram &c : plan.controllers)
      if (Status s = controller(c); !s)
        return s.withContext("controller program '" + c.name + "'");
    for (size_t i = 0; i < plan.libraries.size(); ++i) {
      const KernelLibraryBlob &lib = plan.libraries[i];
      std::string where = "kernel library " + std::to_string(i);
      if (!validTarget(lib.target))
        return invalid(where + ": unknown target " +
                       std::to_string(static_cast<int32_t>(lib.target)));
      for (const CompiledKernelRef &k : lib.kernels) {
        if (!inRange(k.kernel, plan.kernels.size()))
          return invalid(where + ": kernel index " + std::to_string(k.kernel) +
                         " out of range");
        if (k.symbol.empty())
          return invalid(where + ": empty symbol for kernel '" +
                         plan.kernels[k.kernel].name + "'");
        if (!k.gemms.empty() && lib.target != PlanTarget::Cuda)
          return invalid(where + ": cuBLAS calls in a library for the " +
                         "cpu target");
        for (size_t g = 0; g < k.gemms.size(); ++g)
          if (Status st = gemm(k.gemms[g], plan.kernels[k.kernel]); !st)
            return st.withContext(where + ", kernel '" +
                                  plan.kernels[k.kernel].name + "' gemm " +
                                  std::to_string(g));
      }
    }
    return Status::ok();
  }

private:
  /// An operand "aI" / "sJ" with an optional "+BYTES"; arguments in range.
  static bool validGemmOperand(const std::string &op, const Kernel &kernel) {
    if (op.size() < 2 || (op[0] != 'a' && op[0] != 's'))
      return false;
    size_t plus = op.find('+');
    std::string index =
        op.substr(1, plus == std::string::npos ? plus : plus - 1);
    std::string offset = plus == std::string::npos ? "0" : op.substr(plus + 1);
    auto digits = [](const std::string &d) {
      return !d.empty() && d.size() < 18 &&
             d.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(index) || !digits(offset))
      return false;
    return op[0] == 's' ||
           std::stoll(index) < int64_t(kernel.numInputs) + kernel.numOutputs;
  }

  static Status gemm(const GemmCall &g, const Kernel &kernel) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
      return invalid("non-positive dimension (m=" + std::to_string(g.m) +
                     ", n=" + std::to_string(g.n) +
                     ", k=" + std::to_string(g.k) +
                     ", batch=" + std::to_string(g.batch) + ")");
    if (g.lda < (g.transA ? g.k : g.m) || g.ldb < (g.transB ? g.n : g.k) ||
        g.ldc < g.m)
      return invalid("a leading dimension is smaller than its matrix's rows");
    if (g.strideA < 0 || g.strideB < 0 || g.strideC < 0)
      return invalid("negative batch stride");
    if (!isFloatDType(g.typeA) || !isFloatDType(g.typeB) ||
        !isFloatDType(g.typeC))
      return invalid("element types must be f32, f16, bf16 or f64");
    for (const std::string *op : {&g.a, &g.b, &g.c})
      if (!validGemmOperand(*op, kernel))
        return invalid("bad operand '" + *op + "'");
    return Status::ok();
  }

private:
  /// Number of ranks of the mesh called `name`, or -1.
  int64_t meshRanks(const std::string &name) const {
    int32_t m = plan.findMesh(name);
    return m < 0 ? -1 : plan.meshes[m].numRanks();
  }

  Status valueType(const ValueType &t, const std::string &where) const {
    if (!validDType(t.dtype))
      return invalid(where + ": unknown element type " +
                     std::to_string(static_cast<int32_t>(t.dtype)));
    if (!t.isTensor && !t.shape.empty())
      return invalid(where + ": a scalar has no shape");
    for (int64_t d : t.shape)
      if (d < 0)
        return invalid(where + ": negative dimension " + std::to_string(d));
    return Status::ok();
  }

  Status meshes() const {
    std::set<std::string> names;
    for (const ProcMesh &m : plan.meshes) {
      std::string where = "mesh '" + m.name + "'";
      if (m.name.empty() || !names.insert(m.name).second)
        return invalid(where + ": empty or duplicate name");
      int64_t ranks = 1;
      for (const MeshDim &d : m.dims) {
        if (d.size <= 0 || ranks > (int64_t{1} << 40) / d.size)
          return invalid(where + ": dimension '" + d.name + "' has size " +
                         std::to_string(d.size));
        ranks *= d.size;
      }
      if (!m.elided && static_cast<int64_t>(m.rootRanks.size()) != ranks)
        return invalid(where + ": " + std::to_string(m.rootRanks.size()) +
                       " root ranks for " + std::to_string(ranks) + " ranks");
      for (int64_t r : m.rootRanks)
        if (r < 0)
          return invalid(where + ": negative root rank");
      // Distinct (a worker finds its mesh rank as the one position of its
      // world rank).
      if (std::optional<int64_t> twice = repeatedRank(m.rootRanks))
        return invalid(where + ": root rank " + std::to_string(*twice) +
                       " repeated");
      if (m.parent) {
        int32_t p = plan.findMesh(*m.parent);
        if (p < 0 || *m.parent == m.name)
          return invalid(where + ": unknown parent mesh '" + *m.parent + "'");
        size_t dims = plan.meshes[p].dims.size();
        if (m.sliceStart.size() != dims || m.sliceEnd.size() != dims)
          return invalid(where + ": slice ranges do not match the " +
                         std::to_string(dims) + " dimensions of '" + *m.parent +
                         "'");
      }
    }
    for (const MeshTopology &t : plan.topology) {
      int64_t n = meshRanks(t.mesh);
      if (n < 0)
        return invalid("topology names unknown mesh '" + t.mesh + "'");
      for (const Host &h : t.hosts)
        for (int64_t r : h.ranks)
          if (!inRange(r, n))
            return invalid("topology of '" + t.mesh + "': host '" + h.name +
                           "' lists rank " + std::to_string(r) + " of " +
                           std::to_string(n));
    }
    return Status::ok();
  }

  Status communicators() const {
    const std::string *lastMesh = nullptr;
    int64_t n = -1;
    for (const Communicator &c : plan.communicators) {
      // Not the kept rank's: a repeat of a checked entry whose members
      // were not decoded.
      if (c.elided && scope == ValidateScope::KeptRanks)
        continue;
      auto where = [&c] { return "communicator '" + c.name + "'"; };
      if (!lastMesh || *lastMesh != c.mesh) {
        lastMesh = &c.mesh;
        n = meshRanks(c.mesh);
      }
      if (n < 0)
        return invalid(where() + ": unknown mesh '" + c.mesh + "'");
      if (!validBackend(c.backend))
        return invalid(where() + ": unknown backend " +
                       std::to_string(static_cast<int32_t>(c.backend)));
      if (c.ranks.empty())
        return invalid(where() + ": no ranks");
      // Members that strictly ascend are in the mesh when the first and
      // last are; others are checked one by one.
      if (strictlyAscending(c.ranks) && inRange(c.ranks.front(), n) &&
          inRange(c.ranks.back(), n))
        continue;
      std::optional<int64_t> repeated = repeatedRank(c.ranks);
      for (int64_t r : c.ranks)
        if (!inRange(r, n) || repeated == r)
          return invalid(where() + ": rank " + std::to_string(r) +
                         " is outside mesh '" + c.mesh + "' or repeated");
    }
    return Status::ok();
  }

  Status buffer(const Buffer &b, int64_t arena, const std::string &where) {
    if (!validDType(b.dtype))
      return invalid(where + ": buffer has unknown element type " +
                     std::to_string(static_cast<int32_t>(b.dtype)));
    int64_t size = b.sizeInBytes();
    if (b.offset < 0 || size < 0 ||
        size == std::numeric_limits<int64_t>::max() || b.offset > arena - size)
      return invalid(where + ": buffer " + b.str() + " lies outside the " +
                     std::to_string(arena) + "-byte arena");
    return Status::ok();
  }

  Status member(int32_t comm, int64_t rank, const std::string &what,
                const std::string &where) const {
    if (!inRange(comm, plan.communicators.size()))
      return invalid(where + ": communicator index " + std::to_string(comm) +
                     " out of range");
    // Members that ascend (as the compiler writes them) are searched;
    // others are put in a set once: a scan per instruction was quadratic
    // in the ranks (4,096 ranks x a collective each over a 4,096-member
    // communicator).
    const std::vector<int64_t> &ranks = plan.communicators[comm].ranks;
    if (ascending.empty())
      ascending.assign(plan.communicators.size(), -1);
    if (ascending[comm] < 0)
      ascending[comm] = std::is_sorted(ranks.begin(), ranks.end());
    if (ascending[comm]) {
      if (std::binary_search(ranks.begin(), ranks.end(), rank))
        return Status::ok();
    } else {
      if (members.empty())
        members.resize(plan.communicators.size());
      std::unordered_set<int64_t> &set = members[comm];
      if (set.empty())
        set.insert(ranks.begin(), ranks.end());
      if (set.count(rank))
        return Status::ok();
    }
    return invalid(where + ": " + what + " " + std::to_string(rank) +
                   " is not in communicator '" + plan.communicators[comm].name +
                   "'");
  }

  Status instruction(const StepPlan &step, const RankProgram &program,
                     size_t index, int64_t meshSize) {
    const Instruction &in = program.instructions[index];
    std::string where = "plan '" + step.symbol + "' rank " +
                        std::to_string(program.rank) + " instruction " +
                        std::to_string(index) + " (" + instrKindName(in.kind) +
                        ")";
    int64_t arena = program.arenaBytes;
    if (in.loc.line < 0 || in.loc.col < 0)
      return invalid(where + ": negative source line or column");
    if (std::optional<int64_t> s = in.stream(); s && *s < 0)
      return invalid(where + ": negative stream");
    if (std::optional<int64_t> g = in.group(); g && *g < 0)
      return invalid(where + ": negative group");
    switch (in.kind) {
    case InstrKind::Launch: {
      const LaunchInstr &l = in.launch;
      if (!inRange(l.kernel, plan.kernels.size()))
        return invalid(where + ": kernel index " + std::to_string(l.kernel) +
                       " out of range");
      const Kernel &k = plan.kernels[l.kernel];
      if (static_cast<int64_t>(l.ins.size()) != k.numInputs ||
          static_cast<int64_t>(l.outs.size()) != k.numOutputs)
        return invalid(where + ": kernel '" + k.name + "' takes " +
                       std::to_string(k.numInputs) + " inputs and " +
                       std::to_string(k.numOutputs) + " outputs");
      for (const Buffer &b : l.ins)
        if (Status s = buffer(b, arena, where); !s)
          return s;
      for (const Buffer &b : l.outs)
        if (Status s = buffer(b, arena, where); !s)
          return s;
      return Status::ok();
    }
    case InstrKind::Send:
    case InstrKind::Recv: {
      const P2PInstr &p = in.p2p;
      if (!inRange(p.peer, meshSize))
        return invalid(where + ": peer " + std::to_string(p.peer) +
                       " outside mesh '" + step.mesh + "'");
      if (Status s = member(p.communicator, program.rank, "rank", where); !s)
        return s;
      if (Status s = member(p.communicator, p.peer, "peer", where); !s)
        return s;
      return buffer(p.buffer, arena, where);
    }
    case InstrKind::Collective: {
      const CollectiveInstr &c = in.collective;
      if (!validCollective(c.kind))
        return invalid(where + ": unknown collective kind " +
                       std::to_string(static_cast<int32_t>(c.kind)));
      if (c.reduction && !validReduction(*c.reduction))
        return invalid(where + ": unknown reduction kind " +
                       std::to_string(static_cast<int32_t>(*c.reduction)));
      if (Status s = member(c.communicator, program.rank, "rank", where); !s)
        return s;
      if (c.root &&
          !inRange(*c.root, plan.communicators[c.communicator].ranks.size()))
        return invalid(where + ": root " + std::to_string(*c.root) +
                       " outside the communicator");
      if (Status s = buffer(c.input, arena, where); !s)
        return s;
      return buffer(c.output, arena, where);
    }
    case InstrKind::Wait:
      for (int32_t e : in.wait.events)
        if (!inRange(e, index) || !program.instructions[e].isAsync())
          return invalid(where + ": event " + std::to_string(e) +
                         " is not an earlier asynchronous instruction");
      return Status::ok();
    case InstrKind::FeedBuffer:
    case InstrKind::FetchBuffer: {
      size_t n = in.kind == InstrKind::FeedBuffer ? step.inputs.size()
                                                  : step.outputs.size();
      if (!inRange(in.io.index, n))
        return invalid(
            where + ": index " + std::to_string(in.io.index) +
            " but the plan has " + std::to_string(n) +
            (in.kind == InstrKind::FeedBuffer ? " inputs" : " outputs"));
      if (!in.io.offsets.empty()) {
        // A shard: inside its input or output, of its element type.
        const ValueType *whole = in.kind == InstrKind::FetchBuffer
                                     ? &step.outputs[in.io.index]
                                     : &step.inputs[in.io.index];
        const std::vector<int64_t> &shape = in.io.buffer.shape;
        bool fits = whole->isTensor && whole->dtype == in.io.buffer.dtype &&
                    in.io.offsets.size() == shape.size() &&
                    whole->shape.size() == shape.size();
        for (size_t d = 0; fits && d < shape.size(); ++d)
          fits = in.io.offsets[d] >= 0 && shape[d] >= 0 &&
                 in.io.offsets[d] <= whole->shape[d] - shape[d];
        if (!fits) {
          std::string at;
          for (int64_t o : in.io.offsets)
            at += (at.empty() ? "" : ", ") + std::to_string(o);
          return invalid(where + ": " + in.io.buffer.str() + " at [" + at +
                         "] is not a shard of " + whole->str());
        }
      }
      return buffer(in.io.buffer, arena, where);
    }
    case InstrKind::StateBuffer:
      if (in.stateBuffer.actorMesh.empty() || in.stateBuffer.state.empty())
        return invalid(where + ": missing actor mesh or state name");
      if (!in.stateBuffer.offsets.empty()) {
        // A shard's start: one per dimension, a multiple of the shard's
        // size (the controller cuts a global value at it).
        const std::vector<int64_t> &shape = in.stateBuffer.buffer.shape;
        bool fits = in.stateBuffer.offsets.size() == shape.size();
        for (size_t d = 0; fits && d < shape.size(); ++d)
          fits = in.stateBuffer.offsets[d] >= 0 && shape[d] > 0 &&
                 in.stateBuffer.offsets[d] % shape[d] == 0;
        if (!fits)
          return invalid(where + ": state shard offsets do not fit its " +
                         in.stateBuffer.buffer.str());
      }
      return buffer(in.stateBuffer.buffer, arena, where);
    case InstrKind::PrintBuffers: {
      std::vector<printfmt::Piece> pieces;
      if (in.print.format.size() > (1u << 16))
        return invalid(where + ": print format: longer than 64 KiB");
      if (Status bad =
              printfmt::parse(in.print.format, in.print.buffers.size(), pieces);
          !bad)
        return invalid(where + ": print format: " + bad.message());
      for (const Buffer &b : in.print.buffers)
        if (Status s = buffer(b, arena, where); !s)
          return s;
      return Status::ok();
    }
    }
    return invalid(where + ": unknown instruction kind");
  }

  Status stepPlan(const StepPlan &step) {
    std::string where = "plan '" + step.symbol + "'";
    int64_t n = meshRanks(step.mesh);
    if (n < 0)
      return invalid(where + ": unknown mesh '" + step.mesh + "'");
    for (const ValueType &t : step.inputs)
      if (Status s = valueType(t, where + " input"); !s)
        return s;
    for (const ValueType &t : step.outputs)
      if (Status s = valueType(t, where + " output"); !s)
        return s;
    std::set<int64_t> ranks;
    for (const RankProgram &p : step.programs) {
      if (!inRange(p.rank, n) || !ranks.insert(p.rank).second)
        return invalid(where + ": rank " + std::to_string(p.rank) +
                       " is outside mesh '" + step.mesh + "' or repeated");
      if (p.arenaBytes < 0 || p.peakBytes < 0)
        return invalid(where + " rank " + std::to_string(p.rank) +
                       ": negative arena or peak size");
      for (size_t i = 0; i < p.instructions.size(); ++i)
        if (Status s = instruction(step, p, i, n); !s)
          return s;
    }
    // The tiling of sharded outputs spans every rank's program; a plan
    // decoded for one rank holds one.
    return scope == ValidateScope::AllRanks ? shardsTile(step, where)
                                            : Status::ok();
  }

  /// An output returned as shards is covered by them exactly: no element
  /// twice, none left out (the controller would return zeros there), and
  /// no rank returning it whole besides.
  Status shardsTile(const StepPlan &step, const std::string &where) const {
    std::map<int64_t, std::vector<const IOInstr *>> shards;
    std::set<int64_t> whole;
    for (const RankProgram &p : step.programs)
      for (const Instruction &in : p.instructions)
        if (in.kind == InstrKind::FetchBuffer && !in.io.keepOnly)
          (in.io.offsets.empty() ? (void)whole.insert(in.io.index)
                                 : shards[in.io.index].push_back(&in.io));
    for (const auto &[index, pieces] : shards) {
      std::string what = where + ": output " + std::to_string(index);
      if (whole.count(index))
        return invalid(what + " is fetched both whole and as shards");
      int64_t covered = 0;
      for (const IOInstr *a : pieces)
        covered += a->buffer.numElements();
      if (covered != numElements(step.outputs[index].shape))
        return invalid(what + ": its shards hold " + std::to_string(covered) +
                       " elements, the output " +
                       std::to_string(numElements(step.outputs[index].shape)));
      // Shards of one shape at multiples of it (a mesh's grid, the usual
      // case) are disjoint exactly when their starts differ: n log n
      // instead of comparing every pair (8M pairs at 4,096 ranks).
      if (gridAligned(pieces)) {
        std::set<std::vector<int64_t>> starts;
        for (const IOInstr *piece : pieces)
          if (piece->buffer.numElements() > 0 &&
              !starts.insert(piece->offsets).second)
            return invalid(what + ": two of its shards overlap");
        continue;
      }
      for (size_t a = 0; a < pieces.size(); ++a)
        for (size_t b = a + 1; b < pieces.size(); ++b)
          if (overlap(*pieces[a], *pieces[b]))
            return invalid(what + ": two of its shards overlap");
    }
    return Status::ok();
  }

  static bool gridAligned(const std::vector<const IOInstr *> &pieces) {
    const std::vector<int64_t> &shape = pieces.front()->buffer.shape;
    for (const IOInstr *piece : pieces) {
      if (piece->buffer.shape != shape || piece->offsets.size() != shape.size())
        return false;
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] <= 0 || piece->offsets[d] % shape[d] != 0)
          return false;
    }
    return true;
  }

  static int64_t numElements(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }

  /// Whether two shards (checked to lie inside one output) share elements.
  static bool overlap(const IOInstr &a, const IOInstr &b) {
    if (a.buffer.numElements() == 0 || b.buffer.numElements() == 0)
      return false;
    for (size_t d = 0; d < a.offsets.size(); ++d)
      if (a.offsets[d] + a.buffer.shape[d] <= b.offsets[d] ||
          b.offsets[d] + b.buffer.shape[d] <= a.offsets[d])
        return false;
    return true;
  }

  Status valueRef(const ValueRef &v, const ControllerProgram &c,
                  size_t stepIndex) const {
    switch (v.kind) {
    case ValueKind::Argument:
      if (!inRange(v.index, c.inputs.size()))
        return invalid("argument " + std::to_string(v.index) + " of " +
                       std::to_string(c.inputs.size()));
      return Status::ok();
    case ValueKind::Fetched:
      if (!inRange(v.index, stepIndex) ||
          c.steps[v.index].kind != ControlStepKind::FetchOutput)
        return invalid("value of step " + std::to_string(v.index) +
                       ", which is not an earlier fetch_output");
      return Status::ok();
    case ValueKind::Constant:
      return Status::ok();
    }
    return invalid("unknown value kind " +
                   std::to_string(static_cast<int32_t>(v.kind)));
  }

  Status controller(const ControllerProgram &c) const {
    for (const ValueType &t : c.inputs)
      if (Status s = valueType(t, "input"); !s)
        return s;
    for (const ValueType &t : c.outputs)
      if (Status s = valueType(t, "output"); !s)
        return s;
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const ControlStep &s = c.steps[i];
      std::string where = "step " + std::to_string(i) + " (" +
                          controlStepKindName(s.kind) + ")";
      switch (s.kind) {
      case ControlStepKind::ControlMsg:
        if (meshRanks(s.mesh) < 0)
          return invalid(where + ": unknown mesh '" + s.mesh + "'");
        for (int32_t p : s.plans)
          if (!inRange(p, plan.plans.size()))
            return invalid(where + ": plan index out of range");
        for (const ScalarArg &a : s.scalars) {
          if (!inRange(a.plan, plan.plans.size()) ||
              !inRange(a.input, plan.plans[a.plan].inputs.size()))
            return invalid(where + ": scalar targets a missing plan input");
          if (Status v = valueType(a.type, where); !v)
            return v;
          if (Status v = valueRef(a.value, c, i); !v)
            return v.withContext(where);
        }
        break;
      case ControlStepKind::FeedInput:
      case ControlStepKind::FetchOutput: {
        bool feed = s.kind == ControlStepKind::FeedInput;
        if (!inRange(s.plan, plan.plans.size()))
          return invalid(where + ": plan index out of range");
        const StepPlan &p = plan.plans[s.plan];
        if (!inRange(s.index, feed ? p.inputs.size() : p.outputs.size()))
          return invalid(where + ": plan '" + p.symbol + "' has no " +
                         (feed ? "input " : "output ") +
                         std::to_string(s.index));
        if (feed)
          if (Status v = valueRef(s.value, c, i); !v)
            return v.withContext(where);
        break;
      }
      case ControlStepKind::Await:
        for (int32_t t : s.tokens)
          if (!inRange(t, i) || c.steps[t].kind != ControlStepKind::ControlMsg)
            return invalid(where + ": token " + std::to_string(t) +
                           " is not an earlier control_msg");
        break;
      default:
        return invalid(where + ": unknown step kind");
      }
      if (Status v = valueType(s.type, where); !v)
        return v;
    }
    if (c.results.size() != c.outputs.size())
      return invalid(std::to_string(c.results.size()) + " results for " +
                     std::to_string(c.outputs.size()) + " outputs");
    for (const ValueRef &v : c.results)
      if (Status s = valueRef(v, c, c.steps.size()); !s)
        return s.withContext("result");
    return Status::ok();
  }

  const ExecutionPlan &plan;
  ValidateScope scope;
};

} // namespace

Status validatePlan(const ExecutionPlan &plan, ValidateScope scope) {
  return Validator(plan, scope).run();
}

} // namespace monarch::plan
