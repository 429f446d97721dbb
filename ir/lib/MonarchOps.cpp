//===- MonarchOps.cpp - monarch operations ----------------------*- C++ -*-===//
//
// Custom syntax, builders and verifiers of the monarch operations. Checks
// that need only the op itself live in `verify()`; checks that resolve
// symbols (meshes, actor meshes, endpoints, communicators, kernels) live in
// `verifySymbolUses()` so that they run once per symbol table with a shared
// lookup cache.
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace monarch;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

MeshOpInterface monarch::lookupMesh(Operation *from, FlatSymbolRefAttr ref,
                                    SymbolTableCollection *tables) {
  Operation *sym = tables ? tables->lookupNearestSymbolFrom(from, ref)
                          : SymbolTable::lookupNearestSymbolFrom(from, ref);
  return dyn_cast_or_null<MeshOpInterface>(sym);
}

bool monarch::isSameOrSliceOf(MeshOpInterface inner, MeshOpInterface outer,
                              SymbolTableCollection &tables) {
  // Slices form a chain to their proc mesh; the depth is tiny in practice,
  // the bound only guards against cycles in malformed IR.
  for (int depth = 0; inner && depth < 64; ++depth) {
    if (inner.getOperation() == outer.getOperation())
      return true;
    auto slice = dyn_cast<MeshSliceOp>(inner.getOperation());
    if (!slice)
      return false;
    inner = lookupMesh(slice, slice.getParentAttr(), &tables);
  }
  return false;
}

FailureOr<SmallVector<int64_t>> monarch::getLocalShape(ArrayRef<int64_t> shape,
                                                       DistAttr dist,
                                                       MeshOpInterface mesh,
                                                       std::string &error) {
  SmallVector<int64_t> local(shape);
  if (!dist)
    return local;
  SmallVector<int64_t> meshShape = mesh.getMeshShape();
  for (unsigned i = 0, e = dist.getSplit().size(); i < e && i < shape.size();
       ++i) {
    int64_t factor = 1;
    for (StringRef name : dist.getSplitDims(i)) {
      int64_t idx = mesh.getDimIndex(name);
      if (idx < 0) {
        error = ("mesh has no dimension \"" + name + "\"").str();
        return failure();
      }
      factor *= meshShape[idx];
    }
    if (factor == 1)
      continue;
    if (ShapedType::isDynamic(shape[i])) {
      error = "tensor dimension " + std::to_string(i) +
              " is split over the mesh and must have a static size";
      return failure();
    }
    if (shape[i] % factor != 0) {
      error = "tensor dimension " + std::to_string(i) + " of size " +
              std::to_string(shape[i]) + " is not divisible by " +
              std::to_string(factor) + " ranks";
      return failure();
    }
    local[i] = shape[i] / factor;
  }
  return local;
}

/// "@name does not name a <what>": the one wording for unresolved symbols.
static InFlightDiagnostic unresolved(Operation *op, StringAttr name,
                                     StringRef what) {
  return op->emitOpError() << FlatSymbolRefAttr::get(name)
                           << " does not name a " << what;
}

static void printDimName(OpAsmPrinter &p, StringRef name) {
  p.printKeywordOrString(name);
}

static LogicalResult verifyDimNames(Operation *op, ArrayAttr dims) {
  llvm::StringSet<> seen;
  for (Attribute a : dims) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (name.empty())
      return op->emitOpError("mesh dimension names must be non-empty");
    if (!seen.insert(name).second)
      return op->emitOpError("duplicate mesh dimension \"") << name << "\"";
  }
  return success();
}

/// Resolves the `shard.grid` that a mesh names and checks its shape.
static LogicalResult verifyGrid(Operation *op, FlatSymbolRefAttr gridRef,
                                ArrayRef<int64_t> shape,
                                SymbolTableCollection &tables) {
  auto grid = tables.lookupNearestSymbolFrom<shard::GridOp>(op, gridRef);
  if (!grid)
    return unresolved(op, gridRef.getAttr(), "shard.grid");
  if (grid.getShape() != shape)
    return op->emitOpError("grid ")
           << gridRef << " has shape [" << grid.getShape()
           << "] but the mesh has shape [" << shape << "]";
  return success();
}

static MeshOpInterface resolveMesh(Operation *op, FlatSymbolRefAttr ref,
                                   SymbolTableCollection &tables) {
  MeshOpInterface mesh = lookupMesh(op, ref, &tables);
  if (!mesh)
    unresolved(op, ref.getAttr(), "monarch.proc_mesh or monarch.mesh_slice");
  return mesh;
}

