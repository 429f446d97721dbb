//===- ExecutorBindings.cpp - Plans and the Controller for Python --------===//
//
// The running half of `_monarch_native`: `compile_plan` (a TraceBuilder's
// traced module to `.mcplan` bytes, driver/TraceCompile.h) and a thin
// `Controller` over
// monarch::executor::Controller. Tensors cross as (dtype, shape, bytes)
// triples; every executor Status that is not ok becomes an `ExecutionError`
// (a RuntimeError) carrying the controller's message, which names the rank,
// the op and the user's source line. Blocking calls release the GIL. The
// restart policy (mc.Restart) is set at start or later with
// set_recovery_policy; recovery_stats reports what it did.
// `call` takes C-contiguous arrays (copied once into the request) and
// returns numpy arrays that own the results' bytes (no copy).
//
//===----------------------------------------------------------------------===//
#include "Interrupt.h"

#include "monarch/Driver/TraceCompile.h"
#include "monarch/Executor/BufferPool.h"
#include "monarch/Executor/Controller.h"
#include "monarch/Plan/PlanFile.h"
#include "monarch/Plan/PlanGraph.h"
#include "monarch/Plan/PlanSimulate.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace nb = nanobind;
using namespace monarch::executor;

namespace {

struct ExecutionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PlanCompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(const Status &s) {
  if (!s.isOk())
    throw ExecutionError(s.message());
}

template <typename T> T check(StatusOr<T> r) {
  if (!r.isOk())
    throw ExecutionError(r.status().message());
  return std::move(r).value();
}

/// After a call SIGINT interrupted: Python's handler runs now (with the
/// GIL) and raises KeyboardInterrupt, unless the user's handler does not.
void raiseIfInterrupted(bool interrupted) {
  if (interrupted && PyErr_CheckSignals() != 0)
    throw nb::python_error();
}

using PyTensor = std::tuple<std::string, std::vector<int64_t>, nb::bytes>;

HostTensor toHost(const PyTensor &t) {
  HostTensor h;
  h.dtype = std::get<0>(t);
  h.shape = std::get<1>(t);
  const nb::bytes &b = std::get<2>(t);
  h.data.assign(b.c_str(), b.size());
  return h;
}

PyTensor toPy(const HostTensor &h) {
  return {h.dtype, h.shape, nb::bytes(h.data.data(), h.data.size())};
}

/// A C-contiguous CPU array of any dtype, read-only.
using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using InTensor = std::tuple<std::string, std::vector<int64_t>, InArray>;

/// One copy: the array's bytes into the HostTensor (pooled storage, given
/// back after the call).
HostTensor toHost(const InTensor &t) {
  HostTensor h;
  h.dtype = std::get<0>(t);
  h.shape = std::get<1>(t);
  const InArray &a = std::get<2>(t);
  h.data = takeBytes(a.nbytes());
  if (a.nbytes() != 0)
    std::memcpy(h.data.data(), a.data(), a.nbytes());
  return h;
}

/// A numpy array owning the result's bytes (moved, not copied), or the
/// (dtype, shape, bytes) triple for dtypes numpy lacks (bfloat16).
nb::object toNumpy(HostTensor &&h) {
  nb::dlpack::dtype dt;
  if (h.dtype == "float32")
    dt = nb::dtype<float>();
  else if (h.dtype == "float64")
    dt = nb::dtype<double>();
  else if (h.dtype == "int32")
    dt = nb::dtype<int32_t>();
  else if (h.dtype == "int64")
    dt = nb::dtype<int64_t>();
  else if (h.dtype == "bool")
    dt = nb::dtype<bool>();
  else if (h.dtype == "float16")
    dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
  else
    return nb::cast(toPy(h));
  auto *owner = new std::string(std::move(h.data));
  // The bytes go back to the pool when numpy frees the array.
  nb::capsule capsule(owner, [](void *p) noexcept {
    auto *bytes = static_cast<std::string *>(p);
    recycleBytes(std::move(*bytes));
    delete bytes;
  });
  std::vector<size_t> shape(h.shape.begin(), h.shape.end());
  nb::ndarray<nb::numpy> array(owner->data(), shape.size(), shape.data(),
                               capsule, nullptr, dt);
  return nb::cast(array, nb::rv_policy::reference);
}

/// A value kept on the workers (`@mc.compile(donate_argnums=...)`): the
/// controller's HostTensor with `resident` set.
struct PyResident {
  HostTensor value;
};

/// mc.debug_print lines from the controller's threads, printed by the
/// Python thread that made the call (so that a notebook shows them in the
/// cell that ran it).
struct PrintQueue {
  std::mutex mutex;
  std::vector<std::string> lines;
  void push(const std::string &line) {
    std::lock_guard<std::mutex> lock(mutex);
    if (lines.size() < 100000)
      lines.push_back(line);
  }
  /// Prints what is queued through Python's print (GIL held).
  void flush() {
    std::vector<std::string> out;
    {
      std::lock_guard<std::mutex> lock(mutex);
      out.swap(lines);
    }
    for (const std::string &line : out)
      nb::print(nb::str(line.c_str(), line.size()));
  }
};

/// Owns a started controller; stop() is idempotent and runs at destruction.
class PyController {
public:
  explicit PyController(std::unique_ptr<Controller> c,
                        std::shared_ptr<PrintQueue> prints)
      : prints(std::move(prints)), c(std::move(c)) {}
  std::shared_ptr<PrintQueue> prints;
  ~PyController() {
    if (c) {
      nb::gil_scoped_release release;
      (void)c->stop();
    }
  }
  Controller &get() {
    if (!c)
      throw ExecutionError("the mesh's workers were stopped");
    return *c;
  }
  void stop() {
    if (!c)
      return;
    Status s;
    {
      nb::gil_scoped_release release;
      s = c->stop();
    }
    c.reset();
    // A failure the job already had was reported by the call it broke.
    (void)s;
  }
  bool running() const { return c != nullptr; }

private:
  std::unique_ptr<Controller> c;
};

/// Controller::call from Python: the arguments' bytes copied once (pooled),
/// the GIL released and SIGINT watched while the program runs, its
/// debug_print lines printed, results as numpy arrays (or Resident for the
/// results `keep` asks to stay on the workers; `resident` gives arguments
/// that are already there).
std::vector<nb::object>
callProgram(PyController &self, const std::string &program,
            const std::vector<InTensor> &args,
            const std::vector<std::pair<int, const PyResident *>> &resident,
            const std::vector<bool> &keep) {
  std::vector<HostTensor> in;
  in.reserve(args.size());
  for (const InTensor &a : args)
    in.push_back(toHost(a));
  for (auto &[index, r] : resident)
    if (index >= 0 && index < static_cast<int>(in.size()) && r)
      in[index] = r->value;
  Controller &c = self.get();
  StatusOr<std::vector<HostTensor>> out =
      Status(StatusCode::Internal, "not run");
  bool interrupted = false;
  {
    monarch::python::InterruptScope scope(c, program + "()");
    nb::gil_scoped_release release;
    out = c.call(program, in, keep);
    for (HostTensor &h : in)
      if (!h.resident)
        recycleBytes(std::move(h.data));
    interrupted = scope.interrupted();
  }
  self.prints->flush();
  raiseIfInterrupted(interrupted);
  std::vector<nb::object> results;
  for (HostTensor &h : check(std::move(out))) {
    if (h.resident)
      results.push_back(nb::cast(new PyResident{std::move(h)},
                                 nb::rv_policy::take_ownership));
    else
      results.push_back(toNumpy(std::move(h)));
  }
  return results;
}

} // namespace

