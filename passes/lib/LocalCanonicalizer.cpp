//===- LocalCanonicalizer.cpp - Canonicalize small functions cheaply -----===//
//
// See LocalCanonicalizer.h.
//
//===----------------------------------------------------------------------===//

#include "LocalCanonicalizer.h"

#include "mlir/IR/Dialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace monarch {

LogicalResult LocalCanonicalizer::run(Operation *root) {
  return run(ArrayRef<Operation *>{root});
}

LogicalResult LocalCanonicalizer::run(ArrayRef<Operation *> roots) {
  llvm::SetVector<OperationName> kinds;
  std::vector<Operation *> ops;
  for (Operation *root : roots)
    root->walk([&](Operation *op) {
      if (op == root)
        return;
      kinds.insert(op->getName());
      ops.push_back(op);
    });
  if (ops.empty())
    return success();
  std::vector<const void *> key;
  for (OperationName name : kinds)
    key.push_back(name.getAsOpaquePointer());
  llvm::sort(key);
  std::shared_ptr<FrozenRewritePatternSet> &frozen = cache[key];
  if (!frozen) {
    MLIRContext *ctx = roots.front()->getContext();
    RewritePatternSet patterns(ctx);
    llvm::SetVector<Dialect *> dialects;
    for (OperationName name : kinds) {
      if (auto registered = name.getRegisteredInfo())
        registered->getCanonicalizationPatterns(patterns, ctx);
      if (Dialect *dialect = name.getDialect())
        dialects.insert(dialect);
    }
    for (Dialect *dialect : dialects)
      dialect->getCanonicalizationPatterns(patterns);
    frozen = std::make_shared<FrozenRewritePatternSet>(std::move(patterns));
  }
  GreedyRewriteConfig config;
  // New ops (folded constants, rewritten slices) are processed too, and
  // nothing outside the roots is touched.
  config.setStrictness(GreedyRewriteStrictness::AnyOp);
  // Like the canonicalizer pass: not converging is not an error.
  (void)applyOpPatternsGreedily(ops, *frozen, config);
  return success();
}

} // namespace monarch
