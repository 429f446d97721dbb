//===- MonarchDialect.cpp - monarch dialect registration --------*- C++ -*-===//
//
// Registers the operations, attributes and types of the dialect and checks
// the discardable `monarch.*` attributes it owns wherever they appear.
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace monarch;

#include "monarch/IR/MonarchDialect.cpp.inc"
#include "monarch/IR/MonarchEnums.cpp.inc"
#include "monarch/IR/MonarchInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "monarch/IR/MonarchTypes.cpp.inc"

void MonarchDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "monarch/IR/MonarchOps.cpp.inc"
      >();
  registerAttributes();
  addTypes<
#define GET_TYPEDEF_LIST
#include "monarch/IR/MonarchTypes.cpp.inc"
      >();
}

/// `monarch.dist` must be a `#monarch.dist` with one entry per dimension of
/// the (ranked tensor) value it describes.
static LogicalResult verifyDistOn(Operation *op, NamedAttribute attr,
                                  Type valueType, StringRef what) {
  auto dist = dyn_cast<DistAttr>(attr.getValue());
  if (!dist)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a #monarch.dist attribute";
  auto tensor = dyn_cast<RankedTensorType>(valueType);
  if (!tensor)
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << what << " requires a ranked tensor, got "
                           << valueType;
  if (static_cast<int64_t>(dist.getSplit().size()) != tensor.getRank())
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << what << " has " << dist.getSplit().size()
                           << " entries but the tensor has rank "
                           << tensor.getRank();
  return success();
}

LogicalResult MonarchDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  if (attr.getName() == getCriticalPathAttrName() ||
      attr.getName() == getPeakBytesAttrName()) {
    if (!isa<RankProgramOp>(op))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' is only valid on a monarch.rank_program";
    bool isPath = attr.getName() == getCriticalPathAttrName();
    auto f = dyn_cast<FloatAttr>(attr.getValue());
    auto i = dyn_cast<IntegerAttr>(attr.getValue());
    if (isPath ? !(f && f.getValueAsDouble() >= 0)
               : !(i && i.getType().isInteger(64) && i.getInt() >= 0))
      return op->emitError()
             << "'" << attr.getName().getValue() << "' must be a non-negative "
             << (isPath ? "float" : "i64");
    return success();
  }
  if (attr.getName() == getWorkerForAttrName()) {
    auto mesh = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
    if (!mesh || !isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << getWorkerForAttrName()
                             << "' must be a mesh symbol on a function";
    if (!lookupMesh(op, mesh))
      return op->emitError() << "'" << getWorkerForAttrName() << "' names "
                             << mesh << " which is not a monarch.proc_mesh";
    return success();
  }
  if (attr.getName() == getRankAttrName()) {
    auto rank = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !rank ||
        !rank.getType().isInteger(64) || rank.getInt() < 0)
      return op->emitError() << "'" << getRankAttrName()
                             << "' must be a non-negative i64 on a function";
    return success();
  }
  if (attr.getName() == getKeepAttrName()) {
    if (!isa<FetchOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << getKeepAttrName()
                             << "' is a unit attribute of monarch.fetch";
    return success();
  }
  if (attr.getName() == getShardAttrName()) {
    if (!isa<ChannelSendOp, ChannelRecvOp>(op) ||
        !isa<DistAttr>(attr.getValue()))
      return op->emitError() << "'" << getShardAttrName()
                             << "' is a #monarch.dist on a channel end";
    return success();
  }
  if (attr.getName().getValue() == getDistAttrName())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' is only valid on endpoint arguments and "
                              "results";
  return op->emitError() << "unknown monarch attribute '"
                         << attr.getName().getValue() << "'";
}

LogicalResult MonarchDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned argIndex,
                                                       NamedAttribute attr) {
  if (attr.getName().getValue() != getDistAttrName())
    return op->emitError() << "unknown monarch argument attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<EndpointOp>(op))
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' is only valid on endpoint arguments and "
                              "results";
  Region &region = op->getRegion(regionIndex);
  if (region.empty() || argIndex >= region.getNumArguments())
    return success();
  return verifyDistOn(op, attr, region.getArgument(argIndex).getType(),
                      "argument #" + std::to_string(argIndex));
}

LogicalResult MonarchDialect::verifyRegionResultAttribute(Operation *op,
                                                          unsigned regionIndex,
                                                          unsigned resultIndex,
                                                          NamedAttribute attr) {
  if (attr.getName() == getKeepAttrName()) {
    if (!isa<FunctionOpInterface>(op) || !op->hasAttr(getWorkerForAttrName()) ||
        !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << getKeepAttrName()
                             << "' is a unit attribute of worker program "
                                "results";
    return success();
  }
  if (attr.getName().getValue() != getDistAttrName())
    return op->emitError() << "unknown monarch result attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<EndpointOp>(op))
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' is only valid on endpoint arguments and "
                              "results";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || resultIndex >= fn.getNumResults())
    return success();
  return verifyDistOn(op, attr, fn.getResultTypes()[resultIndex],
                      "result #" + std::to_string(resultIndex));
}
