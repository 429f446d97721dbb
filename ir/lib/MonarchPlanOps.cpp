//===- MonarchPlanOps.cpp - Planned-stage monarch ops -----*- C++ -*-===//
//
// Builders and verifiers of the planned stage: communicators, plans, rank
// programs and their instructions (docs/plan-semantics.md).
//
//===----------------------------------------------------------------------===//

#include "OpVerifyUtils.h"

#include "monarch/IR/MonarchDialect.h"
#include "monarch/Support/PrintFormat.h"
#include "monarch/Support/RankSearch.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <memory>
#include <optional>

using namespace mlir;
using namespace monarch;
using namespace monarch::detail;

//===----------------------------------------------------------------------===//
// CommunicatorOp, PlanOp, RankProgramOp
//===----------------------------------------------------------------------===//

LogicalResult CommunicatorOp::verify() {
  if (getRanks().empty())
    return emitOpError("must contain at least one rank");
  for (int64_t r : getRanks())
    if (r < 0)
      return emitOpError("rank ") << r << " is negative";
  // Sorted, a repeat is adjacent (a 4,096-rank communicator in a set was a
  // tree of 4,096 nodes); the error names the first rank, in order, that
  // repeats.
  SmallVector<int64_t> sorted(getRanks());
  llvm::sort(sorted);
  if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
    return success();
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t r : getRanks())
    if (!seen.insert(r).second)
      return emitOpError("rank ") << r << " appears twice";
  return success();
}

LogicalResult CommunicatorOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOpInterface mesh = resolveMesh(*this, getMeshAttr(), tables);
  if (!mesh)
    return failure();
  int64_t n = mesh.getNumRanks();
  for (int64_t r : getRanks())
    if (r >= n)
      return emitOpError("rank ") << r << " is outside mesh " << getMeshAttr()
                                  << " of " << n << " ranks";
  return success();
}

int64_t CommunicatorOp::getCommRank(int64_t rank) {
  // A send on a 4,096-rank communicator does not scan it (RankSearch.h).
  ArrayRef<int64_t> ranks = getRanks();
  return positionOfRank(std::span<const int64_t>(ranks.data(), ranks.size()),
                        rank);
}

void PlanOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   StringRef mesh, FunctionType signature) {
  build(builder, state, name, mesh);
  if (signature)
    state.addAttribute(getSignatureAttrName(state.name),
                       TypeAttr::get(signature));
}

void PlanOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   StringRef mesh) {
  state.addAttribute(mlir::SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getMeshAttrName(state.name),
                     FlatSymbolRefAttr::get(builder.getContext(), mesh));
  state.addRegion()->emplaceBlock();
}

/// Checks that `comm`, what `ref` names as seen from `at`, is a
/// communicator of `plan`'s mesh that holds `rank`, and `peer` when given.
static LogicalResult checkComm(Operation *at, FlatSymbolRefAttr ref,
                               CommunicatorOp comm, PlanOp plan, int64_t rank,
                               std::optional<int64_t> peer = std::nullopt) {
  if (!comm)
    return unresolved(at, ref.getAttr(), "monarch.communicator");
  if (comm.getMesh() != plan.getMesh())
    return at->emitOpError("communicator ")
           << ref << " is on " << comm.getMeshAttr() << " but plan @"
           << plan.getSymName() << " is on " << plan.getMeshAttr()
           << "; a plan's communicators list ranks of the plan's mesh";
  if (comm.getCommRank(rank) < 0)
    return at->emitOpError("rank ")
           << rank << " is not a member of communicator " << ref;
  if (peer && comm.getCommRank(*peer) < 0)
    return at->emitOpError("peer rank ")
           << *peer << " is not a member of communicator " << ref;
  return success();
}

namespace {
/// The member tables a rank program takes: its sends and receives (peers),
/// collectives (communicators) and feeds, fetches and states (offsets).
struct MemberSlots {
  SmallVector<Operation *> peers, comms, offsets;
  explicit MemberSlots(RankProgramOp program) {
    for (Operation &op : program.getBody().front()) {
      if (RankMemberOp::isPeerSlot(&op))
        peers.push_back(&op);
      else if (RankMemberOp::isCommSlot(&op))
        comms.push_back(&op);
      else if (RankMemberOp::isOffsetsSlot(&op))
        offsets.push_back(&op);
    }
  }
};
} // namespace