void bindExecutor(nb::module_ &m) {
  nb::exception<ExecutionError>(m, "ExecutionError", PyExc_RuntimeError);
  nb::exception<PlanCompileError>(m, "PlanCompileError", PyExc_RuntimeError);

  nb::class_<monarch::plan::SharedPlan>(
      m, "Plan",
      "A compiled plan in memory: its .mcplan bytes and their decoding, "
      "made once; the controller loads it without copying or decoding it "
      "again.")
      .def(
          "to_bytes",
          [](const monarch::plan::SharedPlan &plan) {
            if (!plan.bytes)
              throw ExecutionError("an empty plan");
            return nb::bytes(plan.bytes->data(), plan.bytes->size());
          },
          "The .mcplan file's bytes (a copy), for `monarch-run` or a file.");

  m.def(
      "compile_plan",
      [](const monarch::frontend::TraceBuilder &builder,
         const std::string &program, const std::string &backend,
         const std::string &source) {
        monarch::driver::PlanCompileResult r;
        StatusOr<monarch::plan::SharedPlan> plan =
            Status(StatusCode::Internal, "not compiled");
        {
          nb::gil_scoped_release release;
          r = monarch::driver::compileTrace(builder, program, backend, source);
          if (r.ok)
            plan = monarch::plan::decodeSharedPlan(std::move(r.bytes));
        }
        if (!r.ok)
          throw PlanCompileError(r.error);
        if (!plan)
          throw PlanCompileError("the compiled plan does not decode: " +
                                 plan.status().message());
        return std::make_tuple(std::move(plan).value(), r.cacheHit, r.timings);
      },
      nb::arg("builder"), nb::arg("program") = "", nb::arg("backend") = "gloo",
      nb::arg("source") = "",
      "The traced module of `builder` (in memory), its function renamed to "
      "`program` -> (Plan, cache hit, where the compile time went as "
      "`monarch-compile -v` prints it).");

  m.def(
      "plan_pictures",
      [](const monarch::plan::SharedPlan &plan) {
        if (!plan.plan)
          throw ExecutionError("an empty plan");
        return std::make_pair(monarch::plan::planGraphSvg(*plan.plan),
                              monarch::plan::memoryPlotSvg(*plan.plan));
      },
      nb::arg("plan"), "(plan graph SVG, memory plot SVG) of a compiled Plan.");

  m.def(
      "simulate_plan",
      [](const monarch::plan::SharedPlan &plan, const std::string &preset,
         const std::map<std::string, double> &overrides) {
        using namespace monarch::plan;
        if (!plan.plan)
          throw ExecutionError("an empty plan");
        const ExecutionPlan *decoded = plan.plan.get();
        StatusOr<SimTopology> t = topologyPreset(preset);
        if (!t)
          throw std::invalid_argument(t.status().message());
        for (auto &[key, value] : overrides)
          if (Status st = setTopologyField(*t, key, value); !st)
            throw std::invalid_argument(st.message());
        StatusOr<SimResult> sim = simulatePlan(*decoded, *t);
        if (!sim)
          throw ExecutionError(sim.status().message());
        nb::list steps;
        for (const SimStep &s : sim->steps) {
          nb::dict d;
          d["plan"] = s.plan;
          d["step_us"] = s.stepUs;
          d["controller_us"] = s.controllerUs;
          d["critical_rank"] = s.criticalRank;
          d["critical_op"] = s.criticalOp;
          d["critical_loc"] = s.criticalLoc;
          nb::list ranks;
          for (const SimRank &r : s.ranks) {
            nb::dict rd;
            rd["rank"] = r.rank;
            rd["compute_us"] = r.computeUs;
            rd["comm_us"] = r.commUs;
            rd["wait_us"] = r.waitUs;
            rd["finish_us"] = r.finishUs;
            ranks.append(rd);
          }
          d["ranks"] = ranks;
          nb::dict links;
          for (auto &[cls, bytes] : s.linkBytes)
            links[nb::str(cls.c_str())] = bytes;
          d["link_bytes"] = links;
          steps.append(d);
        }
        nb::dict out;
        out["topology"] = t->name;
        out["steps"] = steps;
        out["trace"] = sim->chromeTrace;
        out["report"] = simulationReport(*sim, *t);
        return out;
      },
      nb::arg("plan"), nb::arg("preset") = "this-machine",
      nb::arg("overrides") = std::map<std::string, double>(),
      "Predicted step of a compiled plan on a topology (PlanSimulate.h).");

  nb::class_<PyResident>(m, "Resident")
      .def_prop_ro("dtype", [](const PyResident &r) { return r.value.dtype; })
      .def_prop_ro("shape", [](const PyResident &r) { return r.value.shape; });

  nb::class_<PyController>(m, "Controller")
      .def_static(
          "start",
          [](int worldSize, const std::string &workerBinary,
             const std::string &logLevel, int maxRetries, int checkpointEvery,
             const std::string &launcher, int hosts) {
            ControllerOptions o = ControllerOptions::fromEnv();
            o.worldSize = worldSize;
            if (!launcher.empty())
              o.launcherName = launcher;
            o.hosts = hosts;
            o.recovery.maxRetries = maxRetries;
            o.recovery.checkpointEvery = checkpointEvery;
            if (!workerBinary.empty())
              o.workerBinary = workerBinary;
            if (!logLevel.empty())
              o.logLevel = logLevel;
            auto prints = std::make_shared<PrintQueue>();
            o.printSink = [prints](const std::string &line) {
              prints->push(line);
            };
            StatusOr<std::unique_ptr<Controller>> c =
                Status(StatusCode::Internal, "not started");
            {
              nb::gil_scoped_release release;
              c = Controller::start(o);
            }
            return new PyController(check(std::move(c)), prints);
          },
          nb::arg("world_size"), nb::arg("worker_binary") = "",
          nb::arg("log_level") = "", nb::arg("max_retries") = 0,
          nb::arg("checkpoint_every") = 1, nb::arg("launcher") = "",
          nb::arg("hosts") = 1, nb::rv_policy::take_ownership)
      .def("load_plan",
           [](PyController &self, const monarch::plan::SharedPlan &plan) {
             Controller &c = self.get();
             StatusOr<std::vector<std::string>> names =
                 Status(StatusCode::Internal, "not loaded");
             bool interrupted = false;
             {
               monarch::python::InterruptScope scope(c, "loading a plan");
               nb::gil_scoped_release release;
               names = c.loadPlan(plan);
               interrupted = scope.interrupted();
             }
             raiseIfInterrupted(interrupted);
             return check(std::move(names));
           })
      .def("call",
           [](PyController &self, const std::string &program,
              const std::vector<InTensor> &args) {
             return callProgram(self, program, args, {}, {});
           })
      .def(
          "call_kept",
          [](PyController &self, const std::string &program,
             const std::vector<InTensor> &args,
             const std::vector<std::pair<int, const PyResident *>> &resident,
             const std::vector<bool> &keep) {
            return callProgram(self, program, args, resident, keep);
          },
          "call() whose results keep[i] stay on the workers (returned as "
          "Resident); `resident` gives (argument index, Resident) pairs fed "
          "from the workers.")
      .def("fetch_resident",
           [](PyController &self, const PyResident &r) {
             Controller &c = self.get();
             StatusOr<HostTensor> v = Status(StatusCode::Internal, "not read");
             {
               nb::gil_scoped_release release;
               v = c.fetchResident(r.value);
             }
             return toNumpy(check(std::move(v)));
           })
      .def("resident_stats",
           [](PyController &self) {
             Controller::ResidentStats st = self.get().residentStats();
             nb::dict d;
             d["kept"] = st.kept;
             d["fed_in_place"] = st.fedInPlace;
             d["fetched_to_feed"] = st.fetchedToFeed;
             d["released"] = st.released;
             return d;
           })
      .def("release_resident",
           [](PyController &self, const PyResident &r) {
             if (self.running())
               self.get().releaseResident(r.value);
           })
      .def("programs", [](PyController &self) { return self.get().programs(); })
      .def("state_ranks",
           [](PyController &self, const std::string &plan) {
             const PlanSignature *sig = self.get().signature(plan);
             if (!sig)
               throw ExecutionError("no loaded plan named '" + plan + "'");
             return sig->stateRanks;
           })
      .def(
          "set_actor_state",
          [](PyController &self, const std::string &key, const PyTensor &value,
             int rank) {
            HostTensor h = toHost(value);
            Controller &c = self.get();
            Status s;
            {
              nb::gil_scoped_release release;
              s = c.setActorState(key, h, rank);
            }
            check(s);
          },
          nb::arg("key"), nb::arg("value"), nb::arg("rank") = -1)
      .def("get_actor_state",
           [](PyController &self, const std::string &key, int rank) {
             Controller &c = self.get();
             StatusOr<HostTensor> v = Status(StatusCode::Internal, "not read");
             {
               nb::gil_scoped_release release;
               v = c.getActorState(key, rank);
             }
             return toPy(check(std::move(v)));
           })
      .def(
          "set_recovery_policy",
          [](PyController &self, int maxRetries, int checkpointEvery) {
            RecoveryPolicy policy;
            policy.maxRetries = maxRetries;
            policy.checkpointEvery = checkpointEvery;
            Controller &c = self.get();
            Status s;
            {
              nb::gil_scoped_release release;
              s = c.setRecoveryPolicy(policy);
            }
            check(s);
          },
          nb::arg("max_retries"), nb::arg("checkpoint_every"))
      .def("recovery_policy",
           [](PyController &self) {
             RecoveryPolicy p = self.get().recoveryPolicy();
             return std::make_pair(p.maxRetries, p.checkpointEvery);
           })
      .def("recovery_stats",
           [](PyController &self) {
             RecoveryStats st = self.get().recoveryStats();
             nb::dict d;
             d["restarts"] = st.restarts;
             d["recoveries"] = st.recoveries;
             d["replayed_steps"] = st.replayedSteps;
             d["checkpoints"] = st.checkpoints;
             d["journal_entries"] = st.journalEntries;
             d["last_recovery_ms"] = st.lastRecoveryMs;
             d["last_failure"] = st.lastFailure;
             return d;
           })
      .def("health",
           [](PyController &self) {
             Status s = self.get().health();
             return s.isOk() ? std::string() : s.message();
           })
      .def("world_size",
           [](PyController &self) { return self.get().worldSize(); })
      .def("worker_pid", [](PyController &self,
                            int rank) { return self.get().workerPid(rank); })
      .def("running", &PyController::running)
      .def("stop", &PyController::stop);
}
