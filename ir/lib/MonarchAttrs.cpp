//===- MonarchAttrs.cpp - monarch attributes --------------------*- C++ -*-===//
//
// `#monarch.dist` (distribution over named mesh dimensions) and
// `#monarch.buf` (a typed region of a rank's arena).
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace monarch;

#define GET_ATTRDEF_CLASSES
#include "monarch/IR/MonarchAttrs.cpp.inc"

void MonarchDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "monarch/IR/MonarchAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// DistAttr
//===----------------------------------------------------------------------===//

Attribute DistAttr::parse(AsmParser &parser, Type) {
  ArrayAttr split;
  if (parser.parseLess() || parser.parseAttribute(split))
    return {};
  std::optional<ReductionKind> partial;
  if (succeeded(parser.parseOptionalKeyword("partial"))) {
    StringRef kw;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&kw))
      return {};
    partial = symbolizeReductionKind(kw);
    if (!partial) {
      parser.emitError(loc) << "unknown reduction '" << kw << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<DistAttr>(parser.getContext(), split, partial);
}

void DistAttr::print(AsmPrinter &printer) const {
  printer << "<" << getSplit();
  if (getPartial())
    printer << " partial " << stringifyReductionKind(*getPartial());
  printer << ">";
}

LogicalResult DistAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayAttr split,
                               std::optional<ReductionKind> partial) {
  llvm::StringSet<> seen;
  for (Attribute entry : split) {
    auto dims = dyn_cast<ArrayAttr>(entry);
    if (!dims)
      return emitError() << "each #monarch.dist entry must be an array of "
                            "mesh dimension names";
    for (Attribute d : dims) {
      auto name = dyn_cast<StringAttr>(d);
      if (!name || name.getValue().empty())
        return emitError() << "mesh dimension names in #monarch.dist must be "
                              "non-empty strings";
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh dimension \"" << name.getValue()
                           << "\" appears more than once in #monarch.dist";
    }
  }
  return success();
}

SmallVector<StringRef> DistAttr::getSplitDims(unsigned i) const {
  SmallVector<StringRef> names;
  for (Attribute a : cast<ArrayAttr>(getSplit()[i]))
    names.push_back(cast<StringAttr>(a).getValue());
  return names;
}

bool DistAttr::isReplicated() const {
  if (getPartial())
    return false;
  return llvm::all_of(getSplit(),
                      [](Attribute a) { return cast<ArrayAttr>(a).empty(); });
}

//===----------------------------------------------------------------------===//
// BufferAttr
//===----------------------------------------------------------------------===//

LogicalResult BufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t offset, RankedTensorType type) {
  if (offset < 0)
    return emitError() << "buffer offset must be non-negative, got " << offset;
  if (!type.hasStaticShape())
    return emitError() << "buffer type must have a static shape, got " << type;
  // Sizes stay below 2^62 bytes so offset + size never overflows.
  constexpr int64_t kMaxBytes = int64_t(1) << 62;
  int64_t bytes = type.getElementType().isIntOrFloat()
                      ? (type.getElementType().getIntOrFloatBitWidth() + 7) / 8
                      : 1;
  for (int64_t d : type.getShape()) {
    if (d != 0 && bytes > kMaxBytes / d)
      return emitError() << "buffer of type " << type
                         << " is larger than 2^62 bytes";
    bytes *= d;
  }
  if (offset >= kMaxBytes)
    return emitError() << "buffer offset " << offset << " is not below 2^62";
  if (!type.getElementType().isIntOrIndexOrFloat() ||
      type.getElementType().isIndex())
    return emitError() << "buffer element type must be an integer or float, "
                          "got "
                       << type.getElementType();
  return success();
}

int64_t BufferAttr::getSizeInBytes() const {
  RankedTensorType type = getType();
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * ((bits + 7) / 8);
}