/// Upper bound on ranks in a mesh; keeps rank arithmetic far from overflow.
static constexpr int64_t kMaxRanks = int64_t(1) << 30;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `name = size, ...`
static ParseResult parseDimList(OpAsmParser &parser, ArrayAttr &dims,
                                DenseI64ArrayAttr &shape) {
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  auto parseOne = [&]() -> ParseResult {
    std::string name;
    int64_t size;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(parseOne))
    return failure();
  dims = parser.getBuilder().getArrayAttr(names);
  shape = parser.getBuilder().getDenseI64ArrayAttr(sizes);
  return success();
}

static void printDimList(OpAsmPrinter &p, Operation *, ArrayAttr dims,
                         DenseI64ArrayAttr shape) {
  llvm::interleaveComma(llvm::zip(dims, shape.asArrayRef()), p, [&](auto it) {
    printDimName(p, cast<StringAttr>(std::get<0>(it)).getValue());
    p << " = " << std::get<1>(it);
  });
}

/// `name = start to end, ...`
static ParseResult parseRangeList(OpAsmParser &parser, ArrayAttr &dims,
                                  DenseI64ArrayAttr &starts,
                                  DenseI64ArrayAttr &ends) {
  SmallVector<Attribute> names;
  SmallVector<int64_t> lo, hi;
  auto parseOne = [&]() -> ParseResult {
    std::string name;
    int64_t s, e;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(s) || parser.parseKeyword("to") ||
        parser.parseInteger(e))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    lo.push_back(s);
    hi.push_back(e);
    return success();
  };
  if (parser.parseCommaSeparatedList(parseOne))
    return failure();
  dims = parser.getBuilder().getArrayAttr(names);
  starts = parser.getBuilder().getDenseI64ArrayAttr(lo);
  ends = parser.getBuilder().getDenseI64ArrayAttr(hi);
  return success();
}

static void printRangeList(OpAsmPrinter &p, Operation *, ArrayAttr dims,
                           DenseI64ArrayAttr starts, DenseI64ArrayAttr ends) {
  for (auto [i, name] : llvm::enumerate(dims)) {
    if (i)
      p << ", ";
    printDimName(p, cast<StringAttr>(name).getValue());
    p << " = " << starts[i] << " to " << ends[i];
  }
}

/// One `#monarch.buf<...>`, printed in full (as in lists) for readability.
static ParseResult parseBuffer(OpAsmParser &parser, BufferAttr &buffer) {
  // Accepts `#monarch.buf<...>` and the short `<...>` form alike.
  return parser.parseCustomAttributeWithFallback(buffer);
}

static void printBuffer(OpAsmPrinter &p, Operation *, BufferAttr buffer) {
  p.printAttribute(buffer);
}

/// `#monarch.buf<...>, ...` (possibly empty).
static ParseResult parseBufferList(OpAsmParser &parser, ArrayAttr &buffers) {
  SmallVector<Attribute> list;
  BufferAttr first;
  OptionalParseResult res = parser.parseOptionalAttribute(first);
  if (res.has_value()) {
    if (failed(*res))
      return failure();
    list.push_back(first);
    while (succeeded(parser.parseOptionalComma())) {
      BufferAttr next;
      if (parser.parseAttribute(next))
        return failure();
      list.push_back(next);
    }
  }
  buffers = parser.getBuilder().getArrayAttr(list);
  return success();
}

static void printBufferList(OpAsmPrinter &p, Operation *, ArrayAttr buffers) {
  llvm::interleaveComma(buffers, p, [&](Attribute a) { p.printAttribute(a); });
}

#define GET_OP_CLASSES
#include "monarch/IR/MonarchOps.cpp.inc"

//===----------------------------------------------------------------------===//
// ProcMeshOp
//===----------------------------------------------------------------------===//

LogicalResult ProcMeshOp::verify() {
  if (getDims().empty())
    return emitOpError("must have at least one dimension");
  if (getDims().size() != getShape().size())
    return emitOpError("has ") << getDims().size() << " dimension names but "
                               << getShape().size() << " sizes";
  int64_t ranks = 1;
  for (auto [name, size] : llvm::zip(getDims(), getShape())) {
    if (size <= 0)
      return emitOpError("dimension \"")
             << cast<StringAttr>(name).getValue()
             << "\" must have a positive size, got " << size;
    ranks *= std::min<int64_t>(size, kMaxRanks + 1);
    if (ranks > kMaxRanks)
      return emitOpError("has more than ") << kMaxRanks << " ranks";
  }
  return verifyDimNames(*this, getDims());
}

