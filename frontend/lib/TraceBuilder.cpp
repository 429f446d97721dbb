//===- TraceBuilder.cpp - Meshes, functions and placement -------*- C++ -*-===//
//
// The core of the TraceBuilder: value handles, scopes, meshes, controller
// functions, and automatic placement (feeds, transfers, fetches) with the
// `shard` annotations that tell the partitioner where data lives. Tensor
// ops are in TensorOps.cpp, actors in Actors.cpp, lowering in Lowering.cpp.
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

#include "monarch/Transforms/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;

namespace monarch::frontend {

//===----------------------------------------------------------------------===//
// Small public types
//===----------------------------------------------------------------------===//

std::string SourceLoc::str() const {
  if (file.empty())
    return "<unknown>";
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

std::string Error::str() const {
  if (loc.file.empty())
    return "error: " + message;
  return loc.str() + ": error: " + message;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  case DType::I32:
    return "int32";
  case DType::I1:
    return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &name) {
  if (name == "float32" || name == "f32")
    return DType::F32;
  if (name == "float16" || name == "f16")
    return DType::F16;
  if (name == "bfloat16" || name == "bf16")
    return DType::BF16;
  if (name == "int32" || name == "i32")
    return DType::I32;
  if (name == "bool" || name == "i1")
    return DType::I1;
  return std::nullopt;
}

std::optional<ReduceKind> parseReduceKind(const std::string &name) {
  if (name == "sum")
    return ReduceKind::Sum;
  if (name == "prod")
    return ReduceKind::Prod;
  if (name == "max")
    return ReduceKind::Max;
  if (name == "min")
    return ReduceKind::Min;
  if (name == "avg" || name == "mean")
    return ReduceKind::Avg;
  return std::nullopt;
}

bool Dist::isReplicated() const {
  if (partial)
    return false;
  for (const auto &names : split)
    if (!names.empty())
      return false;
  return true;
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    out += ",";
  return out + ")";
}

//===----------------------------------------------------------------------===//
// Impl helpers
//===----------------------------------------------------------------------===//

static DialectRegistry makeRegistry() {
  DialectRegistry registry;
  registerMonarchDialects(registry);
  return registry;
}

TraceBuilder::Impl::Impl()
    : ctx(makeRegistry(), MLIRContext::Threading::DISABLED), b(&ctx) {
  ctx.loadDialect<MonarchDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect, linalg::LinalgDialect,
                  shard::ShardDialect, math::MathDialect>();
  ctx.printOpOnDiagnostic(false);
  module = ModuleOp::create(UnknownLoc::get(&ctx));
  b.setInsertionPointToEnd(module->getBody());
}

Location TraceBuilder::Impl::loc(const SourceLoc &l) {
  if (l.file.empty())
    return UnknownLoc::get(&ctx);
  return FileLineColLoc::get(&ctx, l.file, l.line, l.col);
}

Error TraceBuilder::Impl::error(const SourceLoc &l, std::string message) const {
  return Error{std::move(message), l};
}

std::string
TraceBuilder::Impl::collectDiagnostics(llvm::function_ref<void()> fn) {
  std::string text;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      llvm::raw_string_ostream os(text);
      if (!text.empty())
        os << "\n";
      os << diag.getLocation() << ": " << diag.str();
      for (Diagnostic &note : diag.getNotes())
        os << "\n  note: " << note.str();
      return success();
    });
    fn();
  }
  return text;
}

Scope *TraceBuilder::Impl::currentScope() {
  return stack.empty() ? nullptr : &scopes[stack.back()];
}

Result<ValueRecord *> TraceBuilder::Impl::get(Value v, const SourceLoc &l) {
  if (v.id < 0 || v.id >= static_cast<int64_t>(values.size()))
    return error(l, "invalid value handle");
  ValueRecord &r = values[v.id];
  if (stack.empty() || r.scope != stack.back()) {
    const Scope &owner = scopes[r.scope];
    return error(l, std::string("this value belongs to ") +
                        (owner.kind == Scope::Endpoint
                             ? "an endpoint body"
                             : "another compiled function") +
                        (scopes[r.scope].open
                             ? "; endpoints are isolated: pass it as an "
                               "argument instead"
                             : " that has finished tracing"));
  }
  return &r;
}

