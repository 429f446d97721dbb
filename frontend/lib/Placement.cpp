//===- Placement.cpp - Feeds, transfers and sharding ------------*- C++ -*-===//
//
// Where values live: a controller value used on a mesh is fed, a mesh value
// used on another mesh is transferred, and `shard`/`replicate` annotate
// values with upstream `shard.shard` ops on the mesh's grid.
//
// Every source value on a mesh (a feed, a transfer, a call result) gets a
// producer annotation before tensor work first uses it, replicated unless
// asked otherwise: the upstream shard-partition pass crashes on segments
// where some inputs are annotated and others are not (see PipelineBugTest in
// tests/unit/PipelinePropertyTest.cpp). Values only passed to calls, fetches
// and transfers stay unannotated (an annotation there would make
// monarch-partition outline an identity endpoint). A later `shard` of a
// value nothing uses yet rewrites its annotation in place rather than
// stacking a second one on a used value (also a known upstream failure).
//
//===----------------------------------------------------------------------===//

#include "TraceBuilderImpl.h"

#include "monarch/Support/Knobs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <set>

using namespace mlir;

namespace monarch::frontend {

//===----------------------------------------------------------------------===//
// Impl: placement helpers
//===----------------------------------------------------------------------===//

Status TraceBuilder::Impl::checkDist(const std::string &mesh, const Dist &dist,
                                     const std::vector<int64_t> &shape,
                                     const SourceLoc &l,
                                     const std::string &what) {
  MeshOpInterface m = lookupMesh(mesh);
  if (!m)
    return error(l, "unknown mesh '" + mesh + "'", ErrorKind::Mesh);
  SmallVector<int64_t> meshShape = m.getMeshShape();
  std::vector<std::string> dimNames;
  for (StringRef n : m.getDimNames())
    dimNames.push_back(n.str());
  if (dist.split.size() > shape.size())
    return error(l,
                 what + " has rank " + std::to_string(shape.size()) +
                     " but the sharding names " +
                     std::to_string(dist.split.size()) + " dimensions",
                 ErrorKind::Sharding);
  for (size_t i = 0; i < dist.split.size(); ++i) {
    int64_t factor = 1;
    std::string names;
    for (const std::string &name : dist.split[i]) {
      int64_t idx = m.getDimIndex(name);
      if (idx < 0)
        return error(l,
                     "mesh '" + mesh + "' has no dimension '" + name +
                         "' (its dimensions: " + joinNames(dimNames) + ")",
                     ErrorKind::Mesh);
      factor *= meshShape[idx];
      names += (names.empty() ? "'" : ", '") + name + "'";
    }
    if (factor > 1 && shape[i] % factor != 0)
      return error(l,
                   "cannot split dimension " + std::to_string(i) + " of size " +
                       std::to_string(shape[i]) + " of " + what + " " +
                       shapeStr(shape) + " over mesh dimension " + names +
                       " of size " + std::to_string(factor) + ": " +
                       std::to_string(shape[i]) + " is not divisible by " +
                       std::to_string(factor),
                   ErrorKind::Sharding);
  }
  return Status();
}

Result<mlir::Value> TraceBuilder::Impl::sharding(const std::string &mesh,
                                                 const Dist &dist, int64_t rank,
                                                 const SourceLoc &l) {
  MeshOpInterface m = lookupMesh(mesh);
  if (!m)
    return error(l, "unknown mesh '" + mesh + "'", ErrorKind::Mesh);
  // At least one (empty) entry: upstream prints an empty split_axes as `[]`,
  // which its parser does not accept; `[[]]` is replicated at every rank
  // (monarch-partition turns it back into `[]` on 0-d values, the form
  // upstream propagation expects there).
  SmallVector<SmallVector<int16_t>> axes(std::max<int64_t>(rank, 1));
  for (size_t i = 0; i < dist.split.size() && i < axes.size(); ++i)
    for (const std::string &name : dist.split[i])
      axes[i].push_back(static_cast<int16_t>(m.getDimIndex(name)));
  while (axes.size() > 1 && axes.back().empty())
    axes.pop_back();
  SmallVector<shard::GridAxesAttr> attrs;
  for (auto &a : axes)
    attrs.push_back(shard::GridAxesAttr::get(&ctx, a));
  return shard::ShardingOp::create(b, loc(l), m.getGridRef(), attrs)
      .getResult();
}

Result<std::string>
TraceBuilder::Impl::placement(const std::vector<Value> &operands,
                              const SourceLoc &l) {
  Scope *scope = currentScope();
  if (!scope)
    return error(l, "no function or endpoint is being traced");
  if (scope->kind == Scope::Endpoint)
    return std::string();
  for (Value v : operands) {
    const ValueRecord &r = values[v.id];
    if (!r.scalar && !r.mesh.empty())
      return r.mesh;
  }
  if (!scope->defaultMesh.empty())
    return scope->defaultMesh;
  return error(l, "tensor work on controller values needs a mesh to run on: "
                  "give the compiled function one (@mc.compile(mesh=...)), "
                  "or compute inside an actor endpoint");
}

void TraceBuilder::Impl::annotate(Value v, const SourceLoc &l) {
  ValueRecord &r = values[v.id];
  if (r.scalar || r.mesh.empty())
    return;
  auto type = llvm::cast<RankedTensorType>(r.value.getType());
  // A sharding the user asked for is located at their `shard` call.
  SourceLoc at = r.shardLoc.file.empty() ? l : r.shardLoc;
  Result<mlir::Value> s = sharding(r.mesh, r.dist, type.getRank(), at);
  if (!s)
    return;
  auto op = shard::ShardOp::create(b, loc(at), r.value, *s, false);
  values[v.id].value = op.getResult();
  values[v.id].annotation = op;
}

Value TraceBuilder::Impl::scalarAsTensor(Value v, const SourceLoc &l) {
  if (v.id < 0 || v.id >= static_cast<int64_t>(values.size()) ||
      !values[v.id].scalar)
    return v;
  Scope *scope = currentScope();
  if (!scope || scope->kind != Scope::Endpoint)
    return v;
  mlir::Value s = values[v.id].value;
  mlir::Value t = tensor::FromElementsOp::create(
      b, loc(l), RankedTensorType::get({}, s.getType()), ValueRange{s});
  return add(t, "", Dist{}, false);
}

Result<Value> TraceBuilder::Impl::placeOn(Value v, const std::string &mesh,
                                          const SourceLoc &l) {
  ValueRecord &r = values[v.id];
  if (mesh.empty() || r.scalar || r.mesh == mesh)
    return v;
  auto cached = r.copies.find(mesh);
  if (cached != r.copies.end())
    return Value{cached->second};
  if (!lookupMesh(mesh))
    return error(l, "unknown mesh '" + mesh + "'", ErrorKind::Mesh);
  ArgType t = argTypeOf(r.value);
  Dist dist = r.dist;
  Value placed;
  if (auto c = r.value.getDefiningOp<arith::ConstantOp>()) {
    // A constant lives nowhere until work uses it: a copy of it on `mesh`,
    // neither fed nor transferred, and unannotated as constants on the
    // function's mesh are (passes clone it into the work that uses it).
    placed = add(b.clone(*c)->getResult(0), mesh, Dist{}, false);
    values[v.id].copies[mesh] = placed.id;
    return placed;
  }
  if (r.mesh.empty()) {
    if (Status s = checkDist(mesh, dist, t.shape,
                             dist.isReplicated() ? l : r.shardLoc, "tensor");
        !s)
      return s.status();
    auto feed = FeedOp::create(b, loc(l), r.value, mesh);
    SourceLoc shardLoc = r.shardLoc;
    placed = add(feed.getResult(), mesh, dist, false);
    values[placed.id].shardLoc = shardLoc;
  } else {
    if (!checkDist(mesh, dist, t.shape, l, "tensor"))
      dist = Dist{};
    auto moved =
        TransferOp::create(b, loc(l), r.value.getType(), r.value, r.mesh, mesh);
    placed = add(moved.getResult(), mesh, dist, false);
  }
  values[placed.id].needsAnnotation = true;
  values[v.id].copies[mesh] = placed.id;
  return placed;
}

Result<mlir::Value> TraceBuilder::Impl::materialize(Value v,
                                                    const std::string &mesh,
                                                    const SourceLoc &l) {
  Result<Value> placed = placeOn(v, mesh, l);
  if (!placed)
    return placed.status();
  ValueRecord &r = values[placed->id];
  if (r.needsAnnotation && !r.annotation) {
    annotate(*placed, l);
    values[placed->id].needsAnnotation = false;
  }
  return values[placed->id].value;
}

//===----------------------------------------------------------------------===//
// Placement and sharding
//===----------------------------------------------------------------------===//

Result<Value> TraceBuilder::feed(Value v, const std::string &mesh,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  if (!(*r)->mesh.empty())
    return I.error(loc,
                   "the value already lives on mesh '" + (*r)->mesh +
                       "'; use transfer to move it",
                   ErrorKind::Mesh);
  if ((*r)->scalar)
    return I.error(loc, "scalars are not fed: pass them to calls directly");
  return I.placeOn(v, mesh, loc);
}

Result<Value> TraceBuilder::fetch(Value v, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  if ((*r)->mesh.empty())
    return I.error(loc, "the value is not on a mesh");
  auto op = FetchOp::create(I.b, I.loc(loc), (*r)->value, (*r)->mesh);
  return I.add(op.getResult(), "", Dist{}, false);
}

Result<Value> TraceBuilder::place(Value v, const std::string &mesh,
                                  SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  if (I.currentScope()->kind != Scope::Function)
    return I.error(loc, "values are placed on meshes in compiled functions");
  return I.placeOn(v, mesh, loc);
}

Result<Value> TraceBuilder::transfer(Value v, const std::string &mesh,
                                     SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  if ((*r)->mesh.empty())
    return I.error(loc, "the value is on the controller; feed it instead");
  if ((*r)->mesh == mesh)
    return v;
  return I.placeOn(v, mesh, loc);
}

Result<Value>
TraceBuilder::shard(Value v,
                    const std::vector<std::pair<std::string, int64_t>> &split,
                    const std::string &mesh, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.status();
  Scope *scope = I.currentScope();
  if (scope->kind == Scope::Endpoint)
    return I.error(loc, "shard/replicate place data in compiled functions; "
                        "endpoint bodies are per-rank code (use collectives "
                        "such as all_gather there)");
  if ((*r)->scalar)
    return I.error(loc, "only tensors can be sharded, not scalars",
                   ErrorKind::Sharding);
  ArgType t = I.argTypeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(t.shape.size());
  Dist dist;
  dist.split.resize(rank);
  std::set<std::string> used;
  for (const auto &[meshDim, tensorDim] : split) {
    int64_t d = tensorDim < 0 ? tensorDim + rank : tensorDim;
    if (d < 0 || d >= rank)
      return I.error(loc,
                     "tensor dimension " + std::to_string(tensorDim) +
                         " is out of range for a tensor of shape " +
                         shapeStr(t.shape),
                     ErrorKind::Shape);
    if (!used.insert(meshDim).second)
      return I.error(loc, "mesh dimension '" + meshDim + "' is used twice",
                     ErrorKind::Sharding);
    dist.split[d].push_back(meshDim);
    // Upstream shard-partition crashes on a dimension split over two grid
    // axes (docs/frontend.md); refuse it rather than crash the compiler.
    // The own partitioner (MONARCH_PARTITION_ENGINE=own) splits it.
    if (dist.split[d].size() > 1 &&
        knobs::getString(knobs::Id::PartitionEngine).value != "own")
      return I.error(loc,
                     "unsupported: splitting tensor dimension " +
                         std::to_string(d) +
                         " over several mesh "
                         "dimensions (" +
                         joinNames(dist.split[d]) +
                         "); split it over one of them, or partition with "
                         "MONARCH_PARTITION_ENGINE=own",
                     ErrorKind::Unsupported);
  }
  std::string target = !(*r)->mesh.empty() ? (*r)->mesh
                       : !mesh.empty()     ? mesh
                                           : scope->defaultMesh;
  if (!target.empty())
    if (Status s = I.checkDist(target, dist, t.shape, loc, "tensor"); !s)
      return s.status();

  if ((*r)->mesh.empty()) {
    // A controller value: the sharding applies where it is fed.
    ValueRecord copy;
    copy.value = (*r)->value;
    copy.dist = dist;
    copy.scope = (*r)->scope;
    copy.shardLoc = loc;
    I.values.push_back(copy);
    Value pending{static_cast<int64_t>(I.values.size()) - 1};
    if (target.empty())
      return pending;
    // Asked for explicitly: fed and annotated here, in source order.
    Result<mlir::Value> placed = I.materialize(pending, target, loc);
    if (!placed)
      return placed.status();
    return Value{I.values[pending.id].copies[target]};
  }
  if (!mesh.empty() && mesh != (*r)->mesh) {
    Result<Value> moved = I.placeOn(v, mesh, loc);
    if (!moved)
      return moved;
    return shard(*moved, split, mesh, loc);
  }

  // The handle `v` keeps its own distribution whatever `mc.shard` makes of
  // the value: it decides how `v` arrives in an endpoint it is passed to
  // (each rank's shard), so `y = mc.shard(x, ...)` must not change what `x`
  // is (it did, through the record both shared).
  ValueRecord &rec = I.rec(v);
  auto type = llvm::cast<RankedTensorType>(rec.value.getType());
  Result<mlir::Value> s = I.sharding(rec.mesh, dist, type.getRank(), loc);
  if (!s)
    return s.status();
  // A fresh result gets a producer annotation (later uses of `v` read the
  // annotated value: the same numbers); a used or annotated value is
  // resharded for its later users.
  //
  // Owner computes: `mc.replicate(y)` of computed work asks for the whole
  // value where it is used, not that the work producing it run replicated
  // (a producer annotation made upstream propagation gather the operands of
  // `mc.replicate(mc.shard(x, gpus=0) @ w)` and compute the whole product on
  // every rank); the work keeps its operands' layout and the result is
  // gathered after it.
  bool gatherAfter =
      dist.isReplicated() && rec.value.use_empty() &&
      isa_and_nonnull<linalg::LinalgOp>(rec.value.getDefiningOp());
  bool forUsers = gatherAfter || !rec.value.use_empty() ||
                  isa<BlockArgument>(rec.value) ||
                  isa_and_nonnull<shard::ShardOp>(rec.value.getDefiningOp());
  auto op = shard::ShardOp::create(I.b, I.loc(loc), rec.value, *s, forUsers);
  std::string meshName = rec.mesh;
  if (!forUsers) {
    rec.value = op.getResult();
    rec.needsAnnotation = false;
  }
  Value out = I.add(op.getResult(), meshName, dist, false);
  if (!forUsers)
    I.rec(out).annotation = op;
  return out;
}

Result<Value> TraceBuilder::replicate(Value v, SourceLoc loc) {
  return shard(v, {}, "", loc);
}

ValueInfo TraceBuilder::info(Value v) const {
  ValueInfo out;
  if (v.id < 0 || v.id >= static_cast<int64_t>(pimpl->values.size()))
    return out;
  const ValueRecord &r = pimpl->values[v.id];
  ArgType t = pimpl->argTypeOf(r.value);
  out.shape = t.shape;
  out.dtype = t.dtype;
  out.scalar = t.scalar;
  out.mesh = r.mesh;
  out.dist = r.dist;
  return out;
}

Result<std::vector<int64_t>>
TraceBuilder::localShape(const std::vector<int64_t> &shape, const Dist &dist,
                         const std::string &mesh) const {
  Impl &I = *pimpl;
  MeshOpInterface m = I.lookupMesh(mesh);
  if (!m)
    return I.error({}, "unknown mesh '" + mesh + "'", ErrorKind::Mesh);
  std::vector<int64_t> local = shape;
  SmallVector<int64_t> meshShape = m.getMeshShape();
  for (size_t i = 0; i < dist.split.size() && i < local.size(); ++i)
    for (const std::string &name : dist.split[i]) {
      int64_t idx = m.getDimIndex(name);
      if (idx < 0)
        return I.error({},
                       "mesh '" + mesh + "' has no dimension '" + name + "'",
                       ErrorKind::Mesh);
      if (local[i] % meshShape[idx] != 0)
        return I.error({},
                       "dimension " + std::to_string(i) + " of size " +
                           std::to_string(shape[i]) +
                           " is not divisible by mesh dimension '" + name +
                           "' of size " + std::to_string(meshShape[idx]),
                       ErrorKind::Sharding);
      local[i] /= meshShape[idx];
    }
  return local;
}

} // namespace monarch::frontend
