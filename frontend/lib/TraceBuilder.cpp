//===- TraceBuilder.cpp - Values, scopes, meshes and functions --*- C++ -*-===//
//
// The core of the TraceBuilder: value handles and scopes, meshes and
// slices, and controller functions (their results are fetched, dead tensor
// work is dropped, the module is verified). Placement and sharding are in
// Placement.cpp, tensor ops in Elementwise.cpp and TensorOps.cpp, actors in
// Actors.cpp. The module goes to the compiler as a copy (TraceBuilderMLIR.h,
// at the end of this file).
//
//===----------------------------------------------------------------------===//

#include "TraceBuilderImpl.h"

#include "monarch/Frontend/TraceBuilderMLIR.h"
#include "monarch/IR/DeadWork.h"
#include "monarch/IR/ElementTypes.h"
#include "monarch/IR/SourceLocation.h"

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

bool isTraceableDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::I32 || dtype == DType::I1;
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

/// The tracer loads only the dialects it builds; the compile driver adds
/// what the passes need to the same context before lowering a copy.
TraceBuilder::Impl::Impl() : ctx(MLIRContext::Threading::DISABLED), b(&ctx) {
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

Status TraceBuilder::Impl::error(const SourceLoc &l, std::string message,
                                 ErrorKind kind) const {
  return Status(StatusCode::InvalidArgument, std::move(message), l, kind);
}

Status TraceBuilder::Impl::dtypeError(const SourceLoc &l, DType dtype) const {
  return error(l,
               std::string("element type ") + dtypeName(dtype) +
                   " cannot be traced (supported: float32, float16, "
                   "bfloat16, int32, bool)",
               ErrorKind::Unsupported);
}

std::string
TraceBuilder::Impl::collectDiagnostics(llvm::function_ref<void()> fn) {
  std::string text;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Remark) {
        printRemark(diag);
        return success();
      }
      llvm::raw_string_ostream os(text);
      printDiagnostic(diag, os);
      return success();
    });
    fn();
  }
  // (Joined into one message: no newline after the last.)
  if (!text.empty() && text.back() == '\n')
    text.pop_back();
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
  case DType::F64:
    return b.getF64Type();
  case DType::I8:
    return b.getI8Type();
  case DType::I16:
    return b.getI16Type();
  case DType::I64:
    return b.getI64Type();
  case DType::UI8:
    return b.getIntegerType(8, /*isSigned=*/false);
  }
  return b.getF32Type();
}

