//===- MonarchProgramOps.cpp - Program-level monarch ops ---*- C++ -*-===//
//
// Verifiers of the ops a controller program uses: calls and broadcasts of
// endpoints, feeds, fetches and transfers (traced), and the control
// messages and data channels of the split stage.
//
//===----------------------------------------------------------------------===//

#include "OpVerifyUtils.h"

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace monarch;
using namespace monarch::detail;

//===----------------------------------------------------------------------===//
// CallOp, BroadcastOp
//===----------------------------------------------------------------------===//

/// Resolves `@actor_mesh::@endpoint`, emitting a diagnostic on failure.
static std::pair<ActorMeshOp, EndpointOp>
resolveEndpoint(Operation *op, SymbolRefAttr callee,
                SymbolTableCollection &tables) {
  if (callee.getNestedReferences().size() != 1) {
    op->emitOpError("callee ")
        << callee << " must have the form @actor_mesh::@endpoint";
    return {};
  }
  auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
      op, FlatSymbolRefAttr::get(callee.getRootReference()));
  if (!actorMesh) {
    unresolved(op, callee.getRootReference(), "monarch.actor_mesh");
    return {};
  }
  auto actorClass = tables.lookupNearestSymbolFrom<ActorClassOp>(
      actorMesh, actorMesh.getActorClassAttr());
  if (!actorClass) {
    unresolved(actorMesh, actorMesh.getActorClassAttr().getAttr(),
               "monarch.actor_class");
    return {};
  }
  auto endpoint =
      tables.lookupSymbolIn<EndpointOp>(actorClass, callee.getLeafReference());
  if (!endpoint) {
    op->emitOpError("actor class @")
        << actorClass.getSymName() << " has no endpoint @"
        << callee.getLeafReference().getValue();
    return {};
  }
  return {actorMesh, endpoint};
}

/// Checks a global value type against the per-rank endpoint type given the
/// endpoint's distribution of that value.
static LogicalResult checkDistributedType(Operation *op, StringRef what,
                                          unsigned i, Type global, Type local,
                                          DistAttr dist, MeshOpInterface mesh,
                                          EndpointOp endpoint) {
  if (!dist || dist.getSplit().empty() ||
      llvm::all_of(dist.getSplit(),
                   [](Attribute a) { return cast<ArrayAttr>(a).empty(); })) {
    if (global != local)
      return op->emitOpError()
             << what << " #" << i << " has type " << global << " but endpoint @"
             << endpoint.getSymName() << " expects " << local;
    return success();
  }
  auto g = dyn_cast<RankedTensorType>(global);
  auto l = dyn_cast<RankedTensorType>(local);
  if (!g || !l || g.getElementType() != l.getElementType() ||
      g.getRank() != l.getRank())
    return op->emitOpError() << what << " #" << i << " of type " << global
                             << " cannot be distributed to endpoint @"
                             << endpoint.getSymName() << " type " << local;
  std::string error;
  FailureOr<SmallVector<int64_t>> shape =
      getLocalShape(g.getShape(), dist, mesh, error);
  if (failed(shape))
    return op->emitOpError() << what << " #" << i << ": " << error;
  if (ArrayRef<int64_t>(*shape) != l.getShape())
    return op->emitOpError()
           << what << " #" << i << " of type " << global << " is split by "
           << dist << " into per-rank "
           << RankedTensorType::get(*shape, g.getElementType())
           << " but endpoint @" << endpoint.getSymName() << " expects "
           << local;
  return success();
}

