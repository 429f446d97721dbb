//===- MatmulSchedule.cpp - Transform-dialect schedules ------- -*- C++ -*-===//
//
// The CPU matmul schedule (see ../shared/notes/cpu-codegen.md for what was
// measured with it on AVX2, docs/kernels.md for AVX-512), as one transform
// script per matmul:
//  1. pack N into panels of `nr` columns (`structured.pack` then
//     `pack_transpose` so B becomes [N/nr][K][nr]: each panel is contiguous
//     over k); packing removes the power-of-two strides that thrash the
//     cache at 1024. With `packA`, M is packed by `mr` too (A becomes
//     [M/mr][K][mr], C is computed as [M/mr][N/nr][mr][nr] and unpacked);
//     otherwise the C "pack" is a reshape of row-major C;
//  2. lower the pack/unpack ops (they do not bufferize) to pad/expand/
//     transpose and collapse/extract;
//  3. cache tile (one panel x kc of k), register tile of mr rows, k by 1;
//  4. vectorize the register tile, fold the broadcasts into vector.contract
//     (reduction_to_contract before and after splitting the transfers'
//     permutation maps), hoist the accumulator out of the k loop on tensors;
//     the contraction is lowered as outer products (vector.fma) with the
//     rest of the vector dialect.
// mr x nr is chosen so that the accumulators fit the vector registers
// (AVX2: 6 x 16 = 12 ymm of 16; AVX-512: 8 x 32 = 16 zmm of 32). mr and kc
// are taken among divisors of M and K so that no remainder loop is needed;
// a matmul whose N is not a multiple of 16 keeps the generic path.
//
//===----------------------------------------------------------------------===//
#include "MatmulSchedule.h"
#include "BlasCalls.h"
#include "monarch/Support/Knobs.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;

namespace monarch::codegen::detail {
namespace {

constexpr llvm::StringLiteral kTagAttr = "monarch.matmul_schedule";

/// The largest divisor of `n` that is <= `limit`.
int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

bool hostHasAvx512() {
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    if (feature.first() == "avx512f")
      return feature.second;
  return false;
}

} // namespace

MatmulTiles chooseMatmulTiles(const KernelCompileOptions &options) {
  MatmulTiles tiles;
  if (options.cpu == "host" && hostHasAvx512()) {
    // 16 zmm accumulators of 32; A packed too and deeper cache tiles:
    // measured 0.94 / 0.85 of OpenBLAS at 512^3 / 1024^3 (docs/kernels.md).
    tiles.mr = 8;
    tiles.nr = 32;
    tiles.kc = 256;
    tiles.packA = true;
  }
  // A malformed value is refused by the compile drivers (knobs::validate);
  // getString hands back the default ("") for one that slips through.
  std::string env = knobs::getString(knobs::Id::MatmulTiles).value;
  if (!env.empty()) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(env).split(parts, ',');
    int64_t values[3];
    if (parts.size() == 4)
      tiles.packA = parts.pop_back_val() != "0";
    if (parts.size() == 3 && !parts[0].getAsInteger(10, values[0]) &&
        !parts[1].getAsInteger(10, values[1]) &&
        !parts[2].getAsInteger(10, values[2]) && values[0] > 0 &&
        values[1] > 0 && values[2] > 0) {
      tiles.mr = values[0];
      tiles.nr = values[1];
      tiles.kc = values[2];
    }
  }
  return tiles;
}

