//===- ThriftGlue.h - Thrift servers and clients -------------- -*- C++ -*-===//
//
// The only place Thrift exceptions exist: servers run the generated
// processors on a TThreadedServer over authenticated framed transports
// (ControlTransport.h) and a protocol that allocates only what it received
// (BoundedProtocol.h), bounded by `WireOptions`; clients connect with
// timeouts and the job token; every exception a Thrift call throws is
// turned into a `Status` by `callThrift`. Shared by the controller
// (MonarchExecutor) and monarch-worker. Not an interface header: it lives
// beside its implementation and is on MonarchControl's include path.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_THRIFTGLUE_H
#define MONARCH_EXECUTOR_CONTROL_THRIFTGLUE_H

#include "monarch/Support/Status.h"

#include "ControlTransport.h"
#include "ControlWire.h"
#include "ControllerService.h"
#include "WorkerService.h"

#include <thrift/TConfiguration.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace monarch::executor {

/// A Thrift processor served on host:port by a TThreadedServer running on a
/// background thread. Port 0 picks a free port.
class ControlServer {
public:
  /// `requestSpinUs`: how long a connection, once idle, polls for its next
  /// request before blocking (ReadAheadTransport).
  static StatusOr<std::unique_ptr<ControlServer>>
  start(std::shared_ptr<apache::thrift::TProcessor> processor,
        const std::string &host, int port, const WireOptions &limits,
        std::string name, int requestSpinUs = 0);
  /// Listens on the abstract Unix socket `name` (see ControlEndpoint).
  static StatusOr<std::unique_ptr<ControlServer>>
  startLocal(std::shared_ptr<apache::thrift::TProcessor> processor,
             const std::string &name, const WireOptions &limits,
             std::string label, int requestSpinUs = 0);
  ~ControlServer();

  int port() const { return port_; }
  /// The abstract socket name of a local server, "" otherwise.
  const std::string &localName() const { return localName_; }
  const std::string &host() const { return host_; }
  /// Stops accepting, interrupts idle connections and joins the server.
  void stop();

  /// The socket of the connection the calling handler thread is serving, or
  /// -1 outside a handler (used to inject a dropped connection in tests).
  static int currentConnectionFd();
  /// "127.0.0.1:40312" for the calling handler's peer ("local socket" on a
  /// Unix socket), "" outside.
  static std::string currentPeer();

private:
  ControlServer() = default;
  static StatusOr<std::unique_ptr<ControlServer>>
  serve(std::shared_ptr<apache::thrift::TProcessor> processor,
        std::shared_ptr<apache::thrift::transport::TServerSocket> socket,
        const std::string &where, const std::string &host,
        const WireOptions &limits, std::string name, int requestSpinUs);
  std::string name_;
  std::string host_;
  std::string localName_;
  int port_ = 0;
  std::shared_ptr<apache::thrift::server::TThreadedServer> server_;
  std::thread thread_;
  std::once_flag stopOnce_;
};

/// One client connection to a control service; not thread-safe (one call at
/// a time), except `shutdownSocket`, which unblocks a call in flight.
template <typename ClientT> class ControlConnection {
public:
  static StatusOr<std::unique_ptr<ControlConnection>>
  connect(const std::string &host, int port, const WireOptions &limits,
          int connectTimeoutMs, int recvTimeoutMs);
  /// Dials the endpoint's local socket when it has one, else host:port.
  static StatusOr<std::unique_ptr<ControlConnection>>
  connect(const ControlEndpoint &endpoint, const WireOptions &limits,
          int connectTimeoutMs, int recvTimeoutMs);
  ~ControlConnection() { close(); }

  ClientT &client() { return *client_; }
  /// Applies to the next calls; 0 waits forever.
  void setRecvTimeout(int ms) { socket_->setRecvTimeout(ms); }
  /// Makes a blocked call on another thread fail now.
  void shutdownSocket();
  /// Spins (no system call blocks) for up to `us` microseconds until a
  /// reply has arrived: a reply expected within that window is then read
  /// without the sleep and wake-up a blocking read costs.
  void spinUntilReadable(int us);
  void close();
  std::string peer() const { return endpoint_.describe(); }

private:
  ControlEndpoint endpoint_;
  std::shared_ptr<apache::thrift::transport::TSocket> socket_;
  std::shared_ptr<apache::thrift::transport::TTransport> transport_;
  std::unique_ptr<ClientT> client_;
  std::atomic<int> fd_{-1};
};

using ControllerConnection =
    ControlConnection<control::ControllerServiceClient>;
using WorkerConnection = ControlConnection<control::WorkerServiceClient>;

/// ControlError <-> Status.
Status toStatus(const control::ControlError &error);
control::ControlError toControlError(const Status &status);

/// Runs a Thrift call; any exception becomes a Status (a ControlError keeps
/// its code, transport failures are Unavailable) prefixed with `what`. When
/// the service answered with a ControlError it is also stored in
/// `serviceError`, and `transportFailed` says whether the connection failed.
Status callThrift(const std::string &what, const std::function<void()> &call,
                  control::ControlError *serviceError = nullptr,
                  bool *transportFailed = nullptr);

/// Throws the PERMISSION_DENIED ControlError (after logging it) when `given`
/// is not the job token. For use inside service handlers only.
void requireToken(const std::string &expected, const std::string &given,
                  const std::string &request);

/// Routes Thrift's internal diagnostics (rejected frames, dead connections)
/// to spdlog.
void redirectThriftLogging();
} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_THRIFTGLUE_H
