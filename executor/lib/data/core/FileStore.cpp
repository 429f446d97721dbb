//===- FileStore.cpp - A Store kept as files in a directory -----*- C++ -*-===//
//
// For ranks that are processes on one machine without a controller (tests,
// benchmarks). Keys are hex-encoded into file names so any byte string is a
// valid key; set() writes a temporary file and renames it into place, so a
// reader sees either nothing or the whole value; add() serializes through an
// flock on a lock file. Waiters poll every millisecond.
//
//===----------------------------------------------------------------------===//

#include "monarch/Executor/Store.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace monarch::executor {
namespace {

Status errnoStatus(const std::string &what) {
  return Status(StatusCode::Unavailable, what + ": " + std::strerror(errno));
}

class FileStore final : public Store {
public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}

  Status set(const std::string &key, const std::string &value) override {
    std::string path = pathOf(key);
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                      std::to_string(std::hash<std::thread::id>()(
                          std::this_thread::get_id()));
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(value.data(), value.size());
      if (!out)
        return errnoStatus("file store: writing " + tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      return errnoStatus("file store: renaming " + tmp);
    return Status::ok();
  }

  StatusOr<std::string> get(const std::string &key,
                            std::chrono::milliseconds timeout) override {
    Status st = wait({key}, timeout);
    if (!st)
      return st;
    std::ifstream in(pathOf(key), std::ios::binary);
    std::ostringstream data;
    data << in.rdbuf();
    if (!in)
      return errnoStatus("file store: reading key '" + key + "'");
    return data.str();
  }

  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::string missing;
      for (const std::string &k : keys)
        if (::access(pathOf(k).c_str(), F_OK) != 0)
          missing += (missing.empty() ? "'" : ", '") + k + "'";
      if (missing.empty())
        return Status::ok();
      if (std::chrono::steady_clock::now() >= deadline)
        return Status(StatusCode::DeadlineExceeded,
                      "store keys " + missing + " not set within " +
                          std::to_string(timeout.count()) + " ms");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  StatusOr<int64_t> add(const std::string &key, int64_t delta) override {
    std::string lockPath = dir_ + "/.lock";
    int fd = ::open(lockPath.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
      return errnoStatus("file store: opening " + lockPath);
    if (::flock(fd, LOCK_EX) != 0) {
      Status st = errnoStatus("file store: locking " + lockPath);
      ::close(fd);
      return st;
    }
    int64_t value = 0;
    Status st;
    std::ifstream in(pathOf(key), std::ios::binary);
    if (in) {
      std::string text((std::istreambuf_iterator<char>(in)), {});
      try {
        value = std::stoll(text);
      } catch (const std::exception &) {
        st = Status(StatusCode::InvalidArgument,
                    "store key '" + key + "' does not hold an integer");
      }
    }
    if (st) {
      value += delta;
      st = set(key, std::to_string(value));
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    if (!st)
      return st;
    return value;
  }

private:
  std::string pathOf(const std::string &key) const {
    static const char *hex = "0123456789abcdef";
    std::string name = "k";
    for (unsigned char c : key) {
      name += hex[c >> 4];
      name += hex[c & 15];
    }
    return dir_ + "/" + name;
  }

  std::string dir_;
};

} // namespace

StatusOr<std::unique_ptr<Store>> createFileStore(const std::string &directory) {
  if (directory.empty())
    return Status(StatusCode::InvalidArgument, "file store: empty directory");
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST)
    return errnoStatus("file store: creating " + directory);
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status(StatusCode::InvalidArgument,
                  "file store: " + directory + " is not a directory");
  return std::unique_ptr<Store>(std::make_unique<FileStore>(directory));
}

} // namespace monarch::executor
