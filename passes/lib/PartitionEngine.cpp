//===- PartitionEngine.cpp - monarch's own partitioner ----------*- C++ -*-===//
//
// See PartitionEngine.h. Three walks over a segment's scratch function:
//
// 1. `wanted`, backwards: the layouts annotations and the ops after a value
//    would like it in, carried through structured ops' indexing maps and
//    pass-through shape ops. Only values nothing fixes take them: arguments
//    no earlier segment laid out, so that `mc.shard(x @ w, gpus=0)` with a
//    replicated x computes on x's rows instead of slicing the whole product.
// 2. `decide`, forwards: each argument's layout (an earlier segment's, an
//    annotation's, the wanted one, or replicated), each structured op's loop
//    axes (from its operands, largest first; then from an annotation of its
//    result; then from what its users want: one candidate among others,
//    each priced by the cost model, the cheapest kept), each result's
//    layout.
//    An op whose tensor operands are all partial sums and which is linear
//    in them keeps its result partial (`carriedPartial`).
// 3. `expand`, forwards: every op rebuilt on per-rank types, each operand
//    resharded to the layout its op needs (cached per value and layout;
//    an annotation's result shares its source's versions and is resharded
//    lazily, where a user needs it). Fills, empties and splat constants
//    are free: they are rebuilt in whatever layout each user needs.
//    Results leave in their producer's layout, partial sums reduced.
//
//===----------------------------------------------------------------------===//

#include "PartitionEngine.h"

#include "monarch/IR/ScatterAdd.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <numeric>
#include <optional>

using namespace mlir;

namespace monarch::partition {
namespace {

using Axes = SmallVector<int16_t, 2>;

/// How a tensor lies on the mesh: per dimension the mesh axes it is split
/// over (major first), and the axes over which it is a partial result still
/// to be reduced with `kind`.
struct Layout {
  SmallVector<Axes> dims;
  Axes partial;
  ReductionKind kind = ReductionKind::Sum;

  static Layout replicated(int64_t rank) {
    Layout l;
    l.dims.resize(rank);
    return l;
  }
  bool operator==(const Layout &o) const {
    return dims == o.dims && partial == o.partial &&
           (partial.empty() || kind == o.kind);
  }
  bool operator!=(const Layout &o) const { return !(*this == o); }
  bool split() const {
    return llvm::any_of(dims, [](const Axes &a) { return !a.empty(); });
  }
  Layout withoutPartial() const {
    Layout l = *this;
    l.partial.clear();
    return l;
  }
  /// The layout of a structured op's operand or result with indexing map
  /// `map` when the op's loops are split over `loopAxes` (not partial).
  static Layout ofMap(AffineMap map, ArrayRef<Axes> loopAxes) {
    Layout l = replicated(map.getNumResults());
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      l.dims[r] = loopAxes[map.getDimPosition(r)];
    return l;
  }
};

/// Whether the engine can shard structured op `op` by its loops: tensors
/// only, projected-permutation maps, static loops (`why` says which
/// fails).
bool hasStructuredRule(linalg::LinalgOp op, std::string &why) {
  if (!op.hasPureTensorSemantics()) {
    why = "works on buffers";
    return false;
  }
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false)) {
      why = "has an indexing map that is not a projected permutation";
      return false;
    }
  for (int64_t r : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(r)) {
      why = "has a dynamic loop";
      return false;
    }
  // (An index op reads a loop's global coordinate: expansion adds the
  // rank's offset to it. A gather's table, a tensor the body captures, is
  // read whole: see capturedTensors.)
  return true;
}

/// The tensors `op`'s body reads without taking them as operands: a
/// gather's table, read at data-dependent coordinates, so every rank needs
/// all of it (the coordinates come in as operands and partition with the
/// loops).
SmallVector<Value> capturedTensors(Operation *op) {
  llvm::SetVector<Value> out;
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value v : inner->getOperands())
      if (isa<RankedTensorType>(v.getType()) &&
          !op->isAncestor(v.getParentRegion()->getParentOp()))
        out.insert(v);
  });
  return out.takeVector();
}

/// Whether `v` costs nothing to make in any layout: an empty tensor, a splat
/// constant, or a fill of one of those.
bool isFree(Value v) {
  Operation *def = v.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!def || !type || !type.hasStaticShape())
    return false;
  if (isa<tensor::EmptyOp>(def))
    return true;
  if (auto c = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    return dense && dense.isSplat();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(def))
    return fill.hasPureTensorSemantics() && isFree(fill.getOutputs()[0]);
  return false;
}

/// The scalar a free value is filled with (null for an empty tensor).
Attribute freeFillValue(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto c = dyn_cast<arith::ConstantOp>(def))
    return cast<DenseElementsAttr>(c.getValue()).getSplatValue<Attribute>();
  if (auto fill = dyn_cast<linalg::FillOp>(def)) {
    Attribute value;
    if (matchPattern(fill.getInputs()[0], m_Constant(&value)))
      return value;
  }
  return {};
}

/// The reduction kind of init `i` of `op` when its reduction loops may be
/// split over ranks: one combiner of a known kind, and an init every rank
/// may start from (the combiner's identity, or any value for max and min).
std::optional<ReductionKind> splittableReduction(linalg::LinalgOp op,
                                                 unsigned i) {
  SmallVector<Operation *> combiners;
  if (!matchReduction(op.getRegionOutputArgs(), i, combiners) ||
      combiners.size() != 1)
    return std::nullopt;
  Operation *c = combiners.front();
  std::optional<ReductionKind> kind;
  bool idempotent = false;
  if (isa<arith::AddFOp, arith::AddIOp>(c))
    kind = ReductionKind::Sum;
  else if (isa<arith::MulFOp, arith::MulIOp>(c))
    kind = ReductionKind::Prod;
  else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(c))
    kind = ReductionKind::Max, idempotent = true;
  else if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(c))
    kind = ReductionKind::Min, idempotent = true;
  if (!kind)
    return std::nullopt;
  if (idempotent)
    return kind;
  // Sums and products: every rank's partial starts from the identity.
  Value init = op.getDpsInits()[i];
  if (!isFree(init))
    return std::nullopt;
  Attribute value = freeFillValue(init);
  auto isConst = [&](double want) {
    if (auto f = dyn_cast_or_null<FloatAttr>(value))
      return f.getValueAsDouble() == want;
    if (auto n = dyn_cast_or_null<IntegerAttr>(value))
      return n.getValue().getSExtValue() == static_cast<int64_t>(want);
    return false;
  };
  if (*kind == ReductionKind::Sum ? isConst(0.0) : isConst(1.0))
    return kind;
  return std::nullopt;
}

class Engine {
public:
  Engine(func::FuncOp fn, MeshOpInterface mesh, ArrayRef<DistAttr> inDists,
         ArrayRef<arith::ConstantOp> lifted)
      : fn(fn), mesh(mesh), inDists(inDists), lifted(lifted),
        tail(lifted.size()), extents(mesh.getMeshShape()),
        names(mesh.getDimNames()), b(fn.getContext()) {}

  LogicalResult run(SmallVectorImpl<DistAttr> &argDists,
                    SmallVectorImpl<DistAttr> &resDists, std::string &why) {
    if (failed(check(why)))
      return failure();
    collectWanted();
    if (failed(decide(why)) || failed(expand(why)))
      return failure();
    Block &body = fn.getBody().front();
    argDists.clear();
    for (BlockArgument arg : body.getArguments())
      argDists.push_back(isa<RankedTensorType>(arg.getType())
                             ? distOf(layout.lookup(arg))
                             : DistAttr());
    resDists.clear();
    for (Value v : body.getTerminator()->getOperands())
      resDists.push_back(isa<RankedTensorType>(v.getType())
                             ? distOf(finalLayouts.lookup(v))
                             : DistAttr());
    // (Monarch collectives verify once they are in their endpoint.)
    for (Operation &op : body)
      if (!isa<MonarchDialect>(op.getDialect()) && failed(mlir::verify(&op))) {
        why = "built an op that does not verify";
        return failure();
      }
    return success();
  }

private:
  func::FuncOp fn;
  MeshOpInterface mesh;
  ArrayRef<DistAttr> inDists;
  /// The constants the trailing arguments stand for (non-splat constants
  /// enter the segment as replicated arguments).
  ArrayRef<arith::ConstantOp> lifted;
  unsigned tail;
  SmallVector<int64_t> extents;
  SmallVector<StringRef> names;
  OpBuilder b;

  /// Decided layouts of (global) values.
  DenseMap<Value, Layout> layout;
  /// Layouts users would like values in (walk 1).
  DenseMap<Value, Layout> wanted;
  /// Per structured op: its loops' mesh axes.
  DenseMap<Operation *, SmallVector<Axes>> loops;
  /// Per global value: its per-rank versions by layout (walk 3).
  DenseMap<Value, SmallVector<std::pair<Layout, Value>, 1>> versions;
  /// Per-rank results, by the layout they are returned in.
  DenseMap<Value, Layout> finalLayouts;

  // ---- Layout helpers ----------------------------------------------------

  int64_t count(ArrayRef<int16_t> axes) const {
    int64_t n = 1;
    for (int16_t a : axes)
      n *= extents[a];
    return n;
  }

  /// The layout of a sharding annotation on a tensor of `rank`; axes of
  /// extent 1 split nothing and are dropped.
  FailureOr<Layout> fromSharding(Value sharding, int64_t rank) {
    auto op = sharding.getDefiningOp<shard::ShardingOp>();
    if (!op || !op.getStaticShardedDimsOffsets().empty() ||
        !op.getDynamicShardedDimsOffsets().empty() ||
        !op.getStaticHaloSizes().empty() || !op.getDynamicHaloSizes().empty())
      return failure();
    Layout l = Layout::replicated(rank);
    for (auto [d, axes] : llvm::enumerate(op.getSplitAxes().getAxes()))
      for (int16_t a : axes.asArrayRef()) {
        if (a < 0 || a >= static_cast<int16_t>(extents.size()))
          return failure();
        if (extents[a] == 1)
          continue;
        if (static_cast<int64_t>(d) >= rank)
          return failure();
        l.dims[d].push_back(a);
      }
    return l;
  }

  FailureOr<Layout> fromDist(DistAttr dist, int64_t rank) {
    Layout l = Layout::replicated(rank);
    if (!dist || dist.getPartial())
      return l;
    for (int64_t d = 0; d < rank; ++d)
      for (StringRef m : dist.getSplitDims(d)) {
        int64_t i = mesh.getDimIndex(m);
        if (i < 0)
          return failure();
        if (extents[i] > 1)
          l.dims[d].push_back(static_cast<int16_t>(i));
      }
    return l;
  }

  DistAttr distOf(const Layout &l) {
    if (!l.split() && l.partial.empty())
      return {};
    MLIRContext *ctx = fn.getContext();
    SmallVector<Attribute> dims;
    for (const Axes &axes : l.dims) {
      SmallVector<Attribute> dimNames;
      for (int16_t a : axes)
        dimNames.push_back(StringAttr::get(ctx, names[a]));
      dims.push_back(ArrayAttr::get(ctx, dimNames));
    }
    return DistAttr::get(ctx, ArrayAttr::get(ctx, dims),
                         l.partial.empty() ? std::nullopt
                                           : std::optional(l.kind));
  }

