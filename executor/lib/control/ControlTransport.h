//===- ControlTransport.h - Authenticated, bounded control frames -*- C++
//-*-===//
//
// The framed transport of every control connection. On a server it first
// authenticates the connection: the client's first bytes must be the
// handshake (`MCTL`, a version byte, the job token's length and the token),
// complete within MONARCH_HANDSHAKE_TIMEOUT_MS; a wrong token is answered
// with one refusal byte and the connection is closed, so nothing a peer
// without the token sends is ever decoded. After that, a frame that has
// begun must arrive whole within MONARCH_FRAME_TIMEOUT_MS (an idle
// connection between frames may wait forever: the controller's connections
// live across a user's pauses). Frame buffers grow with the bytes actually
// received, not with the length a header declares, and shrink after a
// large frame. `bytesLeft` (what is left of the current frame) bounds what
// BoundedBinaryProtocol lets a reader allocate.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_CONTROL_CONTROLTRANSPORT_H
#define MONARCH_EXECUTOR_CONTROL_CONTROLTRANSPORT_H

#include "ReadAheadTransport.h"
#include "monarch/Support/Status.h"

#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <cstdint>
#include <memory>
#include <string>

namespace monarch::executor {

/// What a server demands of a connection before it reads its first frame.
struct ConnectionGuard {
  std::string token;
  int handshakeTimeoutMs = 2000;
  int frameTimeoutMs = 30000;
  /// Names the server in its log lines ("worker 3").
  std::string label;
};

class ControlFramedTransport
    : public apache::thrift::transport::TFramedTransport {
public:
  /// A server-side transport: `guard` set, `socket` the accepted socket
  /// (its receive timeout carries the deadlines). A client-side one has
  /// neither and reads frames as TFramedTransport does.
  ControlFramedTransport(
      std::shared_ptr<ReadAheadTransport> inner,
      std::shared_ptr<apache::thrift::transport::TSocket> socket,
      std::shared_ptr<apache::thrift::TConfiguration> config,
      std::shared_ptr<const ConnectionGuard> guard);

  /// Bytes of the current frame not read yet.
  uint64_t bytesLeft() const { return static_cast<uint64_t>(rBound_ - rBase_); }
  /// Bytes the frame buffer holds (tests).
  size_t bufferCapacity() const { return capacity_; }

  uint32_t readEnd() override;

protected:
  bool readFrame() override;

private:
  void authenticate();
  /// Reads exactly `len` bytes before the current deadline; with
  /// `idleFirst` the first byte may wait forever (between frames) and the
  /// frame deadline starts with it. Returns false on a clean end of stream
  /// before that first byte.
  bool readExactly(uint8_t *buf, uint32_t len, bool idleFirst,
                   const char *what);
  void setRecvTimeout(int ms);
  std::string peer() const;

  std::shared_ptr<ReadAheadTransport> ahead_;
  std::shared_ptr<apache::thrift::transport::TSocket> socket_;
  std::shared_ptr<const ConnectionGuard> guard_;
  bool authenticated_ = false;
  int recvTimeoutMs_ = 0;
  /// Deadline of the frame being read, steady-clock nanoseconds; 0: none.
  int64_t deadlineNs_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
  uint32_t frameBytes_ = 0;
};

/// The client half of the handshake, on a freshly connected socket: sends
/// the token and reads the server's answer within `timeoutMs`. A refused
/// token is PermissionDenied.
Status clientHandshake(apache::thrift::transport::TSocket &socket,
                       const std::string &token, int timeoutMs,
                       const std::string &peer);

/// "127.0.0.1:40312" for a TCP socket's peer, "local socket" for a Unix
/// socket.
std::string describePeer(apache::thrift::transport::TSocket &socket);

/// Constant-time comparison of job tokens; an empty `expected` matches
/// nothing.
bool tokenMatches(const std::string &expected, const std::string &given);

/// Handshake bytes (exposed for tests that play a hostile client).
std::string handshakeBytes(const std::string &token);

} // namespace monarch::executor

#endif // MONARCH_EXECUTOR_CONTROL_CONTROLTRANSPORT_H