LogicalResult ProcMeshOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyGrid(*this, getGridAttr(), getShape(), tables);
}

SmallVector<StringRef> ProcMeshOp::getDimNames() {
  return llvm::to_vector(llvm::map_range(
      getDims(), [](Attribute a) { return cast<StringAttr>(a).getValue(); }));
}

SmallVector<int64_t> ProcMeshOp::getMeshShape() {
  return SmallVector<int64_t>(getShape());
}

FlatSymbolRefAttr ProcMeshOp::getGridRef() { return getGridAttr(); }

//===----------------------------------------------------------------------===//
// MeshSliceOp
//===----------------------------------------------------------------------===//

LogicalResult MeshSliceOp::verify() {
  if (getDims().empty())
    return emitOpError("must have at least one dimension");
  if (getDims().size() != getStarts().size() ||
      getDims().size() != getEnds().size())
    return emitOpError("needs one range per dimension");
  for (auto [name, s, e] : llvm::zip(getDims(), getStarts(), getEnds()))
    if (s < 0 || e <= s)
      return emitOpError("range ")
             << s << " to " << e << " of dimension \""
             << cast<StringAttr>(name).getValue() << "\" is empty or negative";
  return verifyDimNames(*this, getDims());
}

LogicalResult MeshSliceOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOpInterface parent = resolveMesh(*this, getParentAttr(), tables);
  if (!parent)
    return failure();
  // The chain of parents must end at a proc mesh.
  llvm::SmallPtrSet<Operation *, 8> seen{getOperation()};
  for (MeshOpInterface m = parent; !isa<ProcMeshOp>(m.getOperation());) {
    if (!seen.insert(m.getOperation()).second)
      return emitOpError("slice chain through ")
             << getParentAttr() << " is a cycle and never reaches a "
             << "monarch.proc_mesh";
    auto slice = cast<MeshSliceOp>(m.getOperation());
    m = lookupMesh(slice, slice.getParentAttr(), &tables);
    if (!m)
      return success(); // That slice reports its own missing parent.
  }
  SmallVector<StringRef> parentDims = parent.getDimNames();
  SmallVector<int64_t> parentShape = parent.getMeshShape();
  if (parentDims.size() != getDims().size())
    return emitOpError("slices ")
           << getDims().size() << " dimensions but parent " << getParentAttr()
           << " has " << parentDims.size();
  for (auto [i, name] : llvm::enumerate(getDims())) {
    StringRef dim = cast<StringAttr>(name).getValue();
    if (dim != parentDims[i])
      return emitOpError("dimension #")
             << i << " is \"" << dim << "\" but parent " << getParentAttr()
             << " names it \"" << parentDims[i] << "\"";
    if (getEnds()[i] > parentShape[i])
      return emitOpError("range ")
             << getStarts()[i] << " to " << getEnds()[i] << " of dimension \""
             << dim << "\" exceeds its size " << parentShape[i] << " in parent "
             << getParentAttr();
  }
  return verifyGrid(*this, getGridAttr(), getMeshShape(), tables);
}

SmallVector<StringRef> MeshSliceOp::getDimNames() {
  return llvm::to_vector(llvm::map_range(
      getDims(), [](Attribute a) { return cast<StringAttr>(a).getValue(); }));
}

SmallVector<int64_t> MeshSliceOp::getMeshShape() {
  SmallVector<int64_t> shape;
  for (auto [s, e] : llvm::zip(getStarts(), getEnds()))
    shape.push_back(e - s);
  return shape;
}

FlatSymbolRefAttr MeshSliceOp::getGridRef() { return getGridAttr(); }

int64_t MeshSliceOp::getParentRank(ArrayRef<int64_t> parentShape,
                                   int64_t rank) {
  SmallVector<int64_t> shape = getMeshShape();
  SmallVector<int64_t> index(shape.size());
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    index[i] = rank % shape[i] + getStarts()[i];
    rank /= shape[i];
  }
  int64_t parentRank = 0;
  for (auto [idx, extent] : llvm::zip(index, parentShape))
    parentRank = parentRank * extent + idx;
  return parentRank;
}

