//===- RankClasses.cpp - Ranks that run the same instruction stream -------===//
//
// See RankClasses.h.
//
//===----------------------------------------------------------------------===//

#include "RankClasses.h"

#include "monarch/Support/RankSearch.h"

#include <algorithm>
#include <climits>
#include <map>

#include <functional>
#include <unordered_map>

namespace monarch::plan::detail {
namespace {

/// Whether `a` and `b` are equal but for the fields a rank's rules and
/// patches give it (peers, communicators, a collective's root, offsets and
/// the kernel), compared field by field: the classes of a 4,096-rank plan
/// compare some 80,000 instruction pairs, and two copies each (with those
/// fields cleared) were most of the time.
bool sameButRankFields(const Instruction &a, const Instruction &b) {
  if (a.kind != b.kind || !(a.loc == b.loc))
    return false;
  switch (a.kind) {
  case InstrKind::Launch:
    return a.launch.ins == b.launch.ins && a.launch.outs == b.launch.outs &&
           a.launch.stream == b.launch.stream;
  case InstrKind::Send:
  case InstrKind::Recv:
    return a.p2p.buffer == b.p2p.buffer && a.p2p.stream == b.p2p.stream &&
           a.p2p.group == b.p2p.group;
  case InstrKind::Collective:
    return a.collective.kind == b.collective.kind &&
           a.collective.reduction == b.collective.reduction &&
           a.collective.input == b.collective.input &&
           a.collective.output == b.collective.output &&
           a.collective.stream == b.collective.stream &&
           a.collective.group == b.collective.group;
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer:
    return a.io.index == b.io.index && a.io.buffer == b.io.buffer &&
           a.io.keepOnly == b.io.keepOnly;
  case InstrKind::StateBuffer:
    return a.stateBuffer.actorMesh == b.stateBuffer.actorMesh &&
           a.stateBuffer.state == b.stateBuffer.state &&
           a.stateBuffer.buffer == b.stateBuffer.buffer;
  default:
    return a == b;
  }
}

/// A hash of the parts of a stream every rank of a class shares (a cheap
/// filter before the exact comparison).
uint64_t classHash(const std::vector<Instruction> &instructions) {
  uint64_t h = instructions.size();
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  for (const Instruction &in : instructions) {
    mix(static_cast<uint64_t>(in.kind));
    mix(static_cast<uint64_t>(in.loc.line) << 20 ^
        static_cast<uint64_t>(in.loc.col));
    switch (in.kind) {
    case InstrKind::Launch:
      for (const Buffer &b : in.launch.ins)
        mix(static_cast<uint64_t>(b.offset));
      for (const Buffer &b : in.launch.outs)
        mix(static_cast<uint64_t>(b.offset));
      break;
    case InstrKind::Send:
    case InstrKind::Recv:
      mix(static_cast<uint64_t>(in.p2p.buffer.offset));
      break;
    case InstrKind::Collective:
      mix(static_cast<uint64_t>(in.collective.kind));
      mix(static_cast<uint64_t>(in.collective.input.offset));
      mix(static_cast<uint64_t>(in.collective.output.offset));
      break;
    case InstrKind::FeedBuffer:
    case InstrKind::FetchBuffer:
      mix(static_cast<uint64_t>(in.io.index));
      mix(static_cast<uint64_t>(in.io.buffer.offset));
      break;
    default:
      break;
    }
  }
  return h;
}

bool sameClass(const RankProgram &a, const RankProgram &b) {
  if (a.arenaBytes != b.arenaBytes ||
      a.instructions.size() != b.instructions.size())
    return false;
  for (size_t i = 0; i < a.instructions.size(); ++i)
    if (!sameButRankFields(a.instructions[i], b.instructions[i]))
      return false;
  return true;
}

} // namespace

std::vector<int32_t> findRankClasses(const StepPlan &step) {
  std::vector<int32_t> shares(step.programs.size(), -1);
  std::unordered_map<uint64_t, std::vector<int32_t>> firsts;
  for (size_t i = 0; i < step.programs.size(); ++i) {
    const RankProgram &program = step.programs[i];
    std::vector<int32_t> &candidates = firsts[classHash(program.instructions)];
    for (int32_t j : candidates)
      if (sameClass(step.programs[j], program)) {
        shares[i] = j;
        break;
      }
    if (shares[i] < 0)
      candidates.push_back(static_cast<int32_t>(i));
  }
  return shares;
}

namespace {
/// The patch that makes `a` (instruction `i` of a shared stream) `b`, when
/// any field a patch holds differs.
std::optional<RankPatch> patchOf(const Instruction &a, const Instruction &b,
                                 size_t i) {
  RankPatch patch;
  patch.instruction = static_cast<int32_t>(i);
  bool any = false;
  switch (b.kind) {
  case InstrKind::Send:
  case InstrKind::Recv:
    if (a.p2p.peer != b.p2p.peer)
      patch.peer = b.p2p.peer, any = true;
    if (a.p2p.communicator != b.p2p.communicator)
      patch.communicator = b.p2p.communicator, any = true;
    break;
  case InstrKind::Collective:
    if (a.collective.communicator != b.collective.communicator)
      patch.communicator = b.collective.communicator, any = true;
    if (a.collective.root != b.collective.root && b.collective.root)
      patch.root = *b.collective.root, any = true;
    break;
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer:
    if (a.io.offsets != b.io.offsets)
      patch.offsets = b.io.offsets, any = true;
    break;
  case InstrKind::StateBuffer:
    if (a.stateBuffer.offsets != b.stateBuffer.offsets)
      patch.offsets = b.stateBuffer.offsets, any = true;
    break;
  case InstrKind::Launch:
    if (a.launch.kernel != b.launch.kernel)
      patch.kernel = b.launch.kernel, any = true;
    break;
  default:
    break;
  }
  if (any)
    return patch;
  return std::nullopt;
}
} // namespace

std::vector<RankPatch> rankPatches(const std::vector<Instruction> &shared,
                                   const std::vector<Instruction> &program) {
  std::vector<RankPatch> patches;
  for (size_t i = 0; i < shared.size() && i < program.size(); ++i)
    if (std::optional<RankPatch> patch = patchOf(shared[i], program[i], i))
      patches.push_back(std::move(*patch));
  return patches;
}

std::optional<std::string> outOfStream(const char *what, int32_t index,
                                       size_t size) {
  if (index >= 0 && static_cast<size_t>(index) < size)
    return std::nullopt;
  return std::string(what) + " of instruction " + std::to_string(index) +
         ": no such instruction (the shared stream has " +
         std::to_string(size) + ")";
}

std::optional<std::string>
applyRankPatches(std::vector<Instruction> &instructions,
                 const std::vector<RankPatch> &patches) {
  for (const RankPatch &patch : patches) {
    std::string where =
        "patch of instruction " + std::to_string(patch.instruction) + ": ";
    if (auto bad = outOfStream("patch", patch.instruction, instructions.size()))
      return bad;
    Instruction &in = instructions[patch.instruction];
    bool p2p = in.kind == InstrKind::Send || in.kind == InstrKind::Recv;
    bool collective = in.kind == InstrKind::Collective;
    bool io =
        in.kind == InstrKind::FeedBuffer || in.kind == InstrKind::FetchBuffer;
    bool state = in.kind == InstrKind::StateBuffer;
    std::string kind = instrKindName(in.kind);
    if (patch.peer && !p2p)
      return where + "a peer for a " + kind;
    if (patch.communicator && !p2p && !collective)
      return where + "a communicator for a " + kind;
    if (patch.root && !collective)
      return where + "a root for a " + kind;
    if (patch.offsets && !io && !state)
      return where + "offsets for a " + kind;
    if (patch.kernel && in.kind != InstrKind::Launch)
      return where + "a kernel for a " + kind;
    if (patch.peer)
      in.p2p.peer = *patch.peer;
    if (patch.communicator)
      (p2p ? in.p2p.communicator : in.collective.communicator) =
          *patch.communicator;
    if (patch.root)
      in.collective.root = *patch.root;
    if (patch.offsets)
      (state ? in.stateBuffer.offsets : in.io.offsets) = *patch.offsets;
    if (patch.kernel)
      in.launch.kernel = *patch.kernel;
  }
  return std::nullopt;
}

} // namespace monarch::plan::detail