static LogicalResult verifyInvoke(Operation *op, SymbolRefAttr callee,
                                  ValueRange args, TypeRange results,
                                  bool checkResults,
                                  SymbolTableCollection &tables) {
  auto [actorMesh, endpoint] = resolveEndpoint(op, callee, tables);
  if (!endpoint)
    return failure();
  MeshOpInterface mesh =
      lookupMesh(actorMesh, actorMesh.getMeshAttr(), &tables);
  if (!mesh)
    return op->emitOpError("actor mesh @")
           << actorMesh.getSymName() << " is not on a mesh";
  ArrayRef<Type> params = endpoint.getArgumentTypes();
  if (args.size() != params.size())
    return op->emitOpError("passes ")
           << args.size() << " arguments but endpoint @"
           << endpoint.getSymName() << " takes " << params.size();
  for (auto [i, arg, param] : llvm::enumerate(args, params)) {
    DistAttr dist = endpoint.getArgDist(i);
    if (dist && dist.getPartial())
      return op->emitOpError("argument #")
             << i << " of endpoint @" << endpoint.getSymName()
             << " cannot be partial";
    if (failed(checkDistributedType(op, "argument", i, arg.getType(), param,
                                    dist, mesh, endpoint)))
      return failure();
  }
  if (!checkResults)
    return success();
  ArrayRef<Type> declared = endpoint.getResultTypes();
  if (results.size() != declared.size())
    return op->emitOpError("expects ")
           << results.size() << " results but endpoint @"
           << endpoint.getSymName() << " returns " << declared.size();
  for (auto [i, res, decl] : llvm::enumerate(results, declared))
    if (failed(checkDistributedType(op, "result", i, res, decl,
                                    endpoint.getResultDist(i), mesh, endpoint)))
      return failure();
  return success();
}

/// Invocations are issued by code: a function or an endpoint body.
static LogicalResult verifyInsideFunction(Operation *op) {
  if (!op->getParentOfType<FunctionOpInterface>())
    return op->emitOpError("must be inside a function or endpoint body");
  return success();
}

LogicalResult CallOp::verify() { return verifyInsideFunction(*this); }

LogicalResult BroadcastOp::verify() { return verifyInsideFunction(*this); }

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyInvoke(*this, getCallee(), getArgs(), getResultTypes(),
                      /*checkResults=*/true, tables);
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyInvoke(*this, getCallee(), getArgs(), {},
                      /*checkResults=*/false, tables);
}

//===----------------------------------------------------------------------===//
// FeedOp, FetchOp, TransferOp
//===----------------------------------------------------------------------===//

LogicalResult FeedOp::verifySymbolUses(SymbolTableCollection &tables) {
  return success(resolveMesh(*this, getMeshAttr(), tables) != nullptr);
}

LogicalResult FetchOp::verifySymbolUses(SymbolTableCollection &tables) {
  return success(resolveMesh(*this, getMeshAttr(), tables) != nullptr);
}

LogicalResult TransferOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType()
           << "; transfers move bytes and cannot cast";
  if (in.getShape() != out.getShape())
    return emitOpError("shape changes from ")
           << in << " to " << out << "; both ends must hold the same tensor";
  return success();
}

LogicalResult TransferOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (!resolveMesh(*this, getFromAttr(), tables) ||
      !resolveMesh(*this, getToAttr(), tables))
    return failure();
  if (getFrom() == getTo())
    return emitOpError("transfers from ")
           << getFromAttr() << " to itself; use shard.shard to reshard "
           << "inside a mesh";
  return success();
}

//===----------------------------------------------------------------------===//
// ControlMsgOp, AwaitOp
//===----------------------------------------------------------------------===//

LogicalResult ControlMsgOp::verify() {
  if (getInvoke().empty())
    return emitOpError("must invoke at least one endpoint");
  return verifyInsideFunction(*this);
}

LogicalResult ControlMsgOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOpInterface mesh = resolveMesh(*this, getMeshAttr(), tables);
  if (!mesh)
    return failure();
  for (Attribute a : getInvoke()) {
    if (auto flat = dyn_cast<FlatSymbolRefAttr>(a)) {
      // A worker program of this mesh, or the plan that replaced it.
      Operation *program = tables.lookupNearestSymbolFrom(*this, flat);
      FlatSymbolRefAttr on;
      if (auto plan = dyn_cast_or_null<PlanOp>(program))
        on = plan.getMeshAttr();
      else if (isa_and_nonnull<FunctionOpInterface>(program))
        on = program->getAttrOfType<FlatSymbolRefAttr>(
            MonarchDialect::getWorkerForAttrName());
      if (!on)
        return unresolved(*this, flat.getAttr(), "worker program");
      if (on != getMeshAttr())
        return emitOpError("invokes worker program ")
               << flat << " of " << on << " on " << getMeshAttr();
      continue;
    }
    auto [actorMesh, endpoint] =
        resolveEndpoint(*this, cast<SymbolRefAttr>(a), tables);
    if (!endpoint)
      return failure();
    MeshOpInterface on =
        lookupMesh(actorMesh, actorMesh.getMeshAttr(), &tables);
    if (!on || !isSameOrSliceOf(on, mesh, tables))
      return emitOpError("invokes ")
             << a << " but actor mesh @" << actorMesh.getSymName() << " is on "
             << actorMesh.getMeshAttr() << ", not on " << getMeshAttr()
             << " or a slice of it";
  }
  return success();
}