Value TraceBuilder::Impl::add(mlir::Value value, std::string mesh, Dist dist,
                              bool scalar) {
  ValueRecord r;
  r.value = value;
  r.mesh = std::move(mesh);
  r.dist = std::move(dist);
  r.scalar = scalar;
  r.scope = stack.empty() ? -1 : stack.back();
  values.push_back(std::move(r));
  return Value{static_cast<int64_t>(values.size()) - 1};
}

void TraceBuilder::Impl::toDeclarations() {
  for (Operation &op : module->getBody()->getOperations())
    if (isa<func::FuncOp>(op)) {
      b.setInsertionPoint(&op);
      return;
    }
  b.setInsertionPointToEnd(module->getBody());
}

MeshOpInterface TraceBuilder::Impl::lookupMesh(llvm::StringRef name) {
  return dyn_cast_or_null<MeshOpInterface>(
      SymbolTable::lookupSymbolIn(*module, name));
}

ActorClassOp TraceBuilder::Impl::lookupClass(llvm::StringRef name) {
  return dyn_cast_or_null<ActorClassOp>(
      SymbolTable::lookupSymbolIn(*module, name));
}

Type TraceBuilder::Impl::elementType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I1:
    return b.getI1Type();
  }
  return b.getF32Type();
}

std::optional<DType> TraceBuilder::Impl::dtypeOf(Type t) const {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(1))
    return DType::I1;
  return std::nullopt;
}

Type TraceBuilder::Impl::typeOf(const ArgType &t) {
  if (t.scalar)
    return elementType(t.dtype);
  return RankedTensorType::get(t.shape, elementType(t.dtype));
}

ArgType TraceBuilder::Impl::argTypeOf(mlir::Value v) const {
  ArgType t;
  if (auto tensor = dyn_cast<RankedTensorType>(v.getType())) {
    t.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    t.dtype = dtypeOf(tensor.getElementType()).value_or(DType::F32);
  } else {
    t.scalar = true;
    t.dtype = dtypeOf(v.getType()).value_or(DType::F32);
  }
  return t;
}

std::string TraceBuilder::Impl::typeStr(const ValueRecord &r) const {
  ArgType t = argTypeOf(r.value);
  if (t.scalar)
    return std::string("scalar ") + dtypeName(t.dtype);
  return shapeStr(t.shape) + " " + dtypeName(t.dtype);
}

Status TraceBuilder::Impl::checkDist(const std::string &mesh, const Dist &dist,
                                     const std::vector<int64_t> &shape,
                                     const SourceLoc &l,
                                     const std::string &what) {
  MeshOpInterface m = lookupMesh(mesh);
  if (!m)
    return error(l, "unknown mesh '" + mesh + "'");
  SmallVector<int64_t> meshShape = m.getMeshShape();
  std::vector<std::string> dimNames;
  for (StringRef n : m.getDimNames())
    dimNames.push_back(n.str());
  if (dist.split.size() > shape.size())
    return error(l, what + " has rank " + std::to_string(shape.size()) +
                        " but the sharding names " +
                        std::to_string(dist.split.size()) + " dimensions");
  for (size_t i = 0; i < dist.split.size(); ++i) {
    int64_t factor = 1;
    std::string names;
    for (const std::string &name : dist.split[i]) {
      int64_t idx = m.getDimIndex(name);
      if (idx < 0)
        return error(l, "mesh '" + mesh + "' has no dimension '" + name +
                            "' (its dimensions: " + joinNames(dimNames) + ")");
      factor *= meshShape[idx];
      names += (names.empty() ? "'" : ", '") + name + "'";
    }
    if (factor > 1 && shape[i] % factor != 0)
      return error(l, "cannot split dimension " + std::to_string(i) +
                          " of size " + std::to_string(shape[i]) + " of " +
                          what + " " + shapeStr(shape) +
                          " over mesh dimension " + names + " of size " +
                          std::to_string(factor) + ": " +
                          std::to_string(shape[i]) + " is not divisible by " +
                          std::to_string(factor));
  }
  return Status();
}

