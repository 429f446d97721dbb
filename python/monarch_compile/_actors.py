"""Actors: classes whose state (`mc.param`) lives on the ranks of a mesh and
whose `@mc.endpoint` methods are per-rank code, traced into
`monarch.actor_class` / `monarch.endpoint` and invoked with `.call(...)`
(`monarch.call`) or `.broadcast(...)` (`monarch.broadcast`).
"""
import functools
import re

import numpy as np

from . import _pytree, _runtime, _trace, errors
from ._location import def_loc, user_loc
from ._source import return_loc
from ._tensor import (DTYPES, Tensor, as_value, binary, cast, dtype_name,
                      reduce, unary)


class Param:
    """Actor state with its initial value (`self.w = mc.param(w)`)."""

    def __init__(self, value, split, loc):
        self.value = value
        self.split = dict(split)
        self.loc = loc
        self.state = None  # its name once an actor holds it
        self.owner = None

    @property
    def shape(self):
        return tuple(self.value.shape)

    @property
    def dtype(self):
        return dtype_name(self.value.dtype)

    def __repr__(self):
        return f"Param(shape={self.shape}, dtype={self.dtype})"


def _param_leaves(value):
    """(leaves, treedef) when `value` is a non-empty list, tuple or dict of
    Params (nested), else None."""
    if not isinstance(value, (list, tuple, dict)):
        return None
    try:
        leaves, treedef = _pytree.flatten(value, Param)
    except _pytree.NotATree:
        return None
    return (leaves, treedef) if leaves else None


def param(value, **split):
    """Declares actor state, replicated on every rank of the actor's mesh, or
    split like `mc.shard` (`mc.param(w, gpus=1)`: dim 1 over "gpus")."""
    loc = user_loc()
    if _trace.current() is not None and isinstance(value, Tensor):
        raise errors.TraceError(
            "mc.param declares state with an initial (numpy) value in "
            "__init__; it cannot take a traced tensor", *loc)
    arr = np.asarray(value)
    name = dtype_name(arr.dtype)
    if name not in DTYPES:
        raise errors.UnsupportedError(
            f"unsupported dtype {name} for mc.param (supported: "
            f"{', '.join(DTYPES)}); convert it, e.g. w.astype(np.float32)",
            *loc)
    for d in split.values():
        if not isinstance(d, int) or not -arr.ndim <= d < arr.ndim:
            raise errors.ShardingError(
                f"mc.param: tensor dimension {d!r} is out of range for shape "
                f"{arr.shape}", *loc)
    return Param(arr, {k: v % arr.ndim for k, v in split.items()}, loc)


class _EndpointTrace:
    """State reads and writes of one endpoint body being traced."""

    def __init__(self, trace, actor):
        self.trace = trace
        self.actor = actor
        self.values = {}

    def get(self, name, loc):
        if name not in self.values:
            self.values[name] = self.trace.call("state_get", name, loc, loc=loc)
        return Tensor(self.trace, self.values[name])

    def set(self, name, value, loc):
        like = value if isinstance(value, Tensor) else self.get(name, loc)
        vid = as_value(self.trace, value, like, loc)
        self.trace.call("state_set", name, vid, loc, loc=loc)
        self.values[name] = vid


def _tracing(actor):
    t = _trace.current()
    if t is not None and t.endpoint_stack and t.endpoint_stack[-1].actor is actor:
        return t.endpoint_stack[-1]
    return None


