"""Reverse-mode differentiation of traced code: `mc.vjp`, `mc.grad`,
`mc.value_and_grad`.

While the differentiated function runs, every tensor op the trace builds is
recorded on a tape (the builder call, its operands, its result and the
user's line). The backward pass walks the tape in reverse and builds, with
the same traced ops, each op's adjoint, located at the line of the forward
op it comes from: an error in the backward names the user's line. The
gradients are ordinary traced values, so the compiler partitions, plans and
frees them like the rest of the program (a sharded batch gives weight
gradients through the collectives partitioning inserts; a sharded weight
gets a gradient of its layout).

In an endpoint each rank differentiates its own code, and the explicit
collectives have their adjoints (the gradient is that of the sum over the
ranks of each rank's result): `all_reduce` sum and avg are their own
adjoints, `all_gather` and `reduce_scatter` (sum) each other's.

Conventions: `max`/`min` (reductions and `mc.maximum`/`mc.minimum`) split
the gradient equally among ties, as JAX does; `relu` and `abs` have slope 0
at 0; integer and boolean values carry no gradient; a gather (`take`,
`x[idx]`) scatters its gradient back with additions.
"""
import numpy as np

from . import _pytree, errors
from . import _vjp_rules  # noqa: F401  (registers the adjoint rules)
from ._location import user_loc
from ._tape import Tape, backward
from ._tensor import (Tensor, active_trace, binary, compare, constant_array,
                      wrap)
from ._vjp_helpers import _as, _is_float, _where


def _fresh(trace, leaves, loc):
    """Leaves as distinct values (a value passed twice gets a copy, so each
    argument has its own gradient)."""
    seen, out = set(), []
    for t in leaves:
        if t._id in seen:
            t = binary("add", t, 0, loc)
        seen.add(t._id)
        out.append(t)
    return out


def _layout_like(trace, g, primal, loc):
    """In compiled functions, `g` laid out as `primal` is (a column-split
    weight gets a column-split gradient)."""
    if trace.builder.in_endpoint():
        return g
    shape, _dtype, _scalar, _mesh, dist = trace.builder.info(primal._id)
    split = getattr(dist, "split", None)
    if split is None and isinstance(dist, tuple):
        split = dist[0]
    pairs = [(m, d) for d, names in enumerate(split or []) for m in names]
    if not pairs:
        return g
    return wrap(trace, trace.call("shard", g._id, pairs, "", loc, loc=loc))


def vjp(fn, *primals):
    """`(out, vjp_fn)`: `out = fn(*primals)` and `vjp_fn(cotangent)` giving
    the tuple of the primals' cotangents (pytrees like the primals; `None`
    for leaves that are not float tensors). Inside `@mc.compile` functions
    and endpoints."""
    loc = user_loc()
    trace = active_trace(loc, "mc.vjp")
    return _vjp(trace, fn, primals, loc)


def _vjp(trace, fn, primals, loc):
    leaves, treedef = _pytree.flatten(tuple(primals), Tensor)
    leaves = _fresh(trace, leaves, loc)
    primals = _pytree.unflatten(treedef, leaves)
    tape = Tape()
    trace.observers.append(tape)
    try:
        out = fn(*primals)
    finally:
        trace.observers.remove(tape)
    try:
        out_leaves, out_def = _pytree.flatten(out, Tensor)
    except _pytree.NotATree as e:
        raise errors.TraceError(
            f"mc.vjp: the function must return tensors (or tuples, lists and "
            f"dicts of them), got {e}", *loc) from None

    def vjp_fn(cotangent):
        cloc = user_loc()
        ct_leaves = _align(out, cotangent, cloc)
        seeds = {}
        for o, c in zip(out_leaves, ct_leaves):
            if c is None:
                continue
            if not isinstance(c, Tensor):
                c = constant_array(trace, np.broadcast_to(
                    np.asarray(c, np.float32), o.shape), cloc)
            if tuple(c.shape) != tuple(o.shape):
                raise errors.ShapeError(
                    f"mc.vjp: a cotangent of shape {c.shape} for a result of "
                    f"shape {o.shape}", *cloc)
            c = _as(c, o, cloc) if _is_float(o) else c
            seeds[o._id] = binary("add", seeds[o._id], c, cloc) \
                if o._id in seeds else c
        grads = backward(trace, tape, seeds, [t._id for t in leaves])
        out_grads = []
        for t, g in zip(leaves, grads):
            if not _is_float(t):
                out_grads.append(None)
                continue
            if g is None:
                # Zeros computed from the primal (a constant-only value
                # would have no mesh to live on).
                g = _where(trace, compare("eq", t, t, cloc), 0.0, 0.0, cloc)
                g = _as(g, t, cloc)
            out_grads.append(_layout_like(trace, g, t, cloc))
        return _pytree.unflatten(treedef, out_grads)

    return out, vjp_fn


