"""Index reductions, scans and sorting, composed of traced ops.

- `argmax`/`argmin`: the least index where the value equals the max (the
  first NaN where there is one, as numpy); int32 results (JAX's dtype).
- `cumsum`/`cumprod`: a Hillis-Steele scan, log2(n) shifted adds (slices
  and concatenations), exact for integers; floats sum in a tree order.
- `sort`/`argsort`: a bitonic network along the axis (padded to a power of
  two), each stage one compare-exchange of elementwise selects carrying
  (class, key, index): NaNs last, ties by index, so `argsort` is numpy's
  `kind="stable"` order and `sort`'s gradient is the permutation's (the
  selects route each cotangent to its element, as JAX does). The network
  has log2(n)(log2(n)+1)/2 stages: fine for the lengths models sort (top-k
  over a vocabulary is better written with `mc.max`).
"""
import math

import numpy as np

from . import errors
from ._npmath import (FLOATS, concat, const, select, tensor)
from ._npshape import _axis, moveaxis, ravel
from ._tensor import (active_trace, binary, cast, compare, constant_array,
                      getitem, reduce, reshape)


def arg_reduce(x, axis, keepdims, op, loc):
    x = tensor(x, loc)
    what = f"np.arg{op}"
    if axis is None:
        y = argreduce_axis(ravel(x, loc), 0, op, loc)
        return reshape(y, (1,) * x.ndim, loc) if keepdims else \
            reshape(y, (), loc)
    axis = _axis(axis, x.ndim, loc, what)
    y = argreduce_axis(x, axis, op, loc)
    if keepdims:
        return y
    return reshape(y, tuple(s for d, s in enumerate(y.shape) if d != axis),
                   loc)


def argreduce_axis(x, axis, op, loc):
    """The index (keeping `axis` as size 1) of the first extreme value."""
    if x.dtype == "bool":
        x = cast(x, "int32", loc)
    n = x.shape[axis]
    if n == 0:
        raise errors.ShapeError(
            f"np.arg{op}: attempt to get arg{op} of an empty sequence", *loc)
    m = reduce(op, x, [axis], True, loc)
    hit = compare("eq", x, m, loc)
    if x.dtype in FLOATS:
        nan = compare("ne", x, x, loc)
        any_nan = compare("ne", reduce("max", cast(nan, "int32", loc), [axis],
                                       True, loc), 0, loc)
        hit = select(any_nan, nan, hit, loc)
    shape = [1] * x.ndim
    shape[axis] = n
    trace = active_trace(loc, f"np.arg{op}")
    index = constant_array(trace, np.arange(n, dtype=np.int32).reshape(shape),
                           loc)
    return reduce("min", select(hit, index, n, loc), [axis], True, loc)


def scan(x, axis, op, loc, what):
    """`np.cumsum` (op "add") / `np.cumprod` (op "mul")."""
    x = tensor(x, loc)
    if axis is None:
        x, axis = ravel(x, loc), 0
    axis = _axis(axis, x.ndim, loc, what)
    if x.dtype == "bool":
        x = cast(x, "int32", loc)
    n = x.shape[axis]
    s = 1
    while s < n:
        key = [slice(None)] * x.ndim
        key[axis] = slice(0, n - s)
        shape = list(x.shape)
        shape[axis] = s
        fill = const(0 if op == "add" else 1, x.dtype, loc, tuple(shape))
        shifted = concat([fill, getitem(x, tuple(key), loc)], axis, loc)
        x = binary(op, x, shifted, loc)
        s *= 2
    return x


def _last(x, axis, loc, what):
    if axis is None:
        return ravel(x, loc), 0, None
    axis = _axis(axis, x.ndim, loc, what)
    return (moveaxis(x, axis, -1, loc) if axis != x.ndim - 1 else x), axis, \
        axis


def _network(x, loc):
    """Sorts the last axis of `x`: (keys with NaN as 0, indices, classes)
    after the bitonic network, cut back to the axis' length."""
    n = x.shape[-1]
    p = 1 << max(0, (n - 1).bit_length())
    lead = tuple(x.shape[:-1])
    trace = active_trace(loc, "np.sort")
    if x.dtype in FLOATS:
        nan = compare("ne", x, x, loc)
        key = select(nan, 0.0, x, loc)
        cls = cast(nan, "int32", loc)
    else:
        key = x
        cls = None
    # The padding (class 2: after everything) is interleaved, not appended:
    # n = runs * r with `runs` the largest power of two dividing n, and each
    # run of r elements is padded to m = p / runs. A split of the axis into
    # a power-of-two number of parts (up to `runs`) then cuts the padded
    # axis where it cuts the input: every rank pads and sorts its own rows
    # first, where padding at the end would shift every shard and gather
    # the whole axis.
    runs = n & -n if n else 1
    r, m = n // runs, p // runs
    order = np.arange(p, dtype=np.int32)
    if p != n:
        at = np.arange(m)[None, :]
        run = np.arange(runs)[:, None]
        # Real elements keep their index; pads get distinct larger ones.
        order = np.where(at < r, run * r + at,
                         n + run * (m - r) + at - r).astype(np.int32)
        order = order.reshape(p)

        def padded(a, value):
            cut = reshape(a, lead + (runs, r), loc)
            pad = const(value, a.dtype, loc, lead + (runs, m - r))
            return reshape(concat([cut, pad], x.ndim, loc), lead + (p,),
                           loc)

        key = padded(key, 0)
        base = cls if cls is not None else const(0, "int32", loc, lead + (n,))
        cls = padded(base, 2)
    idx = constant_array(trace, np.broadcast_to(order, lead + (p,)).copy(),
                         loc)
    arrays = [key, idx] + ([cls] if cls is not None else [])
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            arrays = _stage(arrays, p, k, j, lead, loc)
            j //= 2
        k *= 2
    key, idx = arrays[0], arrays[1]
    cls = arrays[2] if len(arrays) > 2 else None
    if p != n:
        key = getitem(key, (Ellipsis, slice(0, n)), loc)
        idx = getitem(idx, (Ellipsis, slice(0, n)), loc)
        cls = getitem(cls, (Ellipsis, slice(0, n)), loc)
    return key, idx, cls


