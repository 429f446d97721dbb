//===- MonarchOps.cpp - monarch operations ----------------------*- C++ -*-===//
//
// Custom syntax, builders and verifiers of the monarch operations of the
// traced stage (meshes, actors, endpoints, collectives); the program-level
// ops live in MonarchProgramOps.cpp and the planned-stage ops in
// MonarchPlanOps.cpp. Checks
// that need only the op itself live in `verify()`; checks that resolve
// symbols (meshes, actor meshes, endpoints, communicators, kernels) live in
// `verifySymbolUses()` so that they run once per symbol table with a shared
// lookup cache.
//
//===----------------------------------------------------------------------===//

#include "OpVerifyUtils.h"

#include "monarch/IR/ElementTypes.h"
#include "monarch/IR/MonarchDialect.h"
#include "monarch/Support/PrintFormat.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace monarch;
using namespace monarch::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// "@name does not name a <what>": the one wording for unresolved symbols.
InFlightDiagnostic monarch::detail::unresolved(Operation *op, StringAttr name,
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

MeshOpInterface monarch::detail::resolveMesh(Operation *op,
                                             FlatSymbolRefAttr ref,
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
// TopologyOp
//===----------------------------------------------------------------------===//

LogicalResult TopologyOp::verify() {
  if (failed(verifyDimNames(*this, getHosts())))
    return failure();
  auto check = [&](StringRef which, double gbps,
                   double latency) -> LogicalResult {
    if (!(gbps > 0) || !std::isfinite(gbps))
      return emitOpError() << which << " bandwidth must be a positive number "
                           << "of GB/s, got " << gbps;
    if (!(latency >= 0) || !std::isfinite(latency))
      return emitOpError() << which << " latency must be a non-negative "
                           << "number of microseconds, got " << latency;
    return success();
  };
  if (failed(check("intra", getIntraGbps().convertToDouble(),
                   getIntraLatencyUs().convertToDouble())) ||
      failed(check("inter", getInterGbps().convertToDouble(),
                   getInterLatencyUs().convertToDouble())))
    return failure();
  return success();
}

LogicalResult TopologyOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto mesh = tables.lookupNearestSymbolFrom<ProcMeshOp>(*this, getMeshAttr());
  if (!mesh)
    return unresolved(*this, getMeshAttr().getAttr(), "monarch.proc_mesh");
  SmallVector<StringRef> dims = mesh.getDimNames();
  for (Attribute a : getHosts()) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (!llvm::is_contained(dims, name))
      return emitOpError("mesh ")
             << getMeshAttr() << " has no dimension \"" << name << "\"";
  }
  for (Operation &other : (*this)->getBlock()->getOperations()) {
    auto topo = dyn_cast<TopologyOp>(other);
    if (topo && topo != *this && topo.getMeshAttr() == getMeshAttr() &&
        topo->isBeforeInBlock(*this))
      return emitOpError("mesh ") << getMeshAttr() << " already has a topology";
  }
  return success();
}

int64_t TopologyOp::hostOf(ArrayRef<StringRef> dims, ArrayRef<int64_t> shape,
                           int64_t rank) {
  // Row-major coordinates of `rank`, then the index among hosts.
  SmallVector<int64_t> coords(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    coords[d] = rank % shape[d];
    rank /= shape[d];
  }
  int64_t host = 0;
  for (Attribute a : getHosts()) {
    int64_t d = llvm::find(dims, cast<StringAttr>(a).getValue()) - dims.begin();
    if (d >= static_cast<int64_t>(dims.size()))
      continue;
    host = host * shape[d] + coords[d];
  }
  return host;
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
    if (DistAttr dist = getDistAttr()) {
      if (dist.getPartial())
        return emitOpError("state cannot be a partial sum");
      if (static_cast<int64_t>(dist.getSplit().size()) != tensor.getRank())
        return emitOpError("dist ")
               << dist << " has " << dist.getSplit().size()
               << " entries for a state of rank " << tensor.getRank();
    }
    return success();
  }
  if (getDistAttr())
    return emitOpError("a scalar state cannot be split");
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

