//===- LocalCanonicalizer.h - Canonicalize small functions ---- -*- C++ -*-===//
//
// The passes canonicalize thousands of small functions (segment bodies,
// endpoints, kernels). The canonicalizer pass gathers the patterns of every
// registered op and sorts them at each run, which costs more than the
// rewriting itself on a function of ten ops (a third of all compile time
// in bench/compile_scaling). This one uses the patterns of the op kinds the
// function holds, frozen once per distinct set of kinds.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_PASSES_LIB_LOCALCANONICALIZER_H
#define MONARCH_PASSES_LIB_LOCALCANONICALIZER_H

#include "mlir/IR/Operation.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"

#include <map>
#include <memory>
#include <vector>

namespace monarch {

class LocalCanonicalizer {
public:
  /// Canonicalizes the regions of `root`: folding, dead-code removal and the
  /// canonicalization patterns of its op kinds.
  mlir::LogicalResult run(mlir::Operation *root);
  /// The same for many roots at once (one rewrite driver, one pattern
  /// ordering), which is what makes canonicalizing thousands of small
  /// functions cheap.
  mlir::LogicalResult run(llvm::ArrayRef<mlir::Operation *> roots);

  /// Forgets the frozen pattern sets (they refer to the context).
  void clear() { cache.clear(); }

private:
  std::map<std::vector<const void *>,
           std::shared_ptr<mlir::FrozenRewritePatternSet>>
      cache;
};

} // namespace monarch

#endif // MONARCH_PASSES_LIB_LOCALCANONICALIZER_H