LogicalResult PlanOp::verify() {
  llvm::SmallSet<int64_t, 8> ranks;
  // Programs by rank, and the slots of those a member names (counted once).
  DenseMap<int64_t, RankProgramOp> programs;
  DenseMap<Operation *, std::unique_ptr<MemberSlots>> slots;
  for (Operation &op : getBody().front()) {
    auto program = dyn_cast<RankProgramOp>(op);
    auto member = dyn_cast<RankMemberOp>(op);
    if (!program && !member)
      return op.emitOpError("is not allowed in a monarch.plan; only "
                            "monarch.rank_program and monarch.rank_member "
                            "are");
    int64_t rank = program ? program.getRank() : member.getRank();
    if (!ranks.insert(rank).second)
      return op.emitOpError("rank ")
             << rank << " has more than one program in plan @" << getSymName();
    if (program) {
      programs[rank] = program;
      continue;
    }
    RankProgramOp of = programs.lookup(member.getOf());
    if (!of)
      return member.emitOpError("runs the program of rank ")
             << member.getOf() << ", which is not a monarch.rank_program "
             << "earlier in plan @" << getSymName();
    std::unique_ptr<MemberSlots> &s = slots[of];
    if (!s)
      s = std::make_unique<MemberSlots>(of);
    auto count = [&](size_t have, size_t want, StringRef table,
                     StringRef what) -> LogicalResult {
      if (have == want)
        return success();
      return member.emitOpError("has ")
             << have << " " << table << " but the program of rank "
             << member.getOf() << " has " << want << " " << what;
    };
    if (failed(count(member.getPeers().size(), s->peers.size(), "peers",
                     "sends and receives")) ||
        failed(count(member.getComms().size(), s->comms.size(), "comms",
                     "collectives")) ||
        failed(count(member.getOffsets().size(), s->offsets.size(), "offsets",
                     "feeds, fetches and states")))
      return failure();
  }
  return success();
}

LogicalResult PlanOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOpInterface mesh = resolveMesh(*this, getMeshAttr(), tables);
  if (!mesh)
    return failure();
  int64_t n = mesh.getNumRanks();
  DenseMap<int64_t, RankProgramOp> programs;
  DenseMap<Operation *, std::unique_ptr<MemberSlots>> slots;
  // Communicators by name, resolved once for all members.
  DenseMap<Attribute, CommunicatorOp> comms;
  Operation *scope = (*this)->getParentOp();
  auto commNamed = [&](FlatSymbolRefAttr ref) {
    auto [it, inserted] = comms.try_emplace(ref.getAttr());
    if (inserted && scope)
      it->second = dyn_cast_or_null<CommunicatorOp>(
          tables.lookupNearestSymbolFrom(scope, ref.getAttr()));
    return it->second;
  };
  for (Operation &op : getBody().front()) {
    int64_t rank = isa<RankProgramOp>(op) ? cast<RankProgramOp>(op).getRank()
                                          : cast<RankMemberOp>(op).getRank();
    if (rank >= n)
      return op.emitOpError("rank ")
             << rank << " is outside mesh " << getMeshAttr() << " of " << n
             << " ranks";
    if (auto program = dyn_cast<RankProgramOp>(op)) {
      programs[rank] = program;
      continue;
    }
    auto member = cast<RankMemberOp>(op);
    RankProgramOp of = programs.lookup(member.getOf());
    if (!of)
      return member.emitOpError("runs the program of rank ")
             << member.getOf() << ", which is not an earlier program";
    std::unique_ptr<MemberSlots> &s = slots[of];
    if (!s)
      s = std::make_unique<MemberSlots>(of);
    if (s->peers.size() != member.getPeers().size() ||
        s->comms.size() != member.getComms().size())
      return failure();
    for (auto [i, a] : llvm::enumerate(member.getComms())) {
      auto ref = dyn_cast<FlatSymbolRefAttr>(a);
      if (!ref)
        return failure(); // refused by the member's verifier
      CommunicatorOp comm = commNamed(ref);
      auto theirs = cast<CollectiveOp>(s->comms[i]);
      CommunicatorOp their = commNamed(theirs.getCommAttr());
      if (failed(checkComm(member, ref, comm, *this, rank)))
        return failure();
      if (their && their.getRanks().size() != comm.getRanks().size())
        return member.emitOpError("communicator ")
               << ref << " of collective #" << i << " has "
               << comm.getRanks().size() << " ranks but the program of rank "
               << member.getOf() << " runs it on " << theirs.getCommAttr()
               << " of " << their.getRanks().size();
    }
    for (auto [i, peer] : llvm::enumerate(member.getPeers())) {
      FlatSymbolRefAttr ref = isa<SendOp>(s->peers[i])
                                  ? cast<SendOp>(s->peers[i]).getCommAttr()
                                  : cast<RecvOp>(s->peers[i]).getCommAttr();
      // (The program's transfer reports a name that does not resolve.)
      CommunicatorOp comm = commNamed(ref);
      if (comm && failed(checkComm(member, ref, comm, *this, rank, peer)))
        return failure();
    }
  }
  return success();
}

