//===- ControlClient.h - The controller's calls to one worker -*- C++ -*-===//
//
// The seam between the controller's core (executor/lib/core) and the
// control transport. The core asks a worker to load a plan, run a step,
// write or read actor state, abort or exit through a `ControlClient` and
// gets a `Status` back, with `CallFailure` saying whether the connection
// failed or the worker answered with an error (and where it was). Thrift's
// client, sockets and exceptions stay behind it (ControlClient.cpp).
//
// The messages are the IDL's structs (executor/idl/Control.thrift,
// generated into monarch::executor::control), as a gRPC stub takes its
// protos: they are the schema both ends share, and a step's feeds and
// fetches cross the seam by reference. A second set of core-side structs
// would be a copy of every feed on every step and a second definition kept
// in step with the IDL by hand.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_CONTROLCLIENT_H
#define MONARCH_EXECUTOR_CONTROL_CONTROLCLIENT_H

#include "ControlWire.h"
#include "monarch/Executor/control/Control_types.h"
#include "monarch/Support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace monarch::executor {

/// How a call on a worker failed, beyond the Status it returned.
struct CallFailure {
  /// The connection failed (a worker that crashed drops it too).
  bool transportFailed = false;
  /// What the worker said, without the call's name: its error when it
  /// answered with one, else the call's status.
  Status worker;
  /// Where the worker was when it answered with an error: the instruction,
  /// its op and the user's source location (-1 and empty when unknown).
  int instruction = -1;
  std::string op;
  std::string location;
};

/// One connection from the controller to one worker. One call at a time,
/// except `interrupt`, which any thread may call.
class ControlClient {
public:
  /// Dials the worker at `endpoint`: its local socket when it has one
  /// (falling back to host:port, for a worker in another network namespace
  /// with our hostname), else host:port. Calls present `limits.token`;
  /// `recvTimeoutMs` 0 waits for a reply as long as it takes.
  static StatusOr<std::unique_ptr<ControlClient>>
  dial(const ControlEndpoint &endpoint, const WireOptions &limits,
       int connectTimeoutMs, int recvTimeoutMs);

  virtual ~ControlClient() = default;

  /// Sends the plan file's bytes; the reply describes each plan it holds.
  virtual Status loadPlan(const std::string &planBytes,
                          std::vector<control::PlanInfo> &reply,
                          CallFailure *failure = nullptr) = 0;
  /// A step in two halves, so the controller writes every worker's request
  /// before it reads any reply. `sendRunStep` fills in the token.
  virtual Status sendRunStep(control::RunStepRequest &request,
                             CallFailure *failure = nullptr) = 0;
  /// Polls for up to `spinUs` microseconds before blocking on the reply (a
  /// reply due within that window is read without a wake-up).
  virtual Status recvRunStep(control::RunStepReply &reply, int spinUs,
                             CallFailure *failure = nullptr) = 0;
  virtual Status setState(const std::string &key, const control::Tensor &value,
                          CallFailure *failure = nullptr) = 0;
  virtual Status getState(const std::string &key, control::Tensor &value,
                          CallFailure *failure = nullptr) = 0;
  /// The values kept on the worker (resident slots), in `slots` order.
  virtual Status readSlots(const std::vector<int64_t> &slots,
                           std::vector<std::string> &values,
                           CallFailure *failure = nullptr) = 0;
  /// Aborts the worker's communicators, so ranks blocked on a failed peer
  /// return.
  virtual Status abort(const std::string &reason) = 0;
  /// Asks the worker to exit; no reply is waited for.
  virtual Status shutdown() = 0;
  /// Makes a call blocked on another thread fail now.
  virtual void interrupt() = 0;
  /// Where the worker is, for messages.
  virtual std::string peer() const = 0;
};

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_CONTROLCLIENT_H
