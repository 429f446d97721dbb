//===- FakeCommunicator.h - In-process Communicator for tests --*- C++ -*-===//
//
// Threads as ranks: a FakeCommWorld hands out one Communicator per rank, all
// in this process, with the interface's semantics (a FIFO per object, groups,
// tags, timeouts, abort, duplicates) and host buffers. Sends are eager (they
// complete once copied out), which the plan semantics allow. kill() simulates
// a crashed rank so that supervision code can be unit-tested without
// processes. In MonarchTesting; never linked into the worker.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_FAKECOMMUNICATOR_H
#define MONARCH_EXECUTOR_FAKECOMMUNICATOR_H

#include "monarch/Executor/Communicator.h"

#include <chrono>
#include <memory>

namespace monarch::executor {

namespace fake {
struct WorldState;
} // namespace fake

class FakeCommWorld {
public:
  explicit FakeCommWorld(int size, std::chrono::milliseconds timeout =
                                       std::chrono::milliseconds(10000));
  ~FakeCommWorld();

  int size() const;
  /// The member for `rank`, named `name`; create each rank's once.
  std::unique_ptr<Communicator> communicator(int rank,
                                             const std::string &name = "fake");
  /// Simulates a crash of `rank`: its pending and later ops fail with
  /// Aborted, and every op of another rank that waits on it fails with
  /// Unavailable naming it.
  void kill(int rank);
  /// Groups posted so far by `rank` (all its communicators).
  int postedGroups(int rank) const;

private:
  std::shared_ptr<fake::WorldState> state_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_FAKECOMMUNICATOR_H