/// Resolves a worker program and the type of its argument or result `index`.
static FailureOr<Type> workerProgramType(Operation *op, FlatSymbolRefAttr ref,
                                         int64_t index, bool input,
                                         SymbolTableCollection &tables) {
  Operation *symbol = tables.lookupNearestSymbolFrom(op, ref);
  FunctionType signature;
  if (auto plan = dyn_cast_or_null<PlanOp>(symbol)) {
    if (!plan.getSignature()) {
      op->emitOpError("plan ") << ref << " has no signature";
      return failure();
    }
    signature = *plan.getSignature();
  } else if (auto fn = dyn_cast_or_null<FunctionOpInterface>(symbol)) {
    if (fn->hasAttr(MonarchDialect::getWorkerForAttrName()))
      signature = cast<FunctionType>(fn.getFunctionType());
  }
  if (!signature) {
    unresolved(op, ref.getAttr(), "worker program");
    return failure();
  }
  ArrayRef<Type> types = input ? signature.getInputs() : signature.getResults();
  if (index >= static_cast<int64_t>(types.size())) {
    op->emitOpError("worker program ")
        << ref << " has " << types.size() << (input ? " inputs" : " outputs")
        << ", no #" << index;
    return failure();
  }
  return types[index];
}

LogicalResult FeedInputOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<Type> type = workerProgramType(*this, getProgramAttr(), getIndex(),
                                           /*input=*/true, tables);
  if (failed(type))
    return failure();
  if (*type != getValue().getType())
    return emitOpError("feeds ")
           << getValue().getType() << " but input #" << getIndex() << " of "
           << getProgramAttr() << " is " << *type;
  return success();
}

LogicalResult FetchOutputOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<Type> type = workerProgramType(*this, getProgramAttr(), getIndex(),
                                           /*input=*/false, tables);
  if (failed(type))
    return failure();
  if (*type != getType())
    return emitOpError("fetches ")
           << getType() << " but output #" << getIndex() << " of "
           << getProgramAttr() << " is " << *type;
  return success();
}

LogicalResult AwaitOp::verify() {
  if (getTokens().empty())
    return emitOpError("must await at least one token");
  return success();
}

//===----------------------------------------------------------------------===//
// ChannelOp, ChannelSendOp, ChannelRecvOp
//===----------------------------------------------------------------------===//

LogicalResult ChannelOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (!resolveMesh(*this, getFromAttr(), tables) ||
      !resolveMesh(*this, getToAttr(), tables))
    return failure();
  return success();
}

static LogicalResult verifyChannelUse(Operation *op, FlatSymbolRefAttr ref,
                                      Type type,
                                      SymbolTableCollection &tables) {
  auto channel = tables.lookupNearestSymbolFrom<ChannelOp>(op, ref);
  if (!channel)
    return unresolved(op, ref.getAttr(), "monarch.channel");
  if (op->hasAttr(MonarchDialect::getShardAttrName())) {
    // A shard of the channel's value: same element type and rank, each
    // dimension dividing the channel's.
    auto shard = dyn_cast<RankedTensorType>(type);
    auto whole = dyn_cast<RankedTensorType>(channel.getType());
    bool fits = shard && whole &&
                shard.getElementType() == whole.getElementType() &&
                shard.getRank() == whole.getRank() &&
                isa<DistAttr>(op->getAttr(MonarchDialect::getShardAttrName()));
    for (int64_t d = 0; fits && d < shard.getRank(); ++d)
      fits = shard.getDimSize(d) > 0 &&
             whole.getDimSize(d) % shard.getDimSize(d) == 0;
    if (!fits)
      return op->emitOpError("type ")
             << type << " is not a shard of channel " << ref << " of type "
             << channel.getType();
    return success();
  }
  if (channel.getType() != type)
    return op->emitOpError("type ") << type << " does not match channel " << ref
                                    << " of type " << channel.getType();
  return success();
}

LogicalResult ChannelSendOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyChannelUse(*this, getChannelAttr(), getValue().getType(),
                          tables);
}

LogicalResult ChannelRecvOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyChannelUse(*this, getChannelAttr(), getType(), tables);
}
