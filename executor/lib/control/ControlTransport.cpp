//===- ControlTransport.cpp - Authenticated, bounded control frames -------===//
//
// See ControlTransport.h.
//
//===----------------------------------------------------------------------===//
#include "ControlTransport.h"

#include <spdlog/spdlog.h>
#include <thrift/transport/TTransportException.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <sys/socket.h>

using apache::thrift::TConfiguration;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

namespace monarch::executor {

namespace {

constexpr char kMagic[4] = {'M', 'C', 'T', 'L'};
constexpr uint8_t kVersion = 1;
constexpr uint8_t kAccepted = 'A';
constexpr uint8_t kDenied = 'D';
/// A frame buffer starts at most this large and keeps at most this much
/// between frames; larger frames grow it as their bytes arrive.
constexpr size_t kInitialBytes = 64 << 10;
constexpr size_t kRetainBytes = 1 << 20;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The steady-clock nanosecond `ms` milliseconds from now.
int64_t deadlineAfter(int ms) { return nowNs() + int64_t(ms) * 1000000; }

} // namespace

bool tokenMatches(const std::string &expected, const std::string &given) {
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i]) ^
            static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  return diff == 0 && !expected.empty();
}

std::string handshakeBytes(const std::string &token) {
  std::string bytes(kMagic, sizeof(kMagic));
  bytes += static_cast<char>(kVersion);
  bytes += static_cast<char>(static_cast<uint8_t>(token.size()));
  bytes += token;
  return bytes;
}

ControlFramedTransport::ControlFramedTransport(
    std::shared_ptr<ReadAheadTransport> inner, std::shared_ptr<TSocket> socket,
    std::shared_ptr<TConfiguration> config,
    std::shared_ptr<const ConnectionGuard> guard)
    : TFramedTransport(inner, std::move(config)), ahead_(std::move(inner)),
      socket_(std::move(socket)), guard_(std::move(guard)) {}

std::string describePeer(TSocket &socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(socket.getSocketFD(), reinterpret_cast<sockaddr *>(&addr),
                    &len) == 0 &&
      addr.ss_family == AF_UNIX)
    return "local socket";
  return socket.getPeerAddress() + ":" + std::to_string(socket.getPeerPort());
}

std::string ControlFramedTransport::peer() const {
  return socket_ ? describePeer(*socket_) : std::string("unknown peer");
}

void ControlFramedTransport::setRecvTimeout(int ms) {
  if (!guard_ || !socket_ || ms == recvTimeoutMs_)
    return;
  socket_->setRecvTimeout(ms);
  recvTimeoutMs_ = ms;
}

bool ControlFramedTransport::readExactly(uint8_t *buf, uint32_t len,
                                         bool idleFirst, const char *what) {
  uint32_t have = 0;
  while (have < len) {
    bool idle = idleFirst && have == 0;
    if (guard_ && ahead_->buffered() == 0) {
      if (idle) {
        setRecvTimeout(0);
      } else {
        if (deadlineNs_ == 0)
          deadlineNs_ = deadlineAfter(guard_->frameTimeoutMs);
        int64_t leftMs = (deadlineNs_ - nowNs()) / 1000000;
        if (leftMs <= 0)
          throw TTransportException(TTransportException::TIMED_OUT,
                                    std::string(what) + " timed out");
        setRecvTimeout(static_cast<int>(leftMs));
      }
    }
    uint32_t got = ahead_->read(buf + have, len - have);
    if (got == 0) {
      if (have == 0 && idle)
        return false;
      throw TTransportException(TTransportException::END_OF_FILE,
                                std::string("connection closed inside a ") +
                                    what);
    }
    have += got;
    if (idle && guard_ && deadlineNs_ == 0)
      deadlineNs_ = deadlineAfter(guard_->frameTimeoutMs);
  }
  return true;
}

void ControlFramedTransport::authenticate() {
  deadlineNs_ = deadlineAfter(guard_->handshakeTimeoutMs);
  std::string who = peer();
  try {
    uint8_t head[6];
    readExactly(head, sizeof(head), /*idleFirst=*/false, "handshake");
    if (std::memcmp(head, kMagic, sizeof(kMagic)) != 0 || head[4] != kVersion) {
      spdlog::warn("{}: rejected connection from {}: not a monarch control "
                   "handshake",
                   guard_->label, who);
      throw TTransportException(TTransportException::END_OF_FILE);
    }
    std::string token(head[5], '\0');
    if (!token.empty())
      readExactly(reinterpret_cast<uint8_t *>(token.data()),
                  static_cast<uint32_t>(token.size()), false, "handshake");
    bool ok = tokenMatches(guard_->token, token);
    uint8_t answer = ok ? kAccepted : kDenied;
    ahead_->write(&answer, 1);
    ahead_->flush();
    if (!ok) {
      spdlog::warn("{}: rejected connection from {}: wrong job token",
                   guard_->label, who);
      throw TTransportException(TTransportException::END_OF_FILE);
    }
  } catch (const TTransportException &e) {
    deadlineNs_ = 0;
    if (e.getType() == TTransportException::TIMED_OUT)
      spdlog::warn("{}: closed connection from {}: no handshake within {} ms "
                   "(MONARCH_HANDSHAKE_TIMEOUT_MS)",
                   guard_->label, who, guard_->handshakeTimeoutMs);
    throw;
  }
  deadlineNs_ = 0;
  authenticated_ = true;
}

