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
import contextlib

import numpy as np

from . import _pytree, errors
from ._primitives import def_vjp
from ._location import user_loc
from ._tensor import (Tensor, active_trace, binary, cast, compare, einsum2,
                      constant_array, getitem, matmul, reduce, reshape,
                      transpose, unary, wrap)

FLOATS = ("float32", "float16", "bfloat16")


class Tape:
    """The tensor ops a trace built while it was active: (primitive, args,
    result id, loc) in program order. An observer of the trace
    (`Trace.observers`)."""

    def __init__(self):
        self.entries = []

    def __call__(self, prim, args, out, loc):
        # An op the builder folded away returns its operand: nothing to
        # record.
        if prim.makes_tensors and not (isinstance(out, int) and
                                       out in prim.operands(args)):
            self.entries.append((prim, args, out, loc))


@contextlib.contextmanager
def stop_gradient(trace):
    """Ops built inside are not recorded by the active tapes: for the
    differentiation they are constants (JAX's stop_gradient)."""
    saved = [o for o in trace.observers if isinstance(o, Tape)]
    trace.observers[:] = [o for o in trace.observers
                          if not isinstance(o, Tape)]
    try:
        yield
    finally:
        trace.observers.extend(saved)


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


# ---------------------------------------------------------------------------
# Helpers building the backward (all located at the forward op's line)
# ---------------------------------------------------------------------------


def _is_float(t):
    return isinstance(t, Tensor) and t.dtype in FLOATS


def _zeros(trace, shape, dtype, loc):
    return constant_array(trace, np.zeros(shape, np.float32), loc) \
        if dtype == "float32" else cast(
            constant_array(trace, np.zeros(shape, np.float32), loc), dtype, loc)


def _broadcast_to(trace, g, shape, loc):
    """`g` (shape broadcastable to `shape`) as a tensor of `shape`."""
    if tuple(g.shape) == tuple(shape):
        return g
    return binary("add", g, _zeros(trace, shape, g.dtype, loc), loc)


