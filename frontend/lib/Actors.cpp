//===- Actors.cpp - Actor classes, endpoints and calls ----------*- C++ -*-===//
//
// Actor classes with state and endpoints (per-rank code, built in a scope of
// their own), the explicit mesh collectives allowed in endpoint bodies,
// actor meshes, and calls from controller functions. A call checks every
// global argument against the endpoint's per-rank signature and its
// `monarch.dist` before building anything.
//
//===----------------------------------------------------------------------===//

#include "TraceBuilderImpl.h"

#include "monarch/IR/ElementTypes.h"
#include "monarch/Support/PrintFormat.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace monarch::frontend {

static ReductionKind toReduction(ReduceKind k) {
  return static_cast<ReductionKind>(static_cast<int>(k));
}

static DistAttr toDistAttr(MLIRContext *ctx, const Dist &dist) {
  Builder b(ctx);
  SmallVector<Attribute> entries;
  for (const auto &names : dist.split) {
    SmallVector<StringRef> refs(names.begin(), names.end());
    entries.push_back(b.getStrArrayAttr(refs));
  }
  std::optional<ReductionKind> partial;
  if (dist.partial)
    partial = toReduction(*dist.partial);
  return DistAttr::get(ctx, b.getArrayAttr(entries), partial);
}

static Dist fromDistAttr(DistAttr attr) {
  Dist d;
  if (!attr)
    return d;
  for (unsigned i = 0, e = attr.getSplit().size(); i < e; ++i) {
    std::vector<std::string> names;
    for (StringRef n : attr.getSplitDims(i))
      names.push_back(n.str());
    d.split.push_back(names);
  }
  if (attr.getPartial())
    d.partial = static_cast<ReduceKind>(static_cast<int>(*attr.getPartial()));
  return d;
}

Status TraceBuilder::declareActorClass(const std::string &name, SourceLoc loc) {
  Impl &I = *pimpl;
  Operation *existing = SymbolTable::lookupSymbolIn(*I.module, name);
  if (existing && isa<ActorClassOp>(existing))
    return Status();
  if (Status room = I.makeRoomFor(name, loc); !room.isOk())
    return room;
  if (name.empty())
    return I.error(loc, "actor classes need a name");
  OpBuilder::InsertionGuard guard(I.b);
  I.toDeclarations();
  ActorClassOp::create(I.b, I.loc(loc), name);
  return Status();
}

bool TraceBuilder::hasActorClass(const std::string &name) const {
  return static_cast<bool>(pimpl->lookupClass(name));
}

Status TraceBuilder::addState(const std::string &cls, const std::string &name,
                              const ArgType &type, const Dist &dist,
                              SourceLoc loc) {
  Impl &I = *pimpl;
  ActorClassOp c = I.lookupClass(cls);
  if (!c)
    return I.error(loc, "unknown actor class '" + cls + "'");
  if (!isTraceableDType(type.dtype))
    return I.dtypeError(loc, type.dtype);
  Type t = I.typeOf(type);
  DistAttr d = dist.isReplicated() ? DistAttr() : toDistAttr(&I.ctx, dist);
  if (auto s =
          dyn_cast_or_null<StateOp>(SymbolTable::lookupSymbolIn(c, name))) {
    if (s.getType() == t && s.getDistAttr() == d)
      return Status();
    return I.error(loc, "state '" + name + "' of class '" + cls +
                            "' is already declared with another type");
  }
  if (SymbolTable::lookupSymbolIn(c, name))
    return I.error(loc, "the name '" + name + "' is already used in class '" +
                            cls + "'");
  OpBuilder::InsertionGuard guard(I.b);
  Block &body = c.getBody().front();
  auto endpoints = body.getOps<EndpointOp>();
  if (endpoints.empty())
    I.b.setInsertionPointToEnd(&body);
  else
    I.b.setInsertionPoint(*endpoints.begin());
  StateOp::create(I.b, I.loc(loc), name, t, d);
  return Status();
}

