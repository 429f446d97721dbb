"""`@mc.compile`: trace a function once per specialisation and lower it.

A compiled function is traced on its first call (or by `fn.ir(stage,
*example_args)`) into a traced MLIR module, one per distinct key of argument
shapes, dtypes and static (non-array) arguments; calls with a known key reuse
the trace. Python numbers are static (baked in as constants); numpy scalars
(`np.float32(0.1)`) are runtime scalar arguments. `fn.ir(stage)` runs the stage pipelines of the compiler on it.
Running needs the executor, reached through `_runtime.run_compiled`.
"""
import functools
import inspect
import os
import sys

import numpy as np

from . import _pytree, _runtime, _settings, _trace, errors, knobs
from ._location import def_loc, user_loc
from ._source import return_loc
from ._tensor import DTYPES, Tensor, dtype_name


def _as_array(x):
    """numpy view of an array-like input, or None for static arguments."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (bool, int, float, complex, str, bytes, type(None))):
        return None
    if isinstance(x, np.generic):
        return None
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError):
            pass
    if hasattr(x, "__array__"):
        return np.asarray(x)
    return None


def _result_converter(types):
    """How results come back, given the types of a call's array inputs:
    numpy arrays by default; when every array input was of one other
    DLPack type (torch.Tensor, cupy, ...), that type, made by its library's
    `from_dlpack` (zero-copy)."""
    if len(types) != 1:
        return None
    (kind,) = types
    if issubclass(kind, np.ndarray) or not hasattr(kind, "__dlpack__"):
        return None
    library = sys.modules.get(kind.__module__.split(".")[0])
    from_dlpack = getattr(library, "from_dlpack", None)
    return from_dlpack if callable(from_dlpack) else None


class Specialization:
    """One trace of a compiled function: its module and what it returns
    (`structure`, a `_pytree` treedef, and the dtypes of its leaves)."""

    def __init__(self, trace, key, structure, num_inputs, result_dtypes=()):
        self.trace = trace
        self.key = key
        self.structure = structure
        self.num_inputs = num_inputs
        self.result_dtypes = tuple(result_dtypes)
        # MONARCH_CHECK_REPLICATED=1: (endpoint, result index, dtype, loc)
        # of each checked result; two values each follow the results.
        self.replication_probes = []
        # donate_argnums: per result leaf, whether it stays on the workers
        # (a RemoteArray); empty without donation.
        self.kept = ()

    @property
    def builder(self):
        return self.trace.builder

    @property
    def settings(self):
        """The MONARCH_* values it was traced with (_settings.py), which
        nothing downstream reads again."""
        return self.trace.settings

    @property
    def actors(self):
        """Actor mesh symbol -> actor object (with its mc.param values)."""
        return dict(self.trace.actors)

    @property
    def meshes(self):
        """Mesh symbol -> Mesh object."""
        return dict(self.trace.meshes)

    def state_values(self):
        """{(actor mesh, state name): initial global value (numpy)} of the
        actors this specialisation uses (what the executor loads)."""
        out = {}
        for name, actor in self.trace.actors.items():
            for state, p in actor.__dict__.get("_mc_params", {}).items():
                out[(name, state)] = p.value
        return out


def _host_of(mesh, rank):
    """The host rank `rank` of root mesh `mesh` runs on (0, 1, ...), or None
    when only the run decides it. The local launcher runs every rank here;
    the others place a mesh's ranks by its `hosts` dimension, in blocks of
    the processes per host (docs/executor.md, "Across hosts")."""
    if mesh is None:
        return None
    if mesh.launcher == "local":
        return 0
    hosts = mesh.dims.get("hosts")
    if not hosts:
        return None
    return rank // (mesh.size // hosts)


# all_gather and reduce_scatter run hierarchically up to these many bytes
# (HybridCommunicator.h, kHierarchicalAllGatherMaxBytes and
# kHierarchicalReduceScatterMaxBytes).
_HIERARCHICAL_MAX_BYTES = {"all_gather": 4 << 20, "reduce_scatter": 16 << 20}


def _transport(backend, hosts, kind=None, op_bytes=0):
    """How the bytes between ranks on `hosts` move, as the worker's data
    plane decides it (executor/lib/data/Factory.cpp): `kind` is a
    collective's (`op_bytes` the larger of one instruction's input and
    output), None for a send between two ranks."""
    if backend == "nccl":
        return "nccl"
    if None in hosts:
        return "shm or gloo (decided where the ranks run)"
    if not knobs.shm:
        return "gloo"
    if len(set(hosts)) == 1:
        return "shm"
    bound = _HIERARCHICAL_MAX_BYTES.get(kind, op_bytes)
    if (kind is not None and kind != "all_to_all" and knobs.hierarchical
            and op_bytes <= bound):
        per_host = [hosts.count(h) for h in set(hosts)]
        if min(per_host) >= 2 and len(set(per_host)) == 1:
            return "shm+gloo"
    return "gloo"


class PlanSummary:
    """Ranks, ops, bytes moved per link and peak memory per rank, and how
    each link and collective moves its bytes."""

    def __init__(self, data, meshes=None, backend="gloo"):
        self.ranks = data["ranks"]
        self.links = data["links"]
        self.collectives = data["collectives"]
        self.global_work = data["global_work"]
        meshes = meshes or {}
        for l in self.links:
            root = meshes.get(l.get("root"))
            l["transport"] = _transport(
                backend, [_host_of(root, l["from_root"]),
                          _host_of(root, l["to_root"])])
        for c in self.collectives:
            root = meshes.get(c.get("root"))
            members = c.get("members", [])
            # One instruction's input; an all_gather's output is n times it.
            per_op = c["bytes"] // max(1, c["count"])
            if c["kind"] == "all_gather":
                per_op *= max(1, len(members))
            c["transport"] = _transport(
                backend, [_host_of(root, m) for m in members], c["kind"],
                per_op)

    @property
    def transports(self):
        """{(plan, communicator, kind): transport} of the collectives and
        {(plan, from, to): transport} of the point-to-point links: "shm"
        (one host), "gloo" (TCP), "shm+gloo" (hierarchical: within each host
        over shared memory, across hosts over TCP; every collective but
        all_to_all) or "nccl", from where the
        mesh's launcher and `hosts` dimension put the ranks."""
        out = {(c["plan"], c["communicator"], c["kind"]): c["transport"]
               for c in self.collectives}
        out.update({(l["plan"], l["from"], l["to"]): l["transport"]
                    for l in self.links})
        return out

    @property
    def compute_share(self):
        """{(plan, rank): the rank's share of the step's compute}: the
        iterations of the structured ops of the kernels it launches over
        those of the traced program on one machine (ideal 1/N on N ranks;
        1.0 means the rank computes everything)."""
        total = self.global_work or 1
        return {(r["plan"], r["rank"]): r["work"] / total for r in self.ranks}

    @property
    def peak_memory(self):
        """{(plan, rank): peak live bytes of the rank's schedule}."""
        return {(r["plan"], r["rank"]): r["peak_bytes"] for r in self.ranks}

    @property
    def state_memory(self):
        """{(plan, rank): bytes of actor state the rank holds for the plan}
        (parameters and optimizer moments; a split state counts the rank's
        shard, so ZeRO-1's shard_state divides the moments by the ranks)."""
        return {(r["plan"], r["rank"]): r["state_bytes"] for r in self.ranks}

    @property
    def bytes_moved(self):
        """Point-to-point bytes per link {(plan, from, to): bytes}."""
        return {(l["plan"], l["from"], l["to"]): l["bytes"] for l in self.links}

    def __str__(self):
        out = ["rank  plan                              ops  kernels  sends  recvs  colls  peak bytes  arena bytes  state bytes  compute"]
        share = self.compute_share
        for r in self.ranks:
            out.append(f"{r['rank']:>4}  {r['plan']:<32} {r['ops']:>4}  "
                       f"{r['kernels']:>7}  {r['sends']:>5}  {r['recvs']:>5}  "
                       f"{r['collectives']:>5}  {r['peak_bytes']:>10}  "
                       f"{r['arena_bytes']:>11}  {r['state_bytes']:>11}  "
                       f"{share[(r['plan'], r['rank'])]:>7.2f}")
        if self.links:
            out.append("point-to-point links (bytes per step):")
            for l in self.links:
                out.append(f"  {l['plan']}: rank {l['from']} -> rank {l['to']}: "
                           f"{l['bytes']} via {l['transport']}")
        if self.collectives:
            out.append("collectives (bytes per step, summed over ranks):")
            for c in self.collectives:
                out.append(f"  {c['plan']}: {c['kind']} on {c['communicator']}: "
                           f"{c['count']} x, {c['bytes']} bytes via "
                           f"{c['transport']}")
        return "\n".join(out)

    __repr__ = __str__