namespace monarch::plan::detail {

RankGeometry::RankGeometry(const ExecutionPlan &plan, const std::string &mesh)
    : plan(plan), familyOf(plan.communicators.size(), -2),
      ascending(plan.communicators.size(), -1) {
  int32_t m = plan.findMesh(mesh);
  if (m >= 0)
    for (const MeshDim &d : plan.meshes[m].dims)
      sizes.push_back(d.size);
}

void RankGeometry::indexFamily(int32_t c) const {
  const Communicator &first = plan.communicators[c];
  if (first.ranks.empty()) {
    familyOf[c] = -1;
    return;
  }
  int32_t index = static_cast<int32_t>(families.size());
  Family &family = families.emplace_back();
  // Every communicator that is a translate of `first` (being a translate
  // is an equivalence: one indexed already belongs to another family).
  for (size_t i = 0; i < plan.communicators.size(); ++i) {
    const Communicator &other = plan.communicators[i];
    if (familyOf[i] != -2 || other.ranks.size() != first.ranks.size() ||
        other.mesh != first.mesh)
      continue;
    bool translate = true;
    for (size_t k = 1; k < other.ranks.size() && translate; ++k)
      translate =
          other.ranks[k] - other.ranks[0] == first.ranks[k] - first.ranks[0];
    if (!translate)
      continue;
    familyOf[i] = index;
    family.members.push_back(static_cast<int32_t>(i));
  }
  if (family.members.size() > first.ranks.size())
    for (int32_t i : family.members)
      family.byFirst.insert({plan.communicators[i].ranks.front(), i});
}

bool RankGeometry::holds(int32_t c, int64_t rank) const {
  const std::vector<int64_t> &ranks = plan.communicators[c].ranks;
  if (ascending[c] < 0)
    ascending[c] = std::is_sorted(ranks.begin(), ranks.end());
  return ascending[c]
             ? std::binary_search(ranks.begin(), ranks.end(), rank)
             : std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

std::vector<int64_t> RankGeometry::coords(int64_t rank) const {
  std::vector<int64_t> c(sizes.size(), 0);
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] <= 0)
      continue;
    c[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return c;
}

int64_t RankGeometry::shiftRank(int64_t rank, int64_t delta) const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n = s > 0 && n <= INT64_MAX / s ? n * s : 0;
  if (n <= 0)
    return rank + delta;
  int64_t r = (rank % n + delta % n) % n;
  return r < 0 ? r + n : r;
}