Result<std::vector<Value>>
TraceBuilder::beginEndpoint(const std::string &cls, const std::string &name,
                            const std::vector<ArgType> &args,
                            const std::vector<Dist> &argDists,
                            const std::string &mesh, SourceLoc loc) {
  Impl &I = *pimpl;
  if (Scope *s = I.currentScope(); s && s->kind == Scope::Endpoint)
    return I.error(loc, "endpoints cannot be defined inside endpoints");
  ActorClassOp c = I.lookupClass(cls);
  if (!c)
    return I.error(loc, "unknown actor class '" + cls + "'");
  if (SymbolTable::lookupSymbolIn(c, name))
    return I.error(loc, "class '" + cls + "' already has '" + name + "'");
  if (!I.lookupMesh(mesh))
    return I.error(loc, "unknown mesh '" + mesh + "'", ErrorKind::Mesh);
  if (argDists.size() > args.size())
    return I.error(loc, "more distributions than arguments");
  SmallVector<Type> types;
  for (const ArgType &a : args) {
    if (!isTraceableDType(a.dtype))
      return I.dtypeError(loc, a.dtype);
    types.push_back(I.typeOf(a));
  }
  for (size_t i = 0; i < argDists.size(); ++i) {
    if (argDists[i].isReplicated())
      continue;
    if (args[i].scalar)
      return I.error(loc,
                     "argument #" + std::to_string(i) +
                         " is a scalar and cannot be split",
                     ErrorKind::Sharding);
    // Dist names must exist on the mesh (sizes are checked by calls).
    Dist names = argDists[i];
    std::vector<int64_t> big(args[i].shape.size(), 0);
    if (Status s = I.checkDist(mesh, names, big, loc, "argument"); !s)
      return s.status();
  }
  Scope scope;
  scope.kind = Scope::Endpoint;
  scope.mesh = mesh;
  scope.cls = cls;
  scope.saved = I.b.saveInsertionPoint();
  I.b.setInsertionPointToEnd(&c.getBody().front());
  auto ep =
      EndpointOp::create(I.b, I.loc(loc), name, I.b.getFunctionType(types, {}));
  for (size_t i = 0; i < argDists.size(); ++i)
    if (!argDists[i].isReplicated())
      ep.setArgAttr(i, MonarchDialect::getDistAttrName(),
                    toDistAttr(&I.ctx, argDists[i]));
  Block *entry = ep.addEntryBlock();
  scope.op = ep;
  I.scopes.push_back(scope);
  I.stack.push_back(static_cast<int>(I.scopes.size()) - 1);
  I.b.setInsertionPointToStart(entry);
  std::vector<Value> handles;
  for (size_t i = 0; i < args.size(); ++i)
    handles.push_back(I.add(entry->getArgument(i), "",
                            i < argDists.size() ? argDists[i] : Dist{},
                            args[i].scalar));
  return handles;
}