def _array_tree(a):
    """(leaves, treedef) when `a` is a tuple, list or dict (nested) whose
    leaves are all numpy arrays, scalars or RemoteArrays (what a donating
    call returned: `params, loss = step(params, x)`), else None."""
    if not isinstance(a, (tuple, list, dict)):
        return None
    try:
        leaves, treedef = _pytree.flatten(
            a, (np.ndarray, np.generic, _runtime.RemoteArray))
    except _pytree.NotATree:
        return None
    return (leaves, treedef) if leaves else None


class Compiled:
    """A function compiled for a mesh: call it, or inspect `ir(stage)`."""

    def __init__(self, fn, mesh=None, on_failure=None, donate_argnums=()):
        self.fn = fn
        self.mesh = mesh
        self.on_failure = on_failure
        self.donate_argnums = donate_argnums
        self._cache = {}
        # (shape, dtype) of each plain ndarray argument -> specialisation
        # (the fast path of __call__).
        self._fast = {}
        self._last = None
        self.trace_count = 0
        functools.update_wrapper(self, fn)
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError):
            self._signature = None
        # Calls passing exactly the plain positional parameters skip binding.
        params = self._signature.parameters.values() if self._signature else ()
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                    for p in params)
        self._plain_arity = len(params) if plain else -1

    # Specialisation -----------------------------------------------------
    def _key(self, args, loc):
        key, inputs, kinds = [], [], set()
        for i, a in enumerate(args):
            tree = _array_tree(a)
            if tree is not None:
                # A pytree of arrays (params = {"w": ..., "b": [...]}): one
                # argument per leaf.
                leaves, treedef = tree
                key.append(("tree", treedef, len(leaves)))
                for leaf in leaves:
                    self._key_one(i, leaf, key, inputs, kinds, loc)
                continue
            self._key_one(i, a, key, inputs, kinds, loc)
        return tuple(key), inputs, kinds

    def _key_one(self, i, a, key, inputs, kinds, loc):
        """The key entry and input of one argument (or pytree leaf); adds an
        array argument's type to `kinds`."""
        if isinstance(a, Tensor):
            raise errors.UnsupportedError(
                f"unsupported: calling compiled function {self.__name__} "
                "from traced code", *loc)
        if isinstance(a, _runtime.RemoteArray):
            # Kept on the workers by an earlier call: typed like the array.
            key.append(("array", a.shape, dtype_name(a.dtype)))
            inputs.append(a)
            return
        if isinstance(a, np.generic) and dtype_name(a.dtype) in DTYPES:
            # A numpy scalar is a runtime scalar argument (like a
            # learning rate that changes every step): no retrace.
            key.append(("scalar", (), dtype_name(a.dtype)))
            inputs.append(a)
            return
        arr = _as_array(a)
        if arr is None:
            try:
                hash(a)
            except TypeError:
                raise errors.TraceError(
                    f"argument #{i} of {self.__name__} ({type(a).__name__}) "
                    "is neither an array nor a hashable static value",
                    *loc) from None
            key.append(("static", type(a).__name__, a))
            return
        name = dtype_name(arr.dtype)
        if name not in DTYPES:
            hint = {"float64": "np.float32", "int64": "np.int32"}.get(name, "np.float32")
            raise errors.UnsupportedError(
                f"unsupported dtype {name} for argument #{i} of "
                f"{self.__name__} (supported: {', '.join(DTYPES)}); "
                f"convert it, e.g. x.astype({hint})", *loc)
        key.append(("array", tuple(arr.shape), name))
        inputs.append(arr)
        kinds.add(type(a))

    def _bind(self, args, kwargs, loc):
        """Positional arguments with keywords and defaults filled in."""
        if not kwargs and len(args) == self._plain_arity:
            return tuple(args)
        sig = self._signature
        if sig is None:
            return tuple(args)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as err:
            raise errors.TraceError(f"{self.__name__}(): {err}", *loc) from None
        bound.apply_defaults()
        if bound.kwargs:
            raise errors.UnsupportedError(
                f"unsupported: keyword-only parameters of {self.__name__} "
                f"({', '.join(bound.kwargs)})", *loc)
        return bound.args

    def _specialize(self, args, loc, kwargs=None):
        args = self._bind(args, kwargs or {}, loc)
        key, inputs, kinds = self._key(args, loc)
        spec = self._cache.get(key)
        if spec is None:
            spec = self._trace(key, args, _settings.Settings.resolve())
            self._cache[key] = spec
            _dump(self, spec)
        self._last = spec
        return spec, inputs, kinds

    def _trace(self, key, args, settings):
        trace = _trace.Trace(self.__name__, settings)
        self.trace_count += 1
        floc = def_loc(self.fn)
        with trace:
            mesh_sym = trace.mesh_symbol(self.mesh, floc) if self.mesh else ""
            argtypes = [([*k[1]], k[2], k[0] == "scalar") for k in key
                        if k[0] in ("array", "scalar")]
            ids = trace.call("begin_function", trace.name, argtypes, mesh_sym,
                             floc, loc=floc)
            it = iter(ids)
            keys = iter(key)
            traced_args = []
            donated = []  # (shape, dtype) of each donated array leaf
            for n, a in enumerate(args):
                k = next(keys)
                if k[0] == "tree":
                    treedef, count = k[1], k[2]
                    leaves = []
                    for _ in range(count):
                        k = next(keys)
                        leaves.append(Tensor(trace, next(it)))
                        if n in self.donate_argnums and k[0] == "array":
                            donated.append((tuple(k[1]), k[2]))
                    traced_args.append(_pytree.unflatten(treedef, leaves))
                elif k[0] in ("array", "scalar"):
                    traced_args.append(Tensor(trace, next(it)))
                    if n in self.donate_argnums and k[0] == "array":
                        donated.append((tuple(k[1]), k[2]))
                else:
                    traced_args.append(a)
            result = self.fn(*traced_args)
            rloc = return_loc(self.fn)
            try:
                flat, structure = _pytree.flatten(result, Tensor,
                                                  _pytree.STATIC)
            except _pytree.NotATree as err:
                raise errors.UnsupportedError(
                    f"{self.__name__} must return traced tensors (and Python "
                    "numbers or strings), in (nested) tuples, lists or dicts "
                    "with string or integer keys, or None; got "
                    f"{err}", *rloc) from None
            for r in flat:
                if r._trace is not trace:
                    raise errors.TraceError(
                        "a result comes from another trace", *rloc)
            # MONARCH_CHECK_REPLICATED=1: the probes of endpoint calls come
            # back after the results (_runtime.check_replicated).
            probes = trace.replication_probes
            ids = [r._id for r in flat] + [t._id for p in probes
                                           for t in p[4:]]
            trace.call("end_function", ids, rloc, loc=rloc)
            # donate_argnums: each donated array is paired with the first
            # result left of its shape and dtype, which then stays on the
            # workers (JAX pairs donated buffers with outputs the same way).
            kept = [False] * len(flat)
            for shape, dtype in donated:
                for j, r in enumerate(flat):
                    if (not kept[j] and tuple(r.shape) == shape and
                            r.dtype == dtype and not r._scalar and
                            trace.builder.mark_kept(j)):
                        kept[j] = True
                        break
            # A mesh or actor named like the function keeps its name; the
            # function's symbol then differs from its Python name.
            trace.name = trace.builder.function_name()
        spec = Specialization(trace, key, structure, len(argtypes),
                              [r.dtype for r in flat])
        spec.replication_probes = [p[:4] for p in probes]
        spec.kept = tuple(kept) if any(kept) else ()
        return spec

    # Public API -----------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # Fast path: the same plain ndarray arguments (shapes and dtypes) as
        # a call that ran before; everything else takes the full path.
        if not kwargs and len(args) == self._plain_arity:
            key = []
            for a in args:
                if type(a) is not np.ndarray:
                    break
                key.append((a.shape, a.dtype))
            else:
                spec = self._fast.get(tuple(key))
                if spec is not None:
                    out = _runtime.fast_call(self, spec, args)
                    if out is not _runtime.NOT_TAKEN:
                        self._last = spec
                        return out
        loc = user_loc()
        try:
            spec, inputs, kinds = self._specialize(args, loc, kwargs)
        except errors.TraceError as err:
            raise err.with_traceback(None) from None
        result = _runtime.run_compiled(self, spec, inputs)
        if (not kwargs and len(args) == self._plain_arity and
                len(inputs) == len(args) and
                all(type(a) is np.ndarray for a in args)):
            self._fast[tuple((a.shape, a.dtype) for a in args)] = spec
        convert = _result_converter(kinds)
        if convert is None:
            return result
        leaves, treedef = _pytree.flatten(result, np.ndarray, _pytree.STATIC)
        return _pytree.unflatten(treedef, [convert(x) for x in leaves])

    def trace(self, *args, **kwargs):
        """Traces (or finds the cached trace) for `args`; the Specialization."""
        try:
            return self._specialize(args, user_loc(), kwargs)[0]
        except errors.TraceError as err:
            raise err.with_traceback(None) from None

    def ir(self, stage="traced", *args, debug_info=True, backend=None):
        """MLIR text of `stage` (traced, partitioned, split, planned) for
        `args` (traced without running), or for the last specialisation.

        By default the ops carry the source locations of the user code that
        made them, `loc("your_file.py":LINE:COL)` (your lines, never the
        library's); `debug_info=False` prints the module without locations.
        `backend` ("gloo" or "nccl") is the one the plan is built for
        (default: MONARCH_BACKEND, else gloo)."""
        if stage not in _runtime.STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages: "
                             f"{', '.join(_runtime.STAGES)}")
        try:
            spec = self._spec_for(args, user_loc())
            return spec.trace.call("lower", stage, bool(debug_info),
                                   backend or spec.settings.backend)
        except errors.TraceError as err:
            raise err.with_traceback(None) from None

    def plan_summary(self, *args, backend=None):
        """Ranks, ops, bytes moved per link and peak memory per rank of the
        planned program (for `args`, or the last specialisation), and the
        transport of each link and collective (`.transports`)."""
        try:
            spec = self._spec_for(args, user_loc())
            backend = backend or spec.settings.backend
            return PlanSummary(spec.trace.call("plan_summary", backend),
                               spec.meshes, backend)
        except errors.TraceError as err:
            raise err.with_traceback(None) from None

    def _plan_for(self, args):
        """The compiled plan (a native Plan) of the specialisation for
        `args`, or the last one: traced and compiled if it is not yet."""
        try:
            spec = self._spec_for(args, user_loc())
        except errors.TraceError as err:
            raise err.with_traceback(None) from None
        return _runtime._compile(self, spec, spec.trace.name)

    def save_plan(self, path, *args):
        """Writes the compiled plan (for `args`, or the last specialisation)
        as a .mcplan file at `path`, the file `monarch-compile -o` writes:
        `monarch-run PATH --inputs a.npy ...` runs it on its own workers,
        without Python (its controller program is the function's name, the
        first in the file). Returns `path`."""
        plan = self._plan_for(args)
        with open(path, "wb") as f:
            f.write(plan.to_bytes())
        return path

    def plan_graph(self, path, *args, memory_plot=None):
        """Draws the compiled plan (for `args`, or the last specialisation)
        as SVG at `path`: a lane per rank with its kernels, transfers,
        collectives, waits, feeds and fetches in issue order, data and
        control edges, and each box's tooltip naming your source line. With
        `memory_plot=path2`, each rank's arena over the step too. Returns
        `path`."""
        plan = self._plan_for(args)
        graph, memory = _runtime.native.plan_pictures(plan)
        with open(path, "w") as f:
            f.write(graph)
        if memory_plot is not None:
            with open(memory_plot, "w") as f:
                f.write(memory)
        return path

    def simulate(self, *args, topology="this-machine", trace=None):
        """Predicts a step of the compiled plan (for `args`, or the last
        specialisation) without running it: its instruction streams
        replayed in a discrete-event model (docs/plan.md). `topology` is a
        preset ("this-machine", "dgx-h100", "dgx-h200", "cpu-cluster-25g"),
        a dict of overrides (`{"base": "dgx-h100", "inter_bytes_per_us":
        25e3}`), or the path of such a JSON file. With `trace=path`, the
        predicted timeline as a Chrome/Perfetto trace. Returns a dict:
        `steps` (per step plan: `step_us`, `critical_rank`, `critical_op`,
        `critical_loc`, `ranks` with compute/comm/wait/finish us,
        `link_bytes`), `topology`, and `report` (the text
        `monarch-compile --simulate` prints)."""
        import json
        if isinstance(topology, str) and topology.endswith(".json"):
            with open(topology) as f:
                topology = json.load(f)
        if isinstance(topology, dict):
            overrides = dict(topology)
            preset = overrides.pop("base", "this-machine")
        else:
            preset, overrides = topology, {}
        plan = self._plan_for(args)
        try:
            result = _runtime.native.simulate_plan(
                plan, preset, {k: float(v) for k, v in overrides.items()})
        except ValueError as err:
            raise errors.MonarchError(f"{self.__name__}.simulate: {err}") \
                from None
        if trace is not None:
            with open(trace, "w") as f:
                f.write(result["trace"])
        return result

    def _takes_no_arguments(self):
        if self._signature is None:
            return False
        return all(p.default is not inspect.Parameter.empty or
                   p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in self._signature.parameters.values())

    def _spec_for(self, args, loc):
        # A function of no arguments needs no example arguments.
        if args or (self._last is None and self._takes_no_arguments()):
            return self._specialize(args, loc)[0]
        if self._last is None:
            raise errors.MonarchError(
                f"{self.__name__} has not been traced yet: call it, or pass "
                f"example arguments: {self.__name__}.ir(stage, *args)")
        return self._last

    @property
    def specializations(self):
        return list(self._cache.values())


