//===- ResidentBinding.cpp - Resident values in place of buffers ----------===//
//
// See ResidentBinding.h; ResidentPool (Interpreter.h) too.
//
//===----------------------------------------------------------------------===//
#include "ResidentBinding.h"

#include "monarch/Executor/Interpreter.h"

#include <algorithm>
#include <cstdlib>

namespace monarch::worker {

std::vector<BufferAccess> accessesOf(const Instruction &instr) {
  std::vector<BufferAccess> out;
  switch (instr.kind) {
  case OpKind::Feed:
    out.push_back({&instr.buffer, true, false, -1});
    break;
  case OpKind::Fetch:
    out.push_back({&instr.buffer, false, false, -1});
    break;
  case OpKind::State:
    out.push_back({&instr.buffer, true, true, -1});
    break;
  case OpKind::Launch: {
    int k = 0;
    for (const BufferRef &b : instr.ins)
      out.push_back({&b, false, false, k++});
    if (!instr.kernelParams.empty())
      ++k; // The parameters' argument.
    for (const BufferRef &b : instr.outs)
      out.push_back({&b, true, false, k++});
    break;
  }
  case OpKind::Send:
    out.push_back({&instr.buffer, false, true, -1});
    break;
  case OpKind::Recv:
    out.push_back({&instr.buffer, true, true, -1});
    break;
  case OpKind::Collective:
    out.push_back({&instr.buffer, false, true, -1});
    out.push_back({&instr.output, true, true, -1});
    break;
  case OpKind::Print:
    for (const BufferRef &b : instr.ins)
      out.push_back({&b, false, false, -1});
    break;
  case OpKind::Wait:
    break;
  }
  return out;
}

std::shared_ptr<ResidentPool> ResidentPool::create(int64_t capBytes) {
  return std::shared_ptr<ResidentPool>(new ResidentPool(capBytes));
}

ResidentPool::~ResidentPool() {
  for (auto &[bytes, data] : free_)
    std::free(data);
}

ResidentPtr ResidentPool::take(int64_t bytes) {
  char *data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = free_.find(bytes); it != free_.end()) {
      data = it->second;
      free_.erase(it);
      pooled_ -= bytes;
    }
  }
  if (!data)
    data = static_cast<char *>(std::aligned_alloc(
        64, static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64)));
  if (!data)
    return nullptr;
  std::weak_ptr<ResidentPool> pool = weak_from_this();
  return ResidentPtr(new ResidentBytes{data, bytes}, [pool](ResidentBytes *r) {
    if (auto p = pool.lock())
      p->give(r->data, r->size);
    else
      std::free(r->data);
    delete r;
  });
}

void ResidentPool::give(char *data, int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pooled_ + bytes <= cap_) {
      free_.emplace(bytes, data);
      pooled_ += bytes;
      return;
    }
  }
  std::free(data);
}

std::optional<ResidentBinding> residentBinding(const RankProgram &p, int self) {
  const BufferRef &r = p.instructions[self].buffer;
  bool feed = p.instructions[self].kind == OpKind::Feed;
  int64_t lo = r.offset, hi = r.offset + r.bytes();
  if (hi <= lo)
    return std::nullopt;
  ResidentBinding b{lo, hi - lo, {}};
  bool written = false;
  for (int i = 0; i < static_cast<int>(p.instructions.size()); ++i) {
    const Instruction &instr = p.instructions[i];
    bool touches = false, reads = false, writesWhole = false;
    for (const BufferAccess &a : accessesOf(instr)) {
      int64_t alo = a.ref->offset, ahi = a.ref->offset + a.ref->bytes();
      if (ahi <= lo || alo >= hi || ahi <= alo)
        continue;
      if (i == self)
        continue;
      // An all_gather's output that is exactly a kept fetch's buffer may
      // be resident bytes: its members read each other's inputs, never its
      // output, so the output need not be in registered memory (the
      // sharded weight update's new weight, kept by a donated step).
      bool gathered = !feed && instr.kind == OpKind::Collective &&
                      instr.collective == CommOpKind::AllGather && a.write &&
                      alo == lo && ahi == hi;
      if (alo < lo || ahi > hi || (a.pinned && !gathered))
        return std::nullopt;
      if (feed && a.write)
        return std::nullopt;
      // A kept fetch's bytes are its own: not fed, nor fetched as
      // another output too (`return y, y` keeps two values).
      if (!feed && (instr.kind == OpKind::Feed || instr.kind == OpKind::Fetch))
        return std::nullopt;
      touches = true;
      reads |= !a.write;
      writesWhole |= a.write && alo == lo && ahi == hi;
      if (a.arg >= 0)
        b.args.emplace_back(i, a.arg, alo - lo);
    }
    if (!feed && i == self && !written)
      return std::nullopt;
    if (!feed && touches && !written) {
      bool writer = instr.kind == OpKind::Launch ||
                    (instr.kind == OpKind::Collective &&
                     instr.collective == CommOpKind::AllGather);
      if (!writer || reads || !writesWhole)
        return std::nullopt;
      written = true;
    }
  }
  return b;
}

} // namespace monarch::worker