//===----------------------------------------------------------------------===//
// ActorClassOp, StateOp
//===----------------------------------------------------------------------===//

void ActorClassOp::build(OpBuilder &builder, OperationState &state,
                         StringRef name) {
  state.addAttribute(mlir::SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addRegion()->emplaceBlock();
}

LogicalResult ActorClassOp::verify() {
  for (Operation &op : getBody().front())
    if (!isa<StateOp, EndpointOp>(op))
      return op.emitOpError("is not allowed in a monarch.actor_class; only "
                            "monarch.state and monarch.endpoint are");
  return success();
}

LogicalResult StateOp::verify() {
  Type type = getType();
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      return emitOpError("state must have a static shape, got ") << type;
    return success();
  }
  if (type.isIntOrFloat())
    return success();
  return emitOpError("state must be a statically shaped tensor or a scalar, "
                     "got ")
         << type;
}

//===----------------------------------------------------------------------===//
// EndpointOp, ReturnOp
//===----------------------------------------------------------------------===//

void EndpointOp::build(OpBuilder &builder, OperationState &state,
                       StringRef name, FunctionType type) {
  state.addAttribute(mlir::SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addRegion();
}

ParseResult EndpointOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void EndpointOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult EndpointOp::verify() {
  if (getBody().empty())
    return emitOpError("must have a body");
  return success();
}

DistAttr EndpointOp::getArgDist(unsigned i) {
  return getArgAttrOfType<DistAttr>(i, MonarchDialect::getDistAttrName());
}

DistAttr EndpointOp::getResultDist(unsigned i) {
  return getResultAttrOfType<DistAttr>(i, MonarchDialect::getDistAttrName());
}

LogicalResult ReturnOp::verify() {
  auto endpoint = (*this)->getParentOfType<EndpointOp>();
  ArrayRef<Type> results = endpoint.getResultTypes();
  if (getNumOperands() != results.size())
    return emitOpError("returns ")
           << getNumOperands() << " values but endpoint @"
           << endpoint.getSymName() << " declares " << results.size();
  for (auto [i, value, type] : llvm::enumerate(getOperands(), results))
    if (value.getType() != type)
      return emitOpError("value #")
             << i << " has type " << value.getType() << " but endpoint @"
             << endpoint.getSymName() << " returns " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// StateGetOp, StateSetOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyStateAccess(Operation *op, FlatSymbolRefAttr ref,
                                       Type type,
                                       SymbolTableCollection &tables) {
  auto actorClass = op->getParentOfType<ActorClassOp>();
  if (!actorClass || !op->getParentOfType<EndpointOp>())
    return op->emitOpError("must be inside a monarch.endpoint");
  auto state = tables.lookupSymbolIn<StateOp>(actorClass, ref.getAttr());
  if (!state)
    return op->emitOpError("actor class @")
           << actorClass.getSymName() << " has no state " << ref;
  if (state.getType() != type)
    return op->emitOpError("type ") << type << " does not match state " << ref
                                    << " of type " << state.getType();
  return success();
}

LogicalResult StateGetOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyStateAccess(*this, getStateAttr(), getType(), tables);
}

LogicalResult StateSetOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyStateAccess(*this, getStateAttr(), getValue().getType(), tables);
}

//===----------------------------------------------------------------------===//
// Collectives inside endpoints
//===----------------------------------------------------------------------===//

static LogicalResult verifyMeshCollective(Operation *op, ArrayAttr dims) {
  if (!op->getParentOfType<EndpointOp>())
    return op->emitOpError("names actor mesh dimensions and must be inside a "
                           "monarch.endpoint");
  if (dims.empty())
    return op->emitOpError("must name at least one mesh dimension");
  return verifyDimNames(op, dims);
}