bool ControlFramedTransport::readFrame() {
  if (guard_ && !authenticated_)
    authenticate();
  deadlineNs_ = 0;
  uint8_t header[4];
  try {
    if (!readExactly(header, sizeof(header), /*idleFirst=*/true,
                     "frame header"))
      return false;
    int32_t size = 0;
    std::memcpy(&size, header, sizeof(size));
    size = static_cast<int32_t>(ntohl(static_cast<uint32_t>(size)));
    if (size < 0)
      throw TTransportException(TTransportException::CORRUPTED_DATA,
                                "Received a frame of negative size");
    if (static_cast<uint32_t>(size) > maxFrameSize_)
      throw TTransportException(TTransportException::CORRUPTED_DATA,
                                "Received an oversized frame (" +
                                    std::to_string(size) +
                                    " bytes; MONARCH_MAX_MESSAGE_BYTES is " +
                                    std::to_string(maxFrameSize_) + ")");
    size_t want = static_cast<size_t>(size);
    // A buffer kept from a large frame goes back once frames are small.
    if (capacity_ > kRetainBytes && want <= kRetainBytes) {
      buffer_.reset();
      capacity_ = 0;
    }
    size_t got = 0;
    while (got < want) {
      if (got == capacity_) {
        // Grow with what has arrived, never to what the header claims.
        size_t next = std::min(
            want, std::max({kInitialBytes, 2 * capacity_,
                            got + static_cast<size_t>(ahead_->buffered())}));
        std::unique_ptr<uint8_t[]> bigger(new uint8_t[next]);
        if (got)
          std::memcpy(bigger.get(), buffer_.get(), got);
        buffer_ = std::move(bigger);
        capacity_ = next;
      }
      uint32_t chunk = static_cast<uint32_t>(std::min(want, capacity_) - got);
      readExactly(buffer_.get() + got, chunk, false, "frame");
      got += chunk;
    }
    deadlineNs_ = 0;
    frameBytes_ = static_cast<uint32_t>(want);
    setReadBuffer(buffer_.get(), frameBytes_);
    return true;
  } catch (const TTransportException &e) {
    if (e.getType() == TTransportException::TIMED_OUT && guard_)
      spdlog::warn("{}: closed connection from {}: a frame did not arrive "
                   "whole within {} ms (MONARCH_FRAME_TIMEOUT_MS)",
                   guard_->label, peer(), guard_->frameTimeoutMs);
    throw;
  }
}

uint32_t ControlFramedTransport::readEnd() {
  return frameBytes_ + static_cast<uint32_t>(sizeof(uint32_t));
}

Status clientHandshake(TSocket &socket, const std::string &token, int timeoutMs,
                       const std::string &peer) {
  if (token.size() > 255)
    return Status(StatusCode::InvalidArgument,
                  "the job token is longer than 255 bytes");
  std::string hello = handshakeBytes(token);
  try {
    socket.setRecvTimeout(timeoutMs);
    socket.write(reinterpret_cast<const uint8_t *>(hello.data()),
                 static_cast<uint32_t>(hello.size()));
    uint8_t answer = 0;
    uint32_t got = socket.read(&answer, 1);
    if (got == 0)
      return Status(StatusCode::Unavailable,
                    "connecting to " + peer +
                        ": the server closed the connection at the handshake "
                        "(not a monarch control service of this version?)");
    if (answer == kDenied)
      return Status(StatusCode::PermissionDenied,
                    "connecting to " + peer +
                        ": the server refused the job token "
                        "(MONARCH_JOB_TOKEN of another job?)");
    if (answer != kAccepted)
      return Status(StatusCode::Unavailable,
                    "connecting to " + peer + ": unexpected handshake answer");
    return Status::ok();
  } catch (const TTransportException &e) {
    StatusCode code = e.getType() == TTransportException::TIMED_OUT
                          ? StatusCode::DeadlineExceeded
                          : StatusCode::Unavailable;
    return Status(code, "connecting to " + peer + ": handshake: " + e.what());
  }
}

} // namespace monarch::executor
