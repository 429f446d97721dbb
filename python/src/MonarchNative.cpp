//===- MonarchNative.cpp - Python bindings of the TraceBuilder --*- C++ -*-===//
//
// The one native extension of `monarch_compile` (module `_monarch_native`):
// a thin nanobind layer over monarch::frontend::TraceBuilder. Values are
// integer handles, source locations are (file, line, col) tuples, and every
// error value becomes a `NativeError` carrying the Status whole: its
// attributes `code` and `kind` (the names of StatusCode and ErrorKind),
// `file`, `line`, `col` (None, 0, 0 without a location) and `message`, and
// `str()` the diagnostic `file:line:col: error: message`. Python classes it
// by `kind`, never by its text. Built with exceptions; it includes only the
// standard-library header of the frontend, never MLIR.
//
//===----------------------------------------------------------------------===//

#include "monarch/Driver/TraceCompile.h"
#include "monarch/Frontend/TraceBuilder.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <tuple>

namespace nb = nanobind;
using namespace monarch::frontend;
using monarch::DType;
using monarch::dtypeName;
using monarch::parseDType;

namespace {

/// A Status thrown across the binding; translated to Python's NativeError
/// with its fields as attributes (see the module's registration).
struct NativeError : std::runtime_error {
  explicit NativeError(monarch::Status status)
      : std::runtime_error(status.str()), status(std::move(status)) {}
  monarch::Status status;
};

/// An argument the binding itself refuses (an unknown op name, dtype...).
[[noreturn]] void refuse(std::string message, monarch::ErrorKind kind) {
  throw NativeError(monarch::Status(monarch::StatusCode::InvalidArgument,
                                    std::move(message), {}, kind));
}

using Loc = std::tuple<std::string, unsigned, unsigned>;
using PyArg = std::tuple<std::vector<int64_t>, std::string, bool>;
using PyDist = std::pair<std::vector<std::vector<std::string>>,
                         std::optional<std::string>>;

SourceLoc toLoc(const Loc &l) {
  return {std::get<0>(l), std::get<1>(l), std::get<2>(l)};
}

[[noreturn]] void fail(const Status &e) { throw NativeError(e); }

template <typename T> T check(Result<T> r) {
  if (!r)
    fail(r.status());
  return std::move(*r);
}

void check(const Status &s) {
  if (!s)
    fail(s.status());
}

DType toDType(const std::string &name) {
  std::optional<DType> d = parseDType(name);
  if (!d || !isTraceableDType(*d))
    refuse("unsupported dtype '" + name +
               "' (supported: float32, float16, bfloat16, int32)",
           monarch::ErrorKind::Unsupported);
  return *d;
}

ReduceKind toReduce(const std::string &name) {
  std::optional<ReduceKind> k = parseReduceKind(name);
  if (!k)
    refuse("unknown reduction '" + name + "' (sum, prod, max, min, avg)",
           monarch::ErrorKind::Program);
  return *k;
}

const char *reduceName(ReduceKind k) {
  switch (k) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Prod:
    return "prod";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  case ReduceKind::Avg:
    return "avg";
  }
  return "?";
}

std::vector<ArgType> toArgs(const std::vector<PyArg> &args) {
  std::vector<ArgType> out;
  for (const PyArg &a : args)
    out.push_back({std::get<0>(a), toDType(std::get<1>(a)), std::get<2>(a)});
  return out;
}

Dist toDist(const PyDist &d) {
  Dist out;
  out.split = d.first;
  if (d.second)
    out.partial = toReduce(*d.second);
  return out;
}

std::vector<Dist> toDists(const std::vector<PyDist> &ds) {
  std::vector<Dist> out;
  for (const PyDist &d : ds)
    out.push_back(toDist(d));
  return out;
}

std::vector<Value> toValues(const std::vector<int64_t> &ids) {
  std::vector<Value> out;
  for (int64_t id : ids)
    out.push_back(Value{id});
  return out;
}

