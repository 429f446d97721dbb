//===- PlanPrinter.cpp - Readable dump of an ExecutionPlan ------*- C++ -*-===//
//
// Plain text for people: sections for the program-wide tables, then one
// aligned table per rank. Names are written with `@` like in the IR so that
// a dump can be searched for the symbols of the planned module.
//
//===----------------------------------------------------------------------===//

#include "monarch/Plan/PlanPrinter.h"

#include "RankClasses.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace monarch::plan {
namespace {

using Row = std::vector<std::string>;

/// Prints rows as left-aligned columns separated by two spaces.
void printTable(std::ostream &os, const std::vector<Row> &rows,
                const std::string &indent) {
  std::vector<size_t> widths;
  for (const Row &row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i)
        widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const Row &row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    os << line << "\n";
  }
}

template <typename T, typename Fn>
std::string join(const std::vector<T> &items, Fn fn,
                 const std::string &sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? sep : "") + fn(items[i]);
  return out;
}

std::string ints(const std::vector<int64_t> &v) {
  return "[" + join(v, [](int64_t x) { return std::to_string(x); }) + "]";
}

/// A box's formula for people: "0..4095", "8 + 16i + j (i < 256, j < 8)".
std::string boxText(const detail::RankBox &box, int64_t first, int64_t last) {
  if (box.sizes.size() == 1 && box.strides[0] == 1)
    return std::to_string(first) + ".." + std::to_string(last);
  static const char *names[] = {"i", "j", "k", "l", "m", "n", "p", "q"};
  std::string formula = box.offset ? std::to_string(box.offset) : "";
  std::string bounds;
  for (size_t d = 0; d < box.sizes.size(); ++d) {
    std::string name = d < 8 ? names[d] : "i" + std::to_string(d);
    int64_t stride = box.strides[d];
    std::string term = stride == 1    ? name
                       : stride == -1 ? "-" + name
                                      : std::to_string(stride) + name;
    if (!formula.empty())
      formula += term[0] == '-' ? " - " + term.substr(1) : " + " + term;
    else
      formula = term;
    bounds += (d ? ", " : "") + name + " < " + std::to_string(box.sizes[d]);
  }
  return formula + " (" + bounds + ")";
}

/// A list of ranks for people: as it is up to 16 ranks; a box as its
/// formula ("2048 ranks: 16i + j (i < 256, j < 8)", "4096 ranks: 0..4095");
/// a box but for a few of `holes` (ascending list, the box with them
/// added: "2047 ranks: 8 + 16i + j (i < 256, j < 8) but [8]"); otherwise
/// its ends and its count. A 4,096-rank plan printed every member of every
/// communicator (20 MB).
std::string rankList(const std::vector<int64_t> &v,
                     const std::vector<int64_t> &holes = {}) {
  if (v.size() <= 16)
    return ints(v);
  std::string count = std::to_string(v.size()) + " ranks: ";
  if (std::optional<detail::RankBox> box = detail::rankBox(v))
    return count + boxText(*box, v.front(), v.back());
  if (std::is_sorted(v.begin(), v.end())) {
    // All the holes not in the list, or those between its ends.
    for (bool inside : {false, true}) {
      std::vector<int64_t> added, filled;
      for (int64_t h : holes)
        if ((!inside || (h > v.front() && h < v.back())) &&
            !std::binary_search(v.begin(), v.end(), h))
          added.push_back(h);
      if (added.empty() || added.size() > 16)
        continue;
      std::merge(v.begin(), v.end(), added.begin(), added.end(),
                 std::back_inserter(filled));
      if (std::optional<detail::RankBox> box = detail::rankBox(filled))
        return count + boxText(*box, filled.front(), filled.back()) + " but " +
               ints(added);
    }
  }
  std::vector<int64_t> head(v.begin(), v.begin() + 8),
      tail(v.end() - 4, v.end());
  return count + "[" + join(head, [](int64_t x) { return std::to_string(x); }) +
         ", ..., " + join(tail, [](int64_t x) { return std::to_string(x); }) +
         "]";
}

std::string types(const std::vector<ValueType> &v) {
  return "(" + join(v, [](const ValueType &t) { return t.str(); }) + ")";
}