Result<mlir::Value> TraceBuilder::Impl::sharding(const std::string &mesh,
                                                 const Dist &dist, int64_t rank,
                                                 const SourceLoc &l) {
  MeshOpInterface m = lookupMesh(mesh);
  if (!m)
    return error(l, "unknown mesh '" + mesh + "'");
  SmallVector<SmallVector<int16_t>> axes(rank);
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

Result<Value> TraceBuilder::Impl::placeOn(Value v, const std::string &mesh,
                                          const SourceLoc &l) {
  ValueRecord &r = values[v.id];
  if (mesh.empty() || r.scalar || r.mesh == mesh)
    return v;
  auto cached = r.copies.find(mesh);
  if (cached != r.copies.end())
    return Value{cached->second};
  if (!lookupMesh(mesh))
    return error(l, "unknown mesh '" + mesh + "'");
  ArgType t = argTypeOf(r.value);
  Dist dist = r.dist;
  Value placed;
  if (r.mesh.empty()) {
    if (Status s = checkDist(mesh, dist, t.shape,
                             dist.isReplicated() ? l : r.shardLoc, "tensor");
        !s)
      return s.error();
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
    return placed.error();
  ValueRecord &r = values[placed->id];
  if (r.needsAnnotation && !r.annotation) {
    annotate(*placed, l);
    values[placed->id].needsAnnotation = false;
  }
  return values[placed->id].value;
}

//===----------------------------------------------------------------------===//
// TraceBuilder: construction, meshes
//===----------------------------------------------------------------------===//

TraceBuilder::TraceBuilder() : pimpl(std::make_unique<Impl>()) {}
TraceBuilder::~TraceBuilder() = default;
TraceBuilder::TraceBuilder(TraceBuilder &&) noexcept = default;
TraceBuilder &TraceBuilder::operator=(TraceBuilder &&) noexcept = default;

static bool isIdentifier(const std::string &name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '$' || c == '-'))
      return false;
  return !isdigit(static_cast<unsigned char>(name[0]));
}

