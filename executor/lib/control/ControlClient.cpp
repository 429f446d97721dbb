//===- ControlClient.cpp - ControlClient over Thrift ----------------------===//
//
// The one implementation of ControlClient: a WorkerConnection (ThriftGlue.h)
// whose calls run through callThrift, so every exception a call throws
// becomes the Status and CallFailure the core reads.
//
//===----------------------------------------------------------------------===//
#include "ControlClient.h"
#include "ThriftGlue.h"

#include <spdlog/spdlog.h>

namespace monarch::executor {
namespace {

class ThriftControlClient final : public ControlClient {
public:
  ThriftControlClient(std::unique_ptr<WorkerConnection> conn, std::string token)
      : conn_(std::move(conn)), token_(std::move(token)) {}

  Status loadPlan(const std::string &planBytes,
                  std::vector<control::PlanInfo> &reply,
                  CallFailure *failure) override {
    return call(
        "loadPlan", [&] { conn_->client().loadPlan(reply, token_, planBytes); },
        failure);
  }
  Status sendRunStep(control::RunStepRequest &request,
                     CallFailure *failure) override {
    request.token = token_;
    return call(
        "runStep", [&] { conn_->client().send_runStep(request); }, failure);
  }
  Status recvRunStep(control::RunStepReply &reply, int spinUs,
                     CallFailure *failure) override {
    return call(
        "runStep",
        [&] {
          conn_->spinUntilReadable(spinUs);
          conn_->client().recv_runStep(reply);
        },
        failure);
  }
  Status setState(const std::string &key, const control::Tensor &value,
                  CallFailure *failure) override {
    return call(
        "setState", [&] { conn_->client().setState(token_, key, value); },
        failure);
  }
  Status getState(const std::string &key, control::Tensor &value,
                  CallFailure *failure) override {
    return call(
        "getState", [&] { conn_->client().getState(value, token_, key); },
        failure);
  }
  Status readSlots(const std::vector<int64_t> &slots,
                   std::vector<std::string> &values,
                   CallFailure *failure) override {
    return call(
        "readSlots", [&] { conn_->client().readSlots(values, token_, slots); },
        failure);
  }
  Status abort(const std::string &reason) override {
    return call(
        "abort", [&] { conn_->client().abort(token_, reason); }, nullptr);
  }
  Status shutdown() override {
    return call("shutdown", [&] { conn_->client().shutdown(token_); }, nullptr);
  }
  void interrupt() override { conn_->shutdownSocket(); }
  std::string peer() const override { return conn_->peer(); }

private:
  Status call(const char *what, const std::function<void()> &body,
              CallFailure *failure) {
    // No ErrorCode is 0: a code says the worker answered with an error.
    control::ControlError serviceError;
    serviceError.code = static_cast<control::ErrorCode::type>(0);
    bool transportFailed = false;
    Status status = callThrift(what, body, &serviceError, &transportFailed);
    bool answered = static_cast<int>(serviceError.code) != 0;
    if (failure && !status) {
      failure->transportFailed = transportFailed;
      failure->worker = answered ? toStatus(serviceError) : status;
      failure->instruction = answered ? serviceError.instruction : -1;
      failure->op = answered ? serviceError.op : std::string();
      failure->location = answered ? serviceError.location : std::string();
    }
    return status;
  }

  std::unique_ptr<WorkerConnection> conn_;
  std::string token_;
};

} // namespace

StatusOr<std::unique_ptr<ControlClient>>
ControlClient::dial(const ControlEndpoint &endpoint, const WireOptions &limits,
                    int connectTimeoutMs, int recvTimeoutMs) {
  auto conn = [&]() -> StatusOr<std::unique_ptr<WorkerConnection>> {
    if (!endpoint.local.empty()) {
      auto local = WorkerConnection::connect(endpoint, limits, connectTimeoutMs,
                                             recvTimeoutMs);
      if (local.isOk() || endpoint.port == 0)
        return local;
      spdlog::debug("{}; dialing {}:{} instead", local.status().message(),
                    endpoint.host, endpoint.port);
    }
    return WorkerConnection::connect(endpoint.host, endpoint.port, limits,
                                     connectTimeoutMs, recvTimeoutMs);
  }();
  if (!conn.isOk())
    return conn.status();
  return std::unique_ptr<ControlClient>(
      new ThriftControlClient(std::move(conn).value(), limits.token));
}

} // namespace monarch::executor