def _after(a, b, loc):
    """Whether element `a` goes after `b`: by class, key, then index
    (booleans combined with max = or, min = and)."""
    ka, ia = a[0], a[1]
    kb, ib = b[0], b[1]
    r = binary("max", compare("gt", ka, kb, loc), binary(
        "min", compare("eq", ka, kb, loc), compare("gt", ia, ib, loc), loc),
        loc)
    if len(a) > 2:
        ca, cb = a[2], b[2]
        r = binary("max", compare("gt", ca, cb, loc), binary(
            "min", compare("eq", ca, cb, loc), r, loc), loc)
    return r


def _stage(arrays, p, k, j, lead, loc):
    """One compare-exchange of the bitonic network: element i with i + j
    (bit j of i clear), ascending where bit k of i is clear.

    The halves are one select over (groups, 2, j), each half taking the
    pair's lower or upper element, not two selects concatenated: one op
    where there were three (1-rank argsort of 1000x256 rows: 137 -> 97 ms),
    and one the partitioner can split along the halves, where it gathers a
    concatenation."""
    trace = active_trace(loc, "np.sort")
    groups = p // (2 * j)
    split = [reshape(a, lead + (groups, 2, j), loc) for a in arrays]
    first = [getitem(s, (Ellipsis, slice(0, 1), slice(None)), loc)
             for s in split]
    second = [getitem(s, (Ellipsis, slice(1, 2), slice(None)), loc)
              for s in split]
    i = (np.arange(groups)[:, None, None] * 2 * j +
         np.arange(j)[None, None, :])
    ascending = constant_array(trace, (i & k) == 0, loc)
    swap = compare("eq", _after(first, second, loc), ascending, loc)
    upper = constant_array(trace, np.array([[False], [True]]), loc)
    # Lower half: the second element where swapped; upper: the first.
    take_second = compare("ne", swap, upper, loc)
    return [reshape(select(take_second, b, a, loc), lead + (p,), loc)
            for a, b in zip(first, second)]


def sort(x, axis, loc):
    x = tensor(x, loc)
    dtype = x.dtype
    if dtype == "bool":
        x = cast(x, "int32", loc)
    y, axis, moved = _last(x, axis, loc, "np.sort")
    key, _idx, cls = _network(y, loc)
    if key.dtype in FLOATS:
        key = select(compare("eq", cls, 1, loc), math.nan, key, loc)
    if moved is not None and moved != x.ndim - 1:
        key = moveaxis(key, -1, moved, loc)
    return cast(key, "bool", loc) if dtype == "bool" else key


def argsort(x, axis, loc):
    x = tensor(x, loc)
    if x.dtype == "bool":
        x = cast(x, "int32", loc)
    y, axis, moved = _last(x, axis, loc, "np.argsort")
    _key, idx, _cls = _network(y, loc)
    if moved is not None and moved != x.ndim - 1:
        idx = moveaxis(idx, -1, moved, loc)
    return idx


def median(x, axis, keepdims, loc):
    """The middle of the sorted values (the mean of the two middle ones for
    an even count); NaN where a NaN is, as numpy."""
    x = tensor(x, loc)
    if x.dtype not in FLOATS:
        x = cast(x, "float32", loc)
    nd = x.ndim
    if axis is None:
        y = ravel(x, loc)
        axes = list(range(nd))
    else:
        axes = [_axis(a, nd, loc, "np.median") for a in (
            axis if isinstance(axis, (tuple, list)) else (axis,))]
        rest = [d for d in range(nd) if d not in axes]
        from ._npshape import _permute
        y = _permute(x, rest + axes, loc)
        y = reshape(y, tuple(x.shape[d] for d in rest) + (-1,), loc)
    s = sort(y, -1, loc)
    n = s.shape[-1]
    lo = getitem(s, (Ellipsis, slice((n - 1) // 2, (n - 1) // 2 + 1)), loc)
    hi = getitem(s, (Ellipsis, slice(n // 2, n // 2 + 1)), loc)
    m = binary("mul", binary("add", lo, hi, loc), 0.5, loc) if n % 2 == 0 \
        else lo
    # sort puts NaNs last: the last value is NaN when any is.
    last = getitem(s, (Ellipsis, slice(n - 1, n)), loc)
    m = select(compare("ne", last, last, loc), last, m, loc)
    if keepdims:
        shape = tuple(1 if d in axes else x.shape[d] for d in range(nd))
    else:
        shape = tuple(x.shape[d] for d in range(nd) if d not in axes)
    return reshape(m, shape, loc)