Status TraceBuilder::endEndpoint(const std::vector<Value> &results,
                                 const std::vector<Dist> &resultDists,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Endpoint)
    return I.error(loc, "no endpoint is being traced");
  if (resultDists.size() > results.size())
    return I.error(loc, "more distributions than results");
  SmallVector<mlir::Value> outs;
  for (Value v : results) {
    Result<ValueRecord *> r = I.get(v, loc);
    if (!r)
      return r.status();
    mlir::Value out = (*r)->value;
    // A scalar result leaves as a 0-d tensor: a value on the mesh like any
    // other (fetched, used by tensor work, reduced with out="sum").
    if (!isa<RankedTensorType>(out.getType()))
      out = tensor::FromElementsOp::create(
          I.b, I.loc(loc), RankedTensorType::get({}, out.getType()),
          ValueRange{out});
    // A result that is the actor's state (or a view of it) is copied: the
    // plan would otherwise hand out the state's own buffer, which a later
    // endpoint of the same step may update before the result is fetched
    // (fuzzer seed 70506: `v = a.get.call(); a.update.broadcast()` returned
    // the updated state).
    mlir::Value source = out;
    while (Operation *def = source.getDefiningOp()) {
      if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
               tensor::ExtractSliceOp, tensor::CastOp>(def))
        break;
      source = def->getOperand(0);
    }
    if (isa_and_nonnull<StateGetOp>(source.getDefiningOp())) {
      auto type = llvm::cast<RankedTensorType>(out.getType());
      mlir::Value init = tensor::EmptyOp::create(
          I.b, I.loc(loc), type.getShape(), type.getElementType());
      out = linalg::CopyOp::create(I.b, I.loc(loc), out, init).getResult(0);
    }
    outs.push_back(out);
  }
  for (size_t i = 0; i < resultDists.size(); ++i) {
    if (resultDists[i].isReplicated())
      continue;
    if (!resultDists[i].partial &&
        llvm::cast<RankedTensorType>(outs[i].getType()).getRank() == 0)
      return I.error(loc,
                     "result #" + std::to_string(i) +
                         " is a scalar and cannot be split",
                     ErrorKind::Sharding);
    std::vector<int64_t> big(
        llvm::cast<RankedTensorType>(outs[i].getType()).getRank(), 0);
    if (Status s = I.checkDist(scope->mesh, resultDists[i], big, loc, "result");
        !s)
      return s.status();
  }
  auto ep = llvm::cast<EndpointOp>(scope->op);
  ReturnOp::create(I.b, I.loc(loc), outs);
  SmallVector<Type> types;
  for (mlir::Value v : outs)
    types.push_back(v.getType());
  ep.setFunctionTypeAttr(TypeAttr::get(
      I.b.getFunctionType(ep.getArgumentTypes(), TypeRange(types))));
  for (size_t i = 0; i < resultDists.size(); ++i)
    if (!resultDists[i].isReplicated())
      ep.setResultAttr(i, MonarchDialect::getDistAttrName(),
                       toDistAttr(&I.ctx, resultDists[i]));
  I.b.restoreInsertionPoint(scope->saved);
  scope->open = false;
  I.stack.pop_back();
  LogicalResult ok = success();
  std::string diags = I.collectDiagnostics([&] { ok = mlir::verify(ep); });
  if (failed(ok)) {
    ep.erase();
    return I.error(loc, "endpoint does not verify: " + diags);
  }
  return Status();
}

void TraceBuilder::abandonEndpoint() {
  Impl &I = *pimpl;
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Endpoint)
    return;
  I.b.restoreInsertionPoint(scope->saved);
  scope->open = false;
  Operation *op = scope->op;
  I.stack.pop_back();
  op->dropAllReferences();
  op->erase();
}

bool TraceBuilder::hasEndpoint(const std::string &cls,
                               const std::string &name) const {
  ActorClassOp c = pimpl->lookupClass(cls);
  return c && isa_and_nonnull<EndpointOp>(SymbolTable::lookupSymbolIn(c, name));
}

bool TraceBuilder::inEndpoint() const {
  const Impl &I = *pimpl;
  return !I.stack.empty() && I.scopes[I.stack.back()].kind == Scope::Endpoint;
}

/// The state op `name` of the endpoint being traced.
static Result<StateOp> lookupState(TraceBuilder::Impl &I,
                                   const std::string &name,
                                   const SourceLoc &loc) {
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Endpoint)
    return I.error(loc, "actor state is only accessible inside endpoints");
  ActorClassOp c = I.lookupClass(scope->cls);
  auto s = dyn_cast_or_null<StateOp>(SymbolTable::lookupSymbolIn(c, name));
  if (!s)
    return I.error(loc, "class '" + scope->cls + "' has no state '" + name +
                            "' (declare it with param)");
  return s;
}

Result<Value> TraceBuilder::stateGet(const std::string &name, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<StateOp> s = lookupState(I, name, loc);
  if (!s)
    return s.status();
  auto op = StateGetOp::create(I.b, I.loc(loc), s->getType(), name);
  return I.add(op.getResult(), "", Dist{},
               !isa<RankedTensorType>(s->getType()));
}

