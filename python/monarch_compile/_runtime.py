"""The seam between tracing and execution: compiled functions run here.

`run_compiled` receives the compiled function, the specialisation traced for
these arguments and the input arrays. The first run of a specialisation
compiles its traced module to an ExecutionPlan (`_monarch_native.compile_plan`:
the stage pipelines, the plan builder and the compile cache of
monarch-compile) and loads it on the workers of the root mesh; later runs only
call the plan's controller program. Each root mesh has one `Controller`
(`_monarch_native.Controller`), which starts `monarch-worker` processes, one
per rank, at the first run and stops them when the mesh stops (`mesh.stop()`,
leaving `with mc.mesh(...)`, interpreter exit). Actor state (`mc.param`) is
written to the workers the first time a loaded plan declares it, sharded per
rank as the param says, and lives there across calls.

Failures are fatal by default (`mc.ExecutionError` naming the rank, the op
and the source line). A function compiled with
`on_failure=mc.Restart(max_retries=N, checkpoint_every=K)` gives its root
mesh a restart policy instead: the controller restarts every worker, restores
the actor state of its last checkpoint, replays the steps since it and runs
the failed step again (docs/executor.md, "Recovery"); each recovery is
reported with a RuntimeWarning and counted in `mc.recovery_stats(mesh)`.
"""
import numbers
import sys
import threading
import warnings
import weakref

import numpy as np

from . import _pytree, _tools, errors, knobs
from ._native import native
from ._tensor import numpy_dtype_name

# The compile stages, as the compiler lists them (passes/Pipelines.h).
STAGES = tuple(native.stages())

# id(root mesh) -> _MeshRuntime
_runtimes = {}


class Restart:
    """`on_failure=mc.Restart(max_retries=N, checkpoint_every=K)`: when a
    worker of the mesh crashes, hangs, loses its connection or raises, restart
    every worker, restore the actor state checkpointed last, replay the steps
    run since that checkpoint (their inputs are kept) and retry the failed
    step; give up after `max_retries` consecutive failed restarts, raising
    the first failure with the count. A checkpoint (every actor state read
    back to the controller) is taken after every `checkpoint_every` steps
    that touch actor state."""

    __slots__ = ("max_retries", "checkpoint_every")

    def __init__(self, max_retries=3, checkpoint_every=1):
        for name, value, low in (("max_retries", max_retries, 0),
                                 ("checkpoint_every", checkpoint_every, 1)):
            if isinstance(value, bool) or not isinstance(value,
                                                         numbers.Integral):
                raise TypeError(f"mc.Restart: {name} must be an int, got "
                                f"{type(value).__name__} {value!r}")
            if value < low:
                raise ValueError(f"mc.Restart: {name} must be >= {low}, got "
                                 f"{value}")
            if value > 2**31 - 1:
                raise ValueError(f"mc.Restart: {name} is too large ({value})")
        self.max_retries = int(max_retries)
        self.checkpoint_every = int(checkpoint_every)

    def _key(self):
        return (self.max_retries, self.checkpoint_every)

    def __eq__(self, other):
        return isinstance(other, Restart) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"mc.Restart(max_retries={self.max_retries}, "
                f"checkpoint_every={self.checkpoint_every})")


def _worker_binary():
    """monarch-worker: $MONARCH_WORKER_BIN, else found as the tools are
    (`_tools.binary_folders`: the build, or the installed package's bin/)."""
    if knobs.worker_bin:
        return knobs.worker_bin
    try:
        return str(_tools.find_binary("monarch-worker"))
    except FileNotFoundError as e:
        raise errors.ExecutionError(
            f"{e}, or set MONARCH_WORKER_BIN") from None


def _root(mesh):
    while mesh.parent is not None:
        mesh = mesh.parent
    return mesh