bool RankMemberOp::isPeerSlot(Operation *op) { return isa<SendOp, RecvOp>(op); }
bool RankMemberOp::isCommSlot(Operation *op) { return isa<CollectiveOp>(op); }
bool RankMemberOp::isOffsetsSlot(Operation *op) {
  return isa<FeedBufferOp, FetchBufferOp, StateBufferOp>(op);
}

LogicalResult RankMemberOp::verify() {
  // A member naming itself is refused by the plan (its program is not an
  // earlier rank program, or its rank has two).
  for (int64_t p : getPeers())
    if (p < 0)
      return emitOpError("peer ") << p << " is negative";
  for (auto [i, a] : llvm::enumerate(getComms()))
    if (!isa<FlatSymbolRefAttr>(a))
      return emitOpError("comms #")
             << i << " is " << a << ", not a communicator's name";
  for (auto [i, a] : llvm::enumerate(getOffsets()))
    if (!isa<UnitAttr, DenseI64ArrayAttr>(a))
      return emitOpError("offsets #")
             << i << " is " << a << ", not array<i64: ...> or unit";
  return success();
}

RankProgramOp RankMemberOp::materialize(RankProgramOp program) {
  OpBuilder b(*this);
  auto copy = cast<RankProgramOp>(b.clone(*program));
  copy.setRank(getRank());
  ArrayRef<int64_t> peers = getPeers();
  ArrayRef<Attribute> comms = getComms().getValue();
  ArrayRef<Attribute> offsets = getOffsets().getValue();
  size_t p = 0, c = 0, o = 0;
  auto offsetsAt = [&]() { return dyn_cast<DenseI64ArrayAttr>(offsets[o++]); };
  for (Operation &op : copy.getBody().front()) {
    if (auto send = dyn_cast<SendOp>(op))
      send.setPeer(peers[p++]);
    else if (auto recv = dyn_cast<RecvOp>(op))
      recv.setPeer(peers[p++]);
    else if (auto coll = dyn_cast<CollectiveOp>(op))
      coll.setCommAttr(cast<FlatSymbolRefAttr>(comms[c++]));
    else if (auto feed = dyn_cast<FeedBufferOp>(op))
      feed.setOffsetsAttr(offsetsAt());
    else if (auto fetch = dyn_cast<FetchBufferOp>(op))
      fetch.setOffsetsAttr(offsetsAt());
    else if (auto state = dyn_cast<StateBufferOp>(op))
      state.setOffsetsAttr(offsetsAt());
  }
  return copy;
}

void PlanOp::expandMembers() {
  DenseMap<int64_t, RankProgramOp> programs;
  for (Operation &op : llvm::make_early_inc_range(getBody().front())) {
    if (auto program = dyn_cast<RankProgramOp>(op)) {
      programs[program.getRank()] = program;
    } else if (auto member = dyn_cast<RankMemberOp>(op)) {
      member.materialize(programs.lookup(member.getOf()));
      member.erase();
    }
  }
}

void RankProgramOp::build(OpBuilder &builder, OperationState &state,
                          int64_t rank, int64_t arena) {
  state.addAttribute(getRankAttrName(state.name),
                     builder.getI64IntegerAttr(rank));
  state.addAttribute(getArenaAttrName(state.name),
                     builder.getI64IntegerAttr(arena));
  state.addRegion()->emplaceBlock();
}