/// A symbol name not used in `module` yet, based on `base`.
static std::string freshSymbol(ModuleOp module, const std::string &base) {
  std::string name = base;
  for (int i = 1; SymbolTable::lookupSymbolIn(module, name); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

Status TraceBuilder::declareMesh(const std::string &name,
                                 const std::vector<MeshDim> &dims,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  if (!isIdentifier(name))
    return I.error(loc, "invalid mesh name '" + name + "'");
  if (SymbolTable::lookupSymbolIn(*I.module, name))
    return I.error(loc, "the name '" + name + "' is already declared");
  if (dims.empty())
    return I.error(loc, "a mesh needs at least one dimension");
  SmallVector<StringRef> names;
  SmallVector<int64_t> shape;
  std::set<std::string> seen;
  for (const MeshDim &d : dims) {
    if (!isIdentifier(d.name))
      return I.error(loc, "invalid mesh dimension name '" + d.name + "'");
    if (!seen.insert(d.name).second)
      return I.error(loc, "mesh dimension '" + d.name + "' appears twice");
    if (d.size < 1)
      return I.error(loc, "mesh dimension '" + d.name + "' has size " +
                              std::to_string(d.size) + "; sizes must be >= 1");
    names.push_back(d.name);
    shape.push_back(d.size);
  }
  OpBuilder::InsertionGuard guard(I.b);
  I.toDeclarations();
  std::string grid = freshSymbol(*I.module, name + "_grid");
  shard::GridOp::create(I.b, I.loc(loc), grid, shape);
  ProcMeshOp::create(I.b, I.loc(loc), name, I.b.getStrArrayAttr(names), shape,
                     grid);
  return Status();
}

Status TraceBuilder::declareSlice(const std::string &name,
                                  const std::string &parent,
                                  const std::vector<DimRange> &ranges,
                                  SourceLoc loc) {
  Impl &I = *pimpl;
  if (!isIdentifier(name))
    return I.error(loc, "invalid mesh name '" + name + "'");
  if (SymbolTable::lookupSymbolIn(*I.module, name))
    return I.error(loc, "the name '" + name + "' is already declared");
  MeshOpInterface p = I.lookupMesh(parent);
  if (!p)
    return I.error(loc, "unknown mesh '" + parent + "'");
  SmallVector<StringRef> dims = p.getDimNames();
  SmallVector<int64_t> shape = p.getMeshShape();
  SmallVector<int64_t> starts(dims.size(), 0), ends(shape);
  std::vector<std::string> dimNames;
  for (StringRef d : dims)
    dimNames.push_back(d.str());
  std::set<std::string> seen;
  for (const DimRange &r : ranges) {
    int64_t idx = p.getDimIndex(r.name);
    if (idx < 0)
      return I.error(loc, "mesh '" + parent + "' has no dimension '" + r.name +
                              "' (its dimensions: " + joinNames(dimNames) +
                              ")");
    if (!seen.insert(r.name).second)
      return I.error(loc, "dimension '" + r.name + "' is sliced twice");
    if (r.start < 0 || r.end > shape[idx] || r.start >= r.end)
      return I.error(loc, "slice " + std::to_string(r.start) + ":" +
                              std::to_string(r.end) + " of dimension '" +
                              r.name + "' (size " + std::to_string(shape[idx]) +
                              ") is empty or out of range");
    starts[idx] = r.start;
    ends[idx] = r.end;
  }
  SmallVector<int64_t> sliceShape;
  for (size_t i = 0; i < dims.size(); ++i)
    sliceShape.push_back(ends[i] - starts[i]);
  OpBuilder::InsertionGuard guard(I.b);
  // Slices go after their parent (and the parent's other declarations).
  I.toDeclarations();
  std::string grid = freshSymbol(*I.module, name + "_grid");
  shard::GridOp::create(I.b, I.loc(loc), grid, sliceShape);
  MeshSliceOp::create(I.b, I.loc(loc), name, parent, I.b.getStrArrayAttr(dims),
                      starts, ends, grid);
  return Status();
}

bool TraceBuilder::hasMesh(const std::string &name) const {
  return static_cast<bool>(pimpl->lookupMesh(name));
}

Result<std::vector<MeshDim>>
TraceBuilder::meshDims(const std::string &name) const {
  MeshOpInterface m = pimpl->lookupMesh(name);
  if (!m)
    return pimpl->error({}, "unknown mesh '" + name + "'");
  std::vector<MeshDim> dims;
  SmallVector<int64_t> shape = m.getMeshShape();
  SmallVector<StringRef> names = m.getDimNames();
  for (size_t i = 0; i < names.size(); ++i)
    dims.push_back({names[i].str(), shape[i]});
  return dims;
}

//===----------------------------------------------------------------------===//
// Controller functions
//===----------------------------------------------------------------------===//

Result<std::vector<Value>>
TraceBuilder::beginFunction(const std::string &name,
                            const std::vector<ArgType> &args,
                            const std::string &defaultMesh, SourceLoc loc) {
  Impl &I = *pimpl;
  if (!I.stack.empty())
    return I.error(loc, "a function or endpoint is already being traced");
  if (!isIdentifier(name))
    return I.error(loc, "invalid function name '" + name + "'");
  if (SymbolTable::lookupSymbolIn(*I.module, name))
    return I.error(loc, "the name '" + name + "' is already declared");
  if (!defaultMesh.empty() && !I.lookupMesh(defaultMesh))
    return I.error(loc, "unknown mesh '" + defaultMesh + "'");
  SmallVector<Type> types;
  for (const ArgType &a : args) {
    for (int64_t d : a.shape)
      if (d < 0)
        return I.error(loc, "argument shapes must be static and non-negative");
    types.push_back(I.typeOf(a));
  }
  I.b.setInsertionPointToEnd(I.module->getBody());
  auto fn = func::FuncOp::create(I.b, I.loc(loc), name,
                                 I.b.getFunctionType(types, {}));
  Block *entry = fn.addEntryBlock();
  Scope scope;
  scope.kind = Scope::Function;
  scope.op = fn;
  scope.defaultMesh = defaultMesh;
  I.scopes.push_back(scope);
  I.stack.push_back(static_cast<int>(I.scopes.size()) - 1);
  I.b.setInsertionPointToStart(entry);
  std::vector<Value> handles;
  for (size_t i = 0; i < args.size(); ++i)
    handles.push_back(I.add(entry->getArgument(i), "", Dist{}, args[i].scalar));
  return handles;
}

/// Drops tensor work nothing uses (shard-partition crashes on dead ops).
static void eraseDeadTensorOps(func::FuncOp fn) {
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> ops;
    for (Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (op->getNumResults() == 0 || !op->use_empty())
        continue;
      StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
      if (ns == "linalg" || ns == "tensor" || ns == "arith" || ns == "math" ||
          ns == "shard") {
        op->erase();
        changed = true;
      }
    }
  }
}

Status TraceBuilder::endFunction(const std::vector<Value> &results,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Function)
    return I.error(loc, "no function is being traced");
  SmallVector<mlir::Value> outs;
  for (Value v : results) {
    Result<ValueRecord *> r = I.get(v, loc);
    if (!r)
      return r.error();
    if ((*r)->mesh.empty()) {
      outs.push_back((*r)->value);
      continue;
    }
    auto fetch = FetchOp::create(I.b, I.loc(loc), (*r)->value, (*r)->mesh);
    outs.push_back(fetch.getResult());
  }
  auto fn = llvm::cast<func::FuncOp>(scope->op);
  func::ReturnOp::create(I.b, I.loc(loc), outs);
  SmallVector<Type> resultTypes;
  for (mlir::Value v : outs)
    resultTypes.push_back(v.getType());
  fn.setFunctionType(
      I.b.getFunctionType(fn.getArgumentTypes(), TypeRange(resultTypes)));
  eraseDeadTensorOps(fn);
  scope->open = false;
  I.stack.pop_back();
  I.b.setInsertionPointToEnd(I.module->getBody());
  if (Status s = verify(); !s)
    return I.error(loc, "the traced function does not verify:\n" +
                            s.error().message);
  return Status();
}

