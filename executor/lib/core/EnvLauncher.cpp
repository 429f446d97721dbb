//===- EnvLauncher.cpp - Workers started by someone else
//--------------------===//
//
// The env launcher starts nothing: workers started by SLURM, Kubernetes or
// by hand join with MONARCH_CONTROLLER, MONARCH_RANK, MONARCH_WORLD_SIZE and
// MONARCH_JOB_TOKEN. It owns no process, so the controller learns of their
// failures from heartbeats and connections only. Also the launcher factory.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Launcher.h"

#include <spdlog/spdlog.h>

namespace monarch::executor {
namespace {

/// Workers started by someone else: print what they need, own nothing.
class EnvLauncher final : public Launcher {
public:
  explicit EnvLauncher(std::function<void(const std::string &)> printTo)
      : printTo_(std::move(printTo)) {}
  std::string name() const override { return "env"; }
  bool ownsProcesses() const override { return false; }
  pid_t pid(int) const override { return 0; }
  Status launch(const LaunchSpec &spec,
                std::function<void(const WorkerExit &)>) override {
    std::string line = "env launcher: waiting for " +
                       std::to_string(spec.worldSize) +
                       " workers; start each with MONARCH_CONTROLLER=" +
                       spec.controllerAddress +
                       " MONARCH_WORLD_SIZE=" + std::to_string(spec.worldSize) +
                       " MONARCH_RANK=<rank> MONARCH_JOB_TOKEN=<the job token>";
    if (printTo_)
      printTo_(line);
    else
      spdlog::info("{}", line);
    return Status::ok();
  }
  void terminate(std::chrono::milliseconds) override {}

private:
  std::function<void(const std::string &)> printTo_;
};

} // namespace

std::unique_ptr<Launcher>
createEnvLauncher(std::function<void(const std::string &)> printTo) {
  return std::make_unique<EnvLauncher>(std::move(printTo));
}

StatusOr<std::unique_ptr<Launcher>> createLauncher(const std::string &name) {
  if (name == "local")
    return createLocalLauncher();
  if (name == "env")
    return createEnvLauncher();
  if (name == "slurm")
    return createSlurmLauncher();
  return Status(StatusCode::NotFound,
                "unknown launcher '" + name + "' (known: local, env, slurm)");
}

} // namespace monarch::executor
