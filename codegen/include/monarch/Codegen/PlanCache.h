//===- PlanCache.h - Content-addressed cache of compiled plans --*- C++ -*-===//
//
// `monarch-compile` keeps every `.mcplan` it produces under a key that hashes
// everything the result depends on: the input module printed canonically
// (with locations, which the plan carries), the compiler's identity (version
// and the files of the loaded compiler libraries), the options and the
// target. A second compile of the same program is then a parse, a print, a
// hash and a file read. Directory: $MONARCH_CACHE_DIR, else
// $XDG_CACHE_HOME/monarch-compile, else ~/.cache/monarch-compile;
// MONARCH_DISABLE_CACHE=1 bypasses it. Entries are written atomically
// (temporary file, then rename); an entry that fails to decode is deleted
// and treated as a miss. Details: docs/plan.md.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_PLANCACHE_H
#define MONARCH_CODEGEN_PLANCACHE_H

#include "monarch/Support/Status.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace monarch::codegen {

struct PlanCacheConfig {
  bool enabled = true;
  std::string directory;
};

/// Reads MONARCH_DISABLE_CACHE, MONARCH_CACHE_DIR, XDG_CACHE_HOME and HOME.
/// Disabled when MONARCH_DISABLE_CACHE is set to anything but "" or "0", or
/// when no directory can be determined.
PlanCacheConfig planCacheConfigFromEnvironment();

/// The compiler's identity: the version and, for the executable and each
/// shared object containing one of `anchors` (addresses of functions), its
/// path, size and modification time. Any rebuild of the compiler changes it.
std::string compilerFingerprint(llvm::ArrayRef<const void *> anchors);

/// "host" CPU name and features of this machine (host-targeted kernels
/// must not be shared between different CPUs through a shared cache).
std::string hostCpuDescription();

/// Hex SHA-256 of the three inputs and knobs::compileKey() (the set
/// environment variables that change compiled output), each length-prefixed.
std::string planCacheKey(llvm::StringRef canonicalModule,
                         llvm::StringRef fingerprint, llvm::StringRef options);

class PlanCache {
public:
  explicit PlanCache(PlanCacheConfig config) : config(std::move(config)) {}

  bool enabled() const { return config.enabled; }
  const std::string &directory() const { return config.directory; }
  /// Where the entry for `key` lives.
  std::string entryPath(llvm::StringRef key) const;

  /// The `.mcplan` bytes stored under `key`, or nullopt on a miss. An entry
  /// that is not a valid plan file is removed and reported as a miss, with
  /// the reason in `*corruption` when given.
  std::optional<std::string> lookup(llvm::StringRef key,
                                    std::string *corruption = nullptr) const;
  /// Stores `bytes` under `key` atomically.
  executor::Status store(llvm::StringRef key, llvm::StringRef bytes) const;

private:
  PlanCacheConfig config;
};

} // namespace monarch::codegen

#endif // MONARCH_CODEGEN_PLANCACHE_H