/// Shared by all_gather (big = result) and reduce_scatter (big = input).
static LogicalResult verifyAxisResize(Operation *op, RankedTensorType small,
                                      RankedTensorType big, int64_t axis) {
  if (small.getElementType() != big.getElementType())
    return op->emitOpError("element types differ: ")
           << small.getElementType() << " vs " << big.getElementType();
  if (small.getRank() != big.getRank())
    return op->emitOpError("operand and result ranks differ");
  if (axis < 0 || axis >= small.getRank())
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << small.getRank();
  for (int64_t i = 0; i < small.getRank(); ++i) {
    if (i == axis)
      continue;
    if (small.getDimSize(i) != big.getDimSize(i))
      return op->emitOpError("dimension ")
             << i << " must be equal on both "
             << "sides, got " << small.getDimSize(i) << " and "
             << big.getDimSize(i);
  }
  int64_t s = small.getDimSize(axis), b = big.getDimSize(axis);
  if (ShapedType::isDynamic(s) || ShapedType::isDynamic(b))
    return op->emitOpError("axis ") << axis << " must have a static size";
  if (s <= 0)
    return op->emitOpError("axis ")
           << axis << " of the per-rank tensor must have a positive size";
  if (b % s != 0)
    return op->emitOpError("axis ")
           << axis << " of size " << b << " is not a multiple of " << s;
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyMeshCollective(*this, getDims());
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyMeshCollective(*this, getDims())))
    return failure();
  return verifyAxisResize(*this, getInput().getType(), getResult().getType(),
                          getAxis());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyMeshCollective(*this, getDims())))
    return failure();
  return verifyAxisResize(*this, getResult().getType(), getInput().getType(),
                          getAxis());
}

LogicalResult ProcessIndexOp::verify() {
  return verifyMeshCollective(*this, getDims());
}