LogicalResult RankProgramOp::verify() {
  int64_t arena = getArena();
  auto check = [&](Operation *op, BufferAttr buf) -> LogicalResult {
    // Written to avoid overflow: offset and size are each below 2^62.
    if (buf.getSizeInBytes() > arena ||
        buf.getOffset() > arena - buf.getSizeInBytes())
      return op->emitOpError("buffer ")
             << buf << " (offset " << buf.getOffset() << ", "
             << buf.getSizeInBytes() << " bytes) lies outside the arena of "
             << arena << " bytes of rank " << getRank();
    return success();
  };
  auto checkList = [&](Operation *op, ArrayAttr list) -> LogicalResult {
    for (Attribute a : list)
      if (auto b = dyn_cast<BufferAttr>(a))
        if (failed(check(op, b)))
          return failure();
    return success();
  };
  // Each instruction's buffers through its own accessors: `getAttrs()`
  // builds a dictionary from an instruction's properties on every call,
  // which was most of this verifier's time on a 4,096-rank plan.
  for (Operation &op : getBody().front()) {
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](LaunchOp l) {
              return success(succeeded(checkList(&op, l.getIns())) &&
                             succeeded(checkList(&op, l.getOuts())));
            })
            .Case<SendOp, RecvOp, FeedBufferOp, FetchBufferOp, StateBufferOp>(
                [&](auto i) { return check(&op, i.getBuffer()); })
            .Case([&](CollectiveOp c) {
              return success(succeeded(check(&op, c.getInput())) &&
                             succeeded(check(&op, c.getOutput())));
            })
            .Case([&](PrintBuffersOp p) {
              return checkList(&op, p.getBuffers());
            })
            .Case([&](WaitOp) { return success(); })
            .Default([&](Operation *) {
              return op.emitOpError(
                  "is not a plan instruction and cannot appear in a "
                  "monarch.rank_program");
            });
    if (failed(ok))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Plan instructions
//===----------------------------------------------------------------------===//

static int64_t ownRank(Operation *op) {
  return op->getParentOfType<RankProgramOp>().getRank();
}

/// `ref` as seen from `op`, an instruction of a rank program. Neither a
/// rank program nor a plan is a symbol table, so the nearest one is the
/// plan's parent: found in two steps instead of asking every ancestor
/// whether it is one (a 4,096-rank plan resolves 100,000 names).
template <typename T>
static T lookupFromInstruction(Operation *op, SymbolRefAttr ref,
                               SymbolTableCollection &tables) {
  Operation *program = op->getParentOp();
  Operation *plan = program ? program->getParentOp() : nullptr;
  Operation *scope = plan ? plan->getParentOp() : nullptr;
  if (isa_and_nonnull<RankProgramOp>(program) &&
      isa_and_nonnull<PlanOp>(plan) && scope &&
      scope->hasTrait<OpTrait::SymbolTable>())
    return dyn_cast_or_null<T>(tables.lookupSymbolIn(scope, ref));
  return tables.lookupNearestSymbolFrom<T>(op, ref);
}

/// Resolves `comm` and checks that this rank is a member.
static CommunicatorOp resolveComm(Operation *op, FlatSymbolRefAttr ref,
                                  SymbolTableCollection &tables) {
  auto comm = lookupFromInstruction<CommunicatorOp>(op, ref, tables);
  if (failed(
          checkComm(op, ref, comm, op->getParentOfType<PlanOp>(), ownRank(op))))
    return {};
  return comm;
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto kernel = lookupFromInstruction<FunctionOpInterface>(
      *this, getKernelAttr(), tables);
  if (!kernel)
    return unresolved(*this, getKernelAttr().getAttr(), "kernel function");
  SmallVector<Attribute> buffers(getIns().begin(), getIns().end());
  buffers.append(getOuts().begin(), getOuts().end());
  ArrayRef<Type> params = kernel.getArgumentTypes();
  if (params.size() != buffers.size())
    return emitOpError("passes ")
           << buffers.size() << " buffers but kernel " << getKernelAttr()
           << " takes " << params.size() << " arguments";
  for (auto [i, attr, param] : llvm::enumerate(buffers, params)) {
    RankedTensorType type = cast<BufferAttr>(attr).getType();
    auto shaped = dyn_cast<ShapedType>(param);
    if (!shaped || !isa<RankedTensorType, MemRefType>(shaped) ||
        shaped.getShape() != type.getShape() ||
        shaped.getElementType() != type.getElementType())
      return emitOpError("buffer #")
             << i << " of type " << type << " does not match kernel argument "
             << "of type " << param;
  }
  return success();
}

template <typename OpT>
static LogicalResult verifyP2P(OpT op, SymbolTableCollection &tables) {
  auto comm =
      lookupFromInstruction<CommunicatorOp>(op, op.getCommAttr(), tables);
  return checkComm(op, op.getCommAttr(), comm,
                   op->template getParentOfType<PlanOp>(), ownRank(op),
                   static_cast<int64_t>(op.getPeer()));
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyP2P(*this, tables);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyP2P(*this, tables);
}