def _align(out, ct, loc):
    """The cotangents for the tensor leaves of `out`, in order, from `ct`
    (the same structure; None stands for zeros of a whole subtree)."""
    if isinstance(out, Tensor):
        return [ct]
    if out is None:
        return []
    count = len(_pytree.flatten(out, Tensor)[0])
    if ct is None:
        return [None] * count
    if isinstance(out, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(out):
            raise errors.ShapeError(
                "mc.vjp: the cotangent must have the structure of the "
                f"function's result ({len(out)} entries)", *loc)
        return [c for o, x in zip(out, ct) for c in _align(o, x, loc)]
    if isinstance(out, dict):
        if not isinstance(ct, dict) or set(ct) != set(out):
            raise errors.ShapeError(
                "mc.vjp: the cotangent must have the keys of the function's "
                "result", *loc)
        return [c for k in out for c in _align(out[k], ct[k], loc)]
    raise errors.TraceError("mc.vjp: unsupported result structure", *loc)


def _argnums(argnums, n, loc):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for a in nums:
        if not isinstance(a, int) or not -n <= a < n:
            raise errors.TraceError(
                f"argnums {argnums!r} out of range for {n} arguments", *loc)
    return single, tuple(a % n for a in nums)


def value_and_grad(fn, argnums=0, has_aux=False):
    """`f(*args) -> (value, grads)` (`((value, aux), grads)` with `has_aux`):
    `fn` returns a 0-d float tensor (or `(loss, aux)`); `grads` are the
    gradients with respect to the arguments `argnums` names (an int: one
    gradient, a tuple: a tuple), each a pytree like its argument."""

    def wrapped(*args):
        loc = user_loc()
        trace = active_trace(loc, "mc.value_and_grad")
        single, nums = _argnums(argnums, len(args), loc)
        for a in nums:
            for leaf in _pytree.flatten(args[a], Tensor)[0]:
                if not _is_float(leaf):
                    raise errors.TraceError(
                        f"mc.grad: argument {a} is a {leaf.dtype} tensor; "
                        "gradients are taken with respect to float tensors",
                        *loc)
            if not _pytree.flatten(args[a], Tensor)[0]:
                raise errors.TraceError(
                    f"mc.grad: argument {a} holds no traced tensor", *loc)

        def partial(*ps):
            full = list(args)
            for a, p in zip(nums, ps):
                full[a] = p
            return fn(*full)

        out, vjp_fn = _vjp(trace, partial, [args[a] for a in nums], loc)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise errors.TraceError(
                    "mc.value_and_grad(has_aux=True): the function must "
                    "return (loss, aux)", *loc)
            loss = out[0]
        else:
            loss = out
        if not isinstance(loss, Tensor) or loss.shape != () or \
                not _is_float(loss):
            what = (f"a {loss.dtype} tensor of shape {loss.shape}"
                    if isinstance(loss, Tensor) else type(loss).__name__)
            raise errors.TraceError(
                "mc.grad: the function must return a 0-d float tensor (the "
                f"loss), got {what}", *loc)
        # The seed 1.0, computed from the loss (a constant-only value would
        # have no mesh to live on).
        seed = _where(trace, compare("eq", loss, loss, loc), 1.0, 1.0, loc)
        seed = _as(seed, loss, loc)
        grads = vjp_fn((seed, None) if has_aux else seed)
        grads = grads[0] if single else tuple(grads)
        return (out if has_aux else loss), grads

    wrapped.__name__ = getattr(fn, "__name__", "fn")
    wrapped.__doc__ = getattr(fn, "__doc__", None)
    return wrapped


def grad(fn, argnums=0, has_aux=False):
    """`f(*args) -> grads` (`(grads, aux)` with `has_aux`); see
    `value_and_grad`."""
    vg = value_and_grad(fn, argnums, has_aux)

    def wrapped(*args):
        out, grads = vg(*args)
        return (grads, out[1]) if has_aux else grads

    wrapped.__name__ = getattr(fn, "__name__", "fn")
    wrapped.__doc__ = getattr(fn, "__doc__", None)
    return wrapped
