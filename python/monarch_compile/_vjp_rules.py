"""Adjoint rules, one per differentiable primitive, registered on the
primitive table (`_primitives.py`) with `@def_vjp(name)`: each takes
(trace, the op's args, its result as a Tensor, the cotangent, the user's
line) and returns {operand id: its cotangent}, built with the same traced
ops as the forward program. The conventions are `_autodiff.py`'s."""
import numpy as np

from . import errors
from ._primitives import def_vjp
from ._tensor import (binary, cast, compare, einsum2, getitem, matmul, reduce,
                      reshape, transpose, unary, wrap)
from ._vjp_helpers import (_as, _broadcast_to, _is_float, _pad_axis,
                           _scatter_rows, _swap_last, _unbroadcast, _where)


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
