//===- SharedArea.cpp - memfd memory shared between processes -------------===//
//
// See SharedArea.h.
//
//===----------------------------------------------------------------------===//
#include "SharedArea.h"
#include "monarch/Support/Knobs.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace monarch::executor {
namespace {
std::string errnoText() { return std::strerror(errno); }
} // namespace

SharedArea &SharedArea::operator=(SharedArea &&other) noexcept {
  if (this != &other) {
    this->~SharedArea();
    base_ = other.base_;
    size_ = other.size_;
    fd_ = other.fd_;
    other.base_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

SharedArea::~SharedArea() {
  if (base_)
    ::munmap(base_, size_);
  if (fd_ >= 0)
    ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

void SharedArea::closeFd() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

StatusOr<SharedArea> SharedArea::create(const std::string &label,
                                        size_t bytes) {
  std::string name = "monarch:" + label;
  int fd = static_cast<int>(
      ::syscall(SYS_memfd_create, name.c_str(), unsigned(MFD_CLOEXEC)));
  if (fd < 0)
    return Status(StatusCode::Unavailable, "memfd_create: " + errnoText());
  SharedArea area;
  area.fd_ = fd;
  area.size_ = std::max<size_t>(bytes, 1);
  if (::ftruncate(fd, static_cast<off_t>(area.size_)) != 0)
    return Status(StatusCode::Unavailable, "ftruncate: " + errnoText());
  void *p =
      ::mmap(nullptr, area.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Status(StatusCode::Unavailable, "mmap: " + errnoText());
  area.base_ = p;
  return area;
}

StatusOr<SharedArea> SharedArea::open(int64_t pid, int fd, size_t minBytes) {
  std::string path =
      "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int mine = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0)
    return Status(StatusCode::Unavailable,
                  "cannot open " + path + ": " + errnoText());
  struct stat st;
  bool ok = ::fstat(mine, &st) == 0 && st.st_size > 0 &&
            static_cast<size_t>(st.st_size) >= minBytes;
  if (!ok) {
    ::close(mine);
    return Status(StatusCode::Unavailable,
                  path + " is not a shared area of at least " +
                      std::to_string(minBytes) + " bytes");
  }
  SharedArea area;
  area.size_ = static_cast<size_t>(st.st_size);
  void *p =
      ::mmap(nullptr, area.size_, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
  ::close(mine); // the mapping keeps the memory alive
  if (p == MAP_FAILED)
    return Status(StatusCode::Unavailable, "mmap " + path + ": " + errnoText());
  area.base_ = p;
  return area;
}

std::string hostIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  auto ns = [](const char *path) {
    char link[128] = {0};
    ssize_t n = ::readlink(path, link, sizeof(link) - 1);
    return n > 0 ? std::string(link, n) : std::string("?");
  };
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  // Tests and debugging: pretend to be on another host.
  if (std::optional<std::string> fake = knobs::raw(knobs::Id::ShmHost))
    std::snprintf(host, sizeof(host), "%s", fake->c_str());
  return std::string(host) + "/" + boot + "/" + ns("/proc/self/ns/pid") + "/" +
         ns("/proc/self/ns/net") + "/uid" + std::to_string(::getuid());
}

} // namespace monarch::executor