std::vector<int64_t> toIds(const std::vector<Value> &vs) {
  std::vector<int64_t> out;
  for (Value v : vs)
    out.push_back(v.id);
  return out;
}

UnaryOp toUnary(const std::string &n) {
  static const std::pair<const char *, UnaryOp> table[] = {
      {"neg", UnaryOp::Neg},   {"relu", UnaryOp::Relu},
      {"exp", UnaryOp::Exp},   {"log", UnaryOp::Log},
      {"tanh", UnaryOp::Tanh}, {"sigmoid", UnaryOp::Sigmoid},
      {"gelu", UnaryOp::Gelu}, {"sqrt", UnaryOp::Sqrt},
      {"abs", UnaryOp::Abs}};
  for (auto &[name, op] : table)
    if (n == name)
      return op;
  refuse("unsupported op '" + n + "'", monarch::ErrorKind::Unsupported);
}

BinaryOp toBinary(const std::string &n) {
  static const std::pair<const char *, BinaryOp> table[] = {
      {"add", BinaryOp::Add}, {"sub", BinaryOp::Sub},
      {"mul", BinaryOp::Mul}, {"div", BinaryOp::Div},
      {"max", BinaryOp::Max}, {"min", BinaryOp::Min},
      {"pow", BinaryOp::Pow}, {"floordiv", BinaryOp::FloorDiv},
      {"mod", BinaryOp::Mod}};
  for (auto &[name, op] : table)
    if (n == name)
      return op;
  refuse("unsupported op '" + n + "'", monarch::ErrorKind::Unsupported);
}

CompareOp toCompare(const std::string &n) {
  static const std::pair<const char *, CompareOp> table[] = {
      {"lt", CompareOp::Lt}, {"le", CompareOp::Le}, {"gt", CompareOp::Gt},
      {"ge", CompareOp::Ge}, {"eq", CompareOp::Eq}, {"ne", CompareOp::Ne}};
  for (auto &[name, op] : table)
    if (n == name)
      return op;
  refuse("unsupported comparison '" + n + "'", monarch::ErrorKind::Unsupported);
}

ReduceOp toReduceOp(const std::string &n) {
  if (n == "sum")
    return ReduceOp::Sum;
  if (n == "mean")
    return ReduceOp::Mean;
  if (n == "max")
    return ReduceOp::Max;
  if (n == "min")
    return ReduceOp::Min;
  if (n == "prod")
    return ReduceOp::Prod;
  refuse("unsupported reduction '" + n + "'", monarch::ErrorKind::Unsupported);
}

/// Python's NativeError (an Exception subclass), made once at import.
PyObject *nativeErrorType = nullptr;

/// Registers NativeError and the translation of a thrown NativeError into
/// one carrying the Status's fields as attributes.
void bindNativeError(nb::module_ &m) {
  nativeErrorType = PyErr_NewException("_monarch_native.NativeError",
                                       PyExc_Exception, nullptr);
  m.attr("NativeError") = nb::borrow(nativeErrorType);
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const NativeError &e) {
      const monarch::Status &s = e.status;
      nb::object err =
          nb::steal(PyObject_CallFunction(nativeErrorType, "s", e.what()));
      if (!err.is_valid())
        return; // (the call's own error stays set)
      err.attr("code") = nb::str(monarch::statusCodeName(s.code()));
      err.attr("kind") = nb::str(monarch::errorKindName(s.kind()));
      err.attr("file") = s.loc().file.empty()
                             ? nb::none()
                             : nb::object(nb::str(s.loc().file.c_str()));
      err.attr("line") = nb::int_(s.loc().line);
      err.attr("col") = nb::int_(s.loc().col);
      err.attr("message") = nb::str(s.message().c_str());
      PyErr_SetObject(nativeErrorType, err.ptr());
    }
  });
}

} // namespace

