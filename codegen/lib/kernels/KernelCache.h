//===- KernelCache.h - Kernel object code, by content ---------*- C++ -*-===//
//
// A kernel's object code depends on its canonical, location-free body, the
// machine it is generated for (triple, CPU, features, optimisation level),
// the compiler build and the environment variables that change compiled
// output; its key hashes exactly those, and nothing else. So every
// program, rank and edit shares entries: editing a line above a model, or
// a second model with the same layers, finds its kernels compiled.
//
// Entries are files <dir>/<key[0..2]>/<key>.o holding a header (magic and
// SHA-256 of the payload) and the object, written atomically; a hit is
// checked against its digest (a damaged entry is removed, never linked) and
// touched, and store() evicts the least recently used entries beyond the
// size bound. Processes may share a directory: the worst a race does is a
// miss.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_LIB_KERNELS_KERNELCACHE_H
#define MONARCH_CODEGEN_LIB_KERNELS_KERNELCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace monarch::codegen::detail {

class KernelCache {
public:
  /// No cache when `directory` is empty or `maxBytes` is 0.
  KernelCache(std::string directory, uint64_t maxBytes)
      : directory(std::move(directory)), maxBytes(maxBytes) {}

  bool enabled() const { return !directory.empty() && maxBytes > 0; }

  /// The key of a kernel: SHA-256 over its canonical body and `target`
  /// (describeCodeTarget plus the lowering's options), the compiler build
  /// and the compile-input environment variables.
  static std::string key(llvm::StringRef body, llvm::StringRef target);

  /// The object stored under `key`, checked; nullopt on a miss.
  std::optional<std::string> lookup(llvm::StringRef key) const;

  /// Stores `object` under `key` (best effort: a full disk only costs
  /// the next compile).
  void store(llvm::StringRef key, llvm::StringRef object) const;

  /// Removes the least recently used entries until the cache holds at most
  /// its bound.
  void evict() const;

  std::string entryPath(llvm::StringRef key) const;

private:
  std::string directory;
  uint64_t maxBytes;
};

} // namespace monarch::codegen::detail

#endif // MONARCH_CODEGEN_LIB_KERNELS_KERNELCACHE_H
