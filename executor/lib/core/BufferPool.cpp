//===- BufferPool.cpp - Recycled storage for large tensor bytes -----------===//
//
// See BufferPool.h. A take looks for the smallest pooled buffer of at least
// the size and at most twice it; a give-back beyond the limits drops the
// oldest buffers first.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/BufferPool.h"

#include <deque>
#include <mutex>

namespace monarch::executor {
namespace {

constexpr size_t kMinPooledBytes = size_t(64) << 10;
constexpr size_t kMaxBuffers = 64;
constexpr size_t kMaxPooledBytes = size_t(256) << 20;

struct Pool {
  std::mutex mutex;
  std::deque<std::string> buffers; // oldest first
  size_t bytes = 0;
  int holders = 0;
};

Pool &pool() {
  // Never destroyed: numpy may give buffers back during interpreter exit.
  static Pool *p = new Pool();
  return *p;
}

} // namespace

std::string takeBytes(size_t bytes) {
  std::string out;
  if (bytes >= kMinPooledBytes) {
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto best = p.buffers.end();
    for (auto it = p.buffers.begin(); it != p.buffers.end(); ++it)
      if (it->capacity() >= bytes && it->capacity() <= 2 * bytes &&
          (best == p.buffers.end() || it->capacity() < best->capacity()))
        best = it;
    if (best != p.buffers.end()) {
      p.bytes -= best->capacity();
      out = std::move(*best);
      p.buffers.erase(best);
    }
  }
  // Within the capacity: no allocation, only the tail is written.
  out.resize(bytes);
  return out;
}

void recycleBytes(std::string &&bytes) {
  if (bytes.capacity() < kMinPooledBytes || bytes.capacity() > kMaxPooledBytes)
    return;
  std::string keep = std::move(bytes);
  keep.clear();
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.holders == 0)
    return; // freed (outside the lock, with `keep`)
  p.bytes += keep.capacity();
  p.buffers.push_back(std::move(keep));
  while (p.buffers.size() > kMaxBuffers || p.bytes > kMaxPooledBytes) {
    p.bytes -= p.buffers.front().capacity();
    p.buffers.pop_front();
  }
}

void holdBufferPool() {
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  ++p.holders;
}

void releaseBufferPool() {
  std::deque<std::string> drop;
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.holders > 0 && --p.holders == 0) {
    drop.swap(p.buffers);
    p.bytes = 0;
  }
}

size_t pooledBytes() {
  Pool &p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.bytes;
}

} // namespace monarch::executor
