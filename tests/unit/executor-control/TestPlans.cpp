//===- TestPlans.cpp - Small ExecutionPlans and process helpers -----------===//
#include "TestPlans.h"

#include "monarch/Plan/PlanFile.h"

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <thread>

namespace pm = monarch::plan;

namespace monarch::testing {
namespace {

pm::Buffer buf(int64_t offset, int64_t elements = 4) {
  pm::Buffer b;
  b.offset = offset;
  b.dtype = pm::DType::F32;
  b.shape = {elements};
  return b;
}

pm::Instruction at(pm::Instruction in, int line) {
  in.loc.file = "test.py";
  in.loc.line = line;
  in.loc.col = 5;
  return in;
}

pm::ExecutionPlan base(int ranks) {
  pm::ExecutionPlan plan;
  plan.compilerVersion = "test";
  plan.source = "TestPlans.cpp";
  pm::ProcMesh mesh;
  mesh.name = "mesh";
  mesh.dims = {{"gpus", ranks}};
  for (int r = 0; r < ranks; ++r)
    mesh.rootRanks.push_back(r);
  plan.meshes = {mesh};
  pm::MeshTopology topo;
  topo.mesh = "mesh";
  pm::Host host;
  host.name = "localhost";
  for (int r = 0; r < ranks; ++r)
    host.ranks.push_back(r);
  topo.hosts = {host};
  plan.topology = {topo};
  pm::Communicator world;
  world.name = "world";
  world.mesh = "mesh";
  for (int r = 0; r < ranks; ++r)
    world.ranks.push_back(r);
  plan.communicators = {world};
  return plan;
}

pm::StepPlan step(const std::string &name, int64_t elements = 4) {
  pm::StepPlan s;
  s.symbol = name;
  s.mesh = "mesh";
  pm::ValueType t;
  t.shape = {elements};
  s.inputs = {t};
  s.outputs = {t};
  return s;
}

pm::Instruction feed(int64_t index, int64_t offset, int64_t elements = 4) {
  pm::Instruction in;
  in.kind = pm::InstrKind::FeedBuffer;
  in.io.index = index;
  in.io.buffer = buf(offset, elements);
  return in;
}

pm::Instruction fetch(int64_t index, int64_t offset, int64_t elements = 4) {
  pm::Instruction in;
  in.kind = pm::InstrKind::FetchBuffer;
  in.io.index = index;
  in.io.buffer = buf(offset, elements);
  return in;
}

pm::Instruction waitFor(std::vector<int32_t> events) {
  pm::Instruction in;
  in.kind = pm::InstrKind::Wait;
  in.wait.events = std::move(events);
  return in;
}

} // namespace

pm::ExecutionPlan allReducePlan(int ranks, int64_t elements) {
  pm::ExecutionPlan plan = base(ranks);
  pm::StepPlan s = step("step", elements);
  int64_t bytes = elements * 4;
  for (int r = 0; r < ranks; ++r) {
    pm::RankProgram p;
    p.rank = r;
    p.arenaBytes = 2 * bytes;
    pm::Instruction ar;
    ar.kind = pm::InstrKind::Collective;
    ar.collective.kind = pm::CollectiveKind::AllReduce;
    ar.collective.reduction = pm::ReductionKind::Sum;
    ar.collective.communicator = 0;
    ar.collective.input = buf(0, elements);
    ar.collective.output = buf(bytes, elements);
    ar.collective.stream = 1;
    p.instructions = {at(feed(0, 0, elements), 1), at(ar, 2),
                      at(waitFor({1}), 3), at(fetch(0, bytes, elements), 4)};
    s.programs.push_back(p);
  }
  plan.plans = {s};
  return plan;
}

pm::ExecutionPlan ringPlan(int ranks) {
  pm::ExecutionPlan plan = base(ranks);
  pm::StepPlan s = step("ring");
  for (int r = 0; r < ranks; ++r) {
    pm::RankProgram p;
    p.rank = r;
    p.arenaBytes = 32;
    pm::Instruction send, recv;
    send.kind = pm::InstrKind::Send;
    send.p2p.buffer = buf(0);
    send.p2p.peer = (r + 1) % ranks;
    send.p2p.communicator = 0;
    send.p2p.stream = 1;
    send.p2p.group = 0;
    recv.kind = pm::InstrKind::Recv;
    recv.p2p.buffer = buf(16);
    recv.p2p.peer = (r + ranks - 1) % ranks;
    recv.p2p.communicator = 0;
    recv.p2p.stream = 1;
    recv.p2p.group = 0;
    p.instructions = {at(feed(0, 0), 1), at(send, 2), at(recv, 3),
                      at(waitFor({1, 2}), 4), at(fetch(0, 16), 5)};
    s.programs.push_back(p);
  }
  plan.plans = {s};
  return plan;
}

pm::ExecutionPlan statePlan(int ranks, const std::string &kernelLibrary) {
  pm::ExecutionPlan plan = base(ranks);
  pm::Kernel k;
  k.name = "add4";
  k.numInputs = 2;
  k.numOutputs = 1;
  plan.kernels = {k};
  pm::KernelLibraryBlob lib;
  lib.target = pm::PlanTarget::Cpu;
  lib.code = kernelLibrary;
  lib.kernels = {{0, "monarch_test_add4"}};
  plan.libraries = {lib};
  pm::StepPlan s = step("accumulate");
  for (int r = 0; r < ranks; ++r) {
    pm::RankProgram p;
    p.rank = r;
    p.arenaBytes = 32;
    pm::Instruction state;
    state.kind = pm::InstrKind::StateBuffer;
    state.stateBuffer.actorMesh = "acc";
    state.stateBuffer.state = "total";
    state.stateBuffer.buffer = buf(0);
    pm::Instruction launch;
    launch.kind = pm::InstrKind::Launch;
    launch.launch.kernel = 0;
    launch.launch.ins = {buf(0), buf(16)};
    launch.launch.outs = {buf(0)};
    launch.launch.stream = 0;
    p.instructions = {at(state, 1), at(feed(0, 16), 2), at(launch, 3),
                      at(waitFor({2}), 4), at(fetch(0, 0), 5)};
    s.programs.push_back(p);
  }
  // A second plan reading the same actor state from another arena offset.
  pm::StepPlan peek = step("peek");
  peek.inputs.clear();
  for (int r = 0; r < ranks; ++r) {
    pm::RankProgram p;
    p.rank = r;
    p.arenaBytes = 64;
    pm::Instruction state;
    state.kind = pm::InstrKind::StateBuffer;
    state.stateBuffer.actorMesh = "acc";
    state.stateBuffer.state = "total";
    state.stateBuffer.buffer = buf(32);
    p.instructions = {at(state, 7), at(fetch(0, 32), 8)};
    peek.programs.push_back(p);
  }
  plan.plans = {s, peek};
  return plan;
}

pm::ExecutionPlan programPlan(int ranks) {
  pm::ExecutionPlan plan = allReducePlan(ranks);
  pm::ValueType t;
  t.shape = {4};
  auto stepOf = [&](pm::ControlStepKind kind) {
    pm::ControlStep step;
    step.kind = kind;
    step.mesh = "mesh";
    step.type = t;
    return step;
  };
  pm::ControllerProgram main;
  main.name = "main";
  main.inputs = {t};
  main.outputs = {t};
  pm::ControlStep feedStep = stepOf(pm::ControlStepKind::FeedInput);
  feedStep.value.kind = pm::ValueKind::Argument;
  pm::ControlStep msg = stepOf(pm::ControlStepKind::ControlMsg);
  msg.plans = {0};
  pm::ControlStep await = stepOf(pm::ControlStepKind::Await);
  await.tokens = {1};
  pm::ControlStep fetchStep = stepOf(pm::ControlStepKind::FetchOutput);
  main.steps = {feedStep, msg, await, fetchStep};
  pm::ValueRef result;
  result.kind = pm::ValueKind::Fetched;
  result.index = 3;
  main.results = {result};

  pm::ControllerProgram twice;
  twice.name = "twice_const";
  twice.outputs = {t, t};
  pm::ControlStep feedConst = stepOf(pm::ControlStepKind::FeedInput);
  feedConst.value.kind = pm::ValueKind::Constant;
  feedConst.value.constant = 2.5;
  pm::ControlStep await2 = await;
  await2.tokens = {3};
  twice.steps = {feedConst, msg, fetchStep, msg, await2, fetchStep};
  pm::ValueRef first = result, second = result;
  first.index = 2;
  second.index = 5;
  twice.results = {first, second};
  plan.controllers = {main, twice};
  return plan;
}

std::string serialize(const pm::ExecutionPlan &plan) {
  auto bytes = pm::serializePlan(plan);
  if (!bytes.isOk())
    return "invalid plan: " + bytes.status().toString() + "\n";
  return *bytes;
}

executor::HostTensor floats(const std::vector<float> &values) {
  executor::HostTensor t;
  t.dtype = "float32";
  t.shape = {static_cast<int64_t>(values.size())};
  t.data.assign(reinterpret_cast<const char *>(values.data()),
                values.size() * sizeof(float));
  return t;
}

std::vector<float> toFloats(const executor::HostTensor &tensor) {
  std::vector<float> out(tensor.data.size() / sizeof(float));
  std::memcpy(out.data(), tensor.data.data(), out.size() * sizeof(float));
  return out;
}

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         line[close + 2] == 'Z';
}

