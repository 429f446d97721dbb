//===- InProcessStore.cpp - A Store in this process's memory ----*- C++ -*-===//
//
// A map under one mutex with a condition variable for waiters: enough for
// threads as ranks and for the table behind the controller's store service.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Store.h"

#include <condition_variable>
#include <map>
#include <mutex>

namespace monarch::executor {
namespace {

class InProcessStore final : public Store {
public:
  Status set(const std::string &key, const std::string &value) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      table_[key] = value;
    }
    cv_.notify_all();
    return Status::ok();
  }

  StatusOr<std::string> get(const std::string &key,
                            std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return table_.count(key) != 0; }))
      return Status(StatusCode::DeadlineExceeded,
                    "store key '" + key + "' not set within " +
                        std::to_string(timeout.count()) + " ms");
    return table_[key];
  }

  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto missing = [&] {
      std::string names;
      for (const std::string &k : keys)
        if (!table_.count(k))
          names += (names.empty() ? "'" : ", '") + k + "'";
      return names;
    };
    if (!cv_.wait_for(lock, timeout, [&] { return missing().empty(); }))
      return Status(StatusCode::DeadlineExceeded,
                    "store keys " + missing() + " not set within " +
                        std::to_string(timeout.count()) + " ms");
    return Status::ok();
  }

  StatusOr<int64_t> add(const std::string &key, int64_t delta) override {
    int64_t value = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = table_.find(key);
      if (it != table_.end()) {
        try {
          value = std::stoll(it->second);
        } catch (const std::exception &) {
          return Status(StatusCode::InvalidArgument,
                        "store key '" + key + "' does not hold an integer");
        }
      }
      value += delta;
      table_[key] = std::to_string(value);
    }
    cv_.notify_all();
    return value;
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::string> table_;
};

} // namespace

std::unique_ptr<Store> createInProcessStore() {
  return std::make_unique<InProcessStore>();
}

} // namespace monarch::executor