class Actor:
    """Base class of actors. Spawn with `mesh.spawn(name, Cls, *args)`."""

    _mc_mesh = None
    _mc_name = None

    def __setattr__(self, name, value):
        params = self.__dict__.setdefault("_mc_params", {})
        trees = self.__dict__.setdefault("_mc_trees", {})
        et = _tracing(self)
        if et is None and not isinstance(value, Param):
            leaves = _param_leaves(value)
            if leaves is not None:
                # A list, tuple or dict of mc.param: one state per leaf.
                names = [self._mc_register(f"{name}_{i}", p)
                         for i, p in enumerate(leaves[0])]
                trees[name] = (leaves[1], names)
                self.__dict__.pop(name, None)
                return
            if hasattr(value, "_mc_bind"):
                value._mc_bind(self, name)  # e.g. an optimizer's moments
        if isinstance(value, Param):
            if et is not None:
                raise errors.TraceError(
                    "mc.param declares state in __init__, not in endpoints",
                    *user_loc())
            self._mc_register(name, value)
            self.__dict__.pop(name, None)
            return
        if et is not None:
            if name in params:
                et.set(name, value, user_loc())
                return
            if name in trees:
                treedef, names = trees[name]
                try:
                    leaves, got = _pytree.flatten(value, Tensor)
                except _pytree.NotATree:
                    got, leaves = None, []
                if got != treedef:
                    raise errors.TraceError(
                        f"self.{name} holds {len(names)} states in a "
                        "structure; assign the same structure of tensors",
                        *user_loc())
                for n, v in zip(names, leaves):
                    et.set(n, v, user_loc())
                return
            if isinstance(value, Tensor):
                raise errors.TraceError(
                    f"cannot assign a traced tensor to self.{name}: only state "
                    "declared with mc.param in __init__ can be updated by "
                    "endpoints", *user_loc())
        params.pop(name, None)
        object.__setattr__(self, name, value)

    def _mc_register(self, name, p):
        """Declares `p` as state `name` (also the name its optimizer and
        the tracer use); returns the name."""
        params = self.__dict__.setdefault("_mc_params", {})
        if name in params and params[name] is not p:
            raise errors.TraceError(f"actor state '{name}' is declared twice",
                                    *p.loc)
        params[name] = p
        p.state = name
        p.owner = self
        return name

    def _mc_state(self, name, value=None):
        """Reads state `name` in an endpoint of this actor (or writes
        `value`): for objects holding state (optimizers)."""
        et = _tracing(self)
        if et is None:
            raise errors.TraceError(
                f"state '{name}' of {type(self).__name__} is read and written "
                "in its endpoints", *user_loc())
        if value is None:
            return et.get(name, user_loc())
        et.set(name, value, user_loc())
        return None

    def __getattr__(self, name):
        params = self.__dict__.get("_mc_params", {})
        if name in params:
            et = _tracing(self)
            if et is not None:
                return et.get(name, user_loc())
            return params[name]
        trees = self.__dict__.get("_mc_trees", {})
        if name in trees:
            treedef, names = trees[name]
            et = _tracing(self)
            if et is not None:
                return _pytree.unflatten(treedef,
                                         [et.get(n, user_loc()) for n in names])
            return _pytree.unflatten(treedef, [params[n] for n in names])
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def mesh(self):
        """The mesh this actor was spawned on (None if not spawned)."""
        return self._mc_mesh

    def __repr__(self):
        where = f" on {self._mc_mesh!r}" if self._mc_mesh else " (not spawned)"
        return f"<{type(self).__name__} {self._mc_name or ''}{where}>"


def spawn(mesh, name, cls, args, kwargs, loc):
    if not (isinstance(cls, type) and issubclass(cls, Actor)):
        raise errors.MeshError(
            f"mesh.spawn needs a subclass of mc.Actor, got {cls!r}", *loc)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise errors.MeshError(
            f"actor mesh name must be an identifier, got {name!r}", *loc)
    # The name is the actor's identity on the workers (its state lives
    # under it): a second actor spawned under a name already used on the
    # same root mesh gets `name_1`, ... so it never reads the first one's
    # state.
    root = mesh
    while root.parent is not None:
        root = root.parent
    if root._stopped:
        raise errors.MeshError(
            f"cannot spawn '{name}' on {mesh!r}: its mesh was stopped; create "
            "a new mesh", *loc)
    taken = root.__dict__.setdefault("_actor_names", set())
    unique, i = name, 1
    while unique in taken:
        unique, i = f"{name}_{i}", i + 1
    taken.add(unique)
    actor = cls.__new__(cls)
    object.__setattr__(actor, "_mc_mesh", mesh)
    object.__setattr__(actor, "_mc_name", unique)
    cls.__init__(actor, *args, **kwargs)
    dims = mesh.dims
    for pname, p in actor.__dict__.get("_mc_params", {}).items():
        for d, t in p.split.items():
            if d not in dims:
                raise errors.MeshError(
                    f"mesh has no dimension '{d}' (its dimensions: "
                    f"{', '.join(dims)}) in the sharding of state '{pname}'",
                    *p.loc)
            if p.value.shape[t] % dims[d]:
                raise errors.ShardingError(
                    f"cannot split dimension {t} of size {p.value.shape[t]} of "
                    f"state '{pname}' over mesh dimension '{d}' of size "
                    f"{dims[d]}: {p.value.shape[t]} is not divisible by "
                    f"{dims[d]}", *p.loc)
    return actor