int32_t RankGeometry::ofRank(int32_t c, int64_t rank) const {
  if (c < 0 || static_cast<size_t>(c) >= familyOf.size())
    return -1;
  if (familyOf[c] == -2)
    indexFamily(c);
  if (familyOf[c] < 0)
    return -1;
  // Ask each communicator of the family, or, where the family has more
  // communicators than each has members, each translate that could hold
  // `rank` (the communicator starting at rank minus a member's offset).
  const Family &family = families[familyOf[c]];
  const std::vector<int64_t> &shape = plan.communicators[c].ranks;
  int32_t found = -1;
  auto hit = [&found](int32_t i) {
    if (found >= 0 && found != i)
      return false; // two hold it
    found = i;
    return true;
  };
  if (family.byFirst.empty()) {
    for (int32_t i : family.members)
      if (holds(i, rank) && !hit(i))
        return -1;
    return found;
  }
  for (int64_t member : shape) {
    int64_t start;
    if (__builtin_sub_overflow(member, shape.front(), &start) ||
        __builtin_sub_overflow(rank, start, &start))
      continue;
    auto [from, to] = family.byFirst.equal_range(start);
    for (auto it = from; it != to; ++it)
      if (!hit(it->second))
        return -1;
  }
  return found;
}

namespace {

bool anyNonZero(const std::vector<int64_t> &v) {
  for (int64_t x : v)
    if (x != 0)
      return true;
  return false;
}

/// The offsets a rule-bearing instruction carries (a feed's, a fetch's or
/// split state's), or null.
std::vector<int64_t> *offsetsOf(Instruction &in) {
  if (in.kind == InstrKind::FeedBuffer || in.kind == InstrKind::FetchBuffer)
    return &in.io.offsets;
  if (in.kind == InstrKind::StateBuffer)
    return &in.stateBuffer.offsets;
  return nullptr;
}

int32_t *communicatorOf(Instruction &in) {
  if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv)
    return &in.p2p.communicator;
  if (in.kind == InstrKind::Collective)
    return &in.collective.communicator;
  return nullptr;
}

