//===- ControlStore.h - The rendezvous Store ------------------ -*- C++ -*-===//
//
// What a worker hands to createCommunicator: every Store call is one
// ControllerService store RPC on a connection of its own (Gloo's rendezvous
// blocks in get while other threads keep heartbeating). Calls are
// serialized; a wait longer than the receive timeout extends it per call.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_CONTROLSTORE_H
#define MONARCH_EXECUTOR_CONTROL_CONTROLSTORE_H

#include "monarch/Executor/Store.h"

#include "ThriftGlue.h"

#include <atomic>
#include <mutex>

namespace monarch::executor {

class ControlStore final : public Store {
public:
  static StatusOr<std::unique_ptr<ControlStore>>
  connect(const std::string &host, int port, std::string token,
          const WireOptions &limits);

  Status set(const std::string &key, const std::string &value) override;
  StatusOr<std::string> get(const std::string &key,
                            std::chrono::milliseconds timeout) override;
  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout) override;
  StatusOr<int64_t> add(const std::string &key, int64_t delta) override;
  /// Sent with every call once registration told it (WorkerConfig).
  void setGeneration(int generation) { generation_ = generation; }

private:
  ControlStore() = default;
  /// Reconnects after a failed call (the connection state is unknown).
  Status
  call(const std::string &what, std::chrono::milliseconds timeout,
       const std::function<void(control::ControllerServiceClient &)> &fn);
  std::mutex mutex_;
  std::string host_;
  int port_ = 0;
  std::string token_;
  std::atomic<int> generation_{-1};
  WireOptions limits_;
  std::unique_ptr<ControllerConnection> conn_;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_CONTROLSTORE_H