class _Endpoint:
    """An `@mc.endpoint` method: per-rank code of an actor."""

    def __init__(self, fn, out):
        self.fn = fn
        self.out = out
        self.name = fn.__name__
        functools.update_wrapper(self, fn)

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return BoundEndpoint(obj, self)


def endpoint(fn=None, *, out=None):
    """Marks an actor method as an endpoint. `out` says how per-rank results
    form the global result: None (replicated: the ranks agree), a dict
    {mesh dim: tensor dim} (split, like mc.shard), a reduction name
    ("sum", "avg", "max", "min": partial results reduced over the ranks), or
    a tuple of those, one per result tensor (flattened order).

    A single value (not a tuple) applies to EVERY result: `out="sum"` on an
    endpoint returning (loss, grads) sums both. `out=None` is a promise, not
    checked by default: if the ranks' results differ, one rank's value comes
    back. Set MONARCH_CHECK_REPLICATED=1 (read when tracing) to check it at
    run time (extra collectives; mc.ExecutionError on a mismatch)."""
    if fn is None:
        return lambda f: _Endpoint(f, out)
    return _Endpoint(fn, out)


class BoundEndpoint:
    """`actor.forward`: invoke with `.call(...)` or `.broadcast(...)`."""

    def __init__(self, actor, ep):
        self.actor = actor
        self.endpoint = ep

    def call(self, *args):
        """Runs the endpoint on every rank; returns its (global) results."""
        try:
            return _invoke(self.actor, self.endpoint, args, False, user_loc())
        except errors.TraceError as err:
            if _trace.current() is None:
                raise err.with_traceback(None) from None
            raise

    def broadcast(self, *args):
        """Runs the endpoint on every rank, discarding results."""
        try:
            _invoke(self.actor, self.endpoint, args, True, user_loc())
        except errors.TraceError as err:
            if _trace.current() is None:
                raise err.with_traceback(None) from None
            raise

    def __call__(self, *args):
        if _tracing(self.actor) is not None:
            # Per-rank code calling a sibling method: inline it.
            return self.endpoint.fn(self.actor, *args)
        raise errors.TraceError(
            f"call endpoints with {self.endpoint.name}.call(...) or "
            f"{self.endpoint.name}.broadcast(...)", *user_loc())


def _flatten(result, loc, what):
    try:
        return _pytree.flatten(result, Tensor, _pytree.STATIC)
    except _pytree.NotATree as err:
        raise errors.UnsupportedError(
            f"{what} must return traced tensors (and Python numbers or "
            "strings), in (nested) tuples, lists or dicts with string or "
            f"integer keys, or None; got {err}", *loc) from None


def _out_dists(out, results, loc):
    specs = list(out) if isinstance(out, (tuple, list)) else [out] * len(results)
    if len(specs) != len(results):
        raise errors.TraceError(
            f"out= gives {len(specs)} distributions for {len(results)} results "
            "(a tuple gives one per result tensor, in the order of the "
            "flattened results; a single value applies to every result)",
            *loc)
    dists = []
    for spec, r in zip(specs, results):
        rank = len(r.shape)
        if spec is None:
            dists.append(([], None))
        elif isinstance(spec, str):
            dists.append(([[] for _ in range(rank)], spec))
        elif isinstance(spec, dict):
            split = [[] for _ in range(rank)]
            for d, t in spec.items():
                if not isinstance(t, int) or not -rank <= t < rank:
                    raise errors.ShardingError(
                        f"out=: tensor dimension {t!r} is out of range for a "
                        f"result of shape {r.shape}", *loc)
                split[t % rank].append(d)
            dists.append((split, None))
        else:
            raise errors.TraceError(f"out=: cannot understand {spec!r}", *loc)
    return dists