std::optional<DType> TraceBuilder::Impl::dtypeOf(Type t) const {
  return monarch::dtypeOf(t);
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

std::string TraceBuilder::Impl::freshSymbol(const std::string &base) {
  std::string name = base;
  for (int i = 1; SymbolTable::lookupSymbolIn(*module, name); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

Status TraceBuilder::Impl::makeRoomFor(const std::string &name,
                                       const SourceLoc &l) {
  Operation *existing = SymbolTable::lookupSymbolIn(*module, name);
  if (!existing)
    return Status();
  auto fn = dyn_cast<func::FuncOp>(existing);
  if (!fn)
    return error(l, "the name '" + name + "' is already declared");
  // Controller functions are never referenced by symbol in the module.
  SymbolTable::setSymbolName(fn, freshSymbol(name + "_fn"));
  return Status();
}

std::string TraceBuilder::functionName() const {
  Impl &I = *pimpl;
  for (auto it = I.scopes.rbegin(); it != I.scopes.rend(); ++it)
    if (it->kind == Scope::Function)
      if (auto fn = dyn_cast_or_null<func::FuncOp>(it->op))
        return fn.getSymName().str();
  return "";
}

Status TraceBuilder::declareMesh(const std::string &name,
                                 const std::vector<MeshDim> &dims,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  if (!isIdentifier(name))
    return I.error(loc, "invalid mesh name '" + name + "'", ErrorKind::Mesh);
  if (Status room = I.makeRoomFor(name, loc); !room.isOk())
    return room;
  if (dims.empty())
    return I.error(loc, "a mesh needs at least one dimension", ErrorKind::Mesh);
  SmallVector<StringRef> names;
  SmallVector<int64_t> shape;
  std::set<std::string> seen;
  for (const MeshDim &d : dims) {
    if (!isIdentifier(d.name))
      return I.error(loc, "invalid mesh dimension name '" + d.name + "'",
                     ErrorKind::Mesh);
    if (!seen.insert(d.name).second)
      return I.error(loc, "mesh dimension '" + d.name + "' appears twice",
                     ErrorKind::Mesh);
    if (d.size < 1)
      return I.error(loc,
                     "mesh dimension '" + d.name + "' has size " +
                         std::to_string(d.size) + "; sizes must be >= 1",
                     ErrorKind::Mesh);
    names.push_back(d.name);
    shape.push_back(d.size);
  }
  OpBuilder::InsertionGuard guard(I.b);
  I.toDeclarations();
  std::string grid = I.freshSymbol(name + "_grid");
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
    return I.error(loc, "invalid mesh name '" + name + "'", ErrorKind::Mesh);
  if (Status room = I.makeRoomFor(name, loc); !room.isOk())
    return room;
  MeshOpInterface p = I.lookupMesh(parent);
  if (!p)
    return I.error(loc, "unknown mesh '" + parent + "'", ErrorKind::Mesh);
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
      return I.error(loc,
                     "mesh '" + parent + "' has no dimension '" + r.name +
                         "' (its dimensions: " + joinNames(dimNames) + ")",
                     ErrorKind::Mesh);
    if (!seen.insert(r.name).second)
      return I.error(loc, "dimension '" + r.name + "' is sliced twice",
                     ErrorKind::Mesh);
    if (r.start < 0 || r.end > shape[idx] || r.start >= r.end)
      return I.error(loc,
                     "slice " + std::to_string(r.start) + ":" +
                         std::to_string(r.end) + " of dimension '" + r.name +
                         "' (size " + std::to_string(shape[idx]) +
                         ") is empty or out of range",
                     ErrorKind::Mesh);
    starts[idx] = r.start;
    ends[idx] = r.end;
  }
  SmallVector<int64_t> sliceShape;
  for (size_t i = 0; i < dims.size(); ++i)
    sliceShape.push_back(ends[i] - starts[i]);
  OpBuilder::InsertionGuard guard(I.b);
  // Slices go after their parent (and the parent's other declarations).
  I.toDeclarations();
  std::string grid = I.freshSymbol(name + "_grid");
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
    return pimpl->error({}, "unknown mesh '" + name + "'", ErrorKind::Mesh);
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
  // A mesh or actor already holding the name keeps it: the function gets a
  // fresh symbol (functionName() says which).
  std::string symbol = SymbolTable::lookupSymbolIn(*I.module, name)
                           ? I.freshSymbol(name + "_fn")
                           : name;
  if (!defaultMesh.empty() && !I.lookupMesh(defaultMesh))
    return I.error(loc, "unknown mesh '" + defaultMesh + "'", ErrorKind::Mesh);
  SmallVector<Type> types;
  for (const ArgType &a : args) {
    for (int64_t d : a.shape)
      if (d < 0)
        return I.error(loc, "argument shapes must be static and non-negative",
                       ErrorKind::Shape);
    if (!isTraceableDType(a.dtype))
      return I.dtypeError(loc, a.dtype);
    types.push_back(I.typeOf(a));
  }
  I.b.setInsertionPointToEnd(I.module->getBody());
  auto fn = func::FuncOp::create(I.b, I.loc(loc), symbol,
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

bool TraceBuilder::markKept(int64_t index) {
  Impl &I = *pimpl;
  func::FuncOp fn;
  for (auto f : I.module->getBody()->getOps<func::FuncOp>())
    if (!f.isExternal())
      fn = f;
  if (!fn || fn.getBody().empty() || index < 0 ||
      index >= static_cast<int64_t>(fn.getNumResults()))
    return false;
  auto ret = llvm::cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  auto fetch = ret.getOperand(index).getDefiningOp<FetchOp>();
  if (!fetch)
    return false;
  fetch->setAttr(MonarchDialect::getKeepAttrName(), UnitAttr::get(&I.ctx));
  return true;
}

Status TraceBuilder::endFunction(const std::vector<Value> &results,
                                 SourceLoc loc) {
  Impl &I = *pimpl;
  Scope *scope = I.currentScope();
  if (!scope || scope->kind != Scope::Function)
    return I.error(loc, "no function is being traced");
  SmallVector<mlir::Value> outs;
  // Whether `v` depends on anything placed on a mesh (a feed, a call, a
  // transfer): work on constants alone is cloned into the work that uses it
  // and runs nowhere by itself.
  auto placed = [&](mlir::Value v) {
    SmallVector<mlir::Value> todo{v};
    DenseSet<mlir::Value> seen;
    while (!todo.empty()) {
      mlir::Value x = todo.pop_back_val();
      if (!seen.insert(x).second)
        continue;
      Operation *def = x.getDefiningOp();
      if (!def || isa<FeedOp, CallOp, TransferOp>(def))
        return true;
      // Operands, and values the op's regions capture from outside it.
      def->walk([&](Operation *inner) {
        for (mlir::Value operand : inner->getOperands())
          if (!def->isAncestor(operand.getParentRegion()->getParentOp()))
            todo.push_back(operand);
      });
    }
    return false;
  };
  for (Value v : results) {
    Result<ValueRecord *> r = I.get(v, loc);
    if (!r)
      return r.status();
    if ((*r)->mesh.empty()) {
      outs.push_back((*r)->value);
      continue;
    }
    if (!placed((*r)->value))
      return I.error(loc,
                     "unsupported: a result computed from constants "
                     "alone (mc.zeros, mc.arange, numpy arrays...); "
                     "compute it with numpy outside the function, or "
                     "combine it with an argument",
                     ErrorKind::Unsupported);
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
  eraseDeadWork(fn); // (the IR the user reads shows no dead work)
  scope->open = false;
  I.stack.pop_back();
  I.b.setInsertionPointToEnd(I.module->getBody());
  if (Status s = verify(); !s)
    return I.error(loc, "the traced function does not verify:\n" +
                            s.status().message());
  return Status();
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

//===----------------------------------------------------------------------===//
// The module, for the compiler (TraceBuilderMLIR.h)
//===----------------------------------------------------------------------===//

ModuleOp tracedModule(const TraceBuilder &builder) {
  return const_cast<TraceBuilder::Impl &>(builder.impl()).module.get();
}

Result<OwningOpRef<ModuleOp>> cloneTracedModule(const TraceBuilder &builder,
                                                llvm::StringRef functionName) {
  const TraceBuilder::Impl &I = builder.impl();
  if (!I.stack.empty())
    return I.error({}, "tracing is still in progress");
  OwningOpRef<ModuleOp> copy =
      llvm::cast<ModuleOp>(tracedModule(builder)->clone());
  std::string from = builder.functionName();
  if (functionName.empty() || functionName == from)
    return copy;
  if (from.empty())
    return I.error({}, "no controller function was traced");
  if (SymbolTable::lookupSymbolIn(*copy, functionName))
    return I.error({}, "cannot rename the traced function to '" +
                           functionName.str() + "': the symbol is taken");
  Operation *fn = SymbolTable::lookupSymbolIn(*copy, from);
  if (failed(SymbolTable::replaceAllSymbolUses(
          fn, StringAttr::get(copy->getContext(), functionName), *copy)))
    return I.error({}, "cannot rename the uses of '" + from + "'");
  SymbolTable::setSymbolName(fn, functionName);
  return copy;
}

} // namespace monarch::frontend