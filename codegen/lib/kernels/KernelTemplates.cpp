//===- KernelTemplates.cpp - Kernels that take their integers -------------===//
//
// See KernelTemplates.h. A constant is a hole only when the integer flows
// nowhere a static value is needed (a shape, a loop bound, a slice size):
// through arithmetic into indices, compared or yielded values. Offsets of
// slices are holes as they are (the result type does not depend on them).
//
//===----------------------------------------------------------------------===//
#include "KernelTemplates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

/// `op` when it is a tensor.extract_slice or tensor.insert_slice (whose
/// offsets may be runtime values), else null.
OffsetSizeAndStrideOpInterface tensorSlice(Operation *op) {
  if (!isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
    return nullptr;
  return cast<OffsetSizeAndStrideOpInterface>(op);
}

bool isSliceOffset(OpOperand &use) {
  OffsetSizeAndStrideOpInterface s = tensorSlice(use.getOwner());
  return s && llvm::is_contained(s.getOffsets(), use.get()) &&
         !llvm::is_contained(s.getSizes(), use.get()) &&
         !llvm::is_contained(s.getStrides(), use.get());
}

/// Whether the value of `root` only reaches uses that take any runtime
/// value: arithmetic (followed through), indices of tensor.extract /
/// tensor.insert, values inserted, filled or yielded, offsets of slices.
bool onlyRuntimeUses(Value root) {
  SmallVector<Value> work{root};
  llvm::DenseSet<Value> seen{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<arith::ArithDialect, math::MathDialect>(user->getDialect())) {
        for (Value r : user->getResults())
          if (seen.insert(r).second)
            work.push_back(r);
        continue;
      }
      if (isa<tensor::ExtractOp, tensor::InsertOp, linalg::YieldOp,
              linalg::FillOp>(user) ||
          isSliceOffset(use))
        continue;
      return false;
    }
  }
  return true;
}

bool isParameterType(Type t) {
  return t.isIndex() ||
         (t.isSignlessInteger() && t.getIntOrFloatBitWidth() > 1 &&
          t.getIntOrFloatBitWidth() <= 64);
}

} // namespace

SmallVector<Hole> holesOf(func::FuncOp kernel) {
  SmallVector<Hole> holes;
  if (kernel.getBody().empty())
    return holes;
  for (Operation &op : kernel.getBody().front()) {
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      auto attr = dyn_cast<IntegerAttr>(c.getValue());
      if (attr && isParameterType(c.getType()) && onlyRuntimeUses(c))
        holes.push_back({&op, -1, attr.getValue().getSExtValue()});
      continue;
    }
    if (OffsetSizeAndStrideOpInterface s = tensorSlice(&op))
      for (auto [k, off] : llvm::enumerate(s.getStaticOffsets()))
        if (!ShapedType::isDynamic(off))
          holes.push_back({&op, static_cast<int>(k), off});
  }
  return holes;
}

std::string templateText(func::FuncOp kernel, ArrayRef<Hole> holes,
                         llvm::function_ref<std::string(func::FuncOp)> print) {
  // Zero every hole, remembering the attributes to put back.
  SmallVector<std::pair<Operation *, NamedAttribute>> saved;
  llvm::DenseSet<Operation *> slices;
  for (const Hole &h : holes) {
    if (h.slot < 0) {
      auto c = cast<arith::ConstantOp>(h.op);
      saved.push_back(
          {h.op, NamedAttribute(c.getValueAttrName(), c.getValueAttr())});
      h.op->setAttr(c.getValueAttrName(), IntegerAttr::get(c.getType(), 0));
      continue;
    }
    if (!slices.insert(h.op).second)
      continue;
    StringAttr name = StringAttr::get(h.op->getContext(), "static_offsets");
    auto offsets = h.op->getAttrOfType<DenseI64ArrayAttr>(name);
    saved.push_back({h.op, NamedAttribute(name, offsets)});
    SmallVector<int64_t> zeroed(offsets.asArrayRef());
    for (int64_t &o : zeroed)
      if (!ShapedType::isDynamic(o))
        o = 0;
    h.op->setAttr(name, DenseI64ArrayAttr::get(h.op->getContext(), zeroed));
  }
  std::string text = print(kernel);
  for (auto &[op, attr] : saved)
    op->setAttr(attr.getName(), attr.getValue());
  return text;
}

func::FuncOp parameterize(func::FuncOp kernel, ArrayRef<unsigned> varying,
                          unsigned numInputs, ModuleOp into, StringRef name) {
  MLIRContext *ctx = kernel.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(into.getBody());
  auto clone = cast<func::FuncOp>(b.clone(*kernel));
  clone.setSymName(name);
  Location loc = kernel.getLoc();
  auto paramsType = RankedTensorType::get(
      {static_cast<int64_t>(varying.size())}, b.getI64Type());
  (void)clone.insertArgument(numInputs, paramsType, DictionaryAttr::get(ctx),
                             loc);
  Value params = clone.getArgument(numInputs);
  // The clone's holes, in the same order as the original's.
  SmallVector<Hole> mine = holesOf(clone);

  OpBuilder top = OpBuilder::atBlockBegin(&clone.getBody().front());
  llvm::DenseMap<Operation *, SmallVector<std::pair<int, Value>>> offsets;
  SmallVector<Operation *> constants;
  for (auto [k, h] : llvm::enumerate(varying)) {
    const Hole &hole = mine[h];
    Value at = arith::ConstantIndexOp::create(top, loc, k);
    Value v = tensor::ExtractOp::create(top, loc, params, ValueRange{at});
    if (hole.slot >= 0) {
      offsets[hole.op].push_back(
          {hole.slot,
           arith::IndexCastOp::create(top, loc, top.getIndexType(), v)});
      continue;
    }
    Type t = hole.op->getResult(0).getType();
    Value cast = v;
    if (t.isIndex())
      cast = arith::IndexCastOp::create(top, loc, t, v);
    else if (t.getIntOrFloatBitWidth() < 64)
      cast = arith::TruncIOp::create(top, loc, t, v);
    hole.op->getResult(0).replaceAllUsesWith(cast);
    constants.push_back(hole.op);
  }
  for (Operation *op : constants)
    op->erase();
  // Slices with those offsets dynamic.
  for (auto &[op, slots] : offsets) {
    OpBuilder at(op);
    auto mixed = [&](SmallVector<OpFoldResult> offs) {
      for (auto [slot, v] : slots)
        offs[slot] = v;
      return offs;
    };
    Operation *replacement;
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(op))
      replacement = tensor::ExtractSliceOp::create(
          at, s.getLoc(), s.getType(), s.getSource(),
          mixed(s.getMixedOffsets()), s.getMixedSizes(), s.getMixedStrides());
    else {
      auto i = cast<tensor::InsertSliceOp>(op);
      replacement = tensor::InsertSliceOp::create(
          at, i.getLoc(), i.getSource(), i.getDest(),
          mixed(i.getMixedOffsets()), i.getMixedSizes(), i.getMixedStrides());
    }
    op->replaceAllUsesWith(replacement);
    op->erase();
  }
  return clone;
}

} // namespace monarch::codegen::detail