def _class_symbol(trace, actor, mesh_sym, loc):
    params = actor.__dict__.get("_mc_params", {})
    states = []
    for pname, p in params.items():
        split = [[] for _ in range(p.value.ndim)]
        for d, t in p.split.items():
            split[t].append(d)
        local = trace.call("local_shape", list(p.value.shape), (split, None),
                           mesh_sym, loc=p.loc)
        states.append((pname, tuple(local), p.dtype,
                       tuple(tuple(ds) for ds in split)))
    key = (type(actor), tuple(states))
    if key in trace.class_names:
        return trace.class_names[key]
    base = re.sub(r"[^A-Za-z0-9_]", "_", type(actor).__name__)
    name, i = base, 1
    while trace.builder.has_actor_class(name) or trace.builder.has_mesh(name):
        name, i = f"{base}_{i}", i + 1
    cls_loc = def_loc(type(actor).__init__) if "__init__" in type(actor).__dict__ else loc
    trace.call("declare_actor_class", name, cls_loc, loc=loc)
    for pname, shape, dtype, split in states:
        trace.call("add_state", name, pname, (list(shape), dtype, False),
                   ([list(ds) for ds in split], None), params[pname].loc,
                   loc=params[pname].loc)
    trace.class_names[key] = name
    return name


def _actor_mesh_symbol(trace, actor, loc):
    key = id(actor)
    if key in trace.actor_names:
        return trace.actor_names[key]
    mesh_sym = trace.mesh_symbol(actor._mc_mesh, loc)
    cls_sym = _class_symbol(trace, actor, mesh_sym, loc)
    if actor._mc_name in trace.actors:
        raise errors.MeshError(
            f"two different actors named '{actor._mc_name}' are used in one "
            "compiled function", *loc)
    trace.call("declare_actor_mesh", actor._mc_name, cls_sym, mesh_sym, loc,
               loc=loc)
    trace.actor_names[key] = actor._mc_name
    trace.actors[actor._mc_name] = actor
    trace.actor_classes[actor._mc_name] = cls_sym
    return actor._mc_name


def _endpoint_symbol(trace, cls_sym, actor, ep, argtypes, dists, mesh_sym, loc,
                     arg_tree):
    key = (cls_sym, ep.name,
           tuple((tuple(s), d, sc) for s, d, sc in argtypes),
           tuple((tuple(tuple(x) for x in sp), p) for sp, p in dists),
           tuple(actor._mc_mesh.dims.items()), arg_tree)
    if key in trace.endpoints:
        return trace.endpoints[key]
    sym, i = ep.name, 1
    while trace.builder.has_endpoint(cls_sym, sym):
        sym, i = f"{ep.name}_{i}", i + 1
    ids = trace.call("begin_endpoint", cls_sym, sym, argtypes, dists, mesh_sym,
                     def_loc(ep.fn), loc=loc)
    et = _EndpointTrace(trace, actor)
    trace.endpoint_stack.append(et)
    try:
        leaves = iter([Tensor(trace, v) for v in ids])
        args = [next(leaves) if tree is None else
                _pytree.unflatten(tree[1], [next(leaves)
                                            for _ in range(tree[0])])
                for tree in arg_tree]
        result = ep.fn(actor, *args)
        rloc = return_loc(ep.fn)
        flat, structure = _flatten(result, rloc, f"endpoint {ep.name}")
        out = _out_dists(ep.out, flat, rloc)
        probes = (_replication_probes(trace, ep, flat, actor._mc_mesh, rloc)
                  if trace.check_replicated else [])
        out += [([], None)] * (2 * len(probes))
        ids = [r._id for r in flat] + [t._id for p in probes for t in p[1:]]
        trace.call("end_endpoint", ids, out, rloc, loc=rloc)
    except BaseException:
        if trace.builder.in_endpoint():
            trace.builder.abandon_endpoint()
        raise
    finally:
        trace.endpoint_stack.pop()
    trace.endpoints[key] = (sym, structure, [p[0] for p in probes])
    return trace.endpoints[key]


def _replication_probes(trace, ep, flat, mesh, loc):
    """MONARCH_CHECK_REPLICATED=1: for each result declared replicated
    (`out=None`, the default) on a mesh of several ranks, two float32 0-d
    values computed on the ranks: the largest difference between ranks
    (all_reduce max - min) and the largest magnitude. The compiled function
    fetches them and `_runtime.check_replicated` compares them."""
    if mesh.size <= 1:
        return []
    specs = (list(ep.out) if isinstance(ep.out, (tuple, list))
             else [ep.out] * len(flat))
    dims = list(mesh.dims)
    probes = []
    for i, (r, spec) in enumerate(zip(flat, specs)):
        if spec is not None or r.dtype not in DTYPES or r._scalar:
            continue
        hi = _over_ranks(trace, r, dims, "max", loc)
        lo = _over_ranks(trace, r, dims, "min", loc)
        scale = _over_ranks(trace, unary("abs", r, loc), dims, "max", loc)
        probes.append(((i, r.dtype),
                       cast(binary("sub", hi, lo, loc), "float32", loc),
                       cast(scale, "float32", loc)))
    return probes