namespace {
/// The state letter of /proc/.../stat (after the command's ')').
char stateOf(const std::string &statPath) {
  std::ifstream stat(statPath);
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2]
                                                               : '?';
}
} // namespace

bool waitStopped(pid_t pid, std::chrono::milliseconds timeout) {
  std::string task = "/proc/" + std::to_string(pid) + "/task";
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    bool stopped = false;
    if (DIR *dir = ::opendir(task.c_str())) {
      stopped = true;
      while (dirent *e = ::readdir(dir)) {
        if (e->d_name[0] == '.')
          continue;
        char state = stateOf(task + "/" + e->d_name + "/stat");
        stopped = stopped && (state == 'T' || state == 't');
      }
      ::closedir(dir);
    }
    if (stopped)
      return true;
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool allGone(const std::vector<pid_t> &pids,
             std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    bool gone = true;
    for (pid_t pid : pids)
      gone = gone && processGone(pid);
    if (gone)
      return true;
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR *dir = ::opendir("/proc");
  if (!dir)
    return out;
  while (dirent *e = ::readdir(dir)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0)
      continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z')
      out.push_back(pid);
  }
  ::closedir(dir);
  return out;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

executor::ControllerOptions localOptions(int ranks) {
  executor::ControllerOptions o;
  o.worldSize = ranks;
  o.workerBinary = MONARCH_WORKER_BIN;
  o.startTimeout = std::chrono::milliseconds(20000);
  o.logLevel = "warn";
  return o;
}

} // namespace monarch::testing