// Read-only views (the rules are fitted on the members' streams without
// copying their instructions: 4,096 ranks x 20 instructions).
const std::vector<int64_t> *offsetsOf(const Instruction &in) {
  return offsetsOf(const_cast<Instruction &>(in));
}
const int32_t *communicatorOf(const Instruction &in) {
  return communicatorOf(const_cast<Instruction &>(in));
}

} // namespace

std::vector<RankRule> findRankRules(const StepPlan &step,
                                    const std::vector<int32_t> &shares,
                                    int32_t holder, const RankGeometry &geo) {
  std::vector<size_t> members;
  for (size_t i = 0; i < shares.size(); ++i)
    if (shares[i] == holder)
      members.push_back(i);
  if (members.empty())
    return {};
  const RankProgram &rep = step.programs[holder];
  size_t nd = geo.numDims();
  std::vector<int64_t> repCoords = geo.coords(rep.rank);
  std::vector<std::vector<int64_t>> coords;
  for (size_t m : members)
    coords.push_back(geo.coords(step.programs[m].rank));
  // Per mesh dimension k: a member differing from the holder only there.
  std::vector<int64_t> along(nd, -1);
  for (size_t i = 0; i < members.size(); ++i) {
    int64_t only = -1, count = 0;
    for (size_t k = 0; k < nd; ++k)
      if (coords[i][k] != repCoords[k])
        only = static_cast<int64_t>(k), ++count;
    if (count == 1 && along[only] < 0)
      along[only] = static_cast<int64_t>(i);
  }
  std::vector<RankRule> rules;
  for (size_t i = 0; i < rep.instructions.size(); ++i) {
    const Instruction &in = rep.instructions[i];
    RankRule rule;
    rule.instruction = static_cast<int32_t>(i);
    // A rule is kept where it gives most members their value; the others
    // keep a patch (patches apply after the rules: a ring's wrap).
    bool peerDiffers = false, commDiffers = false, offsetsDiffer = false;
    size_t peerShifts = 0, commShifts = 0;
    for (size_t j = 0; j < members.size(); ++j) {
      const Instruction &other = step.programs[members[j]].instructions[i];
      int64_t delta = step.programs[members[j]].rank - rep.rank;
      if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv) {
        peerDiffers |= other.p2p.peer != in.p2p.peer;
        peerShifts += other.p2p.peer == geo.shiftRank(in.p2p.peer, delta);
      }
      if (const int32_t *c = communicatorOf(in)) {
        int32_t theirs = *communicatorOf(other);
        commDiffers |= theirs != *c;
        commShifts += theirs == geo.ofRank(*c, step.programs[members[j]].rank);
      }
      if (const std::vector<int64_t> *o = offsetsOf(in))
        offsetsDiffer |= *offsetsOf(other) != *o;
    }
    size_t most = members.size() / 2 + 1;
    rule.peerShift = peerDiffers && peerShifts >= most;
    rule.communicatorOfRank = commDiffers && commShifts >= most;
    if (const std::vector<int64_t> *o = offsetsOf(in); o && offsetsDiffer) {
      // Slopes from the members differing in one coordinate, then checked
      // on every member.
      size_t n = o->size();
      std::vector<int64_t> slopes(n * nd, 0);
      bool fits = true;
      for (size_t k = 0; k < nd && fits; ++k) {
        if (along[k] < 0)
          continue;
        const Instruction &other =
            step.programs[members[along[k]]].instructions[i];
        const std::vector<int64_t> &theirs = *offsetsOf(other);
        int64_t dc = coords[along[k]][k] - repCoords[k];
        for (size_t d = 0; d < n && fits; ++d) {
          if (theirs.size() != n || (theirs[d] - (*o)[d]) % dc != 0)
            fits = false;
          else
            slopes[d * nd + k] = (theirs[d] - (*o)[d]) / dc;
        }
      }
      size_t matches = 0;
      for (size_t j = 0; j < members.size() && fits; ++j) {
        const std::vector<int64_t> &theirs =
            *offsetsOf(step.programs[members[j]].instructions[i]);
        bool same = theirs.size() == n;
        for (size_t d = 0; d < n && same; ++d) {
          int64_t want = (*o)[d];
          for (size_t k = 0; k < nd; ++k)
            want += slopes[d * nd + k] * (coords[j][k] - repCoords[k]);
          same = want == theirs[d];
        }
        matches += same;
      }
      if (fits && matches >= members.size() / 2 + 1 && anyNonZero(slopes))
        rule.offsetSlopes = std::move(slopes);
    }
    if (rule.peerShift || rule.communicatorOfRank || !rule.offsetSlopes.empty())
      rules.push_back(std::move(rule));
  }
  return rules;
}

