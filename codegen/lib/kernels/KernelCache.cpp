//===- KernelCache.cpp - Object code of kernels, by content --- -*- C++ -*-===//
#include "KernelCache.h"

#include "monarch/Plan/PlanFile.h"
#include "monarch/Support/Fingerprint.h"
#include "monarch/Support/Knobs.h"

#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"

#include <sys/time.h>
#include <utime.h>
#include <vector>

#ifndef MONARCH_VERSION
#define MONARCH_VERSION "unknown"
#endif

namespace monarch::codegen::detail {
namespace {

constexpr llvm::StringLiteral kMagic = "monarch-kernel-object-1\n";
constexpr size_t kDigestBytes = 32;

std::array<uint8_t, 32> digestOf(llvm::ArrayRef<llvm::StringRef> fields) {
  llvm::SHA256 hash;
  for (llvm::StringRef field : fields) {
    std::string length = std::to_string(field.size()) + ":";
    hash.update(length);
    hash.update(field);
  }
  return hash.final();
}

/// The SHA-256 of an entry's object, as the bytes its header holds.
std::string objectDigest(llvm::StringRef object) {
  std::array<uint8_t, 32> digest = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(object.bytes_begin(), object.bytes_end()));
  return std::string(reinterpret_cast<const char *>(digest.data()),
                     digest.size());
}

/// The build of the kernel compiler: this library, MLIR's and LLVM's.
const std::string &compilerBuild() {
  static const std::string build = [] {
    std::string out = std::string("monarch ") + MONARCH_VERSION + ";";
    std::unique_ptr<mlir::Pass> (*mlirAnchor)() = &mlir::createCSEPass;
    for (const void *anchor :
         {reinterpret_cast<const void *>(&digestOf),
          reinterpret_cast<const void *>(mlirAnchor),
          reinterpret_cast<const void *>(&llvm::sys::getHostCPUName)})
      out += describeLoadedFile(anchor);
    return out;
  }();
  return build;
}

} // namespace

std::string KernelCache::key(llvm::StringRef body, llvm::StringRef target) {
  std::string knobs = knobs::compileKey();
  std::array<uint8_t, 32> digest = digestOf(
      {"monarch-kernel-cache-1", compilerBuild(), target, knobs, body});
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string KernelCache::entryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key.take_front(2), key.str() + ".o");
  return std::string(path);
}

std::optional<std::string> KernelCache::lookup(llvm::StringRef key) const {
  if (!enabled())
    return std::nullopt;
  std::string path = entryPath(key);
  StatusOr<std::string> bytes = plan::readFileBytes(path);
  if (!bytes)
    return std::nullopt;
  llvm::StringRef text(*bytes);
  bool valid = text.consume_front(kMagic) && text.size() > kDigestBytes;
  if (valid) {
    llvm::StringRef object = text.drop_front(kDigestBytes);
    valid = text.take_front(kDigestBytes) == objectDigest(object);
    if (valid) {
      ::utime(path.c_str(), nullptr); // Recently used.
      return object.str();
    }
  }
  llvm::sys::fs::remove(path);
  return std::nullopt;
}

void KernelCache::store(llvm::StringRef key, llvm::StringRef object) const {
  if (!enabled())
    return;
  std::string path = entryPath(key);
  if (llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return;
  std::string bytes = kMagic.str() + objectDigest(object);
  bytes.append(object.data(), object.size());
  (void)plan::writeFileAtomically(path, bytes);
}

void KernelCache::evict() const {
  if (!enabled())
    return;
  struct Entry {
    llvm::sys::TimePoint<> used;
    uint64_t size;
    std::string path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(directory, ec), end;
       it != end && !ec; it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".o")
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    entries.push_back(
        {status.getLastModificationTime(), status.getSize(), it->path()});
    total += status.getSize();
  }
  if (total <= maxBytes)
    return;
  llvm::sort(entries,
             [](const Entry &a, const Entry &b) { return a.used < b.used; });
  // Down to 90% of the bound, so that the next store does not evict again.
  uint64_t target = maxBytes - maxBytes / 10;
  for (const Entry &e : entries) {
    if (total <= target)
      break;
    if (!llvm::sys::fs::remove(e.path))
      total -= e.size;
  }
}

} // namespace monarch::codegen::detail