Status TraceBuilder::stateSet(const std::string &name, Value v, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<StateOp> s = lookupState(I, name, loc);
  if (!s)
    return s.status();
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  if ((*r)->value.getType() != s->getType()) {
    std::string stateType, valueType;
    llvm::raw_string_ostream a(stateType), b(valueType);
    a << s->getType();
    b << (*r)->value.getType();
    return I.error(loc, "state '" + name + "' has type " + stateType +
                            " but is assigned a value of type " + valueType);
  }
  StateSetOp::create(I.b, I.loc(loc), name, (*r)->value);
  return Status();
}

Status TraceBuilder::debugPrint(const std::string &format,
                                const std::vector<Value> &values,
                                SourceLoc loc) {
  Impl &I = *pimpl;
  Scope *scope = I.currentScope();
  if (!scope)
    return I.error(loc, "debug_print: no function or endpoint is being traced");
  std::vector<printfmt::Piece> pieces;
  if (Status bad = printfmt::parse(format, values.size(), pieces); !bad)
    return I.error(loc, "debug_print: " + bad.message(), bad.kind());
  std::vector<Value> tensors;
  for (Value v : values) {
    Result<ValueRecord *> r = I.get(v, loc);
    if (!r)
      return r.status();
    Type t = (*r)->value.getType();
    auto tensor = llvm::dyn_cast<RankedTensorType>(t);
    if (!dtypeOf(tensor ? tensor.getElementType() : t))
      return I.error(loc, "debug_print cannot print a value of type " +
                              I.typeStr(**r));
    if (!(*r)->scalar)
      tensors.push_back(v);
  }
  SmallVector<mlir::Value> operands;
  FlatSymbolRefAttr mesh;
  if (scope->kind == Scope::Endpoint) {
    for (Value v : values)
      operands.push_back(I.values[v.id].value);
  } else {
    bool onMesh = !scope->defaultMesh.empty();
    for (Value v : tensors)
      onMesh |= !I.values[v.id].mesh.empty();
    if (!onMesh)
      return I.error(loc, "mc.debug_print prints on the workers, and these "
                          "values are the controller's (the function has "
                          "no mesh): give it one (@mc.compile(mesh=...)) "
                          "or print inside an actor endpoint");
    Result<std::string> where = I.placement(tensors, loc);
    if (!where)
      return where.status();
    mesh = FlatSymbolRefAttr::get(&I.ctx, *where);
    for (Value v : values) {
      if (I.values[v.id].scalar) {
        operands.push_back(I.values[v.id].value);
        continue;
      }
      Result<mlir::Value> placed = I.materialize(v, *where, loc);
      if (!placed)
        return placed.status();
      operands.push_back(*placed);
    }
  }
  DebugPrintOp::create(I.b, I.loc(loc), format, operands, mesh);
  return Status();
}

/// Checks a collective's operand and dimensions; returns the group size.
static Result<int64_t> collectiveGroup(TraceBuilder::Impl &I, Value v,
                                       const std::vector<std::string> &dims,
                                       const std::string &what,
                                       const SourceLoc &loc) {
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Endpoint)
    return I.error(loc, what + " is an explicit collective of per-rank code: "
                               "use it inside an @endpoint; in a compiled "
                               "function, shard/replicate insert collectives");
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  if ((*r)->scalar)
    return I.error(loc, what + " needs a tensor, got a scalar");
  if (dims.empty())
    return I.error(loc, what + " needs at least one mesh dimension",
                   ErrorKind::Mesh);
  MeshOpInterface m = I.lookupMesh(scope->mesh);
  SmallVector<int64_t> shape = m.getMeshShape();
  std::vector<std::string> names;
  for (StringRef n : m.getDimNames())
    names.push_back(n.str());
  int64_t group = 1;
  for (const std::string &d : dims) {
    int64_t idx = m.getDimIndex(d);
    if (idx < 0)
      return I.error(loc,
                     "mesh '" + scope->mesh + "' has no dimension '" + d +
                         "' (its dimensions: " + joinNames(names) + ")",
                     ErrorKind::Mesh);
    group *= shape[idx];
  }
  return group;
}

