//===- ControlFuzzer.cpp - libFuzzer target for the control plane's decoders
//===//
//
// Feeds arbitrary bytes to what a control server does with the bytes of a
// connection, for both services of Control.thrift (ControllerService and
// WorkerService, every method). The first byte picks the service (bit 0)
// and the layer (bit 1):
//   - a message: the bytes are one or more Thrift messages, decoded by
//     BoundedBinaryProtocol and dispatched by the generated processor to a
//     handler that accepts everything (the generated Null handlers), so each
//     method's argument decoder runs on the input;
//   - a connection: the bytes are what a client sent on a socket, read by
//     the server's ControlFramedTransport (the handshake with the job token,
//     then frames) under the same protocol and processor.
// Any result is fine; crashes, sanitizer reports, leaks and allocations
// over -malloc_limit_mb (a forged length that is believed) are not.
//
// With MONARCH_CONTROL_FUZZ_SEEDS=DIR, writes a seed per method and layer
// into DIR first (a real request of every method, written by the generated
// clients), so the corpus starts from well-formed calls.
//
// Built with clang-22 -fsanitize=fuzzer,address outside the GCC build (see
// CMakeLists.txt) and run briefly by ctest.
//
//===----------------------------------------------------------------------===//

#include "BoundedProtocol.h"
#include "ControlTransport.h"
#include "ControllerService.h"
#include "WorkerService.h"

#include <spdlog/spdlog.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TVirtualTransport.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

using namespace apache::thrift;
using namespace apache::thrift::protocol;
using namespace apache::thrift::transport;
using namespace monarch::executor;
namespace control = monarch::executor::control;

namespace {

const char *const kToken = "fuzz-job-token";

/// A socket played from the input: reads hand out the bytes, writes (the
/// handshake's answer, replies) go nowhere.
class ScriptedSocket : public TVirtualTransport<ScriptedSocket> {
public:
  ScriptedSocket(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  bool isOpen() const override { return true; }
  uint32_t read(uint8_t *buf, uint32_t len) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(len, size_ - at_));
    std::memcpy(buf, data_ + at_, n);
    at_ += n;
    return n;
  }
  void write(const uint8_t *, uint32_t) {}
  bool done() const { return at_ == size_; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t at_ = 0;
};

std::shared_ptr<TProcessor> processorFor(bool controller) {
  static auto controllerProcessor =
      std::make_shared<control::ControllerServiceProcessor>(
          std::make_shared<control::ControllerServiceNull>());
  static auto workerProcessor =
      std::make_shared<control::WorkerServiceProcessor>(
          std::make_shared<control::WorkerServiceNull>());
  if (controller)
    return controllerProcessor;
  return workerProcessor;
}

std::shared_ptr<TConfiguration> configuration() {
  static auto config = std::make_shared<TConfiguration>(1 << 20, 1 << 20);
  return config;
}

void serve(bool controller, bool connection, const uint8_t *data, size_t size) {
  std::shared_ptr<TTransport> transport;
  BoundedBinaryProtocol::BytesLeft left;
  std::function<bool()> exhausted;
  if (connection) {
    auto socket = std::make_shared<ScriptedSocket>(data, size);
    auto guard = std::make_shared<ConnectionGuard>();
    guard->token = kToken;
    guard->label = "fuzz";
    auto framed = std::make_shared<ControlFramedTransport>(
        std::make_shared<ReadAheadTransport>(socket), nullptr, configuration(),
        guard);
    left = [raw = framed.get()] { return raw->bytesLeft(); };
    exhausted = [socket, raw = framed.get()] {
      return socket->done() && raw->bytesLeft() == 0;
    };
    transport = framed;
  } else {
    auto buffer = std::make_shared<TMemoryBuffer>(
        const_cast<uint8_t *>(data), static_cast<uint32_t>(size),
        TMemoryBuffer::OBSERVE, configuration());
    left = [raw = buffer.get()] { return uint64_t(raw->available_read()); };
    exhausted = [raw = buffer.get()] { return raw->available_read() == 0; };
    transport = buffer;
  }
  auto in = std::make_shared<BoundedBinaryProtocol>(transport, left);
  auto out = std::make_shared<TBinaryProtocol>(
      std::make_shared<TMemoryBuffer>(configuration()));
  std::shared_ptr<TProcessor> processor = processorFor(controller);
  // A connection's loop, as TConnectedClient runs it: until the end of the
  // input or the first exception, which drops the connection.
  for (int calls = 0; calls < 64 && !exhausted(); ++calls) {
    try {
      if (!processor->process(in, out, nullptr))
        break;
    } catch (const TException &) {
      break;
    } catch (const std::exception &) {
      break;
    }
  }
}

//===--- Seeds ------------------------------------------------------------===//

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[i] = static_cast<char>(v >> (24 - 8 * i));
  return s;
}

/// The bytes a generated client writes for one call.
template <typename Client>
std::string message(const std::function<void(Client &)> &send) {
  auto buffer = std::make_shared<TMemoryBuffer>();
  Client client(std::make_shared<TBinaryProtocol>(buffer));
  send(client);
  return buffer->getBufferAsString();
}

control::Tensor tensor() {
  control::Tensor t;
  t.dtype = "float32";
  t.shape = {2, 2};
  t.data = std::string(16, '\1');
  return t;
}