/// Per-rank code: an endpoint body, or a function specialized for one rank
/// (`monarch.rank`) from endpoint bodies.
static bool isPerRankCode(Operation *op) {
  if (op->getParentOfType<EndpointOp>())
    return true;
  auto fn = op->getParentOfType<FunctionOpInterface>();
  return fn && fn->hasAttr(MonarchDialect::getRankAttrName());
}

static LogicalResult verifyMeshCollective(Operation *op, ArrayAttr dims) {
  if (!isPerRankCode(op))
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

/// The block count `k` an all_to_all implies (1 when split == concat), or
/// failure after a diagnostic.
static FailureOr<int64_t> allToAllFactor(AllToAllOp op) {
  auto in = op.getInput().getType(), out = op.getResult().getType();
  int64_t s = op.getSplit(), c = op.getConcat(), rank = in.getRank();
  if (in.getElementType() != out.getElementType())
    return op.emitOpError("element types differ: ")
           << in.getElementType() << " vs " << out.getElementType();
  if (in.getRank() != out.getRank())
    return op.emitOpError("operand and result ranks differ");
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return op.emitOpError("needs static shapes");
  for (int64_t axis : {s, c})
    if (axis >= rank)
      return op.emitOpError("axis ")
             << axis << " is out of range for rank " << rank;
  for (int64_t i = 0; i < rank; ++i)
    if ((i != s && i != c) || s == c)
      if (in.getDimSize(i) != out.getDimSize(i))
        return op.emitOpError("dimension ")
               << i << " must be equal on both sides, got " << in.getDimSize(i)
               << " and " << out.getDimSize(i);
  if (s == c)
    return int64_t{1};
  int64_t inS = in.getDimSize(s), outS = out.getDimSize(s);
  int64_t inC = in.getDimSize(c), outC = out.getDimSize(c);
  if (outS <= 0 || inC <= 0 || inS % outS != 0 || outC % inC != 0 ||
      inS / outS != outC / inC)
    return op.emitOpError("split dimension ")
           << s << " (" << inS << " -> " << outS << ") and concat dimension "
           << c << " (" << inC << " -> " << outC
           << ") must change by the same factor";
  return inS / outS;
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyMeshCollective(*this, getDims())))
    return failure();
  return success(succeeded(allToAllFactor(*this)));
}

LogicalResult DebugPrintOp::verify() {
  for (auto [i, v] : llvm::enumerate(getValues())) {
    Type t = v.getType();
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (tensor && !tensor.hasStaticShape())
      return emitOpError("prints value #") << i << " of dynamic shape " << t;
    if (!monarch::dtypeOf(tensor ? tensor.getElementType() : t))
      return emitOpError("prints value #")
             << i << " of type " << t
             << "; printable values are tensors and scalars of float, "
                "integer and bool element types";
  }
  std::vector<printfmt::Piece> pieces;
  if (Status bad = printfmt::parse(getFormat(), getValues().size(), pieces);
      !bad)
    return emitOpError("format: ") << bad.message();
  return success();
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
    if (auto a = dyn_cast<AllToAllOp>(op)) {
      int64_t n = groupSize(op, *this, mesh, a.getDims());
      if (n < 0)
        return WalkResult::interrupt();
      FailureOr<int64_t> k = allToAllFactor(a);
      if (failed(k))
        return WalkResult::interrupt();
      int64_t splitSize = a.getInput().getType().getDimSize(a.getSplit());
      if (a.getSplit() != a.getConcat() && *k != n) {
        op->emitOpError("exchanges ")
            << *k << " blocks but the group on @" << getSymName() << " has "
            << n << " ranks";
        return WalkResult::interrupt();
      }
      if (splitSize % n != 0) {
        op->emitOpError("dimension ")
            << a.getSplit() << " of size " << splitSize
            << " does not split into the " << n << " ranks of the group on @"
            << getSymName();
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