std::string buildMatmulSchedule(int64_t m, int64_t n, int64_t k,
                                llvm::StringRef tag, const MatmulTiles &tiles) {
  int64_t mr = largestDivisorAtMost(m, tiles.mr);
  int64_t kc = largestDivisorAtMost(k, tiles.kc);
  int64_t nr = tiles.nr;
  bool packA = tiles.packA && mr > 1;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << R"(module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} attributes {)"
     << kTagAttr << " = \"" << tag
     << R"("} in %root : (!transform.any_op) -> !transform.any_op
    %func = transform.get_parent_op %mm {op_name = "func.func"} : (!transform.any_op) -> !transform.any_op
    %packed = transform.structured.pack %mm packed_sizes = [)"
     << (packA ? mr : 0) << ", " << nr
     << R"(, 0] : (!transform.any_op) -> !transform.op<"linalg.generic">
    %pack_b = transform.get_producer_of_operand %packed[1] : (!transform.op<"linalg.generic">) -> !transform.op<"linalg.pack">
    %packed_t, %pack_b_t, %none = transform.structured.pack_transpose %pack_b with_compute_op(%packed) outer_perm = [1, 0]
        : (!transform.op<"linalg.pack">, !transform.op<"linalg.generic">) -> (!transform.op<"linalg.generic">, !transform.op<"linalg.pack">, !transform.any_op)
    transform.apply_patterns to %func {
      transform.apply_patterns.tensor.fold_into_pack_and_unpack
    } : !transform.any_op
    %packs = transform.structured.match ops{["linalg.pack"]} in %func : (!transform.any_op) -> !transform.op<"linalg.pack">
    transform.foreach %packs : !transform.op<"linalg.pack"> {
    ^bb0(%p: !transform.op<"linalg.pack">):
      %pad, %expand, %transpose = transform.structured.lower_pack %p : (!transform.op<"linalg.pack">) -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)
    }
    %unpacks = transform.structured.match ops{["linalg.unpack"]} in %func : (!transform.any_op) -> !transform.op<"linalg.unpack">
    transform.foreach %unpacks : !transform.op<"linalg.unpack"> {
    ^bb0(%u: !transform.op<"linalg.unpack">):
      %e, %t, %c, %x = transform.structured.lower_unpack %u : (!transform.op<"linalg.unpack">) -> (!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">, !transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">)
    }
    %cache, %l_n, %l_k = transform.structured.tile_using_for %packed_t tile_sizes [0, 1, )"
     << kc << (packA ? ", 0, 0]" : ", 0]")
     << R"( : (!transform.op<"linalg.generic">) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %rows, %l_m = transform.structured.tile_using_for %cache tile_sizes [)"
     << (packA ? "1, 0, 0, 0, 0" : std::to_string(mr) + ", 0, 0, 0")
     << R"(] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tile, %l_kk = transform.structured.tile_using_for %rows tile_sizes [)"
     << (packA ? "0, 0, 1, 0, 0" : "0, 0, 1, 0")
     << R"(] : (!transform.any_op) -> (!transform.any_op, !transform.op<"scf.for">)
    transform.structured.vectorize %tile {create_named_contraction} : !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
    } : !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
    } : !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %l_kk : !transform.op<"scf.for">
    transform.yield
  }
}
)";
  return s;
}

namespace {

/// Whether the packed schedule takes an M x K by K x N float32 matmul with
/// `tiles` (else the generic tile-and-vectorize path does).
bool packedScheduleTakes(int64_t m, int64_t n, int64_t k,
                         const MatmulTiles &tiles) {
  return (n % tiles.nr == 0 || n % 16 == 0) && k >= 4 && m >= 2;
}

/// A float32 contraction written as a linalg.generic over (m, n, k) whose A
/// is read as [K][M] (`a.T @ b`) or whose B as [N][K] (`a @ b.T`), the
/// backward's layouts: becomes a transpose of that operand and a default
/// linalg.matmul, which the packed schedule takes. The transpose is one
/// pass over the operand against the contraction's M*N*K multiply-adds;
/// the generic tile-and-vectorize path ran these layouts at 1-20% of
/// OpenBLAS (bench_kernels, `generated`).
void normalizeTransposedMatmuls(ModuleOp scratch, const MatmulTiles &tiles) {
  SmallVector<linalg::GenericOp> found;
  scratch.walk([&](linalg::GenericOp g) {
    if (!isMarkedForBlas(g) && g.getNumDpsInputs() == 2 &&
        g.getNumDpsInits() == 1 && g.hasPureTensorSemantics() &&
        g.getNumLoops() == 3 && linalg::isaContractionOpInterface(g))
      found.push_back(g);
  });
  MLIRContext *ctx = scratch.getContext();
  auto dims = [&](unsigned a, unsigned b) {
    return AffineMap::get(
        3, 0, {getAffineDimExpr(a, ctx), getAffineDimExpr(b, ctx)}, ctx);
  };
  for (linalg::GenericOp g : found) {
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    SmallVector<utils::IteratorType> kinds = g.getIteratorTypesArray();
    if (kinds[0] != utils::IteratorType::parallel ||
        kinds[1] != utils::IteratorType::parallel ||
        kinds[2] != utils::IteratorType::reduction || maps[2] != dims(0, 1))
      continue;
    bool aT = maps[0] == dims(2, 0), bT = maps[1] == dims(1, 2);
    if ((!aT && maps[0] != dims(0, 2)) || (!bT && maps[1] != dims(2, 1)) ||
        (!aT && !bT))
      continue;
    auto a = dyn_cast<RankedTensorType>(g.getDpsInputs()[0].getType());
    auto b = dyn_cast<RankedTensorType>(g.getDpsInputs()[1].getType());
    auto c = dyn_cast<RankedTensorType>(g.getDpsInits()[0].getType());
    if (!a || !b || !c || !a.hasStaticShape() || !b.hasStaticShape() ||
        !a.getElementType().isF32() || !b.getElementType().isF32() ||
        !c.getElementType().isF32())
      continue;
    int64_t m = c.getDimSize(0), n = c.getDimSize(1);
    int64_t k = aT ? a.getDimSize(0) : a.getDimSize(1);
    if (!packedScheduleTakes(m, n, k, tiles))
      continue;
    OpBuilder builder(g);
    Location loc = g.getLoc();
    auto transposed = [&](Value v, RankedTensorType t) -> Value {
      Value init = tensor::EmptyOp::create(
          builder, loc, {t.getDimSize(1), t.getDimSize(0)}, t.getElementType());
      return linalg::TransposeOp::create(builder, loc, v, init,
                                         ArrayRef<int64_t>{1, 0})
          ->getResult(0);
    };
    Value lhs = aT ? transposed(g.getDpsInputs()[0], a) : g.getDpsInputs()[0];
    Value rhs = bT ? transposed(g.getDpsInputs()[1], b) : g.getDpsInputs()[1];
    auto mm = linalg::MatmulOp::create(builder, loc, TypeRange{c},
                                       ValueRange{lhs, rhs},
                                       ValueRange{g.getDpsInits()[0]});
    g->replaceAllUsesWith(mm->getResults());
    g->erase();
  }
}

} // namespace

