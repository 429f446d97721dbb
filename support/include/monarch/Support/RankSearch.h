//===- RankSearch.h - Finding a rank in a list of ranks ---------*- C++ -*-===//
//-*-===//
//
// A communicator's members, a mesh's root ranks: lists of distinct ranks
// that are, almost always, a progression (a group along mesh dimensions,
// the world). The IR (a communicator op's rank of a member) and the plan
// (a worker's mesh rank, its place in a communicator) ask where a rank is
// once per instruction or more; scanning 4,096 ranks each time was
// quadratic in the mesh.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_RANKSEARCH_H
#define MONARCH_SUPPORT_RANKSEARCH_H

#include <cstdint>
#include <span>

namespace monarch {

/// The position of `rank` in `ranks` (distinct), or -1. The position the
/// progression of the first two ranks predicts is checked first; a hit is
/// the only position, since the ranks are distinct. Otherwise a scan.
inline int64_t positionOfRank(std::span<const int64_t> ranks, int64_t rank) {
  if (ranks.size() >= 2) {
    int64_t step, offset;
    if (!__builtin_sub_overflow(ranks[1], ranks[0], &step) && step > 0 &&
        !__builtin_sub_overflow(rank, ranks[0], &offset) && offset >= 0 &&
        offset % step == 0) {
      int64_t i = offset / step;
      if (i < static_cast<int64_t>(ranks.size()) && ranks[i] == rank)
        return i;
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == rank)
      return static_cast<int64_t>(i);
  return -1;
}

} // namespace monarch

#endif // MONARCH_SUPPORT_RANKSEARCH_H
