//===- SharedArea.h - memfd memory shared between processes -----*- C++ -*-===//
//
// A SharedArea is a memfd mapping one process creates and another process
// of the same host maps through /proc/<pid>/fd/<fd>: no name is ever made
// in /dev/shm, and the memory lives exactly as long as the last mapping, so
// a crash leaves nothing behind. The controller stages a step's feeds and
// fetches in one per same-host worker (docs/executor.md, "Same-host fast
// path"); hostIdentity() says whether two processes can share one.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_DATA_SHAREDAREA_H
#define MONARCH_EXECUTOR_DATA_SHAREDAREA_H

#include "monarch/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace monarch::executor {

class SharedArea {
public:
  SharedArea() = default;
  SharedArea(const SharedArea &) = delete;
  SharedArea &operator=(const SharedArea &) = delete;
  SharedArea(SharedArea &&other) noexcept { *this = std::move(other); }
  SharedArea &operator=(SharedArea &&other) noexcept;
  ~SharedArea();

  /// A new zero-filled area of `bytes` (sparse until touched); keeps its fd
  /// open so that other processes can open it.
  static StatusOr<SharedArea> create(const std::string &label, size_t bytes);
  /// Maps the area process `pid` created, through /proc/<pid>/fd/<fd>. Its
  /// size is the memfd's own, which must be at least `minBytes`.
  static StatusOr<SharedArea> open(int64_t pid, int fd, size_t minBytes);

  char *data() const { return static_cast<char *>(base_); }
  size_t bytes() const { return size_; }
  /// The creator's descriptor, -1 for an opened area or after closeFd().
  int fd() const { return fd_; }
  /// Once every other process opened it: the mappings keep it alive.
  void closeFd();
  bool valid() const { return base_ != nullptr; }

private:
  void *base_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

/// Identifies the host, kernel, pid and network namespaces and user this
/// process runs as: processes with equal ids can open each other's areas,
/// and are on one host for the data plane and the controller's same-host
/// paths. The network namespace counts because a machine's namespaces are
/// its hosts in tests (scripts/netns-hosts.sh), as containers are on a
/// real one: each has its own addresses, and its own abstract sockets that
/// the others cannot reach. MONARCH_SHM_HOST, when set, replaces the host
/// name (tests use it to put processes on "different hosts").
std::string hostIdentity();

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_DATA_SHAREDAREA_H
