//===- MemoryPlan.h - Static arena planning for rank programs ---*- C++ -*-===//
//
// Replans the arena of a rank program from the live ranges of its buffers,
// for monarch-schedule. Independent of MLIR so that it can be tested and
// benchmarked on its own.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TRANSFORMS_MEMORYPLAN_H
#define MONARCH_TRANSFORMS_MEMORYPLAN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <utility>

namespace monarch {

/// One buffer of the input arena: bytes `[offset, offset + size)`, live over
/// the instruction positions `[start, end]` (both inclusive), `end` being
/// where its last access is known complete.
struct ArenaBuffer {
  int64_t offset = 0;
  int64_t size = 0;
  int64_t start = 0;
  int64_t end = 0;
  /// Carries a value across steps (actor state, or read before written in
  /// the program): live throughout, and every buffer overlapping it moves
  /// with it, since a write through any of them is what the next step reads.
  bool persistent = false;
  /// Fed or fetched by the controller: live throughout.
  bool io = false;
};

/// New offsets, in input order, and the arena they need.
struct ArenaPlan {
  llvm::SmallVector<int64_t> offsets;
  int64_t peakBytes = 0;
};

/// Places `buffers` into a fresh arena. Buffers connected by `aliases`
/// (pairs of indices: the same bytes seen through two buffers) and
/// persistent buffers with the buffers overlapping them form classes that
/// move as a whole, keeping their relative layout; each class is one
/// logical buffer spanning its members, live over the union of their
/// ranges. Two logical buffers whose ranges intersect never share a byte.
///
/// Placement: classes live throughout are packed first at the bottom, in
/// input order; the others by a linear scan over positions that frees the
/// classes whose range has ended (holes coalesce) and places the classes
/// starting at a position largest first, at the lowest-address hole that
/// fits (first fit). Offsets of classes are multiples of `alignment`; empty
/// buffers get offset 0.
///
/// Cost: O(n log n + n * h) for n buffers, h being the number of holes,
/// which is bounded by the number of simultaneously live classes. (Offline
/// greedy-by-size placement packs a little better on some inputs but costs
/// O(n * L) for L overlapping buffers: quadratic when a program waits only
/// at its end and every buffer overlaps every other.)
ArenaPlan planArena(llvm::ArrayRef<ArenaBuffer> buffers,
                    llvm::ArrayRef<std::pair<unsigned, unsigned>> aliases,
                    int64_t alignment = 64);

} // namespace monarch

#endif // MONARCH_TRANSFORMS_MEMORYPLAN_H