LogicalResult applyMatmulSchedules(ModuleOp scratch,
                                   const KernelCompileOptions &options) {
  MatmulTiles tiles = chooseMatmulTiles(options);
  normalizeTransposedMatmuls(scratch, tiles);
  SmallVector<linalg::MatmulOp> matmuls;
  scratch.walk([&](linalg::MatmulOp op) {
    if (!isMarkedForBlas(op))
      matmuls.push_back(op);
  });
  MLIRContext *ctx = scratch.getContext();
  unsigned index = 0;
  for (linalg::MatmulOp mm : matmuls) {
    auto a = dyn_cast<RankedTensorType>(mm.getDpsInputs()[0].getType());
    auto b = dyn_cast<RankedTensorType>(mm.getDpsInputs()[1].getType());
    if (!a || !b || !a.hasStaticShape() || !b.hasStaticShape() ||
        !a.getElementType().isF32() || !b.getElementType().isF32() ||
        !mm.hasPureTensorSemantics() ||
        !linalg::MatmulOp::isDefaultIndexingMaps(mm.getIndexingMaps()))
      continue;
    int64_t m = a.getDimSize(0), k = a.getDimSize(1), n = b.getDimSize(1);
    if (!packedScheduleTakes(m, n, k, tiles))
      continue; // the generic tile-and-vectorize path handles it
    MatmulTiles chosen = tiles;
    if (n % chosen.nr != 0)
      chosen.nr = 16;
    // A transposed A (a.T @ b) is packed by rows whatever the tiles: the
    // transpose then folds into that packing copy instead of costing a
    // pass of its own.
    if (mm.getDpsInputs()[0].getDefiningOp<linalg::TransposeOp>())
      chosen.packA = true;
    std::string tag = "mm" + std::to_string(index++);
    mm->setAttr(kTagAttr, StringAttr::get(ctx, tag));
    std::string script = buildMatmulSchedule(m, n, k, tag, chosen);
    OwningOpRef<ModuleOp> transformModule =
        parseSourceString<ModuleOp>(script, ctx);
    if (!transformModule)
      return mm.emitOpError("internal error: the matmul schedule does not "
                            "parse");
    Operation *entry = transform::detail::findTransformEntryPoint(
        scratch, *transformModule, "__transform_main");
    if (!entry)
      return mm.emitOpError("internal error: no schedule entry point");
    if (failed(transform::applyTransformNamedSequence(
            scratch, entry, *transformModule,
            transform::TransformOptions().enableExpensiveChecks(false))))
      return failure();
  }
  return success();
}

} // namespace monarch::codegen::detail