//===----------------------------------------------------------------------===//
// Placement and sharding
//===----------------------------------------------------------------------===//

Result<Value> TraceBuilder::feed(Value v, const std::string &mesh,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.error();
  if (!(*r)->mesh.empty())
    return I.error(loc, "the value already lives on mesh '" + (*r)->mesh +
                            "'; use transfer to move it");
  if ((*r)->scalar)
    return I.error(loc, "scalars are not fed: pass them to calls directly");
  return I.placeOn(v, mesh, loc);
}

Result<Value> TraceBuilder::fetch(Value v, SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.error();
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
    return r.error();
  if (I.currentScope()->kind != Scope::Function)
    return I.error(loc, "values are placed on meshes in compiled functions");
  return I.placeOn(v, mesh, loc);
}

Result<Value> TraceBuilder::transfer(Value v, const std::string &mesh,
                                     SourceLoc loc) {
  Impl &I = *pimpl;
  Result<ValueRecord *> r = I.get(v, loc);
  if (!r)
    return r.error();
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
    return r.error();
  Scope *scope = I.currentScope();
  if (scope->kind == Scope::Endpoint)
    return I.error(loc, "shard/replicate place data in compiled functions; "
                        "endpoint bodies are per-rank code (use collectives "
                        "such as all_gather there)");
  if ((*r)->scalar)
    return I.error(loc, "only tensors can be sharded, not scalars");
  ArgType t = I.argTypeOf((*r)->value);
  int64_t rank = static_cast<int64_t>(t.shape.size());
  Dist dist;
  dist.split.resize(rank);
  std::set<std::string> used;
  for (const auto &[meshDim, tensorDim] : split) {
    int64_t d = tensorDim < 0 ? tensorDim + rank : tensorDim;
    if (d < 0 || d >= rank)
      return I.error(loc, "tensor dimension " + std::to_string(tensorDim) +
                              " is out of range for a tensor of shape " +
                              shapeStr(t.shape));
    if (!used.insert(meshDim).second)
      return I.error(loc, "mesh dimension '" + meshDim + "' is used twice");
    dist.split[d].push_back(meshDim);
  }
  std::string target = !(*r)->mesh.empty() ? (*r)->mesh
                       : !mesh.empty()     ? mesh
                                           : scope->defaultMesh;
  if (!target.empty())
    if (Status s = I.checkDist(target, dist, t.shape, loc, "tensor"); !s)
      return s.error();

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
      return placed.error();
    return Value{I.values[pending.id].copies[target]};
  }
  if (!mesh.empty() && mesh != (*r)->mesh) {
    Result<Value> moved = I.placeOn(v, mesh, loc);
    if (!moved)
      return moved;
    return shard(*moved, split, mesh, loc);
  }

  ValueRecord &rec = I.rec(v);
  auto type = llvm::cast<RankedTensorType>(rec.value.getType());
  // An annotation nothing uses yet is rewritten in place.
  if (rec.annotation && rec.value.use_empty()) {
    auto op = llvm::cast<shard::ShardOp>(rec.annotation);
    OpBuilder::InsertionGuard guard(I.b);
    I.b.setInsertionPoint(op);
    Result<mlir::Value> s = I.sharding(rec.mesh, dist, type.getRank(), loc);
    if (!s)
      return s.error();
    Operation *old = op.getSharding().getDefiningOp();
    op.getShardingMutable().assign(*s);
    if (old && old->use_empty())
      old->erase();
    rec.dist = dist;
    return v;
  }
  Result<mlir::Value> s = I.sharding(rec.mesh, dist, type.getRank(), loc);
  if (!s)
    return s.error();
  // A fresh result gets a producer annotation; a used value is resharded
  // for its later users.
  bool forUsers = !rec.value.use_empty() || isa<BlockArgument>(rec.value) ||
                  isa_and_nonnull<shard::ShardOp>(rec.value.getDefiningOp());
  auto op = shard::ShardOp::create(I.b, I.loc(loc), rec.value, *s, forUsers);
  if (!forUsers) {
    // Every handle of the value now sees the annotated value.
    rec.value = op.getResult();
    rec.annotation = op;
    rec.dist = dist;
    rec.needsAnnotation = false;
    return v;
  }
  std::string meshName = rec.mesh;
  return I.add(op.getResult(), meshName, dist, false);
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
    return I.error({}, "unknown mesh '" + mesh + "'");
  std::vector<int64_t> local = shape;
  SmallVector<int64_t> meshShape = m.getMeshShape();
  for (size_t i = 0; i < dist.split.size() && i < local.size(); ++i)
    for (const std::string &name : dist.split[i]) {
      int64_t idx = m.getDimIndex(name);
      if (idx < 0)
        return I.error({},
                       "mesh '" + mesh + "' has no dimension '" + name + "'");
      if (local[i] % meshShape[idx] != 0)
        return I.error({}, "dimension " + std::to_string(i) + " of size " +
                               std::to_string(shape[i]) +
                               " is not divisible by mesh dimension '" + name +
                               "' of size " + std::to_string(meshShape[idx]));
      local[i] /= meshShape[idx];
    }
  return local;
}

Status TraceBuilder::verify() const {
  Impl &I = *pimpl;
  LogicalResult ok = success();
  std::string diags =
      I.collectDiagnostics([&] { ok = mlir::verify(*I.module); });
  if (failed(ok))
    return I.error({}, diags.empty() ? "verification failed" : diags);
  return Status();
}

std::string TraceBuilder::str(bool debugInfo) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (debugInfo) {
    // Locations inline on each op (no #loc aliases): readable, greppable.
    flags.enableDebugInfo(true, /*prettyForm=*/false);
    flags.useLocalScope();
  }
  pimpl->module->print(os, flags);
  return text;
}

} // namespace monarch::frontend