def _over_ranks(trace, x, dims, op, loc):
    """all_reduce(x, dims, op), then the largest element (a 0-d value)."""
    x = Tensor(trace, trace.call("all_reduce", x._id, dims, op, loc, loc=loc))
    return reduce("max", x, None, False, loc) if x.shape else x


def _invoke(actor, ep, args, broadcast, loc):
    cls = type(actor).__name__
    if actor._mc_mesh is None:
        raise errors.MeshError(
            f"{cls}.{ep.name} was called on an actor that is not on a mesh: "
            f"create actors with mesh.spawn(name, {cls}, ...)", *loc)
    trace = _trace.current()
    if trace is None:
        return _runtime.run_endpoint(actor, ep.name, args, broadcast)
    if trace.endpoint_stack:
        raise errors.UnsupportedError(
            f"unsupported: calling {cls}.{ep.name} from inside an endpoint; "
            "call endpoints from the compiled function", *loc)
    am = _actor_mesh_symbol(trace, actor, loc)
    mesh_sym = trace.mesh_symbol(actor._mc_mesh, loc)
    cls_sym = trace.actor_classes[am]
    ids, argtypes, dists = [], [], []
    mesh_dims = set(actor._mc_mesh.dims)
    # An argument may be a (nested) tuple, list or dict of tensors: the
    # endpoint takes its leaves and sees the structure again. Python values
    # inside one are static (baked into the endpoint, like an optimizer's
    # hyperparameters in a state_dict); a number argument of its own is a
    # runtime scalar.
    flat_args, arg_tree = [], []
    for i, a in enumerate(args):
        if not isinstance(a, (tuple, list, dict)):
            flat_args.append(a)
            arg_tree.append(None)
            continue
        try:
            leaves, tree = _pytree.flatten(a, Tensor, _pytree.STATIC)
        except _pytree.NotATree as err:
            raise errors.UnsupportedError(
                f"unsupported argument for {cls}.{ep.name}: "
                f"{type(err.node).__name__} at argument {i}{err.path}; pass "
                "traced tensors or Python numbers, in (nested) tuples, lists "
                "or dicts", *loc) from None
        flat_args += leaves
        arg_tree.append((len(leaves), tree))
    arg_tree = tuple(arg_tree)
    for a in flat_args:
        if isinstance(a, Tensor):
            vid = as_value(trace, a, None, loc)
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            vid = trace.call("constant", float(a),
                             "float32" if isinstance(a, float) else "int32",
                             loc, loc=loc)
        else:
            raise errors.UnsupportedError(
                f"unsupported argument of type {type(a).__name__} for "
                f"{cls}.{ep.name}: pass traced tensors or Python numbers", *loc)
        if not trace.builder.info(vid)[2]:
            # Fed or moved to the actor's mesh here: a sharding that does not
            # fit is reported at the user's mc.shard.
            vid = trace.call("place", vid, mesh_sym, loc, loc=loc)
        shape, dtype, scalar, _mesh, (split, _partial) = trace.builder.info(vid)
        ids.append(vid)
        if scalar:
            argtypes.append(([], dtype, True))
            dists.append(([], None))
            continue
        if not all(n in mesh_dims for d in split for n in d):
            split = []
        local = trace.call("local_shape", list(shape), (split, None), mesh_sym,
                           loc=loc)
        argtypes.append((list(local), dtype, False))
        dists.append(([list(d) for d in split], None))
    sym, structure, probes = _endpoint_symbol(trace, cls_sym, actor, ep,
                                              argtypes, dists, mesh_sym, loc,
                                              arg_tree)
    if broadcast:
        trace.call("broadcast", am, sym, ids, loc, loc=loc)
        return None
    results = [Tensor(trace, r) for r in trace.call("call", am, sym, ids, loc, loc=loc)]
    if probes:
        extra = results[len(results) - 2 * len(probes):]
        del results[len(results) - 2 * len(probes):]
        for n, (index, dtype) in enumerate(probes):
            trace.replication_probes.append(
                (f"{cls}.{ep.name}", index, dtype, loc, extra[2 * n],
                 extra[2 * n + 1]))
    return _pytree.unflatten(structure, results)