class _MeshRuntime:
    """The controller of one root mesh and what has been loaded on it."""

    def __init__(self, root):
        self.size = root.size
        self.name = repr(root)
        self.launcher = getattr(root, "launcher", "local")
        self.hosts = root.dims.get("hosts", 1)
        self.controller = None
        self.programs = {}         # controller program name -> _Loaded
        self.initialized = set()   # state keys written to the workers
        self.policy = None         # Restart, once a function brought one
        self.restarts_seen = 0

    def ensure_started(self):
        if self.controller is None:
            p = self.policy or Restart(0, 1)
            self.controller = _call(native.Controller.start, self.size,
                                    _worker_binary(),
                                    knobs.log_level if
                                    knobs.is_set("MONARCH_LOG_LEVEL") else "warn",
                                    p.max_retries, p.checkpoint_every,
                                    self.launcher, self.hosts)
        return self.controller

    def apply_policy(self, compiled):
        """Gives this mesh the restart policy of `compiled`, if it has one.
        The policy belongs to the mesh's job (a restart restarts all of it):
        functions on one mesh must agree on it."""
        policy = getattr(compiled, "on_failure", None)
        if policy is None or policy == self.policy:
            return
        if self.policy is not None:
            raise errors.UnsupportedError(
                f"unsupported: {compiled.__name__}() asks for on_failure="
                f"{policy!r} but {self.name} already runs with "
                f"{self.policy!r}; every function on one mesh must use the "
                "same restart policy (a restart restarts the whole mesh)")
        if self.controller is not None:
            _call(self.controller.set_recovery_policy, policy.max_retries,
                  policy.checkpoint_every)
        self.policy = policy

    def report_restarts(self, compiled):
        """A RuntimeWarning for each restart the last call needed."""
        if self.policy is None or self.controller is None:
            return
        stats = self.controller.recovery_stats()
        new = stats["restarts"] - self.restarts_seen
        if new <= 0:
            return
        self.restarts_seen = stats["restarts"]
        warnings.warn(
            f"{compiled.__name__}(): the mesh's workers were restarted "
            f"{new} time{'s' if new > 1 else ''} ({self.policy!r}) after: "
            f"{stats['last_failure']}; actor state was restored from the "
            f"last checkpoint and {stats['replayed_steps']} step(s) replayed "
            "so far", RuntimeWarning, stacklevel=4)

    def stop(self):
        if self.controller is not None:
            self.controller.stop()
            self.controller = None
        self.programs.clear()
        self.initialized.clear()


class RemoteArray:
    """A result that stayed on the workers: `@mc.compile(donate_argnums=...)`
    returns the results paired with donated arguments as these. Pass it to
    the next call (it is fed from where it is, no transfer), or read it with
    `np.asarray(x)` (fetched from the workers once). It lives as long as
    the mesh's workers (a restart or `mesh.stop()` loses it)."""

    __array_priority__ = 1000

    def __init__(self, runtime, controller, native):
        self._runtime = runtime
        self._controller = controller
        self._native = native
        self.shape = tuple(native.shape)
        self.dtype = (_bfloat16("bfloat16 results")
                      if native.dtype == "bfloat16" else np.dtype(native.dtype))
        self._value = None

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d RemoteArray")
        return self.shape[0]

    def _live(self):
        return (self._runtime.controller is self._controller and
                self._controller is not None)

    def __array__(self, dtype=None, copy=None):
        if self._value is None:
            if not self._live():
                raise errors.ExecutionError(
                    "this value was kept on the workers of a mesh that has "
                    "been stopped or restarted since; it is gone")
            self._value = _from_host(_call(self._controller.fetch_resident,
                                           self._native))
        value = self._value
        return value if dtype is None else value.astype(dtype)

    # A scalar kept on the workers reads as a number, as a 0-d ndarray
    # does: a loss paired with a donated scalar (AdamW's step count has the
    # loss's shape and dtype) still works with float(loss).
    def __float__(self):
        return float(np.asarray(self))

    def __int__(self):
        return int(np.asarray(self))

    def __repr__(self):
        where = "on the workers" if self._live() else "lost"
        return (f"RemoteArray(shape={self.shape}, dtype={self.dtype}, "
                f"{where} of {self._runtime.name})")

    def __del__(self):
        try:
            if self._live():
                self._controller.release_resident(self._native)
        except Exception:  # interpreter exit: nothing to release to
            pass


def _call(fn, *args):
    """Runs a native executor call; its errors become mc.ExecutionError."""
    try:
        return fn(*args)
    except native.ExecutionError as err:
        raise errors.ExecutionError(str(err)) from None