std::string location(const SourceLoc &loc) {
  std::string s = loc.str();
  if (!loc.opName.empty())
    s += " " + loc.opName;
  return s;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

class Printer {
public:
  Printer(const ExecutionPlan &plan, std::ostream &os,
          const PrintOptions &options)
      : plan(plan), os(os), options(options) {}

  void print() {
    os << "ExecutionPlan format " << plan.formatVersion;
    if (!plan.compilerVersion.empty())
      os << ", monarch-compile " << plan.compilerVersion;
    if (!plan.source.empty())
      os << ", from " << plan.source;
    os << "\n";
    meshes();
    communicators();
    kernels();
    for (const StepPlan &step : plan.plans)
      stepPlan(step);
    for (const ControllerProgram &c : plan.controllers)
      controller(c);
  }

private:
  std::string commName(int32_t index) const {
    if (index < 0 || static_cast<size_t>(index) >= plan.communicators.size())
      return "#" + std::to_string(index);
    return "@" + plan.communicators[index].name;
  }
  std::string planName(int32_t index) const {
    if (index < 0 || static_cast<size_t>(index) >= plan.plans.size())
      return "#" + std::to_string(index);
    return "@" + plan.plans[index].symbol;
  }

  void meshes() {
    os << "\nmeshes:\n";
    std::vector<Row> rows;
    for (const ProcMesh &m : plan.meshes) {
      std::string dims = join(m.dims, [](const MeshDim &d) {
        return d.name + "=" + std::to_string(d.size);
      });
      std::string of;
      if (m.parent) {
        of = "slice of @" + *m.parent + " ranks " + rankList(m.rootRanks);
      }
      rows.push_back(
          {"@" + m.name, dims, std::to_string(m.numRanks()) + " ranks", of});
    }
    printTable(os, rows, "  ");
    os << "topology:\n";
    rows.clear();
    for (const MeshTopology &t : plan.topology)
      for (const Host &h : t.hosts)
        rows.push_back(
            {"@" + t.mesh, "host " + h.name, "ranks " + rankList(h.ranks)});
    printTable(os, rows, "  ");
  }

  void communicators() {
    os << "communicators:\n";
    std::vector<Row> rows;
    // A run of 4 or more communicators numbered on, each the previous one
    // shifted alike (the groups over some mesh dimensions), is one row.
    const std::vector<Communicator> &all = plan.communicators;
    auto shiftFrom = [&all](size_t i) {
      return detail::shiftedCommunicator(all[i - 1], all[i]);
    };
    for (size_t i = 0; i < all.size();) {
      const Communicator &c = all[i];
      size_t end = i + 1;
      std::optional<int64_t> shift =
          end < all.size() ? shiftFrom(end) : std::nullopt;
      if (shift)
        while (end < all.size() && shiftFrom(end) == shift)
          ++end;
      if (shift && end - i >= 4) {
        rows.push_back(
            {"@" + c.name + " .. @" + all[end - 1].name, "on @" + c.mesh,
             "ranks " + rankList(c.ranks) + " + " +
                 (*shift == 1 ? std::string() : std::to_string(*shift)) +
                 "c (c < " + std::to_string(end - i) + ")",
             backendName(c.backend)});
        i = end;
        continue;
      }
      rows.push_back({"@" + c.name, "on @" + c.mesh,
                      "ranks " + rankList(c.ranks), backendName(c.backend)});
      ++i;
    }
    if (rows.empty())
      os << "  (none)\n";
    printTable(os, rows, "  ");
  }

  void kernels() {
    os << "kernels: " << plan.kernels.size() << "\n";
    std::vector<Row> rows;
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      const Kernel &k = plan.kernels[i];
      rows.push_back({"k" + std::to_string(i), "@" + k.name,
                      std::to_string(k.numInputs) + " in, " +
                          std::to_string(k.numOutputs) + " out"});
    }
    printTable(os, rows, "  ");
    os << "kernel libraries:";
    if (plan.libraries.empty())
      os << " none (kernels not compiled)";
    os << "\n";
    for (const KernelLibraryBlob &lib : plan.libraries) {
      size_t gemms = 0;
      for (const CompiledKernelRef &k : lib.kernels)
        gemms += k.gemms.size();
      os << "  " << targetName(lib.target) << ": " << lib.code.size()
         << " bytes, " << lib.kernels.size() << " of " << plan.kernels.size()
         << " kernels compiled";
      if (gemms)
        os << ", " << gemms << " matmuls as cuBLAS calls";
      size_t parameterized = 0;
      for (const CompiledKernelRef &k : lib.kernels)
        parameterized += !k.params.empty();
      if (parameterized)
        os << ", " << parameterized << " taking parameters";
      os << "\n";
      for (const CompiledKernelRef &k : lib.kernels)
        for (size_t g = 0; g < k.gemms.size(); ++g)
          os << "    k" << k.kernel << " gemm " << g << ": "
             << gemmString(k.gemms[g]) << "\n";
    }
  }

  /// "cublasGemmEx(N, T, m=8, n=4, k=16, a=a1 lda=8, b=a0 ldb=16, c=a2
  /// ldc=8, f32*f32->f32, alpha=1, beta=0)".
  static std::string gemmString(const GemmCall &g) {
    auto num = [](double v) {
      std::ostringstream o;
      o << v;
      return o.str();
    };
    std::string s =
        g.batch == 1 ? "cublasGemmEx(" : "cublasGemmStridedBatchedEx(";
    s += std::string(g.transA ? "T" : "N") + ", " + (g.transB ? "T" : "N") +
         ", m=" + std::to_string(g.m) + ", n=" + std::to_string(g.n) +
         ", k=" + std::to_string(g.k) + ", a=" + g.a +
         " lda=" + std::to_string(g.lda) + ", b=" + g.b +
         " ldb=" + std::to_string(g.ldb) + ", c=" + g.c +
         " ldc=" + std::to_string(g.ldc);
    if (g.batch != 1)
      s += ", batch=" + std::to_string(g.batch) +
           " strides=" + std::to_string(g.strideA) + "," +
           std::to_string(g.strideB) + "," + std::to_string(g.strideC);
    s += std::string(", ") + dtypeMlirName(g.typeA) + "*" +
         dtypeMlirName(g.typeB) + "->" + dtypeMlirName(g.typeC) +
         ", alpha=" + num(g.alpha) + ", beta=" + num(g.beta) + ")";
    return s;
  }

  Row instruction(const Instruction &in, size_t index) const {
    std::string what = instrKindName(in.kind), operands;
    auto buffers = [](const std::vector<Buffer> &bs) {
      return join(bs, [](const Buffer &b) { return b.str(); });
    };
    switch (in.kind) {
    case InstrKind::Launch: {
      const LaunchInstr &l = in.launch;
      std::string name =
          l.kernel >= 0 && static_cast<size_t>(l.kernel) < plan.kernels.size()
              ? plan.kernels[l.kernel].name
              : "?";
      operands = "k" + std::to_string(l.kernel) + " @" + name + " ins(" +
                 buffers(l.ins) + ") outs(" + buffers(l.outs) + ")";
      break;
    }
    case InstrKind::Send:
    case InstrKind::Recv:
      operands = in.p2p.buffer.str() +
                 (in.kind == InstrKind::Send ? " to " : " from ") +
                 std::to_string(in.p2p.peer) + " on " +
                 commName(in.p2p.communicator);
      break;
    case InstrKind::Collective: {
      const CollectiveInstr &c = in.collective;
      what += std::string(" ") + collectiveKindName(c.kind);
      if (c.reduction)
        what += std::string(" ") + reductionKindName(*c.reduction);
      operands = c.input.str() + " -> " + c.output.str() + " on " +
                 commName(c.communicator);
      if (c.root)
        operands += " root " + std::to_string(*c.root);
      break;
    }
    case InstrKind::Wait:
      operands = join(in.wait.events,
                      [](int32_t e) { return "#" + std::to_string(e); });
      break;
    case InstrKind::FeedBuffer:
      operands =
          "input " + std::to_string(in.io.index) + " -> " + in.io.buffer.str();
      if (!in.io.offsets.empty())
        operands += " at " + ints(in.io.offsets);
      break;
    case InstrKind::FetchBuffer:
      operands =
          in.io.buffer.str() + " -> output " + std::to_string(in.io.index);
      if (!in.io.offsets.empty())
        operands += " at " + ints(in.io.offsets);
      if (in.io.keepOnly)
        operands += " keep_only";
      break;
    case InstrKind::StateBuffer:
      operands = "@" + in.stateBuffer.actorMesh + "::@" + in.stateBuffer.state +
                 " at " + in.stateBuffer.buffer.str();
      if (!in.stateBuffer.offsets.empty())
        operands += " shard " + ints(in.stateBuffer.offsets);
      break;
    case InstrKind::PrintBuffers: {
      std::string format = in.print.format;
      if (format.size() > 40)
        format = format.substr(0, 37) + "...";
      operands = "\"" + format + "\"";
      for (const Buffer &b : in.print.buffers)
        operands += " " + b.str();
      break;
    }
    }
    std::optional<int64_t> stream = in.stream(), group = in.group();
    return {std::to_string(index),
            what,
            operands,
            stream ? std::to_string(*stream) : "-",
            group ? std::to_string(*group) : "-",
            location(in.loc)};
  }

  void stepPlan(const StepPlan &step) {
    os << "\nplan @" << step.symbol << " on @" << step.mesh << " "
       << types(step.inputs) << " -> " << types(step.outputs) << "  "
       << location(step.loc) << "\n";
    // A class of ranks running one stream (RankClasses.h) prints the
    // stream once with the rules that give each member its rank-dependent
    // fields, the members the rules give entirely, and for the others the
    // instructions where they differ from the rules; --rank R prints one
    // rank in full.
    std::vector<int32_t> shares = detail::findRankClasses(step);
    detail::RankGeometry geo(plan, step.mesh);
    std::vector<std::string> dims;
    if (int32_t m = plan.findMesh(step.mesh); m >= 0)
      for (const MeshDim &d : plan.meshes[m].dims)
        dims.push_back(d.name);
    std::vector<Row> header{
        {"#", "instruction", "operands", "stream", "group", "location"}};
    // Ranks running a stream of their own that no other rank shares (rank
    // 0 returning the loss): a class's list may be a box but for them.
    std::vector<int64_t> alone;
    {
      std::vector<bool> shared(step.programs.size(), false);
      for (int32_t h : shares)
        if (h >= 0)
          shared[h] = true;
      for (size_t k = 0; k < step.programs.size(); ++k)
        if (shares[k] < 0 && !shared[k])
          alone.push_back(step.programs[k].rank);
      std::sort(alone.begin(), alone.end());
    }
    for (size_t k = 0; k < step.programs.size(); ++k) {
      const RankProgram &p = step.programs[k];
      if (options.rank ? p.rank != *options.rank : shares[k] >= 0)
        continue;
      os << "  rank " << p.rank << ": arena " << p.arenaBytes << " B, peak "
         << p.peakBytes << " B, critical path " << number(p.criticalPathUs)
         << " us, " << p.instructions.size() << " instructions\n";
      std::vector<Row> rows = header;
      for (size_t i = 0; i < p.instructions.size(); ++i)
        rows.push_back(instruction(p.instructions[i], i));
      printTable(os, rows, "    ");
      if (options.rank)
        continue;
      std::vector<detail::RankRule> rules =
          detail::findRankRules(step, shares, static_cast<int32_t>(k), geo);
      std::vector<int64_t> plain;
      std::vector<
          std::pair<const RankProgram *, std::vector<detail::RankPatch>>>
          patched;
      for (size_t j = 0; j < step.programs.size(); ++j) {
        if (shares[j] != static_cast<int32_t>(k))
          continue;
        const RankProgram &q = step.programs[j];
        std::vector<detail::RankPatch> patches =
            detail::patchesAfterRules(p, rules, q, geo);
        if (patches.empty() && q.arenaBytes == p.arenaBytes &&
            q.peakBytes == p.peakBytes)
          plain.push_back(q.rank);
        else
          patched.push_back({&q, std::move(patches)});
      }
      if (plain.empty() && patched.empty())
        continue;
      if (!rules.empty()) {
        os << "    rules (rank r of the class; Δ: r's mesh coordinate minus "
              "rank "
           << p.rank << "'s):\n";
        for (const detail::RankRule &rule : rules)
          os << "      #" << rule.instruction << " "
             << ruleText(rule, p.instructions, dims, p.rank) << "\n";
      }
      if (!plain.empty()) {
        plain.push_back(p.rank);
        std::sort(plain.begin(), plain.end());
        os << "    ranks running this stream"
           << (rules.empty() ? "" : " by the rules") << ": "
           << rankList(plain, alone) << "\n";
      }
      for (const auto &[q, patches] : patched) {
        os << "    rank " << q->rank << ": arena " << q->arenaBytes
           << " B, peak " << q->peakBytes << " B, rank " << p.rank
           << "'s stream";
        if (patches.empty()) {
          os << "\n";
          continue;
        }
        os << (rules.empty() ? "" : " and rules") << ", differing in\n";
        std::vector<Row> diff = header;
        for (const detail::RankPatch &patch : patches)
          diff.push_back(instruction(q->instructions[patch.instruction],
                                     patch.instruction));
        printTable(os, diff, "      ");
      }
    }
  }

  /// What a rule gives rank r ("peer = r + 8 (mod the mesh)", "on the
  /// communicator of @c's family holding r", "offsets [0, 0] + [0,
  /// 8Δgpus]").
  std::string ruleText(const detail::RankRule &rule,
                       const std::vector<Instruction> &stream,
                       const std::vector<std::string> &dims,
                       int64_t holder) const {
    std::vector<std::string> parts;
    const Instruction *in =
        rule.instruction >= 0 &&
                static_cast<size_t>(rule.instruction) < stream.size()
            ? &stream[rule.instruction]
            : nullptr;
    std::string kind = in ? instrKindName(in->kind) : "?";
    if (rule.peerShift && in) {
      int64_t delta = in->p2p.peer - holder;
      parts.push_back("peer = r" +
                      (delta == 0  ? std::string()
                       : delta > 0 ? " + " + std::to_string(delta)
                                   : " - " + std::to_string(-delta)) +
                      " (around the mesh)");
    }
    if (rule.communicatorOfRank && in) {
      int32_t c = in->kind == InstrKind::Collective
                      ? in->collective.communicator
                      : in->p2p.communicator;
      parts.push_back("on the communicator of " + commName(c) +
                      "'s family holding r");
    }
    if (!rule.offsetSlopes.empty() && in) {
      const std::vector<int64_t> *base = in->kind == InstrKind::StateBuffer
                                             ? &in->stateBuffer.offsets
                                             : &in->io.offsets;
      size_t nd = dims.size();
      std::vector<std::string> terms;
      for (size_t d = 0; d < base->size(); ++d) {
        std::string t;
        for (size_t k = 0; k < nd && d * nd + k < rule.offsetSlopes.size(); ++k)
          if (int64_t slope = rule.offsetSlopes[d * nd + k])
            t += (t.empty() ? "" : " + ") +
                 (slope == 1 ? std::string() : std::to_string(slope)) + "Δ" +
                 dims[k];
        terms.push_back(t.empty() ? "0" : t);
      }
      parts.push_back("offsets " + ints(*base) + " + [" +
                      join(terms, [](const std::string &x) { return x; }) +
                      "]");
    }
    return kind + ": " +
           join(parts, [](const std::string &x) { return x; }, "; ");
  }

  std::string value(const ValueRef &v) const {
    switch (v.kind) {
    case ValueKind::Argument:
      return "arg " + std::to_string(v.index);
    case ValueKind::Fetched:
      return "step " + std::to_string(v.index);
    case ValueKind::Constant:
      return "constant " + number(v.constant);
    }
    return "?";
  }

  void controller(const ControllerProgram &c) {
    os << "\ncontroller @" << c.name << " " << types(c.inputs) << " -> "
       << types(c.outputs) << "  " << location(c.loc) << "\n";
    std::vector<Row> rows{{"#", "step", "operands", "location"}};
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const ControlStep &s = c.steps[i];
      std::string operands;
      switch (s.kind) {
      case ControlStepKind::ControlMsg:
        operands = "to @" + s.mesh + " invoke [" +
                   join(s.plans, [&](int32_t p) { return planName(p); }) + "]";
        if (!s.scalars.empty())
          operands += " args(" +
                      join(s.scalars,
                           [&](const ScalarArg &a) {
                             return value(a.value) + " -> " + planName(a.plan) +
                                    " input " + std::to_string(a.input);
                           }) +
                      ")";
        break;
      case ControlStepKind::FeedInput:
        operands = value(s.value) + " -> " + planName(s.plan) + " input " +
                   std::to_string(s.index) + " : " + s.type.str();
        break;
      case ControlStepKind::FetchOutput:
        operands = planName(s.plan) + " output " + std::to_string(s.index) +
                   " : " + s.type.str();
        break;
      case ControlStepKind::Await:
        operands = join(s.tokens,
                        [](int32_t t) { return "step " + std::to_string(t); });
        break;
      }
      rows.push_back({std::to_string(i), controlStepKindName(s.kind), operands,
                      location(s.loc)});
    }
    rows.push_back(
        {"", "return",
         join(c.results, [&](const ValueRef &v) { return value(v); }), ""});
    printTable(os, rows, "  ");
  }

  const ExecutionPlan &plan;
  std::ostream &os;
  const PrintOptions &options;
};

} // namespace

void printPlan(const ExecutionPlan &plan, std::ostream &os,
               const PrintOptions &options) {
  Printer(plan, os, options).print();
}

std::string planToString(const ExecutionPlan &plan,
                         const PrintOptions &options) {
  std::ostringstream os;
  printPlan(plan, os, options);
  return os.str();
}

} // namespace monarch::plan