LogicalResult BroadcastFromOp::verify() {
  if (failed(verifyMeshCollective(*this, getDims())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ActorMeshOp
//===----------------------------------------------------------------------===//

/// Product of the sizes of `dims` in `mesh`; -1 (after a diagnostic naming
/// `user`) when a name does not exist.
static int64_t groupSize(Operation *user, ActorMeshOp actorMesh,
                         MeshOpInterface mesh, ArrayAttr dims) {
  SmallVector<int64_t> shape = mesh.getMeshShape();
  int64_t size = 1;
  for (Attribute a : dims) {
    StringRef name = cast<StringAttr>(a).getValue();
    int64_t idx = mesh.getDimIndex(name);
    if (idx < 0) {
      InFlightDiagnostic diag = user->emitOpError("names mesh dimension \"")
                                << name << "\" but actor mesh @"
                                << actorMesh.getSymName() << " is spawned on "
                                << actorMesh.getMeshAttr()
                                << " which has dimensions [";
      llvm::interleaveComma(mesh.getDimNames(), diag);
      diag << "]";
      return -1;
    }
    size *= shape[idx];
  }
  return size;
}

LogicalResult ActorMeshOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto actorClass =
      tables.lookupNearestSymbolFrom<ActorClassOp>(*this, getActorClassAttr());
  if (!actorClass)
    return unresolved(*this, getActorClassAttr().getAttr(),
                      "monarch.actor_class");
  MeshOpInterface mesh = resolveMesh(*this, getMeshAttr(), tables);
  if (!mesh)
    return failure();
  // Collectives in the class's endpoints name dimensions of the mesh the
  // class is spawned on: check them against this mesh.
  WalkResult walk = actorClass.walk([&](Operation *op) -> WalkResult {
    if (auto pi = dyn_cast<ProcessIndexOp>(op))
      return groupSize(op, *this, mesh, pi.getDims()) < 0
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    if (auto ar = dyn_cast<AllReduceOp>(op))
      return groupSize(op, *this, mesh, ar.getDims()) < 0
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    if (auto b = dyn_cast<BroadcastFromOp>(op)) {
      int64_t n = groupSize(op, *this, mesh, b.getDims());
      if (n < 0)
        return WalkResult::interrupt();
      if (static_cast<int64_t>(b.getRoot()) >= n) {
        op->emitOpError("root ") << b.getRoot() << " is outside the " << n
                                 << " ranks of the group on @" << getSymName();
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    auto checkFactor = [&](ArrayAttr dims, RankedTensorType small,
                           RankedTensorType big, int64_t axis) -> WalkResult {
      int64_t n = groupSize(op, *this, mesh, dims);
      if (n < 0)
        return WalkResult::interrupt();
      if (small.getDimSize(axis) * n != big.getDimSize(axis)) {
        op->emitOpError("axis ")
            << axis << " of the full tensor must be " << n
            << " (the group size on @" << getSymName() << ") times "
            << small.getDimSize(axis) << ", got " << big.getDimSize(axis);
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    };
    if (auto g = dyn_cast<AllGatherOp>(op))
      return checkFactor(g.getDims(), g.getInput().getType(),
                         g.getResult().getType(), g.getAxis());
    if (auto rs = dyn_cast<ReduceScatterOp>(op))
      return checkFactor(rs.getDims(), rs.getResult().getType(),
                         rs.getInput().getType(), rs.getAxis());
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

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

//===----------------------------------------------------------------------===//
// CommunicatorOp, PlanOp, RankProgramOp
//===----------------------------------------------------------------------===//

LogicalResult CommunicatorOp::verify() {
  if (getRanks().empty())
    return emitOpError("must contain at least one rank");
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t r : getRanks()) {
    if (r < 0)
      return emitOpError("rank ") << r << " is negative";
    if (!seen.insert(r).second)
      return emitOpError("rank ") << r << " appears twice";
  }
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
  for (auto [i, r] : llvm::enumerate(getRanks()))
    if (r == rank)
      return i;
  return -1;
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

LogicalResult PlanOp::verify() {
  llvm::SmallSet<int64_t, 8> ranks;
  for (Operation &op : getBody().front()) {
    auto program = dyn_cast<RankProgramOp>(op);
    if (!program)
      return op.emitOpError("is not allowed in a monarch.plan; only "
                            "monarch.rank_program is");
    if (!ranks.insert(program.getRank()).second)
      return program.emitOpError("rank ")
             << program.getRank() << " has more than one program in plan @"
             << getSymName();
  }
  return success();
}

LogicalResult PlanOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOpInterface mesh = resolveMesh(*this, getMeshAttr(), tables);
  if (!mesh)
    return failure();
  int64_t n = mesh.getNumRanks();
  for (auto program : getBody().getOps<RankProgramOp>())
    if (static_cast<int64_t>(program.getRank()) >= n)
      return program.emitOpError("rank ")
             << program.getRank() << " is outside mesh " << getMeshAttr()
             << " of " << n << " ranks";
  return success();
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
  for (Operation &op : getBody().front()) {
    if (!isa<LaunchOp, SendOp, RecvOp, CollectiveOp, WaitOp, FeedBufferOp,
             FetchBufferOp, StateBufferOp>(op))
      return op.emitOpError("is not a plan instruction and cannot appear in "
                            "a monarch.rank_program");
    for (NamedAttribute attr : op.getAttrs()) {
      if (auto buf = dyn_cast<BufferAttr>(attr.getValue())) {
        if (failed(check(&op, buf)))
          return failure();
      } else if (auto list = dyn_cast<ArrayAttr>(attr.getValue())) {
        for (Attribute a : list)
          if (auto b = dyn_cast<BufferAttr>(a))
            if (failed(check(&op, b)))
              return failure();
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Plan instructions
//===----------------------------------------------------------------------===//

static int64_t ownRank(Operation *op) {
  return op->getParentOfType<RankProgramOp>().getRank();
}

/// Resolves `comm` and checks that this rank is a member.
static CommunicatorOp resolveComm(Operation *op, FlatSymbolRefAttr ref,
                                  SymbolTableCollection &tables) {
  auto comm = tables.lookupNearestSymbolFrom<CommunicatorOp>(op, ref);
  if (!comm) {
    unresolved(op, ref.getAttr(), "monarch.communicator");
    return {};
  }
  auto plan = op->getParentOfType<PlanOp>();
  if (comm.getMesh() != plan.getMesh()) {
    op->emitOpError("communicator ")
        << ref << " is on " << comm.getMeshAttr() << " but plan @"
        << plan.getSymName() << " is on " << plan.getMeshAttr()
        << "; a plan's communicators list ranks of the plan's mesh";
    return {};
  }
  int64_t rank = ownRank(op);
  if (comm.getCommRank(rank) < 0) {
    op->emitOpError("rank ")
        << rank << " is not a member of communicator " << ref;
    return {};
  }
  return comm;
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto kernel = tables.lookupNearestSymbolFrom<FunctionOpInterface>(
      *this, getKernelAttr());
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
  CommunicatorOp comm = resolveComm(op, op.getCommAttr(), tables);
  if (!comm)
    return failure();
  if (comm.getCommRank(static_cast<int64_t>(op.getPeer())) < 0)
    return op.emitOpError("peer rank ")
           << op.getPeer() << " is not a member of communicator "
           << op.getCommAttr();
  return success();
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
  auto actorMesh = tables.lookupNearestSymbolFrom<ActorMeshOp>(
      *this, FlatSymbolRefAttr::get(ref.getRootReference()));
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
