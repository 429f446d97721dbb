//===- monarch-run.cpp - Run a compiled plan from the shell ---------------===//
//
//   monarch-run PLAN.mcplan [--program NAME | --plan NAME]
//               [--inputs a.npy ...] [--outputs DIR]
//               [--launcher=local|env|slurm] [--ranks N] [--steps K]
//               [--state @actor::@state=FILE.npy ...]
//
// Starts a controller with N workers (the plan's root mesh size by
// default), loads the plan and runs, K times, a compiled function (a
// controller program: the first one unless --program names another) on the
// .npy inputs, or with --plan one step plan directly. --state sets actor
// state (parameters) on every rank holding it before the first run. Prints the
// results of the last run (or writes DIR/output<i>.npy). Errors (a bad file, a
// failed rank) are printed and exit non-zero.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/Controller.h"
#include "monarch/Executor/Npy.h"
#include "monarch/Plan/PlanFile.h"
#include "monarch/Support/Knobs.h"
#include "monarch/Support/Progress.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <sys/stat.h>

using namespace monarch::executor;
namespace knobs = monarch::knobs;
namespace pm = monarch::plan;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "monarch-run: error: %s\n", message.c_str());
  return 1;
}

void printTensor(int index, const HostTensor &t) {
  std::printf("output %d: %s\n", index, t.describe().c_str());
  size_t n = static_cast<size_t>(t.numElements());
  size_t shown = std::min<size_t>(n, 64);
  std::printf("  [");
  for (size_t i = 0; i < shown; ++i) {
    if (i)
      std::printf(", ");
    if (t.dtype == "float32") {
      float v;
      std::memcpy(&v, t.data.data() + 4 * i, 4);
      std::printf("%g", v);
    } else if (t.dtype == "float64") {
      double v;
      std::memcpy(&v, t.data.data() + 8 * i, 8);
      std::printf("%g", v);
    } else if (t.dtype == "int32") {
      int32_t v;
      std::memcpy(&v, t.data.data() + 4 * i, 4);
      std::printf("%d", v);
    } else if (t.dtype == "int64") {
      long long v;
      std::memcpy(&v, t.data.data() + 8 * i, 8);
      std::printf("%lld", v);
    } else {
      std::printf("?");
    }
  }
  std::printf("%s]\n", n > shown ? ", ..." : "");
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Run a compiled monarch plan on a mesh of worker processes"};
  std::string planPath, planName, programName, outputs, launcher = "local";
  std::vector<std::string> inputs, states;
  int ranks = 0, steps = 1, maxRetries = 0, checkpointEvery = 1;
  app.add_option("plan", planPath, "the .mcplan file")->required();
  auto *programOpt = app.add_option(
      "--program", programName,
      "compiled function (controller program) to call (default: the first)");
  app.add_option("--plan", planName, "run this step plan directly")
      ->excludes(programOpt);
  app.add_option("--inputs", inputs, ".npy files, one per plan input");
  app.add_option("--outputs", outputs, "write output<i>.npy here");
  app.add_option("--launcher", launcher,
                 "local, env or slurm (default: $MONARCH_LAUNCHER, else local)")
      ->check(CLI::IsMember({"local", "env", "slurm"}))
      ->default_val(knobs::getString(knobs::Id::Launcher).value);
  app.add_option("--ranks", ranks, "workers (default: the plan's mesh size)")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "steps to run")->check(CLI::PositiveNumber);
  app.add_option("--max-retries", maxRetries,
                 "restart every worker up to N times per step after a failure "
                 "(default 0: fail fast; docs/executor.md, Recovery)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint-every", checkpointEvery,
                 "with --max-retries: checkpoint actor state every K steps")
      ->check(CLI::PositiveNumber);
  app.add_option("--state", states,
                 "@actor::@state=FILE.npy: initial actor state (repeatable)");
  CLI11_PARSE(app, argc, argv);
  if (std::string bad = knobs::validate(knobs::Controller); !bad.empty())
    return fail(bad);
  if (knobs::Value<std::string> level = knobs::getString(knobs::Id::LogLevel);
      level.isSet)
    spdlog::set_level(spdlog::level::from_str(level.value));

  auto bytes = pm::readFileBytes(planPath);
  if (!bytes.isOk())
    return fail(bytes.status().toString());
  auto plan = pm::deserializePlan(*bytes);
  if (!plan.isOk())
    return fail(planPath + ": " + plan.status().toString());
  if (plan->plans.empty())
    return fail(planPath + ": the plan file holds no step plan");
  const pm::StepPlan *step = &plan->plans[0];
  const pm::ControllerProgram *program = nullptr;
  if (planName.empty() && !plan->controllers.empty()) {
    program = &plan->controllers[0];
    if (!programName.empty()) {
      program = nullptr;
      for (const pm::ControllerProgram &c : plan->controllers)
        if (c.name == programName)
          program = &c;
      if (!program)
        return fail(planPath + ": no compiled function named '" + programName +
                    "'");
    }
    if (!program->steps.empty())
      for (const pm::ControlStep &s : program->steps)
        if (s.kind == pm::ControlStepKind::ControlMsg && !s.plans.empty()) {
          step = &plan->plans[s.plans[0]];
          break;
        }
  } else if (!programName.empty()) {
    return fail(planPath + ": the plan file holds no compiled function");
  }
  if (!planName.empty()) {
    int32_t index = plan->findPlan(planName);
    if (index < 0)
      return fail(planPath + ": no step plan named '" + planName + "'");
    step = &plan->plans[index];
  }
  int hosts = 1;
  if (ranks == 0) {
    // The root mesh of the step plan; its `hosts` dimension is the nodes
    // of the slurm launcher.
    std::string mesh = step->mesh;
    for (int depth = 0; depth < 64; ++depth) {
      int32_t m = plan->findMesh(mesh);
      if (m < 0)
        return fail("unknown mesh @" + mesh);
      if (!plan->meshes[m].parent) {
        ranks = static_cast<int>(plan->meshes[m].numRanks());
        for (const pm::MeshDim &dim : plan->meshes[m].dims)
          if (dim.name == "hosts")
            hosts = static_cast<int>(dim.size);
        break;
      }
      mesh = *plan->meshes[m].parent;
    }
  }
  std::vector<HostTensor> feeds;
  for (const std::string &path : inputs) {
    auto tensor = readNpyFile(path);
    if (!tensor.isOk())
      return fail(tensor.status().toString());
    feeds.push_back(std::move(tensor).value());
  }

  ControllerOptions options = ControllerOptions::fromEnv();
  options.worldSize = ranks;
  options.hosts = ranks % hosts == 0 ? hosts : 1;
  options.launcherName = launcher;
  options.recovery.maxRetries = maxRetries;
  options.recovery.checkpointEvery = checkpointEvery;
  auto controller = Controller::start(options);
  if (!controller.isOk())
    return fail(controller.status().toString());
  auto names = (*controller)->loadPlan(*bytes);
  if (!names.isOk()) {
    (void)(*controller)->stop();
    return fail(names.status().toString());
  }
  for (const std::string &spec : states) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      (void)(*controller)->stop();
      return fail("--state '" + spec + "': expected @actor::@state=FILE.npy");
    }
    auto value = readNpyFile(spec.substr(eq + 1));
    Status set = value.isOk()
                     ? (*controller)->setActorState(spec.substr(0, eq), *value)
                     : value.status();
    if (!set) {
      (void)(*controller)->stop();
      return fail("--state '" + spec + "': " + set.toString());
    }
  }
  StatusOr<std::vector<HostTensor>> result = Status(StatusCode::Internal, "");
  {
    // Steps done, on one line, once a run of several steps takes a while.
    std::optional<monarch::ProgressLine> line;
    if (steps > 1)
      line.emplace("running " + std::to_string(steps) + " steps",
                   std::chrono::seconds(1));
    for (int i = 0; i < steps; ++i) {
      result = program ? (*controller)->call(program->name, feeds)
                       : (*controller)->runStep(step->symbol, feeds);
      if (!result.isOk())
        break;
      if (line)
        line->update(std::to_string(i + 1) + " of " + std::to_string(steps) +
                     " done");
    }
  }
  Status stopped = (*controller)->stop();
  if (!result.isOk())
    return fail(result.status().toString());
  if (!stopped)
    return fail(stopped.toString());
  for (size_t i = 0; i < result->size(); ++i) {
    const HostTensor &t = (*result)[i];
    if (!outputs.empty()) {
      ::mkdir(outputs.c_str(), 0755);
      std::string path = outputs + "/output" + std::to_string(i) + ".npy";
      if (Status st = writeNpyFile(path, t); !st)
        return fail(st.toString());
      std::printf("output %zu: %s -> %s\n", i, t.describe().c_str(),
                  path.c_str());
    } else {
      printTensor(static_cast<int>(i), t);
    }
  }
  return 0;
}