def _runtime_for(mesh):
    if not hasattr(native, "Controller"):
        raise errors.ExecutionError(
            f"the native extension {getattr(native, '__file__', '')} has no "
            "executor binding (it predates it): rebuild _monarch_native and "
            "monarch-worker (`make build`)")
    root = _root(mesh)
    if root._stopped:
        raise errors.ExecutionError(
            f"{root!r} was stopped; create a new mesh to run again")
    rt = _runtimes.get(id(root))
    # Before compiling anything for it (compile time grows with the ranks):
    # the same bound the controller enforces for the local launcher.
    if (rt is None and knobs.launcher == "local" and
            root.size > knobs.max_local_workers):
        file, line, _ = root.loc
        raise errors.ExecutionError(
            f"the local launcher starts at most {knobs.max_local_workers} "
            f"workers on this host, the mesh has {root.size} ranks (made at "
            f"{file}:{line}; raise MONARCH_MAX_LOCAL_WORKERS, or run it "
            "under another launcher)")
    if rt is None:
        rt = _MeshRuntime(root)
        _runtimes[id(root)] = rt
        key = id(root)
        weakref.finalize(root, _finalize, key)
    return rt


def _finalize(key):
    rt = _runtimes.pop(key, None)
    if rt is not None:
        rt.stop()


class _Loaded:
    """A specialisation compiled to a plan for one mesh runtime."""

    def __init__(self, runtime, plan_file, program):
        self.runtime = runtime
        self.plan_file = plan_file  # native Plan: bytes and decoding
        self.program = program
        self.loaded = False
        self.plans = []
        self.state_ranks = {}     # "@actor::@state" -> [ranks]


def _program_name(rt, spec):
    """The controller program name of `spec` on `rt`: the traced function's
    name, made unique when another specialisation of the same function is
    loaded there already (workers refuse a second plan of the same name)."""
    name = spec.trace.name
    n = 1
    while name in rt.programs:
        name = f"{spec.trace.name}__spec{n}"
        n += 1
    return name


def _compile(compiled, spec, program):
    try:
        plan, _hit, timings = native.compile_plan(spec.builder, program,
                                                  spec.settings.backend,
                                                  compiled.__name__)
    except native.PlanCompileError as err:
        raise errors.ExecutionError(
            f"cannot compile {compiled.__name__}() to a plan: {err}") from None
    # Where the compile time went (passes, each kernel's stages, cache hits),
    # as `monarch-compile -v` prints it, when info logging is asked for.
    if timings and spec.settings.report_timings:
        for line in timings.splitlines():
            print(f"monarch: compiling {compiled.__name__}: {line}",
                  file=sys.stderr)
    return plan


def _compile_while_starting(rt, compiled, spec, program):
    """_compile, while the mesh's workers start on another thread when this
    is their first call (the compile releases the GIL; starting them takes
    a registration round trip per worker). A compile that fails stops the
    workers it started, so a refused program leaves nothing running."""
    if rt.controller is not None:
        return _compile(compiled, spec, program)
    outcome = {}

    def start():
        try:
            rt.ensure_started()
        except BaseException as err:  # Re-raised on the calling thread.
            outcome["error"] = err

    starter = threading.Thread(target=start, name="monarch-start-workers",
                               daemon=True)
    starter.start()
    try:
        plan = _compile(compiled, spec, program)
    except BaseException:
        starter.join()
        rt.stop()
        raise
    starter.join()
    if "error" in outcome:
        raise outcome["error"]
    return plan


def _load(loaded):
    rt = loaded.runtime
    ctl = rt.ensure_started()
    plans = _call(ctl.load_plan, loaded.plan_file)
    loaded.plans = list(plans)
    ranks = {}
    for p in plans:
        for key, rs in _call(ctl.state_ranks, p).items():
            ranks.setdefault(key, set()).update(rs)
    loaded.state_ranks = {k: sorted(v) for k, v in ranks.items()}
    loaded.loaded = True


def _init_state(loaded, spec):
    rt = loaded.runtime
    ctl = rt.controller
    for actor_name, actor in spec.actors.items():
        params = actor.__dict__.get("_mc_params", {})
        for state, param in params.items():
            key = f"@{actor_name}::@{state}"
            if key in rt.initialized or key not in loaded.state_ranks:
                continue
            # The global value: for a split parameter the controller cuts
            # each rank's shard (the plan's state_buffer offsets).
            _call(ctl.set_actor_state, key, _to_host(param.value), -1)
            rt.initialized.add(key)


def _to_host(a):
    """(dtype, shape, bytes) of an array: actor state values."""
    a = np.require(np.asarray(a), requirements="C")
    return (a.dtype.name, list(a.shape), a.tobytes())


