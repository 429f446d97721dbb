//===- PlanCache.cpp - Content-addressed cache ---------------- -*- C++ -*-===//
//
// Keys are SHA-256 over length-prefixed fields; entries are whole `.mcplan`
// files at <dir>/<key[0..2]>/<key>.mcplan, validated with deserializePlan on
// every hit so that a damaged entry can never be handed out.
//
//===----------------------------------------------------------------------===//

#include "monarch/Codegen/PlanCache.h"
#include "monarch/Plan/PlanFile.h"
#include "monarch/Support/Fingerprint.h"
#include "monarch/Support/Knobs.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

#ifndef MONARCH_VERSION
#define MONARCH_VERSION "unknown"
#endif

namespace monarch::codegen {
using plan::deserializePlan;
using plan::ExecutionPlan;
using plan::kPlanFormatVersion;
using plan::readFileBytes;
using plan::writeFileAtomically;

static std::optional<std::string> env(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

PlanCacheConfig planCacheConfigFromEnvironment() {
  PlanCacheConfig config;
  config.enabled = !knobs::getBool(knobs::Id::DisableCache).value;
  if (std::optional<std::string> dir = knobs::raw(knobs::Id::CacheDir)) {
    config.directory = *dir;
  } else {
    llvm::SmallString<256> path;
    if (std::optional<std::string> xdg = env("XDG_CACHE_HOME"))
      path = *xdg;
    else if (std::optional<std::string> home = env("HOME"))
      llvm::sys::path::append(path, *home, ".cache");
    if (!path.empty()) {
      llvm::sys::path::append(path, "monarch-compile");
      config.directory = std::string(path);
    }
  }
  if (config.directory.empty())
    config.enabled = false;
  return config;
}

std::string compilerFingerprint(llvm::ArrayRef<const void *> anchors) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "monarch-compile " << MONARCH_VERSION << ";plan-format "
     << kPlanFormatVersion << ";";
  std::string exe =
      llvm::sys::fs::getMainExecutable(nullptr, (void *)&compilerFingerprint);
  os << describeFile(exe.c_str());
  const void *self = reinterpret_cast<const void *>(&compilerFingerprint);
  for (const void *anchor : llvm::concat<const void *const>(
           anchors, llvm::ArrayRef<const void *>(self)))
    os << describeLoadedFile(anchor);
  return out;
}

std::string hostCpuDescription() {
  std::string out = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool, llvm::MallocAllocator> features =
      llvm::sys::getHostCPUFeatures();
  std::vector<std::string> enabled;
  for (const auto &f : features)
    if (f.second)
      enabled.push_back(f.first().str());
  llvm::sort(enabled);
  for (const std::string &f : enabled)
    out += "," + f;
  return out;
}

std::string planCacheKey(llvm::StringRef canonicalModule,
                         llvm::StringRef fingerprint, llvm::StringRef options) {
  llvm::SHA256 hash;
  // The environment variables that change compiled output (the registry's
  // compile inputs, e.g. MONARCH_MATMUL_TILES) are part of every key.
  std::string knobs = knobs::compileKey();
  for (llvm::StringRef field :
       {llvm::StringRef("monarch-plan-cache-1"), fingerprint, options,
        llvm::StringRef(knobs), canonicalModule}) {
    std::string length = std::to_string(field.size()) + ":";
    hash.update(length);
    hash.update(field);
  }
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string PlanCache::entryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(config.directory);
  llvm::sys::path::append(path, key.take_front(2), key.str() + ".mcplan");
  return std::string(path);
}

std::optional<std::string> PlanCache::lookup(llvm::StringRef key,
                                             std::string *corruption) const {
  if (!config.enabled)
    return std::nullopt;
  std::string path = entryPath(key);
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  StatusOr<std::string> bytes = readFileBytes(path);
  if (!bytes)
    return std::nullopt;
  StatusOr<ExecutionPlan> plan = deserializePlan(*bytes);
  if (!plan) {
    if (corruption)
      *corruption = plan.status().message();
    llvm::sys::fs::remove(path);
    return std::nullopt;
  }
  return std::move(*bytes);
}

executor::Status PlanCache::store(llvm::StringRef key,
                                  llvm::StringRef bytes) const {
  if (!config.enabled)
    return executor::Status::ok();
  std::string path = entryPath(key);
  if (std::error_code ec =
          llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return executor::Status(executor::StatusCode::Internal,
                            "cannot create cache directory for '" + path +
                                "': " + ec.message());
  return writeFileAtomically(path,
                             std::string_view(bytes.data(), bytes.size()));
}

} // namespace monarch::codegen