/// Plans and the Controller (ExecutorBindings.cpp).
void bindExecutor(nb::module_ &m);
/// The MONARCH_* registry (KnobBindings.cpp).
void bindKnobs(nb::module_ &m);

NB_MODULE(_monarch_native, m) {
  m.doc() = "Native TraceBuilder of monarch_compile (see frontend/)";
  bindNativeError(m);
  bindExecutor(m);
  bindKnobs(m);
  m.def("stages", &monarch::driver::stageNames,
        "The compile stages, in order (mc.STAGES).");

  nb::class_<TraceBuilder>(m, "TraceBuilder")
      .def(nb::init<>())
      // Meshes
      .def("declare_mesh",
           [](TraceBuilder &t, const std::string &name,
              const std::vector<std::pair<std::string, int64_t>> &dims,
              const Loc &loc) {
             std::vector<MeshDim> d;
             for (auto &[n, s] : dims)
               d.push_back({n, s});
             check(t.declareMesh(name, d, toLoc(loc)));
           })
      .def("declare_slice",
           [](TraceBuilder &t, const std::string &name,
              const std::string &parent,
              const std::vector<std::tuple<std::string, int64_t, int64_t>>
                  &ranges,
              const Loc &loc) {
             std::vector<DimRange> r;
             for (auto &[n, a, b] : ranges)
               r.push_back({n, a, b});
             check(t.declareSlice(name, parent, r, toLoc(loc)));
           })
      .def("has_mesh", &TraceBuilder::hasMesh)
      .def("mesh_dims",
           [](TraceBuilder &t, const std::string &name) {
             std::vector<std::pair<std::string, int64_t>> out;
             for (const MeshDim &d : check(t.meshDims(name)))
               out.push_back({d.name, d.size});
             return out;
           })
      // Functions
      .def("begin_function",
           [](TraceBuilder &t, const std::string &name,
              const std::vector<PyArg> &args, const std::string &mesh,
              const Loc &loc) {
             return toIds(
                 check(t.beginFunction(name, toArgs(args), mesh, toLoc(loc))));
           })
      .def("function_name", &TraceBuilder::functionName)
      .def("end_function",
           [](TraceBuilder &t, const std::vector<int64_t> &results,
              const Loc &loc) {
             check(t.endFunction(toValues(results), toLoc(loc)));
           })
      // Placement
      .def("shard",
           [](TraceBuilder &t, int64_t v,
              const std::vector<std::pair<std::string, int64_t>> &split,
              const std::string &mesh, const Loc &loc) {
             return check(t.shard(Value{v}, split, mesh, toLoc(loc))).id;
           })
      .def("replicate",
           [](TraceBuilder &t, int64_t v, const Loc &loc) {
             return check(t.replicate(Value{v}, toLoc(loc))).id;
           })
      .def("place",
           [](TraceBuilder &t, int64_t v, const std::string &mesh,
              const Loc &loc) {
             return check(t.place(Value{v}, mesh, toLoc(loc))).id;
           })
      .def("transfer",
           [](TraceBuilder &t, int64_t v, const std::string &mesh,
              const Loc &loc) {
             return check(t.transfer(Value{v}, mesh, toLoc(loc))).id;
           })
      // Tensor ops
      .def("constant",
           [](TraceBuilder &t, double value, const std::string &dtype,
              const Loc &loc) {
             return check(t.constant(value, toDType(dtype), toLoc(loc))).id;
           })
      .def("constant_tensor",
           [](TraceBuilder &t, nb::bytes data,
              const std::vector<int64_t> &shape, const std::string &dtype,
              const Loc &loc) {
             std::string bytes(data.c_str(), data.size());
             return check(t.constantTensor(bytes, shape, toDType(dtype),
                                           toLoc(loc)))
                 .id;
           })
      .def("concatenate",
           [](TraceBuilder &t, const std::vector<int64_t> &parts, int64_t axis,
              const Loc &loc) {
             std::vector<Value> values;
             for (int64_t p : parts)
               values.push_back(Value{p});
             return check(t.concatenate(values, axis, toLoc(loc))).id;
           })
      .def("unary",
           [](TraceBuilder &t, const std::string &op, int64_t x,
              const Loc &loc) {
             return check(t.unary(toUnary(op), Value{x}, toLoc(loc))).id;
           })
      .def("binary",
           [](TraceBuilder &t, const std::string &op, int64_t a, int64_t b,
              const Loc &loc) {
             return check(
                        t.binary(toBinary(op), Value{a}, Value{b}, toLoc(loc)))
                 .id;
           })
      .def("compare",
           [](TraceBuilder &t, const std::string &op, int64_t a, int64_t b,
              const Loc &loc) {
             return check(t.compare(toCompare(op), Value{a}, Value{b},
                                    toLoc(loc)))
                 .id;
           })
      .def(
          "select",
          [](TraceBuilder &t, int64_t c, int64_t a, int64_t b, const Loc &loc) {
            return check(t.select(Value{c}, Value{a}, Value{b}, toLoc(loc))).id;
          })
      .def("matmul",
           [](TraceBuilder &t, int64_t a, int64_t b, const Loc &loc) {
             return check(t.matmul(Value{a}, Value{b}, toLoc(loc))).id;
           })
      .def("einsum",
           [](TraceBuilder &t, int64_t a, int64_t b, const std::string &la,
              const std::string &lb, const std::string &out, const Loc &loc) {
             return check(t.einsum(Value{a}, Value{b}, la, lb, out, toLoc(loc)))
                 .id;
           })
      .def("reduce",
           [](TraceBuilder &t, const std::string &op, int64_t x,
              const std::vector<int64_t> &axes, bool keepDims, const Loc &loc) {
             return check(t.reduce(toReduceOp(op), Value{x}, axes, keepDims,
                                   toLoc(loc)))
                 .id;
           })
      .def("softmax",
           [](TraceBuilder &t, int64_t x, int64_t axis, const Loc &loc) {
             return check(t.softmax(Value{x}, axis, toLoc(loc))).id;
           })
      .def("reshape",
           [](TraceBuilder &t, int64_t x, const std::vector<int64_t> &shape,
              const Loc &loc) {
             return check(t.reshape(Value{x}, shape, toLoc(loc))).id;
           })
      .def("slice",
           [](TraceBuilder &t, int64_t x, const std::vector<int64_t> &offsets,
              const std::vector<int64_t> &sizes,
              const std::vector<int64_t> &strides,
              const std::vector<int64_t> &drop, const Loc &loc) {
             return check(t.slice(Value{x}, offsets, sizes, strides, drop,
                                  toLoc(loc)))
                 .id;
           })
      .def("take",
           [](TraceBuilder &t, int64_t x, int64_t indices, int64_t axis,
              const Loc &loc) {
             return check(t.take(Value{x}, Value{indices}, axis, toLoc(loc)))
                 .id;
           })
      .def("take_along",
           [](TraceBuilder &t, int64_t x, int64_t indices, int64_t axis,
              const Loc &loc) {
             return check(
                        t.takeAlong(Value{x}, Value{indices}, axis, toLoc(loc)))
                 .id;
           })
      .def("scatter_add",
           [](TraceBuilder &t, int64_t values, int64_t indices, int64_t n,
              int64_t axis, const Loc &loc) {
             return check(t.scatterAdd(Value{values}, Value{indices}, n, axis,
                                       toLoc(loc)))
                 .id;
           })
      .def("scatter_add_along",
           [](TraceBuilder &t, int64_t values, int64_t indices, int64_t n,
              int64_t axis, const Loc &loc) {
             return check(t.scatterAddAlong(Value{values}, Value{indices}, n,
                                            axis, toLoc(loc)))
                 .id;
           })
      .def("transpose",
           [](TraceBuilder &t, int64_t x, const std::vector<int64_t> &perm,
              const Loc &loc) {
             return check(t.transpose(Value{x}, perm, toLoc(loc))).id;
           })
      .def("cast",
           [](TraceBuilder &t, int64_t x, const std::string &dtype,
              const Loc &loc) {
             return check(t.cast(Value{x}, toDType(dtype), toLoc(loc))).id;
           })
      // Actors
      .def("declare_actor_class",
           [](TraceBuilder &t, const std::string &name, const Loc &loc) {
             check(t.declareActorClass(name, toLoc(loc)));
           })
      .def("has_actor_class", &TraceBuilder::hasActorClass)
      .def("add_state",
           [](TraceBuilder &t, const std::string &cls, const std::string &name,
              const PyArg &type, const PyDist &dist, const Loc &loc) {
             check(t.addState(cls, name, toArgs({type})[0], toDist(dist),
                              toLoc(loc)));
           })
      .def("begin_endpoint",
           [](TraceBuilder &t, const std::string &cls, const std::string &name,
              const std::vector<PyArg> &args, const std::vector<PyDist> &dists,
              const std::string &mesh, const Loc &loc) {
             return toIds(check(t.beginEndpoint(
                 cls, name, toArgs(args), toDists(dists), mesh, toLoc(loc))));
           })
      .def("end_endpoint",
           [](TraceBuilder &t, const std::vector<int64_t> &results,
              const std::vector<PyDist> &dists, const Loc &loc) {
             check(
                 t.endEndpoint(toValues(results), toDists(dists), toLoc(loc)));
           })
      .def("abandon_endpoint", &TraceBuilder::abandonEndpoint)
      .def("has_endpoint", &TraceBuilder::hasEndpoint)
      .def("in_endpoint", &TraceBuilder::inEndpoint)
      .def("state_get",
           [](TraceBuilder &t, const std::string &name, const Loc &loc) {
             return check(t.stateGet(name, toLoc(loc))).id;
           })
      .def(
          "state_set",
          [](TraceBuilder &t, const std::string &name, int64_t v,
             const Loc &loc) { check(t.stateSet(name, Value{v}, toLoc(loc))); })
      .def("mark_kept",
           [](TraceBuilder &t, int64_t index) { return t.markKept(index); })
      .def("debug_print",
           [](TraceBuilder &t, const std::string &format,
              const std::vector<int64_t> &values, const Loc &loc) {
             std::vector<Value> v;
             for (int64_t id : values)
               v.push_back(Value{id});
             check(t.debugPrint(format, v, toLoc(loc)));
           })
      .def("all_reduce",
           [](TraceBuilder &t, int64_t v, const std::vector<std::string> &dims,
              const std::string &op, const Loc &loc) {
             return check(t.allReduce(Value{v}, dims, toReduce(op), toLoc(loc)))
                 .id;
           })
      .def("all_gather",
           [](TraceBuilder &t, int64_t v, const std::vector<std::string> &dims,
              int64_t axis, const Loc &loc) {
             return check(t.allGather(Value{v}, dims, axis, toLoc(loc))).id;
           })
      .def("reduce_scatter",
           [](TraceBuilder &t, int64_t v, const std::vector<std::string> &dims,
              int64_t axis, const std::string &op, const Loc &loc) {
             return check(t.reduceScatter(Value{v}, dims, axis, toReduce(op),
                                          toLoc(loc)))
                 .id;
           })
      .def("broadcast_from",
           [](TraceBuilder &t, int64_t v, const std::vector<std::string> &dims,
              int64_t root, const Loc &loc) {
             return check(t.broadcastFrom(Value{v}, dims, root, toLoc(loc))).id;
           })
      .def("declare_actor_mesh",
           [](TraceBuilder &t, const std::string &name, const std::string &cls,
              const std::string &mesh, const Loc &loc) {
             check(t.declareActorMesh(name, cls, mesh, toLoc(loc)));
           })
      .def("has_actor_mesh", &TraceBuilder::hasActorMesh)
      .def("call",
           [](TraceBuilder &t, const std::string &actorMesh,
              const std::string &endpoint, const std::vector<int64_t> &args,
              const Loc &loc) {
             return toIds(check(
                 t.call(actorMesh, endpoint, toValues(args), toLoc(loc))));
           })
      .def("broadcast",
           [](TraceBuilder &t, const std::string &actorMesh,
              const std::string &endpoint, const std::vector<int64_t> &args,
              const Loc &loc) {
             check(
                 t.broadcast(actorMesh, endpoint, toValues(args), toLoc(loc)));
           })
      // Inspection
      .def("info",
           [](TraceBuilder &t, int64_t v) {
             ValueInfo i = t.info(Value{v});
             std::optional<std::string> partial;
             if (i.dist.partial)
               partial = reduceName(*i.dist.partial);
             return std::make_tuple(i.shape, std::string(dtypeName(i.dtype)),
                                    i.scalar, i.mesh,
                                    PyDist{i.dist.split, partial});
           })
      .def("local_shape",
           [](TraceBuilder &t, const std::vector<int64_t> &shape,
              const PyDist &dist, const std::string &mesh) {
             return check(t.localShape(shape, toDist(dist), mesh));
           })
      .def("verify", [](TraceBuilder &t) { check(t.verify()); })
      .def("str", &TraceBuilder::str, nb::arg("debug_info") = false)
      // Compiling the module is the driver's (TraceCompile.h): these
      // methods only give Python one handle for the trace and its stages.
      .def("lower",
           [](TraceBuilder &t, const std::string &stage, bool debugInfo,
              const std::string &backend) {
             monarch::driver::LowerOptions o;
             o.stage = stage;
             o.debugInfo = debugInfo;
             o.backend = backend;
             return check(monarch::driver::lowerTrace(t, o));
           })
      .def("dump_stages",
           [](TraceBuilder &t, const std::string &dir,
              const std::string &backend) {
             check(monarch::driver::dumpTrace(t, dir, backend));
           })
      .def("plan_summary", [](TraceBuilder &t, const std::string &backend) {
        monarch::codegen::PlanSummary s =
            check(monarch::driver::summarizeTrace(t, backend));
        nb::list ranks, links, colls;
        for (const auto &r : s.ranks) {
          nb::dict d;
          d["plan"] = r.plan;
          d["rank"] = r.rank;
          d["ops"] = r.ops;
          d["kernels"] = r.kernels;
          d["sends"] = r.sends;
          d["recvs"] = r.recvs;
          d["collectives"] = r.collectives;
          d["arena_bytes"] = r.arenaBytes;
          d["peak_bytes"] = r.peakBytes;
          d["state_bytes"] = r.stateBytes;
          d["work"] = r.work;
          ranks.append(d);
        }
        for (const auto &l : s.links) {
          nb::dict d;
          d["plan"] = l.plan;
          d["from"] = l.from;
          d["to"] = l.to;
          d["bytes"] = l.bytes;
          d["root"] = l.root;
          d["from_root"] = l.fromRoot;
          d["to_root"] = l.toRoot;
          links.append(d);
        }
        for (const auto &c : s.collectives) {
          nb::dict d;
          d["plan"] = c.plan;
          d["communicator"] = c.communicator;
          d["kind"] = c.kind;
          d["bytes"] = c.bytes;
          d["count"] = c.count;
          d["root"] = c.root;
          nb::list members;
          for (int64_t m : c.members)
            members.append(m);
          d["members"] = members;
          colls.append(d);
        }
        nb::dict out;
        out["global_work"] = s.globalWork;
        out["ranks"] = ranks;
        out["links"] = links;
        out["collectives"] = colls;
        return out;
      });
}
