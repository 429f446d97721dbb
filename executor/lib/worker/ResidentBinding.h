//===- ResidentBinding.h - Resident values in place of buffers --*- C++ -*-===//
//
// A value kept on the worker between steps (`donate_argnums`) lives in
// ResidentBytes from a ResidentPool. The interpreter binds such bytes in
// place of an arena buffer for a step when the program shares that buffer
// with nothing else (docs/executor.md, "Resident values"): this file finds
// those buffers; Interpreter.cpp binds them.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_WORKER_RESIDENTBINDING_H
#define MONARCH_WORKER_RESIDENTBINDING_H

#include "monarch/Executor/RankProgram.h"

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

namespace monarch::worker {

/// A buffer an instruction reads or writes: through communication or actor
/// state (`pinned`: never bound to resident bytes), and as which kernel
/// argument (-1 when not a launch's).
struct BufferAccess {
  const BufferRef *ref;
  bool write;
  bool pinned;
  int arg;
};

/// Every buffer `instr` touches (an instruction of a known kind).
std::vector<BufferAccess> accessesOf(const Instruction &instr);

/// Arena bytes [offset, offset + bytes) that a step may run on resident
/// bytes instead, and the kernel arguments pointing into them
/// (instruction, argument, offset into the buffer).
struct ResidentBinding {
  int64_t offset = 0, bytes = 0;
  std::vector<std::tuple<int, int, int64_t>> args;
};

/// The binding of the buffer of feed or fetch instruction `self` of `p`,
/// when the program touches its bytes through nothing else than buffers
/// inside it, none of them communication or actor state; a feed must be
/// only read, and a kept fetch's bytes first written whole by one launch
/// or all_gather that does not read them (so a step never sees what fresh
/// bytes held before), and fetched by no other instruction.
std::optional<ResidentBinding> residentBinding(const RankProgram &p, int self);

} // namespace monarch::worker

#endif // MONARCH_WORKER_RESIDENTBINDING_H