static ArrayAttr dimsAttr(TraceBuilder::Impl &I,
                          const std::vector<std::string> &dims) {
  SmallVector<StringRef> refs(dims.begin(), dims.end());
  return I.b.getStrArrayAttr(refs);
}

Result<Value> TraceBuilder::allReduce(Value v,
                                      const std::vector<std::string> &dims,
                                      ReduceKind kind, SourceLoc loc) {
  Impl &I = *pimpl;
  v = I.scalarAsTensor(v, loc);
  Result<int64_t> group = collectiveGroup(I, v, dims, "all_reduce", loc);
  if (!group)
    return group.status();
  auto op = AllReduceOp::create(I.b, I.loc(loc), I.rec(v).value,
                                dimsAttr(I, dims), toReduction(kind));
  return I.add(op.getResult(), "", Dist{}, false);
}

/// Normalizes a tensor axis of `v` for a collective.
static Result<int64_t> collectiveAxis(TraceBuilder::Impl &I, Value v,
                                      int64_t axis, const SourceLoc &loc) {
  auto type = llvm::cast<RankedTensorType>(I.rec(v).value.getType());
  int64_t a = axis < 0 ? axis + type.getRank() : axis;
  if (a < 0 || a >= type.getRank())
    return I.error(loc,
                   "axis " + std::to_string(axis) +
                       " is out of range for a tensor of rank " +
                       std::to_string(type.getRank()),
                   ErrorKind::Shape);
  return a;
}

