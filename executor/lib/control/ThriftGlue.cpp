//===- ThriftGlue.cpp - Thrift servers and clients for the control plane -===//
//
// Framed transports carry a TConfiguration whose frame and message sizes are
// the job's WireOptions, so an oversized or malformed frame is rejected by the
// transport and the connection is dropped; Thrift's own diagnostics of such
// connections are routed to spdlog.
//
//===----------------------------------------------------------------------===//
#include "ThriftGlue.h"
#include "BoundedProtocol.h"
#include "ControlTransport.h"
#include "ReadAheadTransport.h"
#include "monarch/Support/Knobs.h"

#include <spdlog/spdlog.h>
#include <thrift/TOutput.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TTransportException.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace apache::thrift;
using namespace apache::thrift::protocol;
using namespace apache::thrift::server;
using namespace apache::thrift::transport;

namespace monarch::executor {

//===--- Limits -----------------------------------------------------------===//

WireOptions WireOptions::fromEnv(std::string token) {
  WireOptions limits;
  // The frame length is a signed 32-bit integer on the wire (the registry's
  // range); a bad value was refused at start (knobs::validate).
  knobs::Value<int64_t> bytes = knobs::getInt(knobs::Id::MaxMessageBytes);
  limits.maxMessageBytes = static_cast<int>(bytes.value);
  limits.token = std::move(token);
  limits.handshakeTimeoutMs = static_cast<int>(
      knobs::getMs(knobs::Id::HandshakeTimeoutMs).value.count());
  limits.frameTimeoutMs =
      static_cast<int>(knobs::getMs(knobs::Id::FrameTimeoutMs).value.count());
  return limits;
}

std::shared_ptr<TConfiguration> WireOptions::configuration() const {
  return std::make_shared<TConfiguration>(
      maxMessageBytes, maxMessageBytes,
      TConfiguration::DEFAULT_RECURSION_DEPTH);
}

namespace {

/// Authenticated framed transports bounded by the job's limits, reading
/// ahead from the socket.
class GuardedFramedFactory : public TTransportFactory {
public:
  GuardedFramedFactory(std::shared_ptr<TConfiguration> config,
                       std::shared_ptr<const ConnectionGuard> guard, int spinUs)
      : config_(std::move(config)), guard_(std::move(guard)), spinUs_(spinUs) {}
  std::shared_ptr<TTransport>
  getTransport(std::shared_ptr<TTransport> trans) override {
    auto socket = std::dynamic_pointer_cast<TSocket>(trans);
    return std::make_shared<ControlFramedTransport>(
        std::make_shared<ReadAheadTransport>(std::move(trans), spinUs_),
        std::move(socket), config_, guard_);
  }

private:
  std::shared_ptr<TConfiguration> config_;
  std::shared_ptr<const ConnectionGuard> guard_;
  int spinUs_;
};

/// What is left of the frame a ControlFramedTransport is reading.
BoundedBinaryProtocol::BytesLeft
frameBudget(const std::shared_ptr<TTransport> &transport) {
  auto *framed = dynamic_cast<ControlFramedTransport *>(transport.get());
  if (!framed)
    return [] { return uint64_t(0); };
  return [framed] { return framed->bytesLeft(); };
}

thread_local int currentFd = -1;
thread_local std::string currentPeerText;

void rememberConnection(const std::shared_ptr<TTransport> &transport) {
  std::shared_ptr<TTransport> inner = transport;
  if (auto framed = std::dynamic_pointer_cast<ControlFramedTransport>(inner))
    inner = framed->getUnderlyingTransport();
  if (auto ahead = std::dynamic_pointer_cast<ReadAheadTransport>(inner))
    inner = ahead->getUnderlyingTransport();
  if (auto socket = std::dynamic_pointer_cast<TSocket>(inner)) {
    // Called before every request: a connection's thread keeps its answer.
    if (socket->getSocketFD() == currentFd && !currentPeerText.empty())
      return;
    currentFd = socket->getSocketFD();
    currentPeerText = describePeer(*socket);
  }
}

/// Tells handlers which connection they serve.
class ConnectionTracker : public TServerEventHandler {
public:
  explicit ConnectionTracker(std::shared_ptr<std::atomic<bool>> listening)
      : listening_(std::move(listening)) {}
  /// serve() calls this once it is listening.
  void preServe() override { listening_->store(true); }
  void *createContext(std::shared_ptr<TProtocol> input,
                      std::shared_ptr<TProtocol>) override {
    rememberConnection(input->getTransport());
    return nullptr;
  }
  void processContext(void *, std::shared_ptr<TTransport> transport) override {
    rememberConnection(transport);
  }
  void deleteContext(void *, std::shared_ptr<TProtocol>,
                     std::shared_ptr<TProtocol>) override {
    currentFd = -1;
    currentPeerText.clear();
  }

private:
  std::shared_ptr<std::atomic<bool>> listening_;
};

} // namespace

//===--- Server -----------------------------------------------------------===//

StatusOr<std::unique_ptr<ControlServer>> ControlServer::start(
    std::shared_ptr<TProcessor> processor, const std::string &host, int port,
    const WireOptions &limits, std::string name, int requestSpinUs) {
  return serve(std::move(processor),
               std::make_shared<TServerSocket>(host, port),
               host + ":" + std::to_string(port), host, limits, std::move(name),
               requestSpinUs);
}

StatusOr<std::unique_ptr<ControlServer>>
ControlServer::startLocal(std::shared_ptr<TProcessor> processor,
                          const std::string &name, const WireOptions &limits,
                          std::string label, int requestSpinUs) {
  // A leading NUL puts the name in Linux's abstract namespace: nothing is
  // created on disk, and it goes away with the last descriptor.
  std::string path = std::string(1, '\0') + name;
  auto server = serve(
      std::move(processor), std::make_shared<TServerSocket>(path),
      "local socket @" + name, "", limits, std::move(label), requestSpinUs);
  if (server.isOk())
    (*server)->localName_ = name;
  return server;
}

StatusOr<std::unique_ptr<ControlServer>>
ControlServer::serve(std::shared_ptr<TProcessor> processor,
                     std::shared_ptr<TServerSocket> socket,
                     const std::string &where, const std::string &host,
                     const WireOptions &limits, std::string name,
                     int requestSpinUs) {
  redirectThriftLogging();
  if (limits.token.empty())
    return Status(StatusCode::InvalidArgument,
                  name + ": a control server needs the job token");
  std::unique_ptr<ControlServer> server(new ControlServer());
  server->name_ = std::move(name);
  server->host_ = host;
  // Idle connections are interrupted when the server stops.
  socket->setInterruptableChildren(true);
  auto config = limits.configuration();
  auto guard = std::make_shared<ConnectionGuard>();
  guard->token = limits.token;
  guard->handshakeTimeoutMs = limits.handshakeTimeoutMs;
  guard->frameTimeoutMs = limits.frameTimeoutMs;
  guard->label = server->name_;
  auto transports =
      std::make_shared<GuardedFramedFactory>(config, guard, requestSpinUs);
  auto protocols = std::make_shared<BoundedBinaryProtocolFactory>(frameBudget);
  server->server_ = std::make_shared<TThreadedServer>(processor, socket,
                                                      transports, protocols);
  server->server_->setConcurrentClientLimit(std::max(1, limits.maxConnections));
  auto listening = std::make_shared<std::atomic<bool>>(false);
  server->server_->setServerEventHandler(
      std::make_shared<ConnectionTracker>(listening));
  auto raw = server->server_;
  auto failure = std::make_shared<std::atomic<bool>>(false);
  auto why = std::make_shared<std::string>();
  std::string label = server->name_;
  // serve() binds and listens; the port is known once it has.
  server->thread_ = std::thread([raw, label, failure, why] {
    try {
      raw->serve();
    } catch (const std::exception &e) {
      *why = e.what();
      failure->store(true);
    }
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!listening->load()) {
    if (failure->load() || std::chrono::steady_clock::now() > deadline) {
      server->thread_.join();
      return Status(StatusCode::Unavailable,
                    server->name_ + ": cannot listen on " + where + ": " +
                        (why->empty() ? std::string("timed out") : *why));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server->port_ = socket->getPort();
  return server;
}

void ControlServer::stop() {
  std::call_once(stopOnce_, [&] {
    if (server_)
      server_->stop();
    if (thread_.joinable())
      thread_.join();
  });
}

ControlServer::~ControlServer() { stop(); }

int ControlServer::currentConnectionFd() { return currentFd; }
std::string ControlServer::currentPeer() { return currentPeerText; }

//===--- Client -----------------------------------------------------------===//

template <typename ClientT>
StatusOr<std::unique_ptr<ControlConnection<ClientT>>>
ControlConnection<ClientT>::connect(const std::string &host, int port,
                                    const WireOptions &limits,
                                    int connectTimeoutMs, int recvTimeoutMs) {
  ControlEndpoint endpoint;
  endpoint.host = host;
  endpoint.port = port;
  return connect(endpoint, limits, connectTimeoutMs, recvTimeoutMs);
}

template <typename ClientT>
StatusOr<std::unique_ptr<ControlConnection<ClientT>>>
ControlConnection<ClientT>::connect(const ControlEndpoint &endpoint,
                                    const WireOptions &limits,
                                    int connectTimeoutMs, int recvTimeoutMs) {
  std::unique_ptr<ControlConnection> conn(new ControlConnection());
  conn->endpoint_ = endpoint;
  auto config = limits.configuration();
  if (endpoint.local.empty()) {
    conn->socket_ =
        std::make_shared<TSocket>(endpoint.host, endpoint.port, config);
    conn->socket_->setNoDelay(true);
  } else {
    conn->socket_ = std::make_shared<TSocket>(
        std::string(1, '\0') + endpoint.local, config);
  }
  conn->socket_->setConnTimeout(connectTimeoutMs);
  conn->socket_->setSendTimeout(recvTimeoutMs);
  auto framed = std::make_shared<ControlFramedTransport>(
      std::make_shared<ReadAheadTransport>(conn->socket_), nullptr, config,
      nullptr);
  conn->transport_ = framed;
  auto protocol = std::make_shared<BoundedBinaryProtocol>(
      conn->transport_, [raw = framed.get()] { return raw->bytesLeft(); });
  conn->client_ = std::make_unique<ClientT>(protocol);
  Status status = callThrift("connecting to " + conn->peer(),
                             [&] { conn->transport_->open(); });
  if (!status)
    return status;
  // The handshake's answer comes within the connect timeout.
  status = clientHandshake(*conn->socket_, limits.token,
                           connectTimeoutMs > 0 ? connectTimeoutMs : 5000,
                           conn->peer());
  if (!status)
    return status;
  conn->socket_->setRecvTimeout(recvTimeoutMs);
  conn->fd_ = conn->socket_->getSocketFD();
  return conn;
}

std::string ControlEndpoint::describe() const {
  return local.empty() ? host + ":" + std::to_string(port)
                       : "local socket @" + local;
}

template <typename ClientT>
void ControlConnection<ClientT>::spinUntilReadable(int us) {
  executor::spinUntilReadable(fd_.load(), us);
}

template <typename ClientT> void ControlConnection<ClientT>::shutdownSocket() {
  int fd = fd_.load();
  if (fd >= 0)
    ::shutdown(fd, SHUT_RDWR);
}

template <typename ClientT> void ControlConnection<ClientT>::close() {
  fd_ = -1;
  if (transport_) {
    try {
      transport_->close();
    } catch (...) {
    }
  }
}

template class ControlConnection<control::ControllerServiceClient>;
template class ControlConnection<control::WorkerServiceClient>;

//===--- Errors and tokens ------------------------------------------------===//

Status toStatus(const control::ControlError &error) {
  auto code = static_cast<int>(error.code);
  if (code < static_cast<int>(StatusCode::InvalidArgument) ||
      code > static_cast<int>(StatusCode::Internal))
    code = static_cast<int>(StatusCode::Internal);
  return Status(static_cast<StatusCode>(code), error.message);
}

control::ControlError toControlError(const Status &status) {
  control::ControlError error;
  error.code = static_cast<control::ErrorCode::type>(
      status.isOk() ? static_cast<int>(StatusCode::Internal)
                    : static_cast<int>(status.code()));
  error.message = status.message();
  return error;
}

Status callThrift(const std::string &what, const std::function<void()> &call,
                  control::ControlError *serviceError, bool *transportFailed) {
  if (transportFailed)
    *transportFailed = false;
  try {
    call();
    return Status::ok();
  } catch (const control::ControlError &e) {
    if (serviceError)
      *serviceError = e;
    return toStatus(e).withContext(what);
  } catch (const TTransportException &e) {
    if (transportFailed)
      *transportFailed = true;
    StatusCode code = e.getType() == TTransportException::TIMED_OUT
                          ? StatusCode::DeadlineExceeded
                          : StatusCode::Unavailable;
    return Status(code, what + ": " + e.what());
  } catch (const TApplicationException &e) {
    return Status(StatusCode::Internal, what + ": " + e.what());
  } catch (const std::exception &e) {
    if (transportFailed)
      *transportFailed = true;
    return Status(StatusCode::Unavailable, what + ": " + e.what());
  }
}

bool localControlEnabled() {
  return knobs::getBool(knobs::Id::LocalControl).value;
}

void requireToken(const std::string &expected, const std::string &given,
                  const std::string &request) {
  if (tokenMatches(expected, given))
    return;
  std::string peer = ControlServer::currentPeer();
  spdlog::warn("rejected {} from {}: wrong job token", request,
               peer.empty() ? std::string("unknown peer") : peer);
  control::ControlError error;
  error.code = control::ErrorCode::PERMISSION_DENIED;
  error.message = request + ": wrong job token";
  throw error;
}

void redirectThriftLogging() {
  static std::once_flag once;
  std::call_once(once, [] {
    GlobalOutput.setOutputFunction([](const char *message) {
      // A receive deadline passing is reported by ControlTransport, which
      // knows which deadline it was.
      if (std::strstr(message, "THRIFT_EAGAIN (timed out)"))
        return;
      spdlog::warn("thrift: {}", message);
    });
  });
}

StatusOr<std::pair<std::string, int>> parseHostPort(const std::string &text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return Status(StatusCode::InvalidArgument,
                  "expected HOST:PORT, got '" + text + "'");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  char *end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535)
    return Status(StatusCode::InvalidArgument,
                  "bad port in '" + text + "' (expected 1..65535)");
  return std::make_pair(host, static_cast<int>(port));
}

std::string generateJobToken() {
  unsigned char bytes[16] = {};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = false;
  if (fd >= 0) {
    ok =
        ::read(fd, bytes, sizeof(bytes)) == static_cast<ssize_t>(sizeof(bytes));
    ::close(fd);
  }
  if (!ok)
    for (auto &b : bytes)
      b = static_cast<unsigned char>(std::rand());
  static const char *hex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

} // namespace monarch::executor
