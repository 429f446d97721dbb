//===- BufferPool.h - Recycled storage for large tensor bytes ---*- C++ -*-===//
//
// A step's inputs and outputs are fresh std::strings of up to megabytes
// each; fresh memory costs a page fault per 4 KB on first touch, which for a
// pipeline of eight 256 KB micro-batches was most of the controller's time
// (docs/benchmarks.md). takeBytes() hands out storage given back earlier
// with recycleBytes(), already faulted in; the Python bindings give back a
// call's inputs after the call and a result's bytes when numpy frees the
// array. Buffers under 64 KB are not pooled (malloc serves them well); the
// pool holds at most 64 buffers and 256 MB, process-wide and thread-safe,
// and only while a controller runs.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_BUFFERPOOL_H
#define MONARCH_EXECUTOR_BUFFERPOOL_H

#include <cstddef>
#include <string>

namespace monarch::executor {

/// A string of `bytes` bytes whose contents the caller overwrites.
std::string takeBytes(size_t bytes);
/// Gives `bytes`' storage back to the pool (or frees it when the pool is
/// full or the buffer small).
void recycleBytes(std::string &&bytes);
/// The pool keeps buffers only while something uses it: each running
/// controller holds it (Controller::start to stop). When the last one lets
/// go, every pooled buffer is freed and later give-backs (a result numpy
/// frees after the mesh stopped) are freed at once: the pool's memory goes
/// with the meshes that used it.
void holdBufferPool();
void releaseBufferPool();
/// Bytes the pool holds now.
size_t pooledBytes();

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_BUFFERPOOL_H
