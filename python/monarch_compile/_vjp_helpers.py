"""Helpers building the backward (each located at the forward op's line):
zeros, broadcasting and its reverse, selects, transposes of the last two
dimensions, casts back to a primal's dtype, and the scatters and pads that
return a gather's or a slice's cotangent to the rows it read."""
import numpy as np

from ._tensor import (Tensor, binary, cast, constant_array, reduce, reshape,
                      transpose, wrap)

FLOATS = ("float32", "float16", "bfloat16")


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