namespace {
/// `rule` applied to `in`, the instruction it names, for a rank `delta`
/// past the holder, at coordinates `to` (the holder's `from`).
std::optional<std::string> applyRankRule(Instruction &in, const RankRule &rule,
                                         int64_t delta, int64_t rank,
                                         const std::vector<int64_t> &from,
                                         const std::vector<int64_t> &to,
                                         const RankGeometry &geo) {
  auto where = [&] {
    return "rule of instruction " + std::to_string(rule.instruction) + ": ";
  };
  auto kind = [&] { return std::string(instrKindName(in.kind)); };
  size_t nd = geo.numDims();
  if (rule.peerShift) {
    if (in.kind != InstrKind::Send && in.kind != InstrKind::Recv)
      return where() + "a peer for a " + kind();
    in.p2p.peer = geo.shiftRank(in.p2p.peer, delta);
  }
  if (rule.communicatorOfRank) {
    int32_t *c = communicatorOf(in);
    if (!c)
      return where() + "a communicator for a " + kind();
    // Where no communicator of the family holds the rank alone, the
    // holder's stays and a patch gives the rank's (validatePlan checks
    // the rank is a member of whichever it ends up with).
    if (int32_t mine = geo.ofRank(*c, rank); mine >= 0)
      *c = mine;
  }
  if (!rule.offsetSlopes.empty()) {
    std::vector<int64_t> *o = offsetsOf(in);
    if (!o || rule.offsetSlopes.size() != o->size() * nd)
      return where() + "offset slopes that do not fit a " + kind();
    for (size_t d = 0; d < o->size(); ++d)
      for (size_t k = 0; k < nd; ++k) {
        int64_t step = 0;
        if (__builtin_mul_overflow(rule.offsetSlopes[d * nd + k],
                                   to[k] - from[k], &step) ||
            __builtin_add_overflow((*o)[d], step, &(*o)[d]))
          return where() + "offsets overflow";
      }
  }
  return std::nullopt;
}
} // namespace