def _dump(compiled, spec):
    """With MONARCH_DUMP_DIR set, lowers a new specialisation to `planned`
    with the compile driver's dump: `<dir>/<fn>.<n>/` receives the input,
    the IR after every pass (`NN-<pass>.mlir`) and each stage
    (`<stage>.mlir`), as `monarch-compile --dump-dir` writes them. A
    failure leaves the files up to the failing pass and its report in
    `error.txt`; the call itself then fails where it compiles."""
    folder = spec.settings.dump_dir
    if not folder:
        return
    path = os.path.join(folder,
                        f"{compiled.__name__}.{len(compiled._cache) - 1}")
    os.makedirs(path, exist_ok=True)
    try:
        spec.trace.call("dump_stages", path, spec.settings.backend)
    except errors.TraceError as err:
        with open(os.path.join(path, "error.txt"), "w") as f:
            f.write(str(err) + "\n")


def compile(fn=None, *, mesh=None, on_failure=None, donate_argnums=()):
    """`@mc.compile`, `@mc.compile(mesh=mesh)`, or with
    `on_failure=mc.Restart(max_retries=N, checkpoint_every=K)` to restart the
    mesh's workers on a failure instead of raising (docs/executor.md,
    "Recovery"). The default, None, fails fast with mc.ExecutionError.

    `donate_argnums=(0, 1)` (JAX's name): the results that take the place of
    those arguments (the first result of each donated array's shape and
    dtype) stay on the workers and come back as `mc.RemoteArray`s, which the
    next call takes without a transfer (`np.asarray(r)` fetches one)."""
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)
    try:
        donate_argnums = tuple(int(i) for i in donate_argnums)
    except (TypeError, ValueError):
        raise TypeError("mc.compile: donate_argnums must be an int or a "
                        f"tuple of ints, got {donate_argnums!r}") from None
    if on_failure is not None and not isinstance(on_failure, _runtime.Restart):
        hint = (" (pass an instance: mc.Restart(max_retries=N, "
                "checkpoint_every=K))" if on_failure is _runtime.Restart
                else "")
        raise TypeError("mc.compile: on_failure must be mc.Restart(...) or "
                        f"None, got {on_failure!r}{hint}")
    if fn is None:
        return lambda f: Compiled(f, mesh, on_failure, donate_argnums)
    if not callable(fn):
        raise TypeError(f"mc.compile: expected a function, got {fn!r}")
    return Compiled(fn, mesh, on_failure, donate_argnums)