def _unbroadcast(g, shape, loc):
    """The sum of `g` over the dimensions numpy's broadcasting added to a
    value of `shape`."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and g.shape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        g = reduce("sum", g, tuple(axes), True, loc)
    return reshape(g, shape, loc) if tuple(g.shape) != shape else g


def _where(trace, cond, a, b, loc):
    from ._tensor import as_value
    like = a if isinstance(a, Tensor) else b
    ic = as_value(trace, cond, None, loc)
    ia = as_value(trace, a, like, loc)
    ib = as_value(trace, b, like, loc)
    return wrap(trace, trace.call("select", ic, ia, ib, loc, loc=loc))


def _swap_last(x, loc):
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return transpose(x, perm, loc)


def _as(g, like, loc):
    """`g` in the dtype of `like` (gradients keep the primal's dtype)."""
    return cast(g, like.dtype, loc) if g.dtype != like.dtype else g


def _scatter_rows(trace, g, index, n, axis, loc):
    """The adjoint of `take(x, index, axis)` for `x.shape[axis] == n`: `g`
    (shape pre + index.shape + post) added into zeros of shape pre + (n,) +
    post at the rows its (wrapped, clamped) indices name: one scatter-add,
    not a product with a one-hot matrix."""
    return wrap(trace, trace.call("scatter_add", g._id, index._id, int(n),
                                  int(axis), loc, loc=loc))


def _pad_axis(trace, g, axis, n, positions, loc):
    """`g` placed at `positions` (sorted, distinct) along `axis` of a
    dimension of size `n`, zeros elsewhere."""
    m = len(positions)
    start = positions[0]
    if positions == list(range(start, start + m)):
        parts = []
        if start:
            shape = list(g.shape)
            shape[axis] = start
            parts.append(_zeros(trace, tuple(shape), g.dtype, loc))
        parts.append(g)
        if n - start - m:
            shape = list(g.shape)
            shape[axis] = n - start - m
            parts.append(_zeros(trace, tuple(shape), g.dtype, loc))
        if len(parts) == 1:
            return g
        return wrap(trace, trace.call("concatenate", [p._id for p in parts],
                                      axis, loc, loc=loc))
    index = constant_array(trace, np.asarray(positions, np.int32), loc)
    return _scatter_rows(trace, g, index, n, axis, loc)


# ---------------------------------------------------------------------------
# Adjoint rules: (trace, args, out Tensor, cotangent, loc) -> {id: grad}
# ---------------------------------------------------------------------------


@def_vjp("binary")
def _binary_rule(trace, args, y, g, loc):
    op, ia, ib = args[0], args[1], args[2]
    a, b = wrap(trace, ia), wrap(trace, ib)
    ga = gb = None
    if op == "add":
        ga, gb = g, g
    elif op == "sub":
        ga, gb = g, binary("mul", g, -1.0, loc)
    elif op == "mul":
        ga, gb = binary("mul", g, b, loc), binary("mul", g, a, loc)
    elif op == "div":
        ga = binary("div", g, b, loc)
        gb = binary("mul", binary("mul", g, -1.0, loc),
                    binary("div", y, b, loc), loc)
    elif op == "pow":
        ga = binary("mul", g, binary("mul", b, binary("pow", a, binary(
            "sub", b, 1, loc), loc), loc), loc)
        safe = _where(trace, compare("gt", a, 0, loc), a, 1.0, loc)
        logs = _where(trace, compare("gt", a, 0, loc),
                      unary("log", safe, loc), 0.0, loc)
        gb = binary("mul", g, binary("mul", logs, y, loc), loc)
    elif op in ("max", "min"):
        win = "gt" if op == "max" else "lt"
        tie = compare("eq", a, b, loc)
        half = binary("mul", g, 0.5, loc)
        ga = _where(trace, compare(win, a, b, loc), g,
                    _where(trace, tie, half, 0.0, loc), loc)
        gb = _where(trace, compare(win, b, a, loc), g,
                    _where(trace, tie, half, 0.0, loc), loc)
    elif op == "mod":
        ga = g
        gb = binary("mul", binary("mul", g, -1.0, loc),
                    binary("floordiv", a, b, loc), loc)
    elif op == "floordiv":
        return {}
    out = {}
    for i, x, gx in ((ia, a, ga), (ib, b, gb)):
        if gx is None or not _is_float(x) or x._scalar:
            continue
        _accumulate(out, i, _as(_unbroadcast(gx, x.shape, loc), x, loc), loc)
    return out


def _accumulate(grads, i, g, loc):
    """grads[i] += g (an op may use one value twice: x * x)."""
    grads[i] = binary("add", grads[i], g, loc) if i in grads else g


@def_vjp("unary")
def _unary_rule(trace, args, y, g, loc):
    op, ix = args[0], args[1]
    x = wrap(trace, ix)
    if not _is_float(x):
        return {}
    if op == "neg":
        gx = binary("mul", g, -1.0, loc)
    elif op == "relu":
        gx = _where(trace, compare("gt", x, 0, loc), g, 0.0, loc)
    elif op == "exp":
        gx = binary("mul", g, y, loc)
    elif op == "log":
        gx = binary("div", g, x, loc)
    elif op == "tanh":
        gx = binary("mul", g, binary("sub", 1.0, binary("mul", y, y, loc),
                                     loc), loc)
    elif op == "sigmoid":
        gx = binary("mul", g, binary("mul", y, binary("sub", 1.0, y, loc),
                                     loc), loc)
    elif op == "sqrt":
        gx = binary("div", binary("mul", g, 0.5, loc), y, loc)
    elif op == "abs":
        gx = _where(trace, compare("gt", x, 0, loc), g,
                    _where(trace, compare("lt", x, 0, loc),
                           binary("mul", g, -1.0, loc), 0.0, loc), loc)
    elif op == "gelu":
        # d/dx 0.5 x (1 + tanh(c (x + a x^3)))
        c, a = 0.7978845608028654, 0.044715
        x2 = binary("mul", x, x, loc)
        inner = binary("mul", binary("add", x, binary("mul", a, binary(
            "mul", x2, x, loc), loc), loc), c, loc)
        t = unary("tanh", inner, loc)
        dinner = binary("mul", c, binary("add", 1.0, binary(
            "mul", 3 * a, x2, loc), loc), loc)
        d = binary("add", binary("mul", 0.5, binary("add", 1.0, t, loc), loc),
                   binary("mul", binary("mul", binary("mul", 0.5, x, loc),
                                        binary("sub", 1.0, binary(
                                            "mul", t, t, loc), loc), loc),
                          dinner, loc), loc)
        gx = binary("mul", g, d, loc)
    else:
        raise errors.UnsupportedError(f"mc.grad: no gradient for {op}", *loc)
    return {ix: _as(gx, x, loc)}


@def_vjp("compare")
def _compare_rule(trace, args, y, g, loc):
    """A comparison's result is boolean: no gradient crosses it."""
    return {}


@def_vjp("select")
def _select_rule(trace, args, y, g, loc):
    ic, ia, ib = args[0], args[1], args[2]
    c, a, b = wrap(trace, ic), wrap(trace, ia), wrap(trace, ib)
    out = {}
    if _is_float(a) and not a._scalar:
        _accumulate(out, ia, _as(_unbroadcast(
            _where(trace, c, g, 0.0, loc), a.shape, loc), a, loc), loc)
    if _is_float(b) and not b._scalar:
        _accumulate(out, ib, _as(_unbroadcast(
            _where(trace, c, 0.0, g, loc), b.shape, loc), b, loc), loc)
    return out


@def_vjp("matmul")
def _matmul_rule(trace, args, y, g, loc):
    ia, ib = args[0], args[1]
    a, b = wrap(trace, ia), wrap(trace, ib)
    out = {}
    if a.ndim == 1 and b.ndim == 1:
        ga, gb = binary("mul", g, b, loc), binary("mul", g, a, loc)
    else:
        a2 = reshape(a, (1,) + a.shape, loc) if a.ndim == 1 else a
        b2 = reshape(b, b.shape + (1,), loc) if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = reshape(g2, g.shape[:-1] + (1, g.shape[-1]), loc)
        if b.ndim == 1:
            g2 = reshape(g2, g2.shape + (1,), loc)
        ga = gb = None
        if _is_float(a):
            ga = _unbroadcast(matmul(g2, _swap_last(b2, loc), loc), a2.shape,
                              loc)
            if a.ndim == 1:
                ga = reshape(ga, a.shape, loc)
        if _is_float(b) and b.ndim == 2 and a.ndim >= 3:
            # x @ w with x batched (activations @ weights): the weight's
            # gradient is one matrix product over every row of the batch,
            # x.reshape(-1, K).T @ g.reshape(-1, N), not a batched product
            # summed afterwards (one BLAS call instead of one per batch
            # index and a reduction).
            rows = int(np.prod(a.shape[:-1]))
            a_rows = reshape(a, (rows, a.shape[-1]), loc)
            g_rows = reshape(g, (rows, g.shape[-1]), loc)
            gb = matmul(_swap_last(a_rows, loc), g_rows, loc)
        elif _is_float(b):
            gb = _unbroadcast(matmul(_swap_last(a2, loc), g2, loc), b2.shape,
                              loc)
            if b.ndim == 1:
                gb = reshape(gb, b.shape, loc)
    for i, x, gx in ((ia, a, ga), (ib, b, gb)):
        if gx is None or not _is_float(x):
            continue
        _accumulate(out, i, _as(gx, x, loc), loc)
    return out


def _product_of_others(trace, x, axes, loc):
    """For each element of `x`, the product of the others over `axes`
    (sorted): the exclusive running products from both ends multiplied, so
    a zero in the reduction does not divide (JAX's rule for `prod`)."""
    from ._npmath import concat, const
    from ._npshape import _permute, flip
    from ._npsort import scan
    rest = [d for d in range(x.ndim) if d not in axes]
    perm = rest + list(axes)
    lead = tuple(x.shape[d] for d in rest)
    n = int(np.prod([x.shape[a] for a in axes]))
    if n == 1:
        return const(1, x.dtype, loc, x.shape)
    y = reshape(_permute(x, perm, loc), lead + (n,), loc)
    one = const(1, x.dtype, loc, lead + (1,))
    head = (Ellipsis, slice(0, n - 1))
    before = concat([one, getitem(scan(y, -1, "mul", loc, "np.prod"), head,
                                  loc)], len(lead), loc)
    after = flip(concat([one, getitem(scan(flip(y, -1, loc), -1, "mul", loc,
                                           "np.prod"), head, loc)],
                        len(lead), loc), -1, loc)
    others = reshape(binary("mul", before, after, loc),
                     tuple(x.shape[d] for d in perm), loc)
    return _permute(others, list(np.argsort(perm)), loc)


@def_vjp("einsum")
def _einsum_rule(trace, args, y, g, loc):
    """Each operand's cotangent is the einsum of the result's with the other
    operand, onto the operand's labels; a label only that operand had (summed
    in the forward) is broadcast back."""
    ia, ib, la, lb, lo = args[0], args[1], args[2], args[3], args[4]
    a, b = wrap(trace, ia), wrap(trace, ib)
    out = {}
    for ix, x, lx, other, lother in ((ia, a, la, b, lb), (ib, b, lb, a, la)):
        if not _is_float(x):
            continue
        have = lo + lother
        kept = "".join(c for c in lx if c in have)
        gx = einsum2(g, other, lo, lother, kept, loc)
        if kept != lx:
            shape = tuple(s if c in have else 1 for s, c in zip(x.shape, lx))
            gx = _broadcast_to(trace, reshape(gx, shape, loc), x.shape, loc)
        _accumulate(out, ix, _as(gx, x, loc), loc)
    return out


@def_vjp("reduce")
def _reduce_rule(trace, args, y, g, loc):
    op, ix, axes = args[0], args[1], args[2]
    x = wrap(trace, ix)
    if not _is_float(x) or x._scalar:
        return {}
    nd = x.ndim
    axes = sorted(a % nd for a in axes) if axes else list(range(nd))
    keep = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    gk = reshape(g, keep, loc) if tuple(g.shape) != keep else g
    if op == "sum":
        gx = _broadcast_to(trace, gk, x.shape, loc)
    elif op == "mean":
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        gx = _broadcast_to(trace, binary("div", gk, float(n), loc), x.shape,
                           loc)
    elif op == "prod":
        gx = binary("mul", _broadcast_to(trace, gk, x.shape, loc),
                    _product_of_others(trace, x, axes, loc), loc)
    elif op in ("max", "min"):
        yk = reshape(y, keep, loc) if tuple(y.shape) != keep else y
        mask = cast(compare("eq", x, yk, loc), g.dtype, loc)
        count = reduce("sum", mask, tuple(axes), True, loc)
        gx = binary("mul", mask, binary("div", gk, count, loc), loc)
    else:
        raise errors.UnsupportedError(f"mc.grad: no gradient for {op}", *loc)
    return {ix: _as(gx, x, loc)}


@def_vjp("softmax")
def _softmax_rule(trace, args, y, g, loc):
    ix, axis = args[0], args[1]
    x = wrap(trace, ix)
    gy = binary("mul", g, y, loc)
    s = reduce("sum", gy, (axis,), True, loc)
    return {ix: _as(binary("sub", gy, binary("mul", y, s, loc), loc), x, loc)}


@def_vjp("reshape")
def _reshape_rule(trace, args, y, g, loc):
    x = wrap(trace, args[0])
    return {args[0]: reshape(g, x.shape, loc)}


@def_vjp("transpose")
def _transpose_rule(trace, args, y, g, loc):
    x = wrap(trace, args[0])
    perm = [p % max(x.ndim, 1) for p in args[1]] or \
        list(reversed(range(x.ndim)))
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return {args[0]: transpose(g, inverse, loc)}


@def_vjp("cast")
def _cast_rule(trace, args, y, g, loc):
    x = wrap(trace, args[0])
    if not _is_float(x) or not _is_float(y):
        return {}
    return {args[0]: _as(g, x, loc)}


@def_vjp("slice")
def _slice_rule(trace, args, y, g, loc):
    ix, offsets, sizes, strides = args[0], args[1], args[2], args[3]
    x = wrap(trace, ix)
    if not _is_float(x):
        return {}
    g = reshape(g, tuple(sizes), loc) if tuple(g.shape) != tuple(sizes) else g
    for d in range(x.ndim):
        n = x.shape[d]
        positions = list(range(offsets[d], offsets[d] + sizes[d] * strides[d],
                               strides[d]))
        if positions != list(range(n)):
            g = _pad_axis(trace, g, d, n, positions, loc)
    return {ix: g}


@def_vjp("take")
def _take_rule(trace, args, y, g, loc):
    ix, iidx, axis = args[0], args[1], args[2]
    x = wrap(trace, ix)
    if not _is_float(x):
        return {}
    axis = axis % x.ndim
    index = wrap(trace, iidx)
    return {ix: _scatter_rows(trace, g, index, x.shape[axis], axis, loc)}


@def_vjp("take_along")
def _take_along_rule(trace, args, y, g, loc):
    """`out[..., j, ...] = x[..., idx[..., j, ...], ...]` along `axis`: each
    cotangent added back where its index points (a scatter-add along the
    axis)."""
    ix, iidx, axis = args[0], args[1], args[2]
    x = wrap(trace, ix)
    if not _is_float(x):
        return {}
    axis %= x.ndim
    out = trace.call("scatter_add_along", g._id, iidx, int(x.shape[axis]),
                     int(axis), loc, loc=loc)
    return {ix: _as(wrap(trace, out), x, loc)}


def _gather_back(gather):
    """The VJP of a scatter-add whose adjoint is `gather` ("take" or
    "take_along"): linear in its values, it gathers the cotangent back from
    the rows the indices name (wrapped and clamped alike, so the pair is
    exact transposes)."""
    def rule(trace, args, y, g, loc):
        ivals, iidx, axis = args[0], args[1], args[3]
        vals = wrap(trace, ivals)
        if not _is_float(vals):
            return {}
        out = trace.call(gather, g._id, iidx, int(axis), loc, loc=loc)
        return {ivals: _as(wrap(trace, out), vals, loc)}
    return rule


def_vjp("scatter_add")(_gather_back("take"))
def_vjp("scatter_add_along")(_gather_back("take_along"))


@def_vjp("concatenate")
def _concatenate_rule(trace, args, y, g, loc):
    parts, axis = list(args[0]), args[1]
    out = {}
    offset = 0
    axis = axis % y.ndim
    for p in parts:
        x = wrap(trace, p)
        n = x.shape[axis]
        key = [slice(None)] * y.ndim
        key[axis] = slice(offset, offset + n)
        offset += n
        if not _is_float(x):
            continue
        _accumulate(out, p, getitem(g, tuple(key), loc), loc)
    return out


@def_vjp("shard")
@def_vjp("replicate")
def _identity_rule(trace, args, y, g, loc):
    return {args[0]: g}


@def_vjp("place")
@def_vjp("transfer")
def _move_rule(trace, args, y, g, loc):
    """place / transfer: the gradient goes back to the operand's mesh."""
    ix = args[0]
    mesh = trace.builder.info(ix)[3]
    if mesh and mesh != trace.builder.info(g._id)[3]:
        return {ix: wrap(trace, trace.call("transfer", g._id, mesh, loc,
                                           loc=loc))}
    return {ix: g}


@def_vjp("all_reduce")
def _all_reduce_rule(trace, args, y, g, loc):
    ix, dims, op = args[0], args[1], args[2]
    if op not in ("sum", "avg"):
        raise errors.UnsupportedError(
            f"mc.grad: no gradient for all_reduce with op={op!r} (sum and avg "
            "have one)", *loc)
    x = wrap(trace, ix)
    if not _is_float(x):
        return {}
    return {ix: wrap(trace, trace.call("all_reduce", g._id, list(dims), op,
                                       loc, loc=loc))}


@def_vjp("all_gather")
def _all_gather_rule(trace, args, y, g, loc):
    ix, dims, axis = args[0], args[1], args[2]
    return {ix: wrap(trace, trace.call("reduce_scatter", g._id, list(dims),
                                       axis, "sum", loc, loc=loc))}


@def_vjp("reduce_scatter")
def _reduce_scatter_rule(trace, args, y, g, loc):
    ix, dims, axis, op = args[0], args[1], args[2], args[3]
    if op != "sum":
        raise errors.UnsupportedError(
            f"mc.grad: no gradient for reduce_scatter with op={op!r} (sum has "
            "one)", *loc)
    return {ix: wrap(trace, trace.call("all_gather", g._id, list(dims), axis,
                                       loc, loc=loc))}


def backward(trace, tape, seeds, wrt):
    """Cotangents of the value ids `wrt` given `seeds` ({id: Tensor}) for
    results of the ops on `tape`; None where no gradient reaches."""
    live = set(wrt)
    for prim, args, out, loc in tape.entries:
        if any(i in live for i in prim.operands(args)):
            live.update(_outputs(out))
    ct = dict(seeds)
    for prim, args, out, loc in reversed(tape.entries):
        if not any(i in live for i in prim.operands(args)):
            continue
        outs = _outputs(out)
        if not any(o in ct for o in outs):
            continue
        if prim.vjp is None or len(outs) != 1:
            raise errors.UnsupportedError(
                f"mc.grad: no gradient for {prim.label}", *loc)
        g = ct[out]
        y = wrap(trace, out)
        for i, gi in prim.vjp(trace, args, y, g, loc).items():
            if gi is None or i not in live:
                continue
            ct[i] = binary("add", ct[i], gi, loc) if i in ct else gi
    return [ct.get(w) for w in wrt]


# ---------------------------------------------------------------------------
# The public transforms
# ---------------------------------------------------------------------------


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