std::optional<std::string>
applyRankRules(std::vector<Instruction> &instructions,
               const std::vector<RankRule> &rules, int64_t fromRank,
               int64_t rank, const RankGeometry &geo) {
  int64_t delta = rank - fromRank;
  std::vector<int64_t> from = geo.coords(fromRank), to = geo.coords(rank);
  for (const RankRule &rule : rules) {
    if (auto bad = outOfStream("rule", rule.instruction, instructions.size()))
      return bad;
    if (auto bad = applyRankRule(instructions[rule.instruction], rule, delta,
                                 rank, from, to, geo))
      return bad;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Rank boxes (format 7)
//===----------------------------------------------------------------------===//

std::optional<RankBox> rankBox(const std::vector<int64_t> &ranks) {
  if (ranks.empty())
    return std::nullopt;
  // Innermost dimension first: the run of equal steps that starts the list
  // is one row; the list must be whole rows, each with that step; their
  // first elements are the list of the next dimension out.
  RankBox box;
  std::vector<int64_t> level = ranks;
  while (level.size() > 1) {
    if (box.sizes.size() == 16)
      return std::nullopt;
    int64_t stride;
    if (__builtin_sub_overflow(level[1], level[0], &stride))
      return std::nullopt;
    auto steps = [&](size_t i) {
      int64_t d;
      return !__builtin_sub_overflow(level[i], level[i - 1], &d) && d == stride;
    };
    size_t row = 2;
    while (row < level.size() && steps(row))
      ++row;
    if (level.size() % row)
      return std::nullopt;
    std::vector<int64_t> next;
    for (size_t start = 0; start < level.size(); start += row) {
      for (size_t i = start + 1; i < start + row; ++i)
        if (!steps(i))
          return std::nullopt;
      next.push_back(level[start]);
    }
    box.sizes.push_back(static_cast<int64_t>(row));
    box.strides.push_back(stride);
    level = std::move(next);
  }
  box.offset = level[0];
  std::reverse(box.sizes.begin(), box.sizes.end());
  std::reverse(box.strides.begin(), box.strides.end());
  return box;
}

namespace {
/// `box`'s rank count spent from `budget`, or what does not fit.
std::optional<std::string> spendBox(const RankBox &box, int64_t &budget,
                                    int64_t &count) {
  count = 1;
  for (int64_t size : box.sizes)
    if (size < 1 || size > budget || count > budget / size)
      return "a rank box of sizes that are not positive or hold more ranks "
             "than the plan may (" +
             std::to_string(budget) + " left)";
    else
      count *= size;
  budget -= count;
  return std::nullopt;
}

/// Whether the strides of `box` nest (each positive and past the span of
/// the dimensions inside it, as every box of a mesh's ranks is), so that
/// each rank has one mixed-radix digit per dimension, and its last rank
/// offset + `span` does not overflow.
bool nestedBox(const RankBox &box, int64_t &span) {
  bool nested =
      box.sizes.size() == box.strides.size() && box.sizes.size() <= 16;
  span = 0;
  for (size_t d = box.sizes.size(); nested && d-- > 0;) {
    int64_t extent;
    nested =
        box.sizes[d] >= 1 && box.strides[d] > span &&
        !__builtin_mul_overflow(box.sizes[d] - 1, box.strides[d], &extent) &&
        !__builtin_add_overflow(span, extent, &span);
  }
  int64_t last;
  return nested && !__builtin_add_overflow(box.offset, span, &last);
}
} // namespace

std::optional<std::string> rankBoxBounds(const RankBox &box, int64_t &budget,
                                         int64_t &lo, int64_t &hi,
                                         int64_t &count) {
  int64_t span;
  if (!nestedBox(box, span)) {
    // Other boxes (and those whose ranks overflow, which the expansion
    // refuses) are expanded.
    std::vector<int64_t> ranks;
    if (auto bad = expandRankBox(box, budget, ranks))
      return bad;
    auto [min, max] = std::minmax_element(ranks.begin(), ranks.end());
    lo = *min;
    hi = *max;
    count = static_cast<int64_t>(ranks.size());
    return std::nullopt;
  }
  if (auto bad = spendBox(box, budget, count))
    return bad;
  lo = box.offset;
  hi = box.offset + span;
  return std::nullopt;
}

std::optional<std::string> rankBoxHolds(const RankBox &box, int64_t rank,
                                        int64_t &budget, bool &holds) {
  holds = false;
  // A nested box gives each rank one mixed-radix digit per dimension;
  // other boxes, and those whose ranks overflow (which the expansion
  // refuses), are expanded.
  int64_t span;
  if (!nestedBox(box, span)) {
    std::vector<int64_t> ranks;
    if (auto bad = expandRankBox(box, budget, ranks))
      return bad;
    holds = std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
    return std::nullopt;
  }
  int64_t count;
  if (auto bad = spendBox(box, budget, count))
    return bad;
  int64_t rest;
  if (__builtin_sub_overflow(rank, box.offset, &rest) || rest < 0)
    return std::nullopt;
  for (size_t d = 0; d < box.sizes.size(); ++d) {
    int64_t digit = rest / box.strides[d];
    if (digit >= box.sizes[d])
      return std::nullopt;
    rest -= digit * box.strides[d];
  }
  holds = rest == 0;
  return std::nullopt;
}

std::optional<std::string> expandRankBox(const RankBox &box, int64_t &budget,
                                         std::vector<int64_t> &out) {
  if (box.sizes.size() != box.strides.size() || box.sizes.size() > 16)
    return "a rank box of " + std::to_string(box.sizes.size()) + " sizes and " +
           std::to_string(box.strides.size()) + " strides";
  int64_t count;
  if (auto bad = spendBox(box, budget, count))
    return bad;
  if (box.sizes.empty()) {
    out.push_back(box.offset);
    return std::nullopt;
  }
  // The innermost dimension as runs: one start per row, then its steps
  // (the row's last rank checked for overflow, so none between overflows).
  size_t outer = box.sizes.size() - 1;
  int64_t row = box.sizes.back(), step = box.strides.back(), span;
  if (__builtin_mul_overflow(row - 1, step, &span))
    return std::string("a rank box whose ranks overflow");
  std::vector<int64_t> index(outer, 0);
  out.reserve(out.size() + static_cast<size_t>(count));
  for (int64_t n = 0; n < count / row; ++n) {
    int64_t start = box.offset, last;
    for (size_t d = 0; d < outer; ++d) {
      int64_t term;
      if (__builtin_mul_overflow(index[d], box.strides[d], &term) ||
          __builtin_add_overflow(start, term, &start))
        return std::string("a rank box whose ranks overflow");
    }
    if (__builtin_add_overflow(start, span, &last))
      return std::string("a rank box whose ranks overflow");
    for (int64_t i = 0; i < row; ++i)
      out.push_back(start + i * step);
    for (size_t d = outer; d-- > 0;) {
      if (++index[d] < box.sizes[d])
        break;
      index[d] = 0;
    }
  }
  return std::nullopt;
}

std::optional<int64_t> shiftedCommunicator(const Communicator &previous,
                                           const Communicator &c) {
  if (c.ranks.empty() || c.ranks.size() != previous.ranks.size() ||
      c.mesh != previous.mesh || c.backend != previous.backend ||
      c.name.empty() || c.name != nextNumberedName(previous.name))
    return std::nullopt;
  int64_t shift;
  if (__builtin_sub_overflow(c.ranks[0], previous.ranks[0], &shift))
    return std::nullopt;
  for (size_t k = 1; k < c.ranks.size(); ++k) {
    int64_t d;
    if (__builtin_sub_overflow(c.ranks[k], previous.ranks[k], &d) || d != shift)
      return std::nullopt;
  }
  return shift;
}

std::vector<RankPatch> patchesAfterRules(const RankProgram &holder,
                                         const std::vector<RankRule> &rules,
                                         const RankProgram &member,
                                         const RankGeometry &geo) {
  // Only the instructions a rule rewrites are copied (copying the whole
  // stream per member was a tenth of a 4,096-rank compile); the others are
  // the holder's.
  int64_t delta = member.rank - holder.rank;
  std::vector<int64_t> from = geo.coords(holder.rank),
                       to = geo.coords(member.rank);
  // Of an instruction a rule rewrites, only the fields a rule rewrites and
  // a patch holds (applyRankRule, patchOf) are copied: a whole instruction
  // (its buffers, strings and location) per rule and member was most of
  // this function at 4,096 ranks.
  auto patchable = [](const Instruction &in) {
    Instruction out;
    out.kind = in.kind;
    out.p2p.peer = in.p2p.peer;
    out.p2p.communicator = in.p2p.communicator;
    out.collective.communicator = in.collective.communicator;
    out.collective.root = in.collective.root;
    out.io.offsets = in.io.offsets;
    out.stateBuffer.offsets = in.stateBuffer.offsets;
    out.launch.kernel = in.launch.kernel;
    return out;
  };
  std::map<size_t, Instruction> predicted;
  for (const RankRule &rule : rules) {
    if (rule.instruction < 0 ||
        static_cast<size_t>(rule.instruction) >= holder.instructions.size())
      break;
    size_t i = static_cast<size_t>(rule.instruction);
    auto it = predicted.find(i);
    if (it == predicted.end())
      it = predicted.emplace(i, patchable(holder.instructions[i])).first;
    // The rules were fitted on this class: they apply (as applyRankRules,
    // the first that does not ends the rewriting).
    if (applyRankRule(it->second, rule, delta, member.rank, from, to, geo))
      break;
  }
  std::vector<RankPatch> patches;
  for (size_t i = 0;
       i < holder.instructions.size() && i < member.instructions.size(); ++i) {
    auto it = predicted.find(i);
    const Instruction &a =
        it == predicted.end() ? holder.instructions[i] : it->second;
    if (std::optional<RankPatch> patch = patchOf(a, member.instructions[i], i))
      patches.push_back(std::move(*patch));
  }
  return patches;
}

int64_t meshRankOf(const ExecutionPlan &plan, const std::string &mesh,
                   int64_t worldRank) {
  int32_t m = plan.findMesh(mesh);
  if (m < 0)
    return -1;
  const std::vector<int64_t> &roots = plan.meshes[m].rootRanks;
  if (roots.empty())
    return worldRank;
  // (A progression answers without a scan: RankSearch.h.)
  return positionOfRank(roots, worldRank);
}

std::string nextNumberedName(const std::string &name) {
  return numberedName(name, 1);
}

std::string numberedName(const std::string &name, int64_t k) {
  if (k <= 0)
    return k == 0 ? name : "";
  size_t end = name.size(), start = end;
  while (start > 0 && name[start - 1] >= '0' && name[start - 1] <= '9')
    --start;
  if (start == end || (name[start] == '0' && end - start > 1))
    return "";
  // Decimal addition of k to the trailing number, however long.
  std::string next = name;
  size_t i = end;
  int64_t carry = k;
  while (carry > 0 && i > start) {
    int64_t digit = (next[i - 1] - '0') + carry % 10;
    carry = carry / 10 + digit / 10;
    next[--i] = static_cast<char>('0' + digit % 10);
  }
  if (carry > 0)
    next.insert(start, std::to_string(carry));
  return next;
}

} // namespace monarch::plan::detail
