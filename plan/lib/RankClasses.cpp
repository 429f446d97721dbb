//===- RankClasses.cpp - Ranks that run the same instruction stream -------===//
//
// See RankClasses.h.
//
//===----------------------------------------------------------------------===//

#include "RankClasses.h"

#include <functional>
#include <unordered_map>

namespace monarch::plan::detail {
namespace {

/// `in` with its rank-dependent fields cleared.
Instruction withoutRankFields(Instruction in) {
  in.p2p.peer = 0;
  in.p2p.communicator = 0;
  in.collective.communicator = 0;
  in.collective.root.reset();
  in.io.offsets.clear();
  in.stateBuffer.offsets.clear();
  in.launch.kernel = 0;
  return in;
}

bool sameButRankFields(const Instruction &a, const Instruction &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case InstrKind::Launch:
  case InstrKind::Send:
  case InstrKind::Recv:
  case InstrKind::Collective:
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer:
  case InstrKind::StateBuffer:
    return withoutRankFields(a) == withoutRankFields(b);
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

std::vector<RankPatch> rankPatches(const std::vector<Instruction> &shared,
                                   const std::vector<Instruction> &program) {
  std::vector<RankPatch> patches;
  for (size_t i = 0; i < shared.size() && i < program.size(); ++i) {
    const Instruction &a = shared[i], &b = program[i];
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
      patches.push_back(std::move(patch));
  }
  return patches;
}

std::optional<std::string>
applyRankPatches(std::vector<Instruction> &instructions,
                 const std::vector<RankPatch> &patches) {
  for (const RankPatch &patch : patches) {
    std::string where =
        "patch of instruction " + std::to_string(patch.instruction) + ": ";
    if (patch.instruction < 0 ||
        static_cast<size_t>(patch.instruction) >= instructions.size())
      return where + "no such instruction (the shared stream has " +
             std::to_string(instructions.size()) + ")";
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