  /// Whether `l` divides every dimension of `type` evenly.
  bool divides(const Layout &l, RankedTensorType type) const {
    for (auto [d, axes] : llvm::enumerate(l.dims))
      if (!axes.empty() && type.getDimSize(d) % count(axes))
        return false;
    return true;
  }

  RankedTensorType localType(RankedTensorType type, const Layout &l) const {
    SmallVector<int64_t> shape(type.getShape());
    for (auto [d, axes] : llvm::enumerate(l.dims))
      shape[d] /= count(axes);
    return RankedTensorType::get(shape, type.getElementType());
  }

  ArrayAttr dimNames(ArrayRef<int16_t> axes) {
    SmallVector<Attribute> out;
    for (int16_t a : axes)
      out.push_back(b.getStringAttr(names[a]));
    return b.getArrayAttr(out);
  }

  /// The plain annotation of `v` (`shard.shard %v to %s`), if any.
  static shard::ShardOp plainAnnotation(Value v) {
    for (Operation *user : v.getUsers())
      if (auto s = dyn_cast<shard::ShardOp>(user);
          s && !s.getAnnotateForUsers())
        return s;
    return {};
  }

  // ---- Walk 0: every op has a rule ---------------------------------------

  LogicalResult check(std::string &why) {
    for (Operation &op : fn.getBody().front()) {
      bool tensors = llvm::any_of(op.getResultTypes(),
                                  [](Type t) { return isa<TensorType>(t); });
      bool tensorOperands = llvm::any_of(
          op.getOperandTypes(), [](Type t) { return isa<TensorType>(t); });
      if (isa<shard::ShardingOp, func::ReturnOp>(op) ||
          (!tensors && !tensorOperands))
        continue;
      // A structured op may make several tensors (one loop nest, each
      // result through its own indexing map).
      bool allTensors = llvm::all_of(
          op.getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); });
      if (auto l = dyn_cast<linalg::LinalgOp>(op);
          l && allTensors && op.getNumResults() >= 1) {
        std::string reason;
        if (hasStructuredRule(l, reason))
          continue;
        why = "'" + op.getName().getStringRef().str() + "' " + reason;
        return failure();
      }
      if (!tensors || op.getNumResults() != 1) {
        why = "'" + op.getName().getStringRef().str() +
              "' has no rule (it does not make one tensor)";
        return failure();
      }
      if (isa<shard::ShardOp, tensor::EmptyOp, arith::ConstantOp>(op))
        continue;
      if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
        if (s.getOffsets().empty() && s.getSizes().empty() &&
            s.getStrides().empty())
          continue;
      } else if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                     tensor::ConcatOp>(op)) {
        continue;
      }
      why = "'" + op.getName().getStringRef().str() + "' has no rule";
      return failure();
    }
    for (Type t : fn.getArgumentTypes())
      if (isa<TensorType>(t) && !isa<RankedTensorType>(t)) {
        why = "an unranked tensor argument";
        return failure();
      }
    return success();
  }

  // ---- Walk 1: wanted layouts, backwards ---------------------------------

  void want(Value v, const Layout &l) {
    if (!isa<RankedTensorType>(v.getType()) || !l.split())
      return;
    // A dimension some user reduces over stays whole: splitting it would
    // trade a local slice for a collective (softmax over the last axis of
    // a value a later annotation splits on that axis).
    Layout w = l.withoutPartial();
    llvm::SmallBitVector whole(w.dims.size());
    for (OpOperand &use : v.getUses()) {
      auto user = dyn_cast<linalg::LinalgOp>(use.getOwner());
      if (!user)
        continue;
      AffineMap map = user.getMatchingIndexingMap(&use);
      SmallVector<utils::IteratorType> iters = user.getIteratorTypesArray();
      for (unsigned r = 0; r < map.getNumResults() && r < w.dims.size(); ++r)
        if (auto d = dyn_cast<AffineDimExpr>(map.getResult(r));
            d && iters[d.getPosition()] == utils::IteratorType::reduction) {
          w.dims[r].clear();
          whole.set(r);
        }
    }
    if (w.split() && wanted.try_emplace(v, w).second)
      wantedWhole[v] = whole;
  }

  /// Per wanted value: the dimensions it wants whole because a user
  /// reduces over them. Its other unsplit dimensions are open: the users
  /// take whatever split their other operands bring.
  DenseMap<Value, llvm::SmallBitVector> wantedWhole;

  /// Where a structured op's result should go: an annotation's layout, or
  /// the wanted one with the dimensions it has no preference for (`open`).
  struct Target {
    Layout layout;
    llvm::SmallBitVector open;
  };

  void collectWanted() {
    Block &body = fn.getBody().front();
    for (Operation &op : llvm::reverse(body)) {
      if (auto s = dyn_cast<shard::ShardOp>(op)) {
        auto type = cast<RankedTensorType>(s.getSrc().getType());
        FailureOr<Layout> l = fromSharding(s.getSharding(), type.getRank());
        if (succeeded(l))
          want(s.getSrc(), *l);
        continue;
      }
      if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
        // Parallel loops of the results take their wanted axes (the first
        // result's where two want one loop).
        SmallVector<Axes> loopAxes(l.getNumLoops());
        bool any = false;
        for (OpResult res : op.getResults()) {
          auto it = wanted.find(res);
          if (it == wanted.end())
            continue;
          any = true;
          AffineMap out = l.getIndexingMapMatchingResult(res);
          for (unsigned r = 0; r < out.getNumResults(); ++r)
            if (loopAxes[out.getDimPosition(r)].empty())
              loopAxes[out.getDimPosition(r)] = it->second.dims[r];
        }
        if (!any)
          continue;
        for (OpOperand *in : l.getDpsInputOperands()) {
          auto type = dyn_cast<RankedTensorType>(in->get().getType());
          if (!type)
            continue;
          Layout w = Layout::ofMap(l.getMatchingIndexingMap(in), loopAxes);
          if (divides(w, type))
            want(in->get(), w);
        }
        continue;
      }
      if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
        auto it = wanted.find(s.getResult());
        if (it == wanted.end())
          continue;
        RankedTensorType src = s.getSourceType();
        llvm::SmallBitVector dropped = s.getDroppedDims();
        Layout w = Layout::replicated(src.getRank());
        for (int64_t d = 0, r = 0; d < src.getRank(); ++d) {
          if (dropped.test(d))
            continue;
          if (s.getStaticSizes()[d] == src.getDimSize(d))
            w.dims[d] = it->second.dims[r];
          ++r;
        }
        want(s.getSource(), w);
        continue;
      }
      if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
        auto it = wanted.find(op.getResult(0));
        if (it == wanted.end())
          continue;
        // The reshape rule backwards: an expand's wanted result merges into
        // its source, a collapse's splits into it.
        Layout result = it->second;
        if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
          want(e.getSrc(), mergeRuns(e.getReassociationIndices(),
                                     e.getResultType(), result));
        else if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
          want(c.getSrc(),
               splitRuns(c.getReassociationIndices(), c.getSrcType(), result));
        continue;
      }
      if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
        auto it = wanted.find(c.getResult());
        if (it == wanted.end())
          continue;
        Layout w = it->second;
        w.dims[c.getDim()].clear();
        for (Value in : c.getInputs())
          want(in, w);
      }
    }
  }

  // ---- Walk 2: decide, forwards ------------------------------------------

  LogicalResult decide(std::string &why) {
    Block &body = fn.getBody().front();
    unsigned numArgs = body.getNumArguments();
    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        continue;
      unsigned i = arg.getArgNumber();
      Layout l = Layout::replicated(type.getRank());
      if (i >= numArgs - tail) {
        // Lifted constants: replicated.
      } else if (i < inDists.size() && inDists[i] && !inDists[i].getPartial()) {
        FailureOr<Layout> known = fromDist(inDists[i], type.getRank());
        if (failed(known)) {
          why = "an argument's layout names a dimension the mesh lacks";
          return failure();
        }
        l = *known;
      } else if (shard::ShardOp s = plainAnnotation(arg)) {
        FailureOr<Layout> a = fromSharding(s.getSharding(), type.getRank());
        if (succeeded(a))
          l = *a;
        // A replicated annotation (the tracer's placement of a value the
        // user did not shard) fixes nothing: where a value arrives is the
        // partitioner's choice, its global value the same.
        if (succeeded(a) && !a->split() && a->partial.empty() &&
            arg.hasOneUse())
          freeArgs.push_back(arg);
      } else if (auto it = wanted.find(arg); it != wanted.end()) {
        l = it->second;
      } else {
        freeArgs.push_back(arg);
      }
      if (!divides(l, type))
        l = Layout::replicated(type.getRank());
      layout[arg] = l;
    }
    for (Operation &op : body) {
      if (isa<shard::ShardingOp, func::ReturnOp>(op))
        continue;
      if (op.getNumResults() > 1) {
        if (auto l = dyn_cast<linalg::LinalgOp>(op))
          decideStructured(l); // (walk 0 let only structured ones by)
        continue;
      }
      if (op.getNumResults() != 1 ||
          !isa<RankedTensorType>(op.getResult(0).getType()))
        continue; // Scalars: kept as they are.
      Value res = op.getResult(0);
      auto type = cast<RankedTensorType>(res.getType());
      if (isFree(res))
        continue;
      if (auto s = dyn_cast<shard::ShardOp>(op)) {
        FailureOr<Layout> l = fromSharding(s.getSharding(), type.getRank());
        if (failed(l) || !divides(*l, type)) {
          why = "a sharding annotation this engine cannot express";
          return failure();
        }
        layout[res] = *l;
        continue;
      }
      if (isa<arith::ConstantOp>(op)) {
        layout[res] = Layout::replicated(type.getRank());
        continue;
      }
      if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
        decideStructured(l);
        continue;
      }
      if (failed(decideShapeOp(&op, why)))
        return failure();
    }
    // An argument nothing laid out arrives in the one split layout every
    // use of it reads (AdamW's moments, sliced like their gradients): each
    // rank is fed its piece, not the whole value, and a donated moment
    // kept split is fed where it lies.
    splitForUsers();
    for (BlockArgument arg : freeArgs) {
      // Its uses, or those of its one replicated annotation.
      Value read = arg;
      if (shard::ShardOp s = plainAnnotation(arg))
        read = s.getResult();
      std::optional<Layout> l = unanimousNeed(read);
      if (l && l->split() && l->partial.empty() &&
          divides(*l, cast<RankedTensorType>(arg.getType())))
        layout[arg] = layout[read] = *l;
    }
    return success();
  }

  /// Arguments no earlier segment, annotation or wanted layout laid out.
  SmallVector<BlockArgument> freeArgs;
  /// Per use by a decided op: the layout the op reads the value in.
  DenseMap<OpOperand *, Layout> useNeeds;

  /// The one layout every use of `v` reads it in, if all its uses are
  /// decided ops that agree.
  std::optional<Layout> unanimousNeed(Value v) const {
    std::optional<Layout> l;
    for (OpOperand &use : v.getUses()) {
      auto it = useNeeds.find(&use);
      if (it == useNeeds.end() || (l && *l != it->second))
        return std::nullopt;
      l = it->second;
    }
    return l;
  }

  /// Backwards, once: a structured op that split nothing but whose users
  /// all read its result in one split layout computes just that split
  /// (its parallel loops take the result's mesh axes), when each operand
  /// gets there by a local slice. Elementwise work before a split
  /// consumer (AdamW's b1 * m before + (1 - b1) * g) stops running whole
  /// on every rank, and its operands become split reads in turn.
  ///
  /// An operand that is a partial sum gets there by one reduce_scatter
  /// instead of the all_reduce it had (ZeRO-1 under global semantics: a
  /// data-parallel gradient whose optimizer moments are split by rows is
  /// reduce-scattered, half the bytes, and the update runs on each rank's
  /// rows). That holds only when every use of the partial sum ends up
  /// reading the same split; otherwise the all_reduce stays as well, so
  /// the ops that asked for it are put back as they were.
  void splitForUsers() {
    struct Undo {
      Operation *op;
      SmallVector<Axes> loops;
      Layout result;
      SmallVector<std::pair<OpOperand *, Layout>> needs;
    };
    // Per partial sum reduce-scattered: its split and the ops that read it.
    llvm::MapVector<Value, std::pair<Layout, SmallVector<Undo>>> scattered;
    Block &body = fn.getBody().front();
    for (Operation &op : llvm::reverse(body)) {
      auto l = dyn_cast<linalg::LinalgOp>(op);
      if (!l || op.getNumResults() != 1 || !loops.count(&op) ||
          partialOperands.count(&op) || splitTables.count(&op) ||
          llvm::any_of(loops[&op], [](const Axes &a) { return !a.empty(); }))
        continue;
      OpResult res = op.getResult(0);
      std::optional<Layout> want = unanimousNeed(res);
      if (!want || !want->split() || !want->partial.empty())
        continue;
      SmallVector<Axes> loopAxes(l.getNumLoops());
      AffineMap out = l.getIndexingMapMatchingResult(res);
      for (unsigned r = 0; r < out.getNumResults(); ++r)
        loopAxes[out.getDimPosition(r)] = want->dims[r];
      SmallVector<int64_t> ranges = l.getStaticLoopRanges();
      bool ok = true;
      for (auto [range, axes] : llvm::zip(ranges, loopAxes))
        ok &= axes.empty() || range % count(axes) == 0;
      SmallVector<std::pair<OpOperand *, Layout>> needs;
      SmallVector<Value> scatters;
      for (OpOperand &o : op.getOpOperands()) {
        if (!ok || !isa<RankedTensorType>(o.get().getType()) || isFree(o.get()))
          continue;
        Layout need = operandNeed(l, o, loopAxes, {});
        FailureOr<SmallVector<Step>> steps = reshardSteps(have(o.get()), need);
        ok = succeeded(steps) &&
             llvm::all_of(llvm::enumerate(*steps), [](const auto &st) {
               return st.value().kind == Step::Slice ||
                      (st.index() == 0 &&
                       st.value().kind == Step::ReduceScatter);
             });
        if (ok && !steps->empty() &&
            steps->front().kind == Step::ReduceScatter) {
          auto it = scattered.find(o.get());
          ok = it == scattered.end() || it->second.first == need;
          scatters.push_back(o.get());
        }
        needs.push_back({&o, need});
      }
      for (Value table : capturedTensors(l))
        ok &= !tableNeed(l, table, loopAxes).split();
      if (!ok)
        continue;
      Undo undo{&op, loops[&op], layout[res], {}};
      for (auto &[o, need] : needs) {
        undo.needs.push_back({o, useNeeds[o]});
        if (llvm::is_contained(scatters, o->get()))
          scattered[o->get()].first = need;
        useNeeds[o] = need;
      }
      for (Value v : scatters)
        scattered[v].second.push_back(undo);
      layout[res] = *want; // Its parallel loops split as its users read it.
      loops[&op] = std::move(loopAxes);
    }
    // A partial sum some use still reads otherwise: undo its readers (which
    // may leave another partial sum read two ways: to a fixed point).
    for (bool changed = true; changed;) {
      changed = false;
      for (auto &[v, entry] : scattered) {
        std::optional<Layout> all = unanimousNeed(v);
        if (entry.second.empty() || (all && *all == entry.first))
          continue;
        for (Undo &u : llvm::reverse(entry.second)) {
          loops[u.op] = u.loops;
          layout[u.op->getResult(0)] = u.result;
          for (auto &[o, need] : u.needs)
            useNeeds[o] = need;
        }
        entry.second.clear();
        changed = true;
      }
    }
  }

  /// The layout `v` has (replicated for a free value, which takes any).
  Layout have(Value v) const {
    auto it = layout.find(v);
    if (it != layout.end())
      return it->second;
    return Layout::replicated(cast<RankedTensorType>(v.getType()).getRank());
  }

  /// The integers `v` holds when it is a constant (or a lifted one).
  DenseIntElementsAttr constantInts(Value v) const {
    if (auto c = v.getDefiningOp<arith::ConstantOp>())
      return dyn_cast<DenseIntElementsAttr>(c.getValue());
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      return {};
    unsigned n = arg.getOwner()->getNumArguments(), i = arg.getArgNumber();
    if (i < n - tail)
      return {};
    arith::ConstantOp c = lifted[i - (n - tail)];
    return dyn_cast<DenseIntElementsAttr>(c.getValue());
  }

  /// The loop a gather's coordinate runs along, or -1: `linalg.index` of a
  /// loop, or an input that is the constant 0, 1, ..., n-1 along one loop
  /// of n iterations (the tracer's arange), cast to an index.
  int64_t iotaLoop(linalg::LinalgOp op, Value c) const {
    if (auto cast = c.getDefiningOp<arith::IndexCastOp>())
      c = cast.getIn();
    if (auto i = c.getDefiningOp<linalg::IndexOp>())
      return i.getDim();
    DenseIntElementsAttr ints;
    int64_t d = constantLoop(op, c, ints);
    if (d < 0)
      return -1;
    int64_t k = 0;
    for (const APInt &v : ints.getValues<APInt>())
      if (v.getSExtValue() != k++)
        return -1;
    return d;
  }

  /// `c` without the tracer's normalization of an index (negative ones
  /// wrapped, `select(i < 0, i + n, i)`, then clamped into [0, n - 1] by
  /// `maxsi`/`minsi` with constants) and index casts: the identity on
  /// indices already in [0, n), which is what constantLoop's callers
  /// check the constant rows against.
  static Value withoutWrapAndClamp(Value c) {
    for (;;) {
      Operation *def = c.getDefiningOp();
      if (!def)
        return c;
      if (auto cast = dyn_cast<arith::IndexCastOp>(def)) {
        c = cast.getIn();
        continue;
      }
      if (isa<arith::MinSIOp, arith::MaxSIOp>(def)) {
        if (matchPattern(def->getOperand(1), m_Constant())) {
          c = def->getOperand(0);
          continue;
        }
        if (matchPattern(def->getOperand(0), m_Constant())) {
          c = def->getOperand(1);
          continue;
        }
        return c;
      }
      if (auto select = dyn_cast<arith::SelectOp>(def)) {
        Value x = select.getFalseValue();
        auto add = select.getTrueValue().getDefiningOp<arith::AddIOp>();
        auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
        if (add && cmp && cmp.getLhs() == x &&
            cmp.getPredicate() == arith::CmpIPredicate::slt &&
            matchPattern(cmp.getRhs(), m_Zero()) &&
            ((add.getLhs() == x && matchPattern(add.getRhs(), m_Constant())) ||
             (add.getRhs() == x && matchPattern(add.getLhs(), m_Constant())))) {
          c = x;
          continue;
        }
      }
      return c;
    }
  }

  /// The loop a gather's coordinate `c` runs along when it is a constant
  /// index table along one loop (the tracer's rows of `np.pad` in reflect
  /// or edge mode, of a strided or reversed slice): that loop, and the
  /// table's values in `values`; else -1.
  int64_t constantLoop(linalg::LinalgOp op, Value c,
                       DenseIntElementsAttr &values) const {
    c = withoutWrapAndClamp(c);
    auto arg = dyn_cast<BlockArgument>(c);
    if (!arg || arg.getOwner() != op.getBlock() ||
        arg.getArgNumber() >= op.getNumDpsInputs())
      return -1;
    OpOperand *in = op.getDpsInputOperand(arg.getArgNumber());
    AffineMap map = op.getMatchingIndexingMap(in);
    if (map.getNumResults() != 1 || !isa<AffineDimExpr>(map.getResult(0)))
      return -1;
    unsigned d = map.getDimPosition(0);
    DenseIntElementsAttr ints = constantInts(in->get());
    if (!ints || ints.getType().getRank() != 1 ||
        ints.getNumElements() != op.getStaticLoopRanges()[d])
      return -1;
    values = ints;
    return d;
  }

  /// Whether a loop of `values.size()` iterations cut into `parts` reads,
  /// in each part, only rows of the same part of a dimension of `rows`
  /// (the rank that runs the part holds them).
  static bool readsOwnPart(DenseIntElementsAttr values, int64_t rows,
                           int64_t parts) {
    int64_t n = values.getNumElements();
    if (parts <= 1 || n % parts || rows % parts)
      return parts == 1;
    int64_t i = 0;
    for (const APInt &v : values.getValues<APInt>()) {
      int64_t part = i++ / (n / parts), row = v.getSExtValue();
      if (row < part * (rows / parts) || row >= (part + 1) * (rows / parts))
        return false;
    }
    return true;
  }

  /// Per dimension of a table a gather reads: the loop its coordinate runs
  /// along, and the coordinate's constant values when it is an index
  /// table rather than the loop's own index.
  struct Passthrough {
    int64_t loop = -1;
    DenseIntElementsAttr values;
  };

  /// Per dimension of `table`, a table `op`'s body reads: the loop its
  /// coordinate runs along in every read (an iota of a loop with as many
  /// iterations as the dimension has rows), else -1. Along such a
  /// dimension the gather passes through: a rank whose loop runs over its
  /// rows reads only rows of its own shard. So does a constant index
  /// table along one loop whose every part, cut as the table is split,
  /// reads rows of the same part of the table (`np.pad` by reflection or
  /// edge of a row-split array: each rank's padded rows come from its own
  /// rows); tableNeed checks that again for the split the loop takes.
  SmallVector<Passthrough> passthroughLoops(linalg::LinalgOp op,
                                            Value table) const {
    RankedTensorType type = globalType(table);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    Layout held = have(table);
    SmallVector<Passthrough> along(type.getRank(), Passthrough{-2, {}});
    op->walk([&](tensor::ExtractOp e) {
      if (e.getTensor() != table)
        return;
      for (auto [k, c] : llvm::enumerate(e.getIndices())) {
        Passthrough p{iotaLoop(op, c), {}};
        if (p.loop >= 0 && ranges[p.loop] != type.getDimSize(k))
          p.loop = -1;
        if (p.loop < 0) {
          p.loop = constantLoop(op, c, p.values);
          if (p.loop >= 0 && (count(held.dims[k]) <= 1 ||
                              !readsOwnPart(p.values, type.getDimSize(k),
                                            count(held.dims[k]))))
            p = Passthrough{-1, {}};
        }
        Passthrough &a = along[k];
        if (a.loop == -2)
          a = p;
        else if (a.loop != p.loop || a.values != p.values)
          a = Passthrough{-1, {}};
      }
    });
    for (Passthrough &p : along)
      if (p.loop == -2)
        p = Passthrough{-1, {}};
    return along;
  }

  /// The layout `op` reads captured `table` in with its loops split over
  /// `loopAxes`: split like the loops its passthrough dimensions run along,
  /// whole elsewhere.
  Layout tableNeed(linalg::LinalgOp op, Value table,
                   ArrayRef<Axes> loopAxes) const {
    RankedTensorType type = globalType(table);
    Layout need = Layout::replicated(type.getRank());
    for (auto [k, p] : llvm::enumerate(passthroughLoops(op, table)))
      if (p.loop >= 0 &&
          (!p.values ||
           readsOwnPart(p.values, type.getDimSize(k), count(loopAxes[p.loop]))))
        need.dims[k] = loopAxes[p.loop];
    return divides(need, type) ? need : Layout::replicated(type.getRank());
  }

  void decideStructured(linalg::LinalgOp op) {
    unsigned numLoops = op.getNumLoops();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    bool reductionsSplit = true;
    SmallVector<ReductionKind> kinds;
    for (unsigned i = 0, e = op.getNumDpsInits(); i < e; ++i) {
      std::optional<ReductionKind> k = splittableReduction(op, i);
      if (!k)
        reductionsSplit = false;
      kinds.push_back(k.value_or(ReductionKind::Sum));
    }
    if (op.getNumReductionLoops() == 0)
      reductionsSplit = true;

    // Proposals, by priority: 1. the operands' layouts, largest operand
    // first; 2. an annotation of a result; 3. what its users want.
    SmallVector<std::pair<AffineMap, Layout>> proposals;
    SmallVector<OpOperand *> operands;
    for (OpOperand &o : op->getOpOperands())
      if (auto t = dyn_cast<RankedTensorType>(o.get().getType());
          t && !isFree(o.get()))
        operands.push_back(&o);
    llvm::stable_sort(operands, [](OpOperand *x, OpOperand *y) {
      return cast<RankedTensorType>(x->get().getType()).getNumElements() >
             cast<RankedTensorType>(y->get().getType()).getNumElements();
    });
    for (OpOperand *o : operands)
      proposals.push_back({op.getMatchingIndexingMap(o), have(o->get())});
    // A gather's table split along dimensions its reads pass through
    // proposes those loops, first: the table is the data the op reads.
    for (Value table : capturedTensors(op)) {
      Layout t = have(table);
      if (isFree(table) || !t.split())
        continue;
      SmallVector<AffineExpr> exprs;
      Layout l;
      for (auto [k, p] : llvm::enumerate(passthroughLoops(op, table)))
        if (p.loop >= 0) {
          exprs.push_back(getAffineDimExpr(p.loop, op.getContext()));
          l.dims.push_back(t.dims[k]);
        }
      if (!exprs.empty())
        proposals.insert(
            proposals.begin(),
            {AffineMap::get(numLoops, 0, exprs, op.getContext()), l});
    }
    SmallVector<std::optional<Target>> targets;
    for (OpResult r : op->getResults()) {
      AffineMap out = op.getIndexingMapMatchingResult(r);
      std::optional<Target> target;
      if (shard::ShardOp s = plainAnnotation(r)) {
        FailureOr<Layout> a = fromSharding(
            s.getSharding(), cast<RankedTensorType>(r.getType()).getRank());
        if (succeeded(a)) {
          proposals.push_back({out, *a});
          target = Target{*a, llvm::SmallBitVector(a->dims.size())};
        }
      }
      if (auto it = wanted.find(r); it != wanted.end()) {
        proposals.push_back({out, it->second});
        if (!target) {
          const Layout &w = it->second;
          llvm::SmallBitVector open(w.dims.size());
          for (auto [d, axes] : llvm::enumerate(w.dims))
            open[d] = axes.empty();
          open.reset(wantedWhole[r]);
          target = Target{w, open};
        }
      }
      targets.push_back(target);
    }
    // Each proposal in turn takes the loops it splits that are still free,
    // over mesh axes no loop uses yet.
    auto assign = [&](ArrayRef<unsigned> order, SmallVector<Axes> &loopAxes,
                      llvm::SmallBitVector &used) {
      loopAxes.assign(numLoops, Axes());
      used = llvm::SmallBitVector(extents.size());
      for (unsigned i : order) {
        auto &[map, l] = proposals[i];
        for (unsigned r = 0; r < map.getNumResults(); ++r) {
          unsigned pos = map.getDimPosition(r);
          const Axes &axes = l.dims[r];
          if (axes.empty() || !loopAxes[pos].empty())
            continue;
          if (iters[pos] == utils::IteratorType::reduction && !reductionsSplit)
            continue;
          if (llvm::any_of(axes, [&](int16_t a) { return used.test(a); }))
            continue;
          if (ranges[pos] % count(axes))
            continue;
          loopAxes[pos] = axes;
          for (int16_t a : axes)
            used.set(a);
        }
      }
    };
    // Candidates: the proposals in priority order, each proposal first,
    // and nothing split; the cheapest wins, the priority order on ties.
    SmallVector<unsigned> order(proposals.size());
    std::iota(order.begin(), order.end(), 0u);
    SmallVector<Axes> loopAxes;
    llvm::SmallBitVector used;
    assign(order, loopAxes, used);
    if (!proposals.empty()) {
      double best = candidateCost(op, loopAxes, used, kinds, targets);
      SmallVector<SmallVector<unsigned>> others;
      for (unsigned first = 1; first < proposals.size(); ++first) {
        SmallVector<unsigned> o = {first};
        for (unsigned i : order)
          if (i != first)
            o.push_back(i);
        others.push_back(o);
      }
      others.push_back({});
      for (ArrayRef<unsigned> o : others) {
        SmallVector<Axes> axes;
        llvm::SmallBitVector u;
        assign(o, axes, u);
        if (axes == loopAxes)
          continue;
        double c = candidateCost(op, axes, u, kinds, targets);
        if (c < best * (1 - 1e-9)) {
          best = c;
          loopAxes = std::move(axes);
          used = std::move(u);
        }
      }
    }
    // Partial sums the op is linear in stay partial through it (Megatron's
    // one all_reduce for dq @ wq.T + dk @ wk.T + dv @ wv.T).
    Axes carried = carriedPartial(op, loopAxes, used, kinds);
    if (carried.empty())
      carried = splitTableLookup(op, used);
    for (OpResult r : op->getResults())
      layout[r] = resultLayout(op, r, loopAxes, carried, kinds);
    if (!carried.empty())
      partialOperands[op] = carried;
    for (OpOperand &o : op->getOpOperands())
      if (isa<RankedTensorType>(o.get().getType()) && !isFree(o.get()))
        useNeeds[&o] = operandNeed(op, o, loopAxes, carried);
    loops[op] = std::move(loopAxes);
  }

  /// The layout operand `o` of structured `op` needs when its loops are
  /// split over `loopAxes`: an input that is a partial sum over the axes
  /// the op carries (`carried`) stays partial.
  Layout operandNeed(linalg::LinalgOp op, OpOperand &o, ArrayRef<Axes> loopAxes,
                     ArrayRef<int16_t> carried) const {
    Layout need = Layout::ofMap(op.getMatchingIndexingMap(&o), loopAxes);
    if (!carried.empty() && op.isDpsInput(&o) &&
        ArrayRef<int16_t>(have(o.get()).partial) == carried) {
      need.partial = Axes(carried);
      need.kind = ReductionKind::Sum;
    }
    return need;
  }

  /// The layout of result `r` of structured `op` with its loops split over
  /// `loopAxes`: partial over its split reduction loops' axes and the
  /// axes it carries, with the kind of its init's reduction.
  Layout resultLayout(linalg::LinalgOp op, OpResult r, ArrayRef<Axes> loopAxes,
                      ArrayRef<int16_t> carried,
                      ArrayRef<ReductionKind> kinds) const {
    Layout l = Layout::ofMap(op.getIndexingMapMatchingResult(r), loopAxes);
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    for (unsigned pos = 0; pos < loopAxes.size(); ++pos)
      if (iters[pos] == utils::IteratorType::reduction)
        l.partial.append(loopAxes[pos]);
    l.partial.append(carried.begin(), carried.end());
    llvm::sort(l.partial);
    l.kind = kinds[r.getResultNumber()];
    return l;
  }

  /// Per structured op that carries partial sums: their mesh axes (its
  /// partial operands stay partial, kind sum).
  DenseMap<Operation *, Axes> partialOperands;
  /// Per gather that looks up a table split by rows (Megatron's
  /// vocabulary-parallel embedding): the table's layout.
  DenseMap<Operation *, Layout> splitTables;

  /// A gather whose body yields one `tensor.extract` of one captured table
  /// that is split (not partial) over mesh dimensions none of its loops use
  /// looks its rows up where they are: each rank reads the coordinates that
  /// fall in its shard and yields zero elsewhere, a partial sum over the
  /// table's mesh dimensions (one all_reduce of the result instead of an
  /// all_gather of the table).
  Axes splitTableLookup(linalg::LinalgOp op, const llvm::SmallBitVector &used) {
    SmallVector<Value> tables = capturedTensors(op);
    if (tables.size() != 1 || op.getNumDpsInits() != 1 || isFree(tables[0]))
      return {};
    bool indexed = false;
    op->walk([&](linalg::IndexOp) { indexed = true; });
    if (indexed)
      return {};
    Layout t = have(tables[0]);
    if (!t.partial.empty() || !t.split())
      return {};
    Block *body = op.getBlock();
    Value yielded = body->getTerminator()->getOperand(0);
    auto extract = yielded.getDefiningOp<tensor::ExtractOp>();
    if (!extract || extract.getTensor() != tables[0] ||
        llvm::count_if(tables[0].getUsers(), [&](Operation *user) {
          return op->isAncestor(user);
        }) != 1)
      return {};
    Type elem = extract.getType();
    if (!isa<FloatType, IntegerType>(elem))
      return {};
    Axes axes;
    for (const Axes &d : t.dims)
      axes.append(d);
    for (int16_t a : axes)
      if (used.test(a))
        return {};
    llvm::sort(axes);
    splitTables[op] = t;
    return axes;
  }

  /// The partial-sum axes `op` may carry from its operands to its result
  /// instead of reducing them first: every tensor operand is a partial sum
  /// over the same axes (none a loop of `op` is split over), the yielded
  /// value is linear in them (sums and differences, products and quotients
  /// with scalars, negations; an accumulator only when the init is the
  /// sum's identity), and the result is no larger than any of them
  /// (deferring a reduction past a broadcast would move more bytes), and
  /// `op` is their only user: a partial sum that another user needs
  /// reduced is reduced once where it is made and every user reads that
  /// (carrying it here would reduce the same sum twice: AdamW's
  /// `(1 - b1) * g` beside its `g * g`).
  Axes carriedPartial(linalg::LinalgOp op, ArrayRef<Axes> loopAxes,
                      const llvm::SmallBitVector &used,
                      ArrayRef<ReductionKind> kinds) {
    if (op.getNumDpsInits() != 1 || kinds.front() != ReductionKind::Sum)
      return {};
    Axes axes;
    llvm::SmallBitVector partialIn(op.getNumDpsInputs());
    int64_t smallest = std::numeric_limits<int64_t>::max();
    for (OpOperand *in : op.getDpsInputOperands()) {
      auto t = dyn_cast<RankedTensorType>(in->get().getType());
      if (!t || isFree(in->get()))
        continue;
      Layout h = have(in->get());
      // Only sums of partial sums (and their scalings) carry: a product
      // with another tensor starts a second partial chain, which would
      // need its own reduction beside the one of this operand.
      if (h.partial.empty())
        return {};
      if (h.kind != ReductionKind::Sum || (!axes.empty() && axes != h.partial))
        return {};
      if (llvm::any_of(in->get().getUsers(),
                       [&](Operation *user) { return user != op; }))
        return {};
      axes = h.partial;
      partialIn.set(in->getOperandNumber());
      smallest = std::min(smallest, t.getNumElements());
    }
    if (axes.empty())
      return {};
    for (int16_t a : axes)
      if (used.test(a))
        return {};
    auto res = cast<RankedTensorType>(op->getResult(0).getType());
    if (res.getNumElements() > smallest)
      return {};
    // One partial operand and a result as large: carrying it merges no
    // reductions unless a user adds it to another partial sum, and it
    // delays the reduction behind whatever the carried op waits for (the
    // MLP's `lr * g2` was fused into the kernel that waited for g1's
    // all_reduce, so g2's started only after it instead of overlapping
    // the backward).
    if (partialIn.count() == 1 && res.getNumElements() >= smallest &&
        !mergedByUser(op->getResult(0), axes))
      return {};
    bool accumulates = op.getNumReductionLoops() > 0 &&
                       splittableReduction(op, 0) == ReductionKind::Sum;
    enum class Lin { Const, Partial, Bad };
    DenseMap<Value, Lin> cls;
    for (auto [i, arg] : llvm::enumerate(op.getRegionInputArgs()))
      cls[arg] = partialIn.test(i) ? Lin::Partial : Lin::Const;
    for (BlockArgument arg : op.getRegionOutputArgs())
      cls[arg] = accumulates ? Lin::Partial : Lin::Bad;
    auto get = [&](Value v) {
      auto it = cls.find(v);
      return it == cls.end() ? Lin::Const : it->second; // Defined outside.
    };
    Block *body = op.getBlock();
    for (Operation &inner : body->without_terminator()) {
      SmallVector<Lin> in;
      for (Value v : inner.getOperands())
        in.push_back(get(v));
      bool bad = llvm::is_contained(in, Lin::Bad);
      bool partial = llvm::is_contained(in, Lin::Partial);
      Lin out = Lin::Bad;
      if (bad || inner.getNumRegions())
        out = Lin::Bad;
      else if (!partial)
        out = Lin::Const;
      else if (isa<arith::AddFOp, arith::SubFOp>(inner))
        out = in[0] == Lin::Partial && in[1] == Lin::Partial ? Lin::Partial
                                                             : Lin::Bad;
      else if (isa<arith::MulFOp>(inner))
        out = (in[0] == Lin::Partial) != (in[1] == Lin::Partial) ? Lin::Partial
                                                                 : Lin::Bad;
      else if (isa<arith::DivFOp>(inner))
        out = in[0] == Lin::Partial && in[1] == Lin::Const ? Lin::Partial
                                                           : Lin::Bad;
      else if (isa<arith::NegFOp>(inner))
        out = Lin::Partial;
      for (Value r : inner.getResults())
        cls[r] = out;
    }
    for (Value v : body->getTerminator()->getOperands())
      if (get(v) != Lin::Partial)
        return {};
    return axes;
  }

  /// Whether a structured user of `v` also reads another partial sum over
  /// `axes` (already decided): one reduction of both instead of two.
  bool mergedByUser(Value v, ArrayRef<int16_t> axes) const {
    for (Operation *user : v.getUsers()) {
      auto l = dyn_cast<linalg::LinalgOp>(user);
      if (!l)
        continue;
      for (OpOperand *in : l.getDpsInputOperands()) {
        if (in->get() == v || !isa<RankedTensorType>(in->get().getType()))
          continue;
        Layout h = have(in->get());
        if (h.kind == ReductionKind::Sum &&
            ArrayRef<int16_t>(h.partial) == axes)
          return true;
      }
    }
    return false;
  }

  /// Shardy's reshape rule for a run of dimensions of `sizes` merged into
  /// one, each split over `parts` (major first): the merged dimension is
  /// split over their axes in order as long as its shards stay contiguous,
  /// that is while every dimension before the next split one is cut into
  /// single rows ((2, 16) split over (hosts, gpus) with hosts = 2: rows of
  /// 8 over hosts x gpus). The splits it cannot keep are dropped from
  /// `parts` (gathered before the reshape).
  Axes mergeGroup(ArrayRef<int64_t> sizes, SmallVectorImpl<Axes> &parts) const {
    Axes merged;
    bool contiguous = true;
    for (auto [size, axes] : llvm::zip(sizes, parts)) {
      if (!contiguous) {
        axes.clear();
        continue;
      }
      merged.append(axes);
      if (size / count(axes) != 1)
        contiguous = false;
    }
    return merged;
  }

  /// The reverse: one dimension split over `axes` (major first) expanded
  /// into dimensions of `sizes`. Each takes the next axes that divide it;
  /// the axes go on to the next dimension only when this one is cut into
  /// single rows. Axes left over are dropped from `axes` (gathered before
  /// the reshape, innermost first).
  SmallVector<Axes> splitGroup(ArrayRef<int64_t> sizes, Axes &axes) const {
    SmallVector<Axes> parts(sizes.size());
    size_t next = 0;
    for (auto [k, size] : llvm::enumerate(sizes)) {
      int64_t n = 1;
      while (next < axes.size() && size % (n * extents[axes[next]]) == 0) {
        n *= extents[axes[next]];
        parts[k].push_back(axes[next++]);
      }
      if (next == axes.size() || n != size)
        break;
    }
    axes.resize(next);
    return parts;
  }

  /// mergeGroup over every run of `runs`: the layout of the narrow side of
  /// a reshape whose wide side (`wide`, laid out `wideLayout`) has the
  /// runs' dimensions; splits the narrow side cannot keep are dropped from
  /// `wideLayout`.
  Layout mergeRuns(ArrayRef<ReassociationIndices> runs, RankedTensorType wide,
                   Layout &wideLayout) const {
    Layout narrow = Layout::replicated(runs.size());
    for (auto [g, run] : llvm::enumerate(runs)) {
      SmallVector<int64_t> sizes;
      SmallVector<Axes> parts;
      for (int64_t d : run) {
        sizes.push_back(wide.getDimSize(d));
        parts.push_back(wideLayout.dims[d]);
      }
      narrow.dims[g] = mergeGroup(sizes, parts);
      for (auto [k, d] : llvm::enumerate(run))
        wideLayout.dims[d] = parts[k];
    }
    return narrow;
  }

  /// splitGroup over every run: the layout of the wide side `wide` of a
  /// reshape whose narrow side is laid out `narrow`; axes the wide side
  /// cannot take are dropped from `narrow`.
  Layout splitRuns(ArrayRef<ReassociationIndices> runs, RankedTensorType wide,
                   Layout &narrow) const {
    Layout out = Layout::replicated(wide.getRank());
    for (auto [g, run] : llvm::enumerate(runs)) {
      SmallVector<int64_t> sizes;
      for (int64_t d : run)
        sizes.push_back(wide.getDimSize(d));
      SmallVector<Axes> parts = splitGroup(sizes, narrow.dims[g]);
      for (auto [k, d] : llvm::enumerate(run))
        out.dims[d] = parts[k];
    }
    return out;
  }

  /// The layout users would like `v` in: walk 1's, or else that of an
  /// operand already decided beside it in an elementwise user (identity
  /// maps, all loops parallel), whose split the user will follow.
  std::optional<Layout> wantedOrSibling(Value v) const {
    if (auto it = wanted.find(v); it != wanted.end())
      return it->second;
    for (OpOperand &use : v.getUses()) {
      auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!user || user.getNumReductionLoops() != 0 ||
          !user.getMatchingIndexingMap(&use).isIdentity())
        continue;
      for (OpOperand *other : user.getDpsInputOperands())
        if (other->get() != v && layout.count(other->get()) &&
            user.getMatchingIndexingMap(other).isIdentity())
          return have(other->get()).withoutPartial();
    }
    return std::nullopt;
  }

  /// The layout a shape op needs its (first) operand in, and its result's.
  DenseMap<Operation *, Layout> needs;

  LogicalResult decideShapeOp(Operation *op, std::string &why) {
    Value src = op->getOperand(0), res = op->getResult(0);
    auto resType = cast<RankedTensorType>(res.getType());
    Layout in = have(src).withoutPartial();
    Layout out = Layout::replicated(resType.getRank());
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
      out = splitRuns(e.getReassociationIndices(), resType, in);
    } else if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
      Layout before = in;
      out = mergeRuns(c.getReassociationIndices(), c.getSrcType(), in);
      // A run whose splits the merge cannot keep (a later dimension's: they
      // would be gathered) while the result is wanted split over those very
      // axes: move them to the run's first dimension instead. One
      // all_to_all of the source replaces an all_gather, and each rank
      // keeps its share (x.T.flatten() of a row-split x, multiplied with
      // x.ravel(): an all_gather of the whole and a slice before).
      std::optional<Layout> want = wantedOrSibling(res);
      bool moved = false;
      Layout move = before;
      if (want)
        for (auto [g, run] : llvm::enumerate(c.getReassociationIndices())) {
          Axes axes;
          for (int64_t d : run)
            axes.append(before.dims[d]);
          int64_t first = run.front();
          if (!out.dims[g].empty() || axes.empty() || want->dims[g] != axes ||
              c.getSrcType().getDimSize(first) % count(axes) != 0)
            continue;
          for (int64_t d : run)
            move.dims[d].clear();
          move.dims[first] = axes;
          moved = true;
        }
      if (moved) {
        in = move;
        out = mergeRuns(c.getReassociationIndices(), c.getSrcType(), in);
      }
    } else if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
      RankedTensorType srcType = s.getSourceType();
      llvm::SmallBitVector dropped = s.getDroppedDims();
      // A slice of split dimensions that lies in one rank's shard of each
      // (`x[0]` of a row-split x) is taken by that rank, the others make
      // zeros: a partial sum over those axes (ownerSlice).
      SmallVector<int64_t> owner = ownerSlice(s, in);
      Axes ownerAxes;
      for (auto [d, o] : llvm::enumerate(owner))
        if (o >= 0)
          ownerAxes.append(in.dims[d]);
      for (int64_t d = 0, r = 0; d < srcType.getRank(); ++d) {
        bool whole = !dropped.test(d) && s.getStaticOffsets()[d] == 0 &&
                     s.getStaticStrides()[d] == 1 &&
                     s.getStaticSizes()[d] == srcType.getDimSize(d);
        if (!whole && owner[d] < 0)
          in.dims[d].clear();
        if (!dropped.test(d))
          out.dims[r++] = owner[d] < 0 ? in.dims[d] : Axes();
      }
      if (!ownerAxes.empty()) {
        llvm::sort(ownerAxes);
        out.partial = ownerAxes;
        out.kind = ReductionKind::Sum;
        owners[op] = std::move(owner);
      }
    } else if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
      // The first operand that is not free sets the layout.
      for (Value v : c.getInputs())
        if (!isFree(v)) {
          in = have(v).withoutPartial();
          break;
        }
      in.dims[c.getDim()].clear();
      out = in;
    } else {
      why = "'" + op->getName().getStringRef().str() + "' has no rule";
      return failure();
    }
    needs[op] = in;
    layout[res] = out;
    for (OpOperand &o : op->getOpOperands())
      if (isa<RankedTensorType>(o.get().getType()) && !isFree(o.get()))
        useNeeds[&o] = in;
    return success();
  }

  /// Per dimension of slice `s` of a source laid out `in`: the index of the
  /// shard that holds the whole slice along that split dimension, or -1
  /// (all -1 when the rank holding it should not take it alone). Taken by
  /// its holder, the slice is a partial sum that costs an all_reduce of
  /// the slice (twice its bytes in a ring) where it is needed whole,
  /// instead of an all_gather of the source: so only for a slice of at
  /// most a quarter of the source, and only when no other slice of the
  /// source gathers it anyway (np.roll's small wrapped-around piece
  /// beside the large one; the halves of a sort network).
  SmallVector<int64_t> ownerSlice(tensor::ExtractSliceOp s,
                                  const Layout &in) const {
    RankedTensorType srcType = s.getSourceType();
    SmallVector<int64_t> none(srcType.getRank(), -1);
    std::optional<SmallVector<int64_t>> owner = holderOf(s, in);
    if (!owner || llvm::all_of(*owner, [](int64_t x) { return x < 0; }))
      return none;
    for (Operation *user : s.getSource().getUsers()) {
      auto other = dyn_cast<tensor::ExtractSliceOp>(user);
      if (other && other != s && !holderOf(other, in))
        return none;
    }
    return *owner;
  }

  /// Per dimension of slice `s` of a source laid out `in`, the shard that
  /// holds it along each split dimension it cuts (-1 elsewhere); none when
  /// it cuts a split dimension across shards, or is too large or of a type
  /// to take alone (the source is gathered for it).
  std::optional<SmallVector<int64_t>> holderOf(tensor::ExtractSliceOp s,
                                               const Layout &in) const {
    RankedTensorType srcType = s.getSourceType();
    auto resType = cast<RankedTensorType>(s.getType());
    SmallVector<int64_t> owner(srcType.getRank(), -1);
    Type elem = resType.getElementType();
    bool alone =
        4 * resType.getNumElements() <= srcType.getNumElements() &&
        s.hasUnitStride() &&
        (isa<FloatType>(elem) || elem.isInteger(32) || elem.isInteger(64));
    for (int64_t d = 0; d < srcType.getRank(); ++d) {
      if (in.dims[d].empty())
        continue;
      int64_t from = s.getStaticOffsets()[d];
      int64_t size = s.getStaticSizes()[d];
      if (from == 0 && size == srcType.getDimSize(d) &&
          s.getStaticStrides()[d] == 1)
        continue; // Taken whole: it stays split.
      int64_t shard = srcType.getDimSize(d) / count(in.dims[d]);
      if (!alone || ShapedType::isDynamic(from) ||
          ShapedType::isDynamic(size) ||
          from / shard != (from + size - 1) / shard)
        return std::nullopt;
      owner[d] = from / shard;
    }
    return owner;
  }

  /// Per slice taken by the rank holding it (decideShapeOp): per source
  /// dimension the index of the shard that holds the slice, or -1.
  DenseMap<Operation *, SmallVector<int64_t>> owners;

  // ---- Walk 3: expand, forwards ------------------------------------------

  /// Per op whose partial results were reduced right after it: the last
  /// op of those reductions.
  DenseMap<Operation *, Operation *> reducedAfter;

  /// `v`'s per-rank value in layout `want`, made once.
  FailureOr<Value> get(Value v, const Layout &want, Location loc) {
    if (Value local = version(v, want))
      return local;
    FailureOr<Value> made = isFree(root(v)) ? materialize(root(v), want, loc)
                                            : reshard(v, want, loc);
    if (succeeded(made))
      addVersion(v, want, *made);
    return made;
  }

  /// An annotation's result is its source as a global value: both share
  /// their per-rank versions (a replicated source sliced by `mc.shard` is
  /// still there for a later `mc.replicate`).
  DenseMap<Value, Value> aliasOf;
  Value root(Value v) const {
    for (auto it = aliasOf.find(v); it != aliasOf.end(); it = aliasOf.find(v))
      v = it->second;
    return v;
  }

  /// The per-rank version of `v` in layout `l`, if made.
  Value version(Value v, const Layout &l) {
    auto it = versions.find(root(v));
    if (it != versions.end())
      for (auto &[have, local] : it->second)
        if (have == l)
          return local;
    return {};
  }

  void addVersion(Value v, const Layout &l, Value local) {
    if (!version(v, l))
      versions[root(v)].push_back({l, local});
  }

  FailureOr<Value> materialize(Value v, const Layout &want, Location loc) {
    auto type = cast<RankedTensorType>(v.getType());
    RankedTensorType local = localType(type, want);
    Operation *def = v.getDefiningOp();
    if (isa<tensor::EmptyOp>(def))
      return tensor::EmptyOp::create(b, loc, local.getShape(),
                                     local.getElementType())
          .getResult();
    if (auto c = dyn_cast<arith::ConstantOp>(def))
      return arith::ConstantOp::create(
                 b, loc, local,
                 DenseElementsAttr::get(local,
                                        cast<DenseElementsAttr>(c.getValue())
                                            .getSplatValue<Attribute>()))
          .getResult();
    auto fill = cast<linalg::FillOp>(def);
    FailureOr<Value> init = get(fill.getOutputs()[0], want, loc);
    if (failed(init))
      return failure();
    return linalg::FillOp::create(b, loc, fill.getInputs()[0], *init)
        .getResult(0);
  }

  /// This rank's first index along a dimension split over `axes` into
  /// pieces of `extent`: process_index(axes) * extent.
  Value firstIndex(OpBuilder &ob, Location loc, ArrayRef<int16_t> axes,
                   int64_t extent) {
    Value index = ProcessIndexOp::create(ob, loc, dimNames(axes));
    Value size = arith::ConstantIndexOp::create(ob, loc, extent);
    return arith::MulIOp::create(ob, loc, index, size);
  }

  /// Per dimension of a value laid out `l` whose piece on this rank has
  /// type `shard`: the piece's first global index (null where whole).
  SmallVector<Value> firstIndices(const Layout &l, RankedTensorType shard,
                                  Location loc) {
    SmallVector<Value> first(l.dims.size());
    for (auto [d, axes] : llvm::enumerate(l.dims))
      if (!axes.empty())
        first[d] = firstIndex(b, loc, axes, shard.getDimSize(d));
    return first;
  }

  /// One collective or local slice of a reshard, from `before` to `after`.
  struct Step {
    enum Kind { AllReduce, ReduceScatter, AllToAll, AllGather, Slice } kind;
    Layout before, after;
    /// The mesh axes it moves (reduced, gathered, sliced or exchanged).
    Axes axes;
    /// The tensor dimension it scatters, gathers, slices or concatenates
    /// into; for all_to_all `from` is the dimension it splits off.
    int64_t dim = -1, from = -1;
  };

  /// The steps that move a value from `cur` to `want`, in this order:
  /// 1. partial results reduce-scatter into the one dimension that wants
  ///    exactly the partial axes more, else all-reduce;
  /// 2. an axis that moves from the end of one dimension to the next place
  ///    of another: one all_to_all (each rank sends (n-1)/n of its shard)
  ///    instead of a gather and a slice;
  /// 3. gathers: each dimension keeps the longest prefix of its axes the
  ///    wanted layout shares; the rest is gathered, innermost axis first;
  /// 4. slices: the axes a dimension wants more, at this rank's index.
  /// Failure when `want` is partial over other axes than `cur`.
  FailureOr<SmallVector<Step>> reshardSteps(Layout cur,
                                            const Layout &want) const {
    SmallVector<Step> steps;
    auto add = [&](Step::Kind kind, Layout next, Axes axes, int64_t dim,
                   int64_t from = -1) {
      steps.push_back({kind, cur, next, std::move(axes), dim, from});
      cur = std::move(next);
    };
    if (!cur.partial.empty() && cur.partial != want.partial) {
      if (!want.partial.empty())
        return failure();
      int64_t scatter = -1;
      for (auto [d, axes] : llvm::enumerate(want.dims)) {
        Axes more = cur.dims[d];
        more.append(cur.partial);
        if (cur.partial.size() == 1 && axes == more &&
            cur.kind != ReductionKind::Avg)
          scatter = static_cast<int64_t>(d);
      }
      Layout next = cur.withoutPartial();
      if (scatter >= 0)
        next.dims[scatter] = want.dims[scatter];
      add(scatter >= 0 ? Step::ReduceScatter : Step::AllReduce, next,
          cur.partial, scatter);
    }
    for (size_t d = 0; d < cur.dims.size(); ++d) {
      if (cur.dims[d].empty() || ArrayRef<int16_t>(want.dims[d])
                                     .take_front(cur.dims[d].size())
                                     .equals(cur.dims[d]))
        continue;
      int16_t a = cur.dims[d].back();
      for (size_t e = 0; e < cur.dims.size(); ++e) {
        const Axes &to = want.dims[e];
        const Axes &from = cur.dims[e];
        if (e == d || to.size() <= from.size() ||
            !ArrayRef<int16_t>(to).take_front(from.size()).equals(from) ||
            to[from.size()] != a)
          continue;
        Layout next = cur;
        next.dims[d].pop_back();
        next.dims[e].push_back(a);
        add(Step::AllToAll, next, {a}, static_cast<int64_t>(e),
            static_cast<int64_t>(d));
        break;
      }
    }
    for (size_t d = 0; d < cur.dims.size(); ++d) {
      const Axes &target = want.dims[d];
      size_t keep = 0;
      while (keep < cur.dims[d].size() && keep < target.size() &&
             cur.dims[d][keep] == target[keep])
        ++keep;
      // An axis the wanted layout uses on another dimension must be
      // gathered here too before it can be sliced there.
      while (cur.dims[d].size() > keep) {
        int16_t a = cur.dims[d].back();
        Layout next = cur;
        next.dims[d].pop_back();
        add(Step::AllGather, next, {a}, static_cast<int64_t>(d));
      }
    }
    for (size_t d = 0; d < want.dims.size(); ++d) {
      if (cur.dims[d] == want.dims[d])
        continue;
      Axes more(ArrayRef<int16_t>(want.dims[d]).drop_front(cur.dims[d].size()));
      Layout next = cur;
      next.dims[d] = want.dims[d];
      add(Step::Slice, next, more, static_cast<int64_t>(d));
    }
    if (cur != want)
      return failure();
    return steps;
  }

  /// Moves `v` from the layout it has to `want` (reshardSteps).
  FailureOr<Value> reshard(Value v, const Layout &want, Location loc) {
    Layout cur = have(v);
    Value local = version(v, cur);
    if (!local) {
      // An annotation is resharded lazily: from its source's layout
      // straight to what each user needs.
      cur = have(root(v));
      local = version(v, cur);
    }
    if (!local)
      return failure();
    FailureOr<SmallVector<Step>> steps = reshardSteps(cur, want);
    if (failed(steps))
      return failure();
    // A partial sum is reduced where it is made, not where it is first
    // used: the collective is issued as soon as its producer has run and
    // overlaps the work between them (DDP's gradient all_reduce during the
    // backward; used lazily, the MLP's first-layer gradient reduction
    // waited until the last kernel of the backward).
    // Reductions of one op's results follow it in the order they are made.
    OpBuilder::InsertionGuard guard(b);
    Operation *producer = local.getDefiningOp();
    if (!steps->empty() && producer &&
        (steps->front().kind == Step::AllReduce ||
         steps->front().kind == Step::ReduceScatter)) {
      auto it = reducedAfter.find(producer);
      b.setInsertionPointAfter(it != reducedAfter.end() ? it->second
                                                        : producer);
    } else {
      producer = nullptr;
    }
    RankedTensorType global = globalType(v);
    for (const Step &s : *steps) {
      RankedTensorType to = localType(global, s.after);
      switch (s.kind) {
      case Step::AllReduce:
      case Step::ReduceScatter: {
        // The reduction names the op whose partial sums it completes (the
        // user's `.sum()` or `@`), as upstream partitioning does.
        Value made = root(v);
        Location at =
            made.getDefiningOp() ? made.getDefiningOp()->getLoc() : loc;
        if (s.kind == Step::ReduceScatter)
          local = ReduceScatterOp::create(b, at, to, local, dimNames(s.axes),
                                          s.dim, s.before.kind);
        else
          local = AllReduceOp::create(
              b, at, local, dimNames(s.axes),
              ReductionKindAttr::get(b.getContext(), s.before.kind));
        break;
      }
      case Step::AllToAll:
        local = AllToAllOp::create(b, loc, to, local, dimNames(s.axes), s.dim,
                                   s.from);
        break;
      case Step::AllGather:
        local = AllGatherOp::create(b, loc, to, local, dimNames(s.axes), s.dim);
        break;
      case Step::Slice: {
        Value offset = firstIndex(b, loc, s.axes, to.getDimSize(s.dim));
        SmallVector<OpFoldResult> offsets(to.getRank(), b.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes,
            strides(to.getRank(), b.getIndexAttr(1));
        for (int64_t n : to.getShape())
          sizes.push_back(b.getIndexAttr(n));
        offsets[s.dim] = offset;
        local = tensor::ExtractSliceOp::create(b, loc, to, local, offsets,
                                               sizes, strides);
        break;
      }
      }
    }
    if (producer && local.getDefiningOp())
      reducedAfter[producer] = local.getDefiningOp();
    return local;
  }

  // ---- Cost model (issue 31 item 3) ----------------------------------------
  //
  // Microseconds on the plan simulator's figures for this machine kind
  // (PlanSimulate.h, preset "this-machine"): compute at kFlopsPerUs, a
  // collective as alpha + bytes x factor / beta, over the network when one
  // of its mesh axes is named "hosts" and through shared memory otherwise.

  static constexpr double kFlopsPerUs = 40e3;
  static constexpr double kIntraAlphaUs = 20, kIntraBytesPerUs = 4e3;
  static constexpr double kInterAlphaUs = 60, kInterBytesPerUs = 1.2e3;

  /// Whether a collective over `axes` crosses hosts (a mesh dimension
  /// named "hosts"), and its latency.
  bool overHosts(ArrayRef<int16_t> axes) const {
    return llvm::any_of(axes, [&](int16_t a) { return names[a] == "hosts"; });
  }
  double latency(ArrayRef<int16_t> axes) const {
    return overHosts(axes) ? kInterAlphaUs : kIntraAlphaUs;
  }

  /// How many shards a layout cuts a tensor into (partial axes excluded).
  double shards(const Layout &l) const {
    double n = 1;
    for (const Axes &d : l.dims)
      n *= static_cast<double>(count(d));
    return n;
  }

  /// The time of `steps` moving a tensor of type `global`: a ring's bytes
  /// (all_reduce 2(k-1)/k of a shard, reduce_scatter and all_to_all
  /// (k-1)/k of it, all_gather (k-1)/k of the result) and one latency per
  /// collective (small collectives are one round on the shared-memory
  /// direct path and in NCCL's low-latency protocols, where the simulator
  /// charges a ring's 2(k-1)); slices are local.
  double stepsCost(ArrayRef<Step> steps, RankedTensorType global) const {
    Type elem = global.getElementType();
    double bytes =
        static_cast<double>(global.getNumElements()) *
        (elem.isIntOrFloat() ? (elem.getIntOrFloatBitWidth() + 7) / 8 : 8);
    double us = 0;
    for (const Step &s : steps) {
      if (s.kind == Step::Slice)
        continue;
      double k = static_cast<double>(count(s.axes));
      double alpha = latency(s.axes);
      double beta = overHosts(s.axes) ? kInterBytesPerUs : kIntraBytesPerUs;
      double in = bytes / shards(s.before), out = bytes / shards(s.after);
      switch (s.kind) {
      case Step::AllReduce:
        us += alpha + 2 * (k - 1) / k * in / beta;
        break;
      case Step::ReduceScatter:
      case Step::AllToAll:
        us += alpha + (k - 1) / k * in / beta;
        break;
      case Step::AllGather:
        us += alpha + (k - 1) / k * out / beta;
        break;
      case Step::Slice:
        break;
      }
    }
    return us;
  }

  /// The time to bring `v` to `want` before it is used: nothing when it is
  /// there (an annotation reshards from its source), else its steps.
  double reshardCost(Value v, const Layout &want) const {
    Layout cur = have(v);
    if (cur == want)
      return 0;
    // An earlier user asked for the same: the expansion makes it once.
    for (OpOperand &use : v.getUses())
      if (auto it = useNeeds.find(&use);
          it != useNeeds.end() && it->second == want)
        return 0;
    cur = have(root(v));
    if (cur == want)
      return 0;
    FailureOr<SmallVector<Step>> steps = reshardSteps(cur, want);
    return succeeded(steps) ? stepsCost(*steps, globalType(v)) : 1e30;
  }

  /// The time of running structured `op` with its loops split over
  /// `loopAxes`: its share of the iterations (each yielding op one flop),
  /// its operands' reshards, and bringing each result to where it goes
  /// (its annotation or what its users want, else reduced).
  double candidateCost(linalg::LinalgOp op, ArrayRef<Axes> loopAxes,
                       const llvm::SmallBitVector &used,
                       ArrayRef<ReductionKind> kinds,
                       ArrayRef<std::optional<Target>> targets) {
    // A scatter-add (ScatterAdd.h) passes over its values once, whatever
    // rows a rank holds: its work is the other loops' iterations.
    std::optional<unsigned> rows = scatterRowLoop(op);
    double iterations = 1, split = 1;
    for (auto [i, range, axes] :
         llvm::enumerate(op.getStaticLoopRanges(), loopAxes)) {
      if (rows && i == *rows)
        continue;
      iterations *= static_cast<double>(range);
      split *= static_cast<double>(count(axes));
    }
    double flops =
        std::max<size_t>(1, op.getBlock()->getOperations().size() - 1);
    double us = iterations / split * flops / kFlopsPerUs;
    Axes carried = carriedPartial(op, loopAxes, used, kinds);
    for (OpOperand &o : op->getOpOperands())
      if (isa<RankedTensorType>(o.get().getType()) && !isFree(o.get()))
        us += reshardCost(o.get(), operandNeed(op, o, loopAxes, carried));
    // A table read where it lies along passthrough dimensions costs what
    // moving it to that layout costs (other tables: read whole or by
    // masked lookups, as before).
    for (Value table : capturedTensors(op))
      if (!isFree(table))
        if (Layout need = tableNeed(op, table, loopAxes); need.split())
          us += reshardCost(table, need);
    // Results reduced over the same mesh axes go in one bucket (the plan
    // groups adjacent collectives): one latency for all of them.
    SmallVector<Axes> reducedOver;
    for (OpResult r : op->getResults()) {
      Layout l = resultLayout(op, r, loopAxes, carried, kinds);
      // Where the target has no preference the result stays as it is;
      // without a target it is reduced.
      Layout to = l.withoutPartial();
      if (const std::optional<Target> &t = targets[r.getResultNumber()]) {
        Layout want = t->layout;
        for (auto [d, axes] : llvm::enumerate(want.dims))
          if (t->open.test(d) && !l.dims[d].empty() &&
              llvm::none_of(l.dims[d], [&](int16_t a) {
                return llvm::any_of(want.dims, [&](const Axes &other) {
                  return llvm::is_contained(other, a);
                });
              }))
            axes = l.dims[d];
        to = want;
      }
      FailureOr<SmallVector<Step>> steps = reshardSteps(l, to);
      if (failed(steps))
        return 1e30;
      us += stepsCost(*steps, cast<RankedTensorType>(r.getType()));
      if (steps->size() == 1 && steps->front().kind == Step::AllReduce) {
        const Axes &axes = steps->front().axes;
        if (llvm::is_contained(reducedOver, axes))
          us -= latency(axes);
        else
          reducedOver.push_back(axes);
      }
    }
    return us;
  }

  /// Arguments' global types (they take their per-rank ones in walk 3).
  DenseMap<Value, RankedTensorType> argTypes;
  RankedTensorType globalType(Value v) const {
    if (auto t = argTypes.lookup(v))
      return t;
    return cast<RankedTensorType>(v.getType());
  }

  LogicalResult expand(std::string &why) {
    Block &body = fn.getBody().front();
    // Arguments take their per-rank types.
    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        continue;
      argTypes[arg] = type;
      arg.setType(localType(type, layout[arg]));
      addVersion(arg, layout[arg], arg);
    }
    SmallVector<Operation *> old;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      Location loc = op.getLoc();
      b.setInsertionPoint(&op);
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        SmallVector<Value> values;
        for (Value v : ret.getOperands()) {
          if (!isa<RankedTensorType>(v.getType())) {
            values.push_back(v);
            continue;
          }
          // A result leaves in the layout its producer left it in: the plan
          // fetches shards and reshards between endpoints, so a trailing
          // `mc.replicate` costs no collective here. A partial sum is
          // reduced into the layout its annotation asks for (a split one
          // is a reduce_scatter).
          Layout l = have(root(v));
          if (!l.partial.empty())
            l = have(v).withoutPartial();
          FailureOr<Value> local = get(v, l, loc);
          if (failed(local)) {
            why = "could not reshard a result";
            return failure();
          }
          finalLayouts[*local] = l;
          values.push_back(*local);
        }
        ret->setOperands(values);
        continue;
      }
      if (auto l = dyn_cast<linalg::LinalgOp>(op);
          l && op.getNumResults() > 1) {
        old.push_back(&op);
        FailureOr<Operation *> made = expandStructured(l, loc);
        if (failed(made)) {
          why = "could not rebuild '" + op.getName().getStringRef().str() +
                "' on per-rank types";
          return failure();
        }
        for (OpResult r : op.getResults())
          addVersion(r, layout[r], (*made)->getResult(r.getResultNumber()));
        continue;
      }
      if (isa<shard::ShardingOp>(op) || op.getNumResults() != 1 ||
          !isa<RankedTensorType>(op.getResult(0).getType()))
        continue;
      Value res = op.getResult(0);
      old.push_back(&op);
      if (isFree(res))
        continue; // Made where it is used.
      if (auto s = dyn_cast<shard::ShardOp>(op)) {
        // The same global value: resharded where a user needs it.
        aliasOf[res] = root(s.getSrc());
        continue;
      }
      FailureOr<Value> made = expandOne(&op, loc);
      if (failed(made)) {
        why = "could not rebuild '" + op.getName().getStringRef().str() +
              "' on per-rank types";
        return failure();
      }
      addVersion(res, layout[res], *made);
    }
    for (Operation *op : llvm::reverse(old)) {
      op->dropAllUses();
      op->erase();
    }
    for (Operation &op : llvm::make_early_inc_range(body))
      if (isa<shard::ShardingOp>(op) && op.use_empty())
        op.erase();
    fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                                 body.getTerminator()->getOperandTypes()));
    return success();
  }

  /// The gather `op` on this rank's shard of its table (laid out `t`):
  /// coordinates outside the shard read row 0 of it and yield zero.
  FailureOr<Value> lookUpSplitTable(linalg::LinalgOp op, const Layout &t,
                                    ArrayRef<Value> operands, Location loc) {
    Value table = capturedTensors(op).front();
    FailureOr<Value> shard = get(table, t, loc);
    if (failed(shard))
      return failure();
    auto localTable = cast<RankedTensorType>(shard->getType());
    // Each split dimension's first global row on this rank.
    SmallVector<Value> offsets = firstIndices(t, localTable, loc);
    IRMapping map;
    map.map(table, *shard);
    Operation *made = b.clone(*op.getOperation(), map);
    made->setOperands(operands);
    OpResult r = op->getResult(0);
    made->getResult(0).setType(
        localType(cast<RankedTensorType>(r.getType()), layout[r]));
    Block *body = cast<linalg::LinalgOp>(made).getBlock();
    auto extract = cast<tensor::ExtractOp>(
        body->getTerminator()->getOperand(0).getDefiningOp());
    OpBuilder nb(extract);
    Location el = extract.getLoc();
    Value inside;
    SmallVector<Value> coords(extract.getIndices());
    Value zeroIndex = arith::ConstantIndexOp::create(nb, el, 0);
    for (auto [d, axes] : llvm::enumerate(t.dims)) {
      if (axes.empty())
        continue;
      Value local = arith::SubIOp::create(nb, el, coords[d], offsets[d]);
      Value size =
          arith::ConstantIndexOp::create(nb, el, localTable.getDimSize(d));
      Value ok = arith::AndIOp::create(
          nb, el,
          arith::CmpIOp::create(nb, el, arith::CmpIPredicate::sge, local,
                                zeroIndex),
          arith::CmpIOp::create(nb, el, arith::CmpIPredicate::slt, local,
                                size));
      inside = inside ? arith::AndIOp::create(nb, el, inside, ok) : ok;
      coords[d] = arith::SelectOp::create(nb, el, ok, local, zeroIndex);
    }
    Value read = tensor::ExtractOp::create(nb, el, *shard, coords);
    Value zero =
        arith::ConstantOp::create(nb, el, nb.getZeroAttr(read.getType()));
    Value value = arith::SelectOp::create(nb, el, inside, read, zero);
    extract.getResult().replaceAllUsesWith(value);
    extract.erase();
    return made->getResult(0);
  }

  /// `linalg.index` of a split loop in `op` (per-rank) reads the global
  /// coordinate: the rank's first index along the loop is added to it.
  void globalIndices(linalg::LinalgOp op, ArrayRef<Axes> loopAxes,
                     Location loc) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<linalg::IndexOp> indices;
    op->walk([&](linalg::IndexOp i) { indices.push_back(i); });
    for (linalg::IndexOp i : indices) {
      const Axes &axes = loopAxes[i.getDim()];
      if (axes.empty())
        continue;
      // Computed before the op: the body may read values from outside.
      OpBuilder before(op);
      Value first = firstIndex(before, loc, axes, ranges[i.getDim()]);
      OpBuilder nb(i->getContext());
      nb.setInsertionPointAfter(i);
      Value global = arith::AddIOp::create(nb, i.getLoc(), i, first);
      i.getResult().replaceAllUsesExcept(global, global.getDefiningOp());
    }
  }

  /// Structured `op`'s operands on this rank, each in the layout the op's
  /// loops need it in.
  FailureOr<SmallVector<Value>> structuredOperands(linalg::LinalgOp op,
                                                   Location loc) {
    const SmallVector<Axes> &loopAxes = loops[op];
    SmallVector<Value> operands;
    for (OpOperand &o : op->getOpOperands()) {
      if (!isa<RankedTensorType>(o.get().getType())) {
        operands.push_back(o.get());
        continue;
      }
      FailureOr<Value> v =
          get(o.get(), operandNeed(op, o, loopAxes, partialOperands.lookup(op)),
              loc);
      if (failed(v))
        return failure();
      operands.push_back(*v);
    }
    return operands;
  }

  /// Structured `op` rebuilt on this rank's share of its loops: its
  /// operands resharded, a gather's table whole, `linalg.index` global,
  /// every result (one loop nest may make several) in its layout.
  FailureOr<Operation *> expandStructured(linalg::LinalgOp op, Location loc) {
    FailureOr<SmallVector<Value>> operands = structuredOperands(op, loc);
    if (failed(operands))
      return failure();
    // Tables: split along passthrough dimensions like their loops (each
    // rank's reads fall in its shard), whole elsewhere.
    // Their reads' coordinates are global (an arange sliced at the rank's
    // offset, or a global loop index): each split dimension's first row on
    // this rank is subtracted.
    IRMapping captured;
    SmallVector<std::pair<Value, SmallVector<Value>>> splitReads;
    for (Value table : capturedTensors(op)) {
      Layout need = tableNeed(op, table, loops[op]);
      FailureOr<Value> local = get(table, need, loc);
      if (failed(local))
        return failure();
      captured.map(table, *local);
      if (!need.split())
        continue;
      splitReads.push_back(
          {*local,
           firstIndices(need, cast<RankedTensorType>(local->getType()), loc)});
    }
    Operation *made = b.clone(*op, captured);
    made->setOperands(*operands);
    globalIndices(cast<linalg::LinalgOp>(made), loops[op], loc);
    for (auto &[local, first] : splitReads) {
      made->walk([&](tensor::ExtractOp e) {
        if (e.getTensor() != local)
          return;
        OpBuilder nb(e);
        SmallVector<Value> coords(e.getIndices());
        for (auto [k, f] : llvm::enumerate(first))
          if (f)
            coords[k] = arith::SubIOp::create(nb, e.getLoc(), coords[k], f);
        e.getIndicesMutable().assign(coords);
      });
    }
    for (OpResult r : op->getResults())
      made->getResult(r.getResultNumber())
          .setType(localType(cast<RankedTensorType>(r.getType()), layout[r]));
    return made;
  }

  FailureOr<Value> expandOne(Operation *op, Location loc) {
    Value res = op->getResult(0);
    auto type = cast<RankedTensorType>(res.getType());
    const Layout &out = layout[res];

    if (auto c = dyn_cast<arith::ConstantOp>(op))
      return b.clone(*c)->getResult(0);
    if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
      if (auto it = splitTables.find(op); it != splitTables.end()) {
        FailureOr<SmallVector<Value>> operands = structuredOperands(l, loc);
        if (failed(operands))
          return failure();
        return lookUpSplitTable(l, it->second, *operands, loc);
      }
      FailureOr<Operation *> made = expandStructured(l, loc);
      if (failed(made))
        return failure();
      return (*made)->getResult(0);
    }
    // Shape ops: the operand in the layout the op needs.
    const Layout &in = needs[op];
    RankedTensorType local = localType(type, out);
    if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
      SmallVector<Value> inputs;
      for (Value v : c.getInputs()) {
        FailureOr<Value> x = get(v, in, loc);
        if (failed(x))
          return failure();
        inputs.push_back(*x);
      }
      return tensor::ConcatOp::create(b, loc, local, c.getDim(), inputs)
          .getResult();
    }
    FailureOr<Value> src = get(op->getOperand(0), in, loc);
    if (failed(src))
      return failure();
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
      return tensor::ExpandShapeOp::create(b, loc, local, *src,
                                           e.getReassociationIndices())
          .getResult();
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
      return tensor::CollapseShapeOp::create(b, loc, local, *src,
                                             c.getReassociationIndices())
          .getResult();
    auto s = cast<tensor::ExtractSliceOp>(op);
    // Split dimensions are taken whole: their sizes shrink to the shard.
    // A dimension whose slice one shard holds is read at the offset in
    // that shard, and ranks not holding it make zeros.
    auto srcLocal = cast<RankedTensorType>(src->getType());
    SmallVector<int64_t> sizes(s.getStaticSizes());
    SmallVector<int64_t> offsets(s.getStaticOffsets());
    auto owned = owners.find(op);
    Value holds;
    for (auto [d, axes] : llvm::enumerate(in.dims)) {
      if (axes.empty())
        continue;
      int64_t shard = srcLocal.getDimSize(d);
      if (owned == owners.end() || owned->second[d] < 0) {
        sizes[d] = shard;
        continue;
      }
      int64_t first = owned->second[d] * shard;
      offsets[d] -= first;
      Value mine = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, firstIndex(b, loc, axes, shard),
          arith::ConstantIndexOp::create(b, loc, first));
      holds = holds ? arith::AndIOp::create(b, loc, holds, mine) : mine;
    }
    MLIRContext *ctx = b.getContext();
    Value slice = tensor::ExtractSliceOp::create(
                      b, loc, local, *src, getAsIndexOpFoldResult(ctx, offsets),
                      getAsIndexOpFoldResult(ctx, sizes),
                      getAsIndexOpFoldResult(ctx, s.getStaticStrides()))
                      .getResult();
    if (!holds)
      return slice;
    // select(holds, slice, 0), element by element.
    AffineMap id = b.getMultiDimIdentityMap(local.getRank());
    Value init = tensor::EmptyOp::create(b, loc, local.getShape(),
                                         local.getElementType());
    Value zero = arith::ConstantOp::create(
        b, loc, b.getZeroAttr(local.getElementType()));
    return linalg::GenericOp::create(
               b, loc, TypeRange{local}, ValueRange{slice}, ValueRange{init},
               ArrayRef<AffineMap>{id, id},
               SmallVector<utils::IteratorType>(local.getRank(),
                                                utils::IteratorType::parallel),
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value v = arith::SelectOp::create(nb, l, holds, args[0], zero);
                 linalg::YieldOp::create(nb, l, v);
               })
        .getResult(0);
  }
};

} // namespace

LogicalResult partitionWithOwnEngine(func::FuncOp fn, MeshOpInterface mesh,
                                     ArrayRef<DistAttr> inDists,
                                     ArrayRef<arith::ConstantOp> lifted,
                                     SmallVectorImpl<DistAttr> &argDists,
                                     SmallVectorImpl<DistAttr> &resDists,
                                     std::string &why) {
  return Engine(fn, mesh, inDists, lifted).run(argDists, resDists, why);
}

} // namespace monarch::partition