def _to_arg(a):
    """(dtype, shape, C-contiguous array) of a call argument; 0-d stays 0-d.
    bfloat16 (ml_dtypes) crosses as its bits (uint16): only bytes cross."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    name = numpy_dtype_name(a.dtype)
    if name == "bfloat16":
        a = a.view(np.uint16)
    return (name, list(a.shape), a)


def _bfloat16(what="bfloat16 results"):
    """numpy's bfloat16 dtype (ml_dtypes, as in JAX); a clear error without."""
    try:
        import ml_dtypes
    except ImportError:
        raise errors.ExecutionError(
            f"{what} come back as ml_dtypes.bfloat16 arrays, but ml_dtypes is "
            "not installed: `pip install ml_dtypes`, or cast to float32 "
            "before returning (x.astype(mc.float32))") from None
    return np.dtype(ml_dtypes.bfloat16)


def _from_host(t):
    if isinstance(t, np.ndarray):
        return t
    dtype, shape, data = t
    dt = _bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    return np.frombuffer(data, dtype=dt).reshape(shape).copy()


def _mesh_of(compiled, spec):
    meshes = list(spec.meshes.values())
    if compiled.mesh is not None:
        meshes.insert(0, compiled.mesh)
    if not meshes:
        raise errors.ExecutionError(
            f"{compiled.__name__}() uses no mesh: there is nothing to run it "
            "on (give @mc.compile a mesh= or call actors)")
    roots = {id(_root(m)): _root(m) for m in meshes}
    if len(roots) > 1:
        raise errors.UnsupportedError(
            f"unsupported: {compiled.__name__}() uses meshes of "
            f"{len(roots)} different root meshes; one job runs one root mesh")
    return meshes[0]


NOT_TAKEN = object()


def fast_call(compiled, spec, args):
    """A call of a specialisation that already ran with the same plain
    ndarray arguments: what run_compiled checks on every call was settled
    then (the mesh runtime, the loaded program, the actor state), so only
    that it still holds is checked here. NOT_TAKEN when it does not (the
    caller takes the full path; a function may return None)."""
    fast = spec.__dict__.get("_mc_fast")
    if fast is None:
        return NOT_TAKEN
    rt, loaded, ctl, root = fast
    if (root._stopped or rt.controller is not ctl or ctl is None or
            spec.__dict__.get("_mc_loaded") is not loaded or
            not loaded.loaded or rt.policy is not None):
        spec._mc_fast = None
        return NOT_TAKEN
    try:
        raw = ctl.call(loaded.program, [_to_arg(a) for a in args])
    except native.ExecutionError as err:
        raise errors.ExecutionError(str(err)) from None
    return _pytree.unflatten(spec.structure, [
        t if isinstance(t, np.ndarray) else _from_host(t) for t in raw])


def run_compiled(compiled, specialization, inputs):
    """Runs `specialization` of `compiled` on `inputs` (numpy arrays);
    returns numpy arrays in the structure of the function's result
    (bfloat16 as ml_dtypes.bfloat16)."""
    spec = specialization
    mesh = _mesh_of(compiled, spec)
    rt = _runtime_for(mesh)
    rt.apply_policy(compiled)
    loaded = spec.__dict__.get("_mc_loaded")
    if loaded is None or loaded.runtime is not rt or not loaded.loaded:
        if "bfloat16" in spec.result_dtypes:
            _bfloat16(f"the bfloat16 results of {compiled.__name__}()")
        program = _program_name(rt, spec)
        loaded = _Loaded(rt, _compile_while_starting(rt, compiled, spec,
                                                     program), program)
        spec._mc_loaded = loaded
        _load(loaded)
        rt.programs[program] = loaded
    _init_state(loaded, spec)
    # Later calls with the same plain arrays may skip the checks above
    # (fast_call) when nothing here needs them every call.
    if (not spec.kept and not spec.replication_probes and rt.policy is None
            and all(type(a) is np.ndarray for a in inputs)):
        spec._mc_fast = (rt, loaded, rt.controller,
                         _root(mesh))
    if spec.kept or any(isinstance(a, RemoteArray) for a in inputs):
        outs = _call_kept(rt, compiled, spec, loaded, inputs)
    else:
        args = [_to_arg(a) for a in inputs]
        try:
            outs = [_from_host(t) for t in _call(rt.controller.call,
                                                 loaded.program, args)]
        finally:
            rt.report_restarts(compiled)
    if spec.replication_probes:
        n = len(spec.result_dtypes)
        check_replicated(compiled, spec.replication_probes, outs[n:])
        del outs[n:]
    return _pytree.unflatten(spec.structure, outs)