LogicalResult CollectiveOp::verify() {
  CollectiveKind kind = getKind();
  bool reduces = kind == CollectiveKind::AllReduce ||
                 kind == CollectiveKind::ReduceScatter;
  if (reduces && !getReduction())
    return emitOpError() << stringifyCollectiveKind(kind)
                         << " needs a reduction kind";
  if (!reduces && getReduction())
    return emitOpError() << stringifyCollectiveKind(kind)
                         << " takes no reduction kind";
  if ((kind == CollectiveKind::Broadcast) != getRoot().has_value())
    return emitOpError() << (getRoot() ? "only broadcast takes a root"
                                       : "broadcast needs a root");
  if (getInput().getType().getElementType() !=
      getOutput().getType().getElementType())
    return emitOpError("element types differ: ")
           << getInput().getType().getElementType() << " vs "
           << getOutput().getType().getElementType();
  return success();
}

LogicalResult CollectiveOp::verifySymbolUses(SymbolTableCollection &tables) {
  CommunicatorOp comm = resolveComm(*this, getCommAttr(), tables);
  if (!comm)
    return failure();
  int64_t n = comm.getRanks().size();
  RankedTensorType in = getInput().getType(), out = getOutput().getType();
  auto dim0 = [](RankedTensorType t) {
    return t.getRank() ? t.getDimSize(0) : 1;
  };
  auto sameTail = [&] {
    return in.getRank() >= 1 && in.getRank() == out.getRank() &&
           in.getShape().drop_front() == out.getShape().drop_front();
  };
  switch (getKind()) {
  case CollectiveKind::AllReduce:
  case CollectiveKind::Broadcast:
    if (in.getShape() != out.getShape())
      return emitOpError("input ")
             << in << " and output " << out << " must have the same shape";
    if (getRoot() && static_cast<int64_t>(*getRoot()) >= n)
      return emitOpError("root ") << *getRoot() << " is outside communicator "
                                  << getCommAttr() << " of " << n << " ranks";
    return success();
  case CollectiveKind::AllGather:
    if (!sameTail() || dim0(out) != dim0(in) * n)
      return emitOpError("all_gather over ")
             << n << " ranks maps " << in << " to " << out
             << "; expected dimension 0 to grow by " << n;
    return success();
  case CollectiveKind::ReduceScatter:
    if (!sameTail() || dim0(in) != dim0(out) * n)
      return emitOpError("reduce_scatter over ")
             << n << " ranks maps " << in << " to " << out
             << "; expected dimension 0 to shrink by " << n;
    return success();
  case CollectiveKind::AllToAll:
    if (in.getRank() < 1 || in.getShape() != out.getShape() ||
        dim0(in) % n != 0)
      return emitOpError("all_to_all over ")
             << n << " ranks needs equal shapes with dimension 0 divisible by "
             << n << ", got " << in << " and " << out;
    return success();
  }
  return success();
}

LogicalResult PrintBuffersOp::verify() {
  for (auto [i, a] : llvm::enumerate(getBuffers()))
    if (!isa<BufferAttr>(a))
      return emitOpError("operand #") << i << " is not a #monarch.buf";
  std::vector<printfmt::Piece> pieces;
  if (Status bad = printfmt::parse(getFormat(), getBuffers().size(), pieces);
      !bad)
    return emitOpError("format: ") << bad.message();
  return success();
}

LogicalResult WaitOp::verify() {
  if (getEvents().empty())
    return emitOpError("must wait for at least one event");
  return success();
}

LogicalResult StateBufferOp::verifySymbolUses(SymbolTableCollection &tables) {
  SymbolRefAttr ref = getState();
  if (ref.getNestedReferences().size() != 1)
    return emitOpError("state ")
           << ref << " must have the form @actor_mesh::@state";
  auto actorMesh = lookupFromInstruction<ActorMeshOp>(
      *this, FlatSymbolRefAttr::get(ref.getRootReference()), tables);
  if (!actorMesh)
    return unresolved(*this, ref.getRootReference(), "monarch.actor_mesh");
  auto actorClass = tables.lookupNearestSymbolFrom<ActorClassOp>(
      actorMesh, actorMesh.getActorClassAttr());
  auto state =
      actorClass
          ? tables.lookupSymbolIn<StateOp>(actorClass, ref.getLeafReference())
          : StateOp();
  if (!state)
    return emitOpError("actor mesh @")
           << actorMesh.getSymName() << " has no state @"
           << ref.getLeafReference().getValue();
  // Scalar state lives in a rank-0 tensor buffer of its type.
  Type stateType = state.getType();
  if (stateType.isIntOrFloat())
    stateType = RankedTensorType::get({}, stateType);
  if (stateType != getBuffer().getType())
    return emitOpError("buffer type ")
           << getBuffer().getType() << " does not match state type "
           << state.getType();
  return success();
}
