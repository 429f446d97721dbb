//===- ControlWire.h - Limits and addresses of control links -*- C++ -*-===//
//
// What both ends of a control connection agree on before a byte moves: the
// limits and the job token (`WireOptions`), where a server listens
// (`ControlEndpoint`), and the small helpers around them. No Thrift header:
// the controller's core sees these through ControlClient.h without the
// transport. Defined in ThriftGlue.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_CONTROLWIRE_H
#define MONARCH_EXECUTOR_CONTROL_CONTROLWIRE_H

#include "monarch/Support/Status.h"

#include <memory>
#include <string>
#include <utility>

namespace apache::thrift {
class TConfiguration;
} // namespace apache::thrift

namespace monarch::executor {

/// Bounds and credentials of control connections. A frame larger than
/// `maxMessageBytes` (MONARCH_MAX_MESSAGE_BYTES) is rejected before it is
/// read; every connection opens with the job token (ControlTransport.h): a
/// server closes one that does not present `token` within
/// `handshakeTimeoutMs`, and one whose frame does not arrive whole within
/// `frameTimeoutMs`; it serves at most `maxConnections` at once (more wait
/// in the listen queue).
struct WireOptions {
  int maxMessageBytes = 256 << 20;
  std::string token;
  int handshakeTimeoutMs = 2000;
  int frameTimeoutMs = 30000;
  int maxConnections = 64;
  /// The limits and timeouts of the environment; `token` is the caller's.
  static WireOptions fromEnv(std::string token);
  std::shared_ptr<apache::thrift::TConfiguration> configuration() const;
};

/// Where a control server listens: host:port, or, for a process on the
/// same host, a Unix socket in the abstract namespace (`local`, the name
/// without its leading NUL). The local socket skips the TCP stack: a
/// round trip costs about 60% of a loopback TCP one (bench/dispatch).
struct ControlEndpoint {
  std::string host;
  int port = 0;
  std::string local;
  std::string describe() const;
};

/// Whether same-host control connections use local sockets (the default;
/// MONARCH_LOCAL_CONTROL=0 keeps every connection on TCP).
bool localControlEnabled();

/// Splits "host:port".
StatusOr<std::pair<std::string, int>> parseHostPort(const std::string &text);

/// A fresh random job token (hex of 128 bits from /dev/urandom).
std::string generateJobToken();

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_CONTROLWIRE_H