def _call_kept(rt, compiled, spec, loaded, inputs):
    """A call with donation: RemoteArray arguments of this mesh are fed from
    the workers, and the results `spec.kept` marks come back as
    RemoteArrays."""
    ctl = rt.controller
    args, resident = [], []
    for i, a in enumerate(inputs):
        if isinstance(a, RemoteArray):
            if a._live() and a._runtime is rt:
                name = "bfloat16" if a._native.dtype == "bfloat16" else \
                    a._native.dtype
                placeholder = np.empty(0, np.uint16 if name == "bfloat16"
                                       else np.dtype(name))
                args.append((name, list(a.shape), placeholder))
                resident.append((i, a._native))
                continue
            a = np.asarray(a)
        args.append(_to_arg(a))
    keep = list(spec.kept) + [False] * (len(spec.result_dtypes) +
                                        2 * len(spec.replication_probes) -
                                        len(spec.kept))
    try:
        raw = _call(ctl.call_kept, loaded.program, args, resident, keep)
    finally:
        rt.report_restarts(compiled)
    # Each kept result has a slot of its own: the tracer fetches every
    # returned value separately, even one value returned twice.
    return [RemoteArray(rt, ctl, t) if isinstance(t, native.Resident)
            else _from_host(t) for t in raw]


# Largest difference between ranks, relative to the largest magnitude, that
# MONARCH_CHECK_REPLICATED=1 lets pass for a result declared replicated.
_REPLICATED_RTOL = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-1}


def check_replicated(compiled, probes, values):
    """MONARCH_CHECK_REPLICATED=1: raises if the ranks of an endpoint
    disagreed on a result it declared replicated (`out=None`)."""
    for n, (endpoint, index, dtype, loc) in enumerate(probes):
        spread, scale = float(values[2 * n]), float(values[2 * n + 1])
        if spread <= _REPLICATED_RTOL.get(dtype, 0.0) * scale:
            continue
        raise errors.ExecutionError(
            f"{loc[0]}:{loc[1]}:{loc[2]}: {compiled.__name__}(): result "
            f"#{index} of {endpoint} is declared replicated (out=None, the "
            "default) but its ranks disagree (largest difference "
            f"{spread:g}, largest magnitude {scale:g}); say how the "
            "per-rank results form the global one with @mc.endpoint(out="
            "...): {mesh dim: tensor dim} for a split result, \"sum\" for "
            "partial sums (checked because MONARCH_CHECK_REPLICATED is set)")


def run_endpoint(actor, endpoint_name, args, broadcast):
    """Calls an endpoint eagerly, outside a compiled function."""
    raise errors.ExecutorUnavailableError(
        f"cannot call {type(actor).__name__}.{endpoint_name} outside a compiled "
        "function: eager endpoint calls are not supported yet. Call it inside "
        "an @mc.compile function.")


def start_mesh(mesh):
    """Starts the workers of `mesh`'s root mesh now (otherwise they start at
    the first run)."""
    _runtime_for(mesh).ensure_started()


def stop_mesh(mesh):
    """Stops the workers of `mesh` (a root mesh); idempotent. Stopping a slice
    leaves its root mesh's workers running."""
    if mesh.parent is not None:
        return
    rt = _runtimes.pop(id(mesh), None)
    if rt is not None:
        rt.stop()


def recovery_stats(mesh):
    """What the restart policy of `mesh`'s root mesh did: a dict with
    `restarts` (attempted), `recoveries` (after which the job ran again),
    `replayed_steps`, `checkpoints`, `journal_entries` (steps and state
    writes kept for replay now), `last_recovery_ms` and `last_failure`;
    all zero before the mesh's workers start."""
    rt = _runtimes.get(id(_root(mesh)))
    if rt is None or rt.controller is None:
        return {"restarts": 0, "recoveries": 0, "replayed_steps": 0,
                "checkpoints": 0, "journal_entries": 0,
                "last_recovery_ms": 0.0, "last_failure": ""}
    return rt.controller.recovery_stats()


def controller_of(mesh):
    """The native Controller of `mesh`'s root mesh, or None (for tests)."""
    rt = _runtimes.get(id(_root(mesh)))
    return None if rt is None else rt.controller