Result<Value> TraceBuilder::allGather(Value v,
                                      const std::vector<std::string> &dims,
                                      int64_t axis, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<int64_t> group = collectiveGroup(I, v, dims, "all_gather", loc);
  if (!group)
    return group.status();
  Result<int64_t> a = collectiveAxis(I, v, axis, loc);
  if (!a)
    return a.status();
  auto type = llvm::cast<RankedTensorType>(I.rec(v).value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[*a] *= *group;
  auto op = AllGatherOp::create(
      I.b, I.loc(loc), RankedTensorType::get(shape, type.getElementType()),
      I.rec(v).value, dimsAttr(I, dims), static_cast<uint64_t>(*a));
  return I.add(op.getResult(), "", Dist{}, false);
}

Result<Value> TraceBuilder::reduceScatter(Value v,
                                          const std::vector<std::string> &dims,
                                          int64_t axis, ReduceKind kind,
                                          SourceLoc loc) {
  Impl &I = *pimpl;
  Result<int64_t> group = collectiveGroup(I, v, dims, "reduce_scatter", loc);
  if (!group)
    return group.status();
  Result<int64_t> a = collectiveAxis(I, v, axis, loc);
  if (!a)
    return a.status();
  auto type = llvm::cast<RankedTensorType>(I.rec(v).value.getType());
  SmallVector<int64_t> shape(type.getShape());
  if (shape[*a] % *group != 0)
    return I.error(loc,
                   "reduce_scatter: dimension " + std::to_string(*a) +
                       " of size " + std::to_string(shape[*a]) +
                       " is not divisible by the " + std::to_string(*group) +
                       " ranks of " + joinNames(dims),
                   ErrorKind::Sharding);
  shape[*a] /= *group;
  auto op = ReduceScatterOp::create(
      I.b, I.loc(loc), RankedTensorType::get(shape, type.getElementType()),
      I.rec(v).value, dimsAttr(I, dims), static_cast<uint64_t>(*a),
      toReduction(kind));
  return I.add(op.getResult(), "", Dist{}, false);
}

Result<Value> TraceBuilder::broadcastFrom(Value v,
                                          const std::vector<std::string> &dims,
                                          int64_t root, SourceLoc loc) {
  Impl &I = *pimpl;
  v = I.scalarAsTensor(v, loc);
  Result<int64_t> group = collectiveGroup(I, v, dims, "broadcast", loc);
  if (!group)
    return group.status();
  if (root < 0 || root >= *group)
    return I.error(loc,
                   "broadcast root " + std::to_string(root) +
                       " is out of range for " + std::to_string(*group) +
                       " ranks",
                   ErrorKind::Mesh);
  auto op =
      BroadcastFromOp::create(I.b, I.loc(loc), I.rec(v).value,
                              dimsAttr(I, dims), static_cast<uint64_t>(root));
  return I.add(op.getResult(), "", Dist{}, false);
}

Status TraceBuilder::declareActorMesh(const std::string &name,
                                      const std::string &cls,
                                      const std::string &mesh, SourceLoc loc) {
  Impl &I = *pimpl;
  if (Status room = I.makeRoomFor(name, loc); !room.isOk())
    return room;
  if (!I.lookupClass(cls))
    return I.error(loc, "unknown actor class '" + cls + "'");
  if (!I.lookupMesh(mesh))
    return I.error(loc, "unknown mesh '" + mesh + "'", ErrorKind::Mesh);
  OpBuilder::InsertionGuard guard(I.b);
  I.toDeclarations();
  ActorMeshOp::create(I.b, I.loc(loc), name, cls, mesh);
  return Status();
}

bool TraceBuilder::hasActorMesh(const std::string &name) const {
  return isa_and_nonnull<ActorMeshOp>(
      SymbolTable::lookupSymbolIn(*pimpl->module, name));
}

/// Shared by call and broadcast: checks and places the arguments, returns
/// the operands and the global result types.
static Result<std::pair<SmallVector<mlir::Value>, SmallVector<Type>>>
prepareInvoke(TraceBuilder::Impl &I, const std::string &actorMesh,
              const std::string &endpoint, const std::vector<Value> &args,
              std::string &mesh, std::vector<Dist> &resultDists,
              const SourceLoc &loc) {
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Function)
    return I.error(loc,
                   "endpoints are called from compiled functions "
                   "(calls between actors are not supported)",
                   ErrorKind::Unsupported);
  auto am = dyn_cast_or_null<ActorMeshOp>(
      SymbolTable::lookupSymbolIn(*I.module, actorMesh));
  if (!am)
    return I.error(loc, "unknown actor mesh '" + actorMesh + "'",
                   ErrorKind::Mesh);
  ActorClassOp c = I.lookupClass(am.getActorClass().str());
  auto ep =
      c ? dyn_cast_or_null<EndpointOp>(SymbolTable::lookupSymbolIn(c, endpoint))
        : EndpointOp();
  if (!ep)
    return I.error(loc, "actor class '" + am.getActorClass().str() +
                            "' has no endpoint '" + endpoint + "'");
  mesh = am.getMesh().str();
  MeshOpInterface m = I.lookupMesh(mesh);
  ArrayRef<Type> params = ep.getArgumentTypes();
  if (params.size() != args.size())
    return I.error(loc, endpoint + "() takes " + std::to_string(params.size()) +
                            " arguments but was called with " +
                            std::to_string(args.size()));
  SmallVector<mlir::Value> operands;
  for (size_t i = 0; i < args.size(); ++i) {
    Result<ValueRecord *> r = I.get(args[i], loc);
    if (!r)
      return r.status();
    std::string what = "argument #" + std::to_string(i) + " of " + endpoint;
    auto local = dyn_cast<RankedTensorType>(params[i]);
    if (!local) {
      if ((*r)->value.getType() != params[i])
        return I.error(loc, what +
                                " must be a scalar of the endpoint's "
                                "type, got " +
                                I.typeStr(**r));
      operands.push_back((*r)->value);
      continue;
    }
    if ((*r)->scalar)
      return I.error(loc, what + " must be a tensor, got a scalar");
    Result<Value> handle = I.placeOn(args[i], mesh, loc);
    if (!handle)
      return handle.status();
    mlir::Value placed = I.rec(*handle).value;
    auto global = llvm::cast<RankedTensorType>(placed.getType());
    std::string error;
    FailureOr<SmallVector<int64_t>> shape =
        getLocalShape(global.getShape(), ep.getArgDist(i), m, error);
    if (failed(shape))
      return I.error(loc, what + ": " + error);
    if (ArrayRef<int64_t>(*shape) != local.getShape() ||
        global.getElementType() != local.getElementType()) {
      std::string l, g, p;
      llvm::raw_string_ostream ls(l), gs(g), ps(p);
      ls << local;
      gs << global;
      ps << RankedTensorType::get(*shape, global.getElementType());
      return I.error(loc, what + ": got " + g + " (per rank " + p +
                              ") but the endpoint was traced for per-rank " +
                              l);
    }
    operands.push_back(placed);
  }
  SmallVector<Type> results;
  resultDists.clear();
  for (unsigned i = 0; i < ep.getNumResults(); ++i) {
    Type t = ep.getResultTypes()[i];
    DistAttr dist = ep.getResultDist(i);
    Dist d = fromDistAttr(dist);
    resultDists.push_back(d);
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !dist) {
      results.push_back(t);
      continue;
    }
    SmallVector<int64_t> shape(tensor.getShape());
    SmallVector<int64_t> meshShape = m.getMeshShape();
    for (size_t d2 = 0; d2 < d.split.size() && d2 < shape.size(); ++d2)
      for (const std::string &name : d.split[d2]) {
        int64_t idx = m.getDimIndex(name);
        if (idx < 0)
          return I.error(loc,
                         "result #" + std::to_string(i) + " of " + endpoint +
                             " is split over '" + name + "', which mesh '" +
                             mesh + "' lacks",
                         ErrorKind::Mesh);
        shape[d2] *= meshShape[idx];
      }
    results.push_back(RankedTensorType::get(shape, tensor.getElementType()));
  }
  return std::make_pair(operands, results);
}

