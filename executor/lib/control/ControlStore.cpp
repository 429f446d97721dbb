//===- ControlStore.cpp - The rendezvous Store over the controller --------===//
#include "ControlStore.h"

namespace monarch::executor {

namespace {
/// Slack on top of a store wait before the client gives up on the reply.
constexpr int kReplySlackMs = 5000;
} // namespace

StatusOr<std::unique_ptr<ControlStore>>
ControlStore::connect(const std::string &host, int port, std::string token,
                      const WireOptions &limits) {
  std::unique_ptr<ControlStore> store(new ControlStore());
  store->host_ = host;
  store->port_ = port;
  store->token_ = std::move(token);
  store->limits_ = limits;
  auto conn =
      ControllerConnection::connect(host, port, limits, 5000, kReplySlackMs);
  if (!conn.isOk())
    return conn.status().withContext("rendezvous store");
  store->conn_ = std::move(conn).value();
  return store;
}

Status ControlStore::call(
    const std::string &what, std::chrono::milliseconds timeout,
    const std::function<void(control::ControllerServiceClient &)> &fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!conn_) {
    auto conn = ControllerConnection::connect(
        host_, port_, limits_, 5000,
        static_cast<int>(timeout.count()) + kReplySlackMs);
    if (!conn.isOk())
      return conn.status().withContext("rendezvous store");
    conn_ = std::move(conn).value();
  }
  conn_->setRecvTimeout(static_cast<int>(timeout.count()) + kReplySlackMs);
  control::ControlError serviceError;
  bool transportFailed = false;
  Status status = callThrift(
      "store " + what, [&] { fn(conn_->client()); }, &serviceError,
      &transportFailed);
  if (transportFailed)
    conn_.reset();
  return status;
}

Status ControlStore::set(const std::string &key, const std::string &value) {
  return call(
      "set '" + key + "'", std::chrono::milliseconds(0),
      [&](auto &client) { client.storeSet(token_, key, value, generation_); });
}

StatusOr<std::string> ControlStore::get(const std::string &key,
                                        std::chrono::milliseconds timeout) {
  std::string value;
  Status status = call("get '" + key + "'", timeout, [&](auto &client) {
    client.storeGet(value, token_, key, static_cast<int32_t>(timeout.count()),
                    generation_);
  });
  if (!status)
    return status;
  return value;
}

Status ControlStore::wait(const std::vector<std::string> &keys,
                          std::chrono::milliseconds timeout) {
  return call("wait", timeout, [&](auto &client) {
    client.storeWait(token_, keys, static_cast<int32_t>(timeout.count()),
                     generation_);
  });
}

StatusOr<int64_t> ControlStore::add(const std::string &key, int64_t delta) {
  int64_t value = 0;
  Status status = call(
      "add '" + key + "'", std::chrono::milliseconds(0), [&](auto &client) {
        value = client.storeAdd(token_, key, delta, generation_);
      });
  if (!status)
    return status;
  return value;
}

} // namespace monarch::executor