void writeSeeds(const std::string &dir) {
  std::vector<std::pair<std::string, std::string>> worker, controller;
  using W = control::WorkerServiceClient;
  using C = control::ControllerServiceClient;
  worker.emplace_back("loadPlan", message<W>([](W &c) {
                        c.send_loadPlan(kToken, std::string(64, 'p'));
                      }));
  worker.emplace_back("runStep", message<W>([](W &c) {
                        control::RunStepRequest r;
                        r.token = kToken;
                        r.plan = "step";
                        r.step = 3;
                        control::Feed feed;
                        feed.index = 0;
                        feed.tensor = tensor();
                        r.feeds = {feed, feed};
                        control::Staging staging;
                        staging.pid = 1;
                        staging.fd = 3;
                        staging.bytes = 4096;
                        r.__set_staging(staging);
                        c.send_runStep(r);
                      }));
  worker.emplace_back(
      "fetch", message<W>([](W &c) { c.send_fetch(kToken, "step", {0, 1}); }));
  worker.emplace_back("setState", message<W>([](W &c) {
                        c.send_setState(kToken, "@a::@w", tensor());
                      }));
  worker.emplace_back(
      "getState", message<W>([](W &c) { c.send_getState(kToken, "@a::@w"); }));
  worker.emplace_back("abort",
                      message<W>([](W &c) { c.send_abort(kToken, "why"); }));
  worker.emplace_back("ping", message<W>([](W &c) { c.send_ping(kToken); }));
  worker.emplace_back("shutdown",
                      message<W>([](W &c) { c.send_shutdown(kToken); }));
  controller.emplace_back("registerWorker", message<C>([](C &c) {
                            control::RegisterRequest r;
                            r.token = kToken;
                            r.protocolVersion = 1;
                            r.rank = 1;
                            r.worldSize = 2;
                            r.host = "127.0.0.1";
                            r.port = 4000;
                            r.hostname = "h";
                            c.send_registerWorker(r);
                          }));
  controller.emplace_back("heartbeat", message<C>([](C &c) {
                            control::HeartbeatRequest r;
                            r.token = kToken;
                            r.rank = 1;
                            r.progress.plan = "step";
                            control::LogRecord log;
                            log.level = 2;
                            log.message = "line";
                            r.logs = {log, log};
                            c.send_heartbeat(r);
                          }));
  controller.emplace_back("storeSet", message<C>([](C &c) {
                            c.send_storeSet(kToken, "k", "v", 0);
                          }));
  controller.emplace_back("storeGet", message<C>([](C &c) {
                            c.send_storeGet(kToken, "k", 10, 0);
                          }));
  controller.emplace_back("storeWait", message<C>([](C &c) {
                            c.send_storeWait(kToken, {"a", "b"}, 10, 0);
                          }));
  controller.emplace_back(
      "storeAdd", message<C>([](C &c) { c.send_storeAdd(kToken, "k", 1, 0); }));
  controller.emplace_back("reportError", message<C>([](C &c) {
                            control::ErrorReport r;
                            r.token = kToken;
                            r.rank = 1;
                            r.message = "failed";
                            r.op = "launch @k0";
                            r.location = "model.py:3:1";
                            c.send_reportError(r);
                          }));
  controller.emplace_back("forwardLogs", message<C>([](C &c) {
                            control::LogRecord log;
                            log.message = "line";
                            c.send_forwardLogs(kToken, 1, {log}, 0);
                          }));
  // The forged lengths of issue 16 (HostileFrameTest.cpp sends them to real
  // processes): runStep feeds of 2^24 and 2^31-1, a setState shape of 2^30,
  // a heartbeat of 2^24 log records.
  auto list = [](const std::string &method, uint16_t outer, uint16_t inner,
                 uint8_t elem, uint32_t count) {
    std::string body =
        be32(0x80010001u) + be32(uint32_t(method.size())) + method + be32(1);
    body += std::string{char(T_STRUCT), char(outer >> 8), char(outer)};
    body += std::string{char(T_LIST), char(inner >> 8), char(inner)};
    body += std::string(1, char(elem)) + be32(count);
    return body;
  };
  worker.emplace_back("forged-feeds-2^24",
                      list("runStep", 1, 4, T_STRUCT, 1u << 24));
  worker.emplace_back("forged-feeds-2^31",
                      list("runStep", 1, 4, T_STRUCT, 0x7fffffffu));
  worker.emplace_back("forged-shape-2^30",
                      list("setState", 3, 2, T_I64, 1u << 30));
  controller.emplace_back("forged-logs-2^24",
                          list("heartbeat", 1, 4, T_STRUCT, 1u << 24));
  auto write = [&](const std::string &name, const std::string &bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  };
  for (int side = 0; side < 2; ++side)
    for (const auto &[name, bytes] : side ? controller : worker) {
      char mode = static_cast<char>(side);
      write(name + ".message", std::string(1, mode) + bytes);
      write(name + ".connection", std::string(1, static_cast<char>(mode | 2)) +
                                      handshakeBytes(kToken) +
                                      be32(uint32_t(bytes.size())) + bytes);
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  spdlog::set_level(spdlog::level::off);
  if (const char *dir = std::getenv("MONARCH_CONTROL_FUZZ_SEEDS"))
    writeSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  serve(data[0] & 1, data[0] & 2, data + 1, size - 1);
  return 0;
}
