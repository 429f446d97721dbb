//===- MemoryPlan.cpp - Static arena planning for rank programs -*- C++ -*-===//
//
// Groups buffers that must move together into classes (union-find), then
// places the classes with a linear scan over positions and a coalescing
// first-fit free list. See MemoryPlan.h for the contract.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/MemoryPlan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>
#include <queue>
#include <vector>

using namespace monarch;

namespace {

/// Union-find over buffer indices.
class Classes {
public:
  explicit Classes(unsigned n) : parent(n) {
    for (unsigned i = 0; i < n; ++i)
      parent[i] = i;
  }
  unsigned find(unsigned x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  void join(unsigned a, unsigned b) { parent[find(a)] = find(b); }

private:
  std::vector<unsigned> parent;
};

/// Free holes of `[base, top)`, keyed by start, coalesced; `top` is the high
/// water mark and only grows.
class FreeList {
public:
  FreeList(int64_t base, int64_t alignment) : top(base), alignment(alignment) {}

  int64_t allocate(int64_t size) {
    for (auto it = holes.begin(); it != holes.end(); ++it) {
      int64_t start = llvm::alignTo(it->first, alignment);
      if (start + size <= it->second)
        return carve(it, start, size);
    }
    // No hole fits: grow the top, starting in the last hole when it touches
    // the top so that its bytes are not wasted.
    if (!holes.empty()) {
      auto last = std::prev(holes.end());
      if (last->second == top) {
        int64_t start = llvm::alignTo(last->first, alignment);
        top = std::max(top, start + size);
        last->second = top;
        return carve(last, start, size);
      }
    }
    int64_t start = llvm::alignTo(top, alignment);
    if (start > top)
      holes.emplace(top, start);
    top = start + size;
    return start;
  }

  void release(int64_t start, int64_t size) {
    int64_t end = start + size;
    auto next = holes.lower_bound(start);
    if (next != holes.end() && next->first == end) {
      end = next->second;
      next = holes.erase(next);
    }
    if (next != holes.begin()) {
      auto prev = std::prev(next);
      if (prev->second == start) {
        prev->second = end;
        return;
      }
    }
    holes.emplace_hint(next, start, end);
  }

  int64_t getTop() const { return top; }

private:
  int64_t carve(std::map<int64_t, int64_t>::iterator hole, int64_t start,
                int64_t size) {
    int64_t holeStart = hole->first, holeEnd = hole->second;
    auto hint = holes.erase(hole);
    if (start + size < holeEnd)
      hint = holes.emplace_hint(hint, start + size, holeEnd);
    if (holeStart < start)
      holes.emplace_hint(hint, holeStart, start);
    return start;
  }

  std::map<int64_t, int64_t> holes;
  int64_t top;
  int64_t alignment;
};

/// A class of buffers placed as one: bytes [lo, hi) of the input arena.
struct Logical {
  int64_t lo, hi;
  int64_t start, end;
  bool pinned;
  int64_t offset = 0;
  int64_t size() const { return hi - lo; }
};

} // namespace

/// Joins every persistent buffer with the buffers overlapping it: sort the
/// persistent ones, merge them into disjoint clusters, and look each other
/// buffer up among the clusters.
static void joinPersistent(llvm::ArrayRef<ArenaBuffer> buffers,
                           Classes &classes) {
  std::vector<unsigned> persistent;
  for (auto [i, b] : llvm::enumerate(buffers))
    if (b.persistent && b.size > 0)
      persistent.push_back(i);
  llvm::sort(persistent, [&](unsigned a, unsigned b) {
    return buffers[a].offset < buffers[b].offset;
  });
  struct Cluster {
    int64_t lo, hi;
    unsigned member;
  };
  std::vector<Cluster> clusters;
  for (unsigned i : persistent) {
    const ArenaBuffer &b = buffers[i];
    if (!clusters.empty() && b.offset < clusters.back().hi) {
      clusters.back().hi = std::max(clusters.back().hi, b.offset + b.size);
      classes.join(i, clusters.back().member);
    } else {
      clusters.push_back({b.offset, b.offset + b.size, i});
    }
  }
  for (auto [i, b] : llvm::enumerate(buffers)) {
    if (b.persistent || b.size == 0)
      continue;
    auto it = llvm::partition_point(
        clusters, [&](const Cluster &c) { return c.hi <= b.offset; });
    for (; it != clusters.end() && it->lo < b.offset + b.size; ++it)
      classes.join(i, it->member);
  }
}

/// Packs the pinned classes back to back, then scans the others by start.
static int64_t place(llvm::MutableArrayRef<Logical> logical,
                     int64_t alignment) {
  int64_t pinnedTop = 0;
  for (Logical &l : logical) {
    if (!l.pinned)
      continue;
    l.offset = llvm::alignTo(pinnedTop, alignment);
    pinnedTop = l.offset + l.size();
  }

  std::vector<unsigned> order;
  for (auto [i, l] : llvm::enumerate(logical))
    if (!l.pinned)
      order.push_back(i);
  if (order.empty())
    return pinnedTop;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    if (logical[a].start != logical[b].start)
      return logical[a].start < logical[b].start;
    return logical[a].size() > logical[b].size();
  });

  FreeList freeList(llvm::alignTo(pinnedTop, alignment), alignment);
  using Ending = std::pair<int64_t, unsigned>; // (end, class)
  std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>> live;
  for (unsigned i : order) {
    // A class whose range ends at position p is still live at p.
    while (!live.empty() && live.top().first < logical[i].start) {
      const Logical &done = logical[live.top().second];
      live.pop();
      freeList.release(done.offset, done.size());
    }
    logical[i].offset = freeList.allocate(logical[i].size());
    live.emplace(logical[i].end, i);
  }
  return freeList.getTop();
}

ArenaPlan
monarch::planArena(llvm::ArrayRef<ArenaBuffer> buffers,
                   llvm::ArrayRef<std::pair<unsigned, unsigned>> aliases,
                   int64_t alignment) {
  Classes classes(buffers.size());
  for (auto [a, b] : aliases)
    classes.join(a, b);
  joinPersistent(buffers, classes);

  std::vector<Logical> logical;
  std::vector<int> classOf(buffers.size(), -1);
  llvm::DenseMap<unsigned, unsigned> index;
  for (auto [i, b] : llvm::enumerate(buffers)) {
    if (b.size == 0)
      continue;
    auto [it, inserted] = index.try_emplace(
        classes.find(i), static_cast<unsigned>(logical.size()));
    if (inserted)
      logical.push_back({b.offset, b.offset + b.size, b.start, b.end, false});
    Logical &l = logical[it->second];
    l.lo = std::min(l.lo, b.offset);
    l.hi = std::max(l.hi, b.offset + b.size);
    l.start = std::min(l.start, b.start);
    l.end = std::max(l.end, b.end);
    l.pinned |= b.persistent || b.io;
    classOf[i] = it->second;
  }

  ArenaPlan plan;
  plan.peakBytes = place(logical, alignment);
  plan.offsets.assign(buffers.size(), 0);
  for (auto [i, b] : llvm::enumerate(buffers))
    if (classOf[i] >= 0) {
      const Logical &l = logical[classOf[i]];
      plan.offsets[i] = l.offset + (b.offset - l.lo);
    }
  return plan;
}