Result<std::vector<Value>> TraceBuilder::call(const std::string &actorMesh,
                                              const std::string &endpoint,
                                              const std::vector<Value> &args,
                                              SourceLoc loc) {
  Impl &I = *pimpl;
  std::string mesh;
  std::vector<Dist> dists;
  auto prepared = prepareInvoke(I, actorMesh, endpoint, args, mesh, dists, loc);
  if (!prepared)
    return prepared.status();
  auto callee = SymbolRefAttr::get(&I.ctx, actorMesh,
                                   {FlatSymbolRefAttr::get(&I.ctx, endpoint)});
  auto op = CallOp::create(I.b, I.loc(loc), TypeRange(prepared->second), callee,
                           prepared->first);
  std::vector<Value> out;
  for (unsigned i = 0; i < op.getNumResults(); ++i) {
    mlir::Value r = op.getResult(i);
    bool scalar = !isa<RankedTensorType>(r.getType());
    Dist d = dists[i];
    d.partial.reset(); // the call's global result is the reduced value
    out.push_back(I.add(r, scalar ? "" : mesh, d, scalar));
    I.rec(out.back()).needsAnnotation = !scalar;
  }
  return out;
}

Status TraceBuilder::broadcast(const std::string &actorMesh,
                               const std::string &endpoint,
                               const std::vector<Value> &args, SourceLoc loc) {
  Impl &I = *pimpl;
  std::string mesh;
  std::vector<Dist> dists;
  auto prepared = prepareInvoke(I, actorMesh, endpoint, args, mesh, dists, loc);
  if (!prepared)
    return prepared.status();
  auto callee = SymbolRefAttr::get(&I.ctx, actorMesh,
                                   {FlatSymbolRefAttr::get(&I.ctx, endpoint)});
  BroadcastOp::create(I.b, I.loc(loc), callee, prepared->first);
  return Status();
}

} // namespace monarch::frontend
