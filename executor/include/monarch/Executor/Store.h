//===- Store.h - Key-value store for data-plane rendezvous -----*- C++ -*-===//
//
// Communicators find each other through a small key-value store: Gloo
// exchanges its pair addresses there and NCCL its unique id. In a job the
// store is served by the controller over Thrift (the control plane
// implements this interface); tests use the in-process and file-backed
// stores declared here. Values are byte strings. Keys, once set, are only
// overwritten by another set; nothing here deletes them, so callers prefix
// keys with a name unique to each rendezvous (see PrefixStore).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_STORE_H
#define MONARCH_EXECUTOR_STORE_H

#include "monarch/Support/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace monarch::executor {

class Store {
public:
  virtual ~Store() = default;

  /// Sets `key` to `value` (binary-safe) and wakes its waiters.
  virtual Status set(const std::string &key, const std::string &value) = 0;

  /// Waits until `key` exists and returns its value; DeadlineExceeded naming
  /// the key when it does not appear within `timeout`.
  virtual StatusOr<std::string> get(const std::string &key,
                                    std::chrono::milliseconds timeout) = 0;

  /// Waits until every key exists; DeadlineExceeded naming the missing keys.
  virtual Status wait(const std::vector<std::string> &keys,
                      std::chrono::milliseconds timeout) = 0;

  /// Atomically adds `delta` to the decimal integer stored at `key` (absent
  /// counts as 0) and returns the new value. Used for barriers and counters.
  virtual StatusOr<int64_t> add(const std::string &key, int64_t delta) = 0;
};

/// A view of `base` that prepends `prefix + "/"` to every key. Does not own
/// `base`, which must outlive it.
class PrefixStore final : public Store {
public:
  PrefixStore(Store &base, std::string prefix)
      : base_(base), prefix_(std::move(prefix) + "/") {}
  Status set(const std::string &key, const std::string &value) override {
    return base_.set(prefix_ + key, value);
  }
  StatusOr<std::string> get(const std::string &key,
                            std::chrono::milliseconds timeout) override {
    return base_.get(prefix_ + key, timeout);
  }
  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string &k : keys)
      full.push_back(prefix_ + k);
    return base_.wait(full, timeout);
  }
  StatusOr<int64_t> add(const std::string &key, int64_t delta) override {
    return base_.add(prefix_ + key, delta);
  }

private:
  Store &base_;
  std::string prefix_;
};

/// A thread-safe store in this process's memory (threads as ranks, and the
/// table behind the controller's Thrift store service). In MonarchDataCore.
std::unique_ptr<Store> createInProcessStore();

/// A store kept as files under `directory` (created if missing), shared by
/// processes on one machine: set writes a temporary file and renames it, add
/// holds an flock. Polls every millisecond while waiting. In MonarchDataCore.
StatusOr<std::unique_ptr<Store>> createFileStore(const std::string &directory);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_STORE_H
