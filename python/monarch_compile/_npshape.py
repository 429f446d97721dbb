"""numpy's shape functions and contractions, composed of traced ops.

Shape functions (`np.expand_dims`, `np.tile`, `np.pad`, `np.roll`...) are
reshapes, transposes, slices, concatenations and gathers with constant
indices; contractions (`np.dot`, `np.tensordot`, `np.einsum`...) are
transposes and reshapes around one `matmul`, so they partition like one.
Every function takes the user's location `loc` last.
"""
import numbers
import string

import numpy as np

from . import errors
from ._npmath import (FLOATS, concat, const, normalize_axes, select, tensor)
from ._tensor import (Tensor, active_trace, binary, cast, compare, einsum2,
                      constant_array, getitem, matmul, reduce, reshape, take,
                      transpose, wrap)


def _axis(a, ndim, loc, what):
    a = int(a)
    if not -ndim <= a < ndim:
        raise errors.ShapeError(
            f"{what}: axis {a} is out of bounds for a tensor of rank {ndim}",
            *loc)
    return a % ndim


def ravel(x, loc):
    x = tensor(x, loc)
    return reshape(x, (-1,), loc) if x.ndim != 1 else x


def expand_dims(x, axis, loc):
    x = tensor(x, loc)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(axes)
    axes = normalize_axes(axes, nd, loc, "np.expand_dims")
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape(x, tuple(shape), loc)


def squeeze(x, axis, loc):
    x = tensor(x, loc)
    if axis is None:
        axes = [d for d, s in enumerate(x.shape) if s == 1]
    else:
        axes = normalize_axes(axis, x.ndim, loc, "np.squeeze")
        for a in axes:
            if x.shape[a] != 1:
                raise errors.ShapeError(
                    f"np.squeeze: cannot select an axis to squeeze out which "
                    f"has size not equal to one (axis {a} of shape "
                    f"{x.shape})", *loc)
    if not axes:
        return x
    return reshape(x, tuple(s for d, s in enumerate(x.shape)
                            if d not in axes), loc)


def swapaxes(x, a, b, loc):
    x = tensor(x, loc)
    a, b = _axis(a, x.ndim, loc, "np.swapaxes"), _axis(b, x.ndim, loc,
                                                       "np.swapaxes")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm, loc) if a != b else x


def moveaxis(x, source, destination, loc):
    x = tensor(x, loc)
    src = [_axis(s, x.ndim, loc, "np.moveaxis") for s in (
        source if isinstance(source, (tuple, list)) else (source,))]
    dst = [_axis(d, x.ndim, loc, "np.moveaxis") for d in (
        destination if isinstance(destination, (tuple, list))
        else (destination,))]
    if len(src) != len(dst):
        raise errors.ShapeError("np.moveaxis: source and destination must "
                                "have the same number of elements", *loc)
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order, loc) if order != list(range(x.ndim)) else x


def broadcast_to(x, shape, loc):
    """`x + zeros(shape)` (-0.0 for floats, which keeps every value; the
    gradient sums over the broadcast dimensions)."""
    x = tensor(x, loc)
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else \
        tuple(int(s) for s in shape)
    try:
        out = np.broadcast_shapes(tuple(x.shape), shape)
    except ValueError:
        out = None
    if out != shape:
        raise errors.ShapeError(
            f"np.broadcast_to: cannot broadcast a tensor of shape {x.shape} "
            f"to {shape}", *loc)
    if tuple(x.shape) == shape:
        return x
    if x.dtype == "bool":
        return compare("ne", binary("add", cast(x, "int32", loc),
                                    const(0, "int32", loc, shape), loc), 0,
                       loc)
    zero = -0.0 if x.dtype in FLOATS else 0
    return binary("add", x, const(zero, x.dtype, loc, shape), loc)


def broadcast_arrays(arrays, loc):
    shapes = [tuple(tensor(a, loc).shape) for a in arrays]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise errors.ShapeError(
            f"np.broadcast_arrays: shapes {shapes} do not broadcast",
            *loc) from None
    return [broadcast_to(a, shape, loc) for a in arrays]


def tile(x, reps, loc):
    x = tensor(x, loc)
    reps = (int(reps),) if isinstance(reps, numbers.Integral) else tuple(
        int(r) for r in reps)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + tuple(x.shape)
    if all(r == 1 for r in reps):
        return reshape(x, shape, loc) if shape != tuple(x.shape) else x
    inter = sum(((1, s) for s in shape), ())
    y = reshape(x, inter, loc)
    y = broadcast_to(y, sum(((r, s) for r, s in zip(reps, shape)), ()), loc)
    return reshape(y, tuple(r * s for r, s in zip(reps, shape)), loc)


def repeat(x, repeats, axis, loc):
    x = tensor(x, loc)
    if axis is None:
        x, axis = ravel(x, loc), 0
    axis = _axis(axis, x.ndim, loc, "np.repeat")
    n = x.shape[axis]
    if isinstance(repeats, Tensor):
        raise errors.UnsupportedError(
            "unsupported: np.repeat with traced repeats (the result's shape "
            "would depend on the data); pass the counts as a Python int or "
            "array", *loc)
    reps = np.asarray(repeats)
    if reps.ndim == 0 or reps.size == 1:
        r = int(reps.reshape(-1)[0])
        shape = list(x.shape)
        y = reshape(x, tuple(shape[:axis + 1]) + (1,) + tuple(
            shape[axis + 1:]), loc)
        shape.insert(axis + 1, r)
        y = broadcast_to(y, tuple(shape), loc)
        shape[axis] *= r
        del shape[axis + 1]
        return reshape(y, tuple(shape), loc)
    index = np.repeat(np.arange(n, dtype=np.int32), reps)
    return take(x, index, axis, loc)


def pad(x, pad_width, mode, constant_values, loc):
    """`np.pad`: constant mode by concatenating constant blocks; edge,
    reflect, symmetric and wrap as a gather of the padded indices numpy
    itself computes."""
    x = tensor(x, loc)
    widths = np.broadcast_to(np.asarray(pad_width, np.int64), (x.ndim, 2))
    if (widths < 0).any():
        raise errors.ShapeError("np.pad: negative pad widths", *loc)
    if callable(mode) or mode not in ("constant", "edge", "reflect",
                                      "symmetric", "wrap"):
        raise errors.UnsupportedError(
            f"unsupported: np.pad with mode={mode!r} (constant, edge, "
            "reflect, symmetric and wrap are)", *loc)
    if mode == "constant":
        if isinstance(constant_values, Tensor):
            raise errors.UnsupportedError(
                "unsupported: np.pad with a traced constant_values", *loc)
        values = np.broadcast_to(np.asarray(constant_values), (x.ndim, 2))
    for d in range(x.ndim):
        before, after = int(widths[d, 0]), int(widths[d, 1])
        if not before and not after:
            continue
        if mode != "constant":
            index = np.pad(np.arange(x.shape[d], dtype=np.int32),
                           (before, after), mode=mode)
            x = take(x, index, d, loc)
            continue
        parts = []
        for width, value in ((before, values[d, 0]), (after, values[d, 1])):
            shape = list(x.shape)
            shape[d] = width
            parts.append(const(value.item(), x.dtype, loc, tuple(shape))
                         if width else None)
        x = concat([p for p in (parts[0], x, parts[1]) if p is not None], d,
                   loc)
    return x


def flip(x, axis, loc):
    x = tensor(x, loc)
    axes = normalize_axes(axis, x.ndim, loc, "np.flip")
    key = tuple(slice(None, None, -1) if d in axes else slice(None)
                for d in range(x.ndim))
    return getitem(x, key, loc) if axes else x


def roll(x, shift, axis, loc):
    x = tensor(x, loc)
    if axis is None:
        return reshape(roll(ravel(x, loc), shift, 0, loc), x.shape, loc)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    for s, a in zip(shifts.reshape(-1), axes.reshape(-1)):
        a = _axis(a, x.ndim, loc, "np.roll")
        n = x.shape[a]
        s = int(s) % n if n else 0
        if not s:
            continue
        key = [slice(None)] * x.ndim
        key[a] = slice(n - s, n)
        tail = getitem(x, tuple(key), loc)
        key[a] = slice(0, n - s)
        x = concat([tail, getitem(x, tuple(key), loc)], a, loc)
    return x


def concatenate(arrays, axis, loc):
    arrays = [tensor(a, loc) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a, loc) for a in arrays], 0
    if not arrays:
        raise errors.ShapeError("np.concatenate: need at least one array",
                                *loc)
    # Promote as numpy does: the concatenation of int32 and float32 is
    # float32.
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        target = next((d for d in ("float32", "bfloat16", "float16", "int32")
                       if d in dtypes), arrays[0].dtype)
        arrays = [a if a.dtype == target else cast(a, target, loc)
                  for a in arrays]
    return concat(arrays, _axis(axis, arrays[0].ndim, loc, "np.concatenate"),
                  loc)


def stack(arrays, axis, loc):
    arrays = [tensor(a, loc) for a in arrays]
    if not arrays:
        raise errors.ShapeError("np.stack: need at least one array", *loc)
    shapes = {tuple(a.shape) for a in arrays}
    if len(shapes) != 1:
        raise errors.ShapeError(
            f"np.stack: all input arrays must have the same shape, got "
            f"{sorted(shapes)}", *loc)
    a = _axis(axis, arrays[0].ndim + 1, loc, "np.stack")
    return concatenate([expand_dims(t, a, loc) for t in arrays], a, loc)


def atleast(x, n, loc):
    x = tensor(x, loc)
    if x.ndim >= n:
        return x
    if n == 1:
        return reshape(x, (1,), loc)
    if n == 2:
        return reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape), loc)
    shape = {0: (1, 1, 1), 1: (1,) + tuple(x.shape) + (1,),
             2: tuple(x.shape) + (1,)}[x.ndim]
    return reshape(x, shape, loc)


def hstack(arrays, loc):
    arrays = [atleast(a, 1, loc) for a in arrays]
    return concatenate(arrays, 0 if arrays[0].ndim == 1 else 1, loc)


def vstack(arrays, loc):
    return concatenate([atleast(a, 2, loc) for a in arrays], 0, loc)


def column_stack(arrays, loc):
    cols = []
    for a in arrays:
        a = tensor(a, loc)
        cols.append(reshape(a, (a.shape[0], 1), loc) if a.ndim == 1 else a)
    return concatenate(cols, 1, loc)


def split(x, sections, axis, loc, exact=True, what="np.split"):
    x = tensor(x, loc)
    a = _axis(axis, x.ndim, loc, what)
    n = x.shape[a]
    if isinstance(sections, numbers.Integral):
        k = int(sections)
        if k <= 0:
            raise errors.ShapeError(f"{what}: number sections must be larger "
                                    "than 0", *loc)
        if exact and n % k:
            raise errors.ShapeError(
                f"{what}: array split does not result in an equal division "
                f"({n} into {k})", *loc)
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        bounds = [0] + list(np.cumsum(sizes))
    else:
        bounds = [0] + [int(i) for i in sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = [slice(None)] * x.ndim
        key[a] = slice(int(lo), int(hi))
        out.append(getitem(x, tuple(key), loc))
    return out


def take_np(x, indices, axis, mode, loc):
    """`np.take` with numpy's modes: 'raise' (constant indices checked, a
    traced one clamped as JAX does), 'clip', 'wrap'."""
    x = tensor(x, loc)
    n = x.shape[_axis(axis, x.ndim, loc, "np.take")] if axis is not None \
        else x.size
    if mode not in (None, "raise", "clip", "wrap"):
        raise errors.TraceError(f"np.take: unknown mode {mode!r}", *loc)
    if mode in ("clip", "wrap"):
        if isinstance(indices, Tensor):
            indices = binary("mod", indices, n, loc) if mode == "wrap" else \
                binary("min", binary("max", indices, 0, loc), n - 1, loc)
        else:
            a = np.asarray(indices)
            indices = (np.mod(a, n) if mode == "wrap" else np.clip(
                a, 0, n - 1)).astype(np.int32)
    return take(x, indices, axis, loc)


def take_along_axis(x, indices, axis, loc):
    """numpy's `take_along_axis`: one gather at the result's own
    coordinates, or (indices that broadcast) a gather from the flattened
    `x` at `indices` along `axis` plus the constant offsets of the other
    coordinates."""
    x = tensor(x, loc)
    if axis is None:
        return take_along_axis(ravel(x, loc), indices, 0, loc)
    idx_shape = tuple(indices.shape) if isinstance(indices, Tensor) else \
        np.shape(indices)
    if len(idx_shape) != x.ndim:
        raise errors.ShapeError(
            "np.take_along_axis: indices and arr must have the same number "
            f"of dimensions ({len(idx_shape)} and {x.ndim})", *loc)
    axis = _axis(axis, x.ndim, loc, "np.take_along_axis")
    n = x.shape[axis]
    # Indices of x's shape off the axis: one gather whose other coordinates
    # are the result's own (a split of x along them passes through it).
    # Otherwise a gather from the flattened x, whose offsets follow numpy's
    # broadcasting of the other dimensions.
    along = all(idx_shape[d] == x.shape[d] for d in range(x.ndim)
                if d != axis)
    out = []
    for d in range(x.ndim):
        if d == axis:
            out.append(idx_shape[d])
            continue
        a, b = x.shape[d], idx_shape[d]
        if a != b and 1 not in (a, b):
            raise errors.ShapeError(
                f"np.take_along_axis: shapes {x.shape} and {idx_shape} do "
                "not broadcast", *loc)
        out.append(max(a, b) if min(a, b) else 0)
    if isinstance(indices, Tensor):
        if indices.dtype != "int32":
            raise errors.UnsupportedError(
                "unsupported: np.take_along_axis with non-integer indices",
                *loc)
    else:
        indices = np.asarray(indices)
        if indices.size and (indices.min() < -n or indices.max() >= n):
            raise errors.ShapeError(
                f"np.take_along_axis: index out of bounds for size {n}", *loc)
    if along:
        trace = active_trace(loc, "np.take_along_axis")
        ids = indices if isinstance(indices, Tensor) else constant_array(
            trace, indices.astype(np.int32), loc)
        return wrap(trace, trace.call("take_along", x._id, ids._id, axis, loc,
                                      loc=loc))
    strides = np.ones(x.ndim, np.int64)
    for d in range(x.ndim - 2, -1, -1):
        strides[d] = strides[d + 1] * x.shape[d + 1]
    base = np.zeros(out, np.int64)
    for d in range(x.ndim):
        if d == axis or x.shape[d] == 1:
            continue  # a size-1 dimension of x broadcasts: stride 0
        shape = [1] * x.ndim
        shape[d] = out[d]
        base = base + np.arange(out[d]).reshape(shape) * strides[d]
    if isinstance(indices, Tensor):
        wrapped = select(compare("lt", indices, 0, loc),
                         binary("add", indices, n, loc), indices, loc)
        wrapped = binary("min", binary("max", wrapped, 0, loc), n - 1, loc)
        flat = binary("add", binary("mul", wrapped, int(strides[axis]), loc),
                      constant_array(active_trace(loc, "take"),
                                     base.astype(np.int32), loc), loc)
    else:
        flat = (base + np.mod(indices, n) * strides[axis]).astype(np.int32)
    return take(x, flat, None, loc)


def full_like(x, value, dtype, shape, loc):
    """`np.zeros_like`/`ones_like`/`full_like`: `where(x == x, v, v)`,
    so the constant lives (and is laid out) where `x` does."""
    x = tensor(x, loc)
    dtype = x.dtype if dtype is None else _dtype(dtype, loc)
    if isinstance(value, Tensor):
        raise errors.UnsupportedError(
            "unsupported: np.full_like with a traced fill value (use "
            "np.broadcast_to or x * 0 + v)", *loc)
    if shape is not None and tuple(np.atleast_1d(shape)) != tuple(x.shape):
        return const(value, dtype, loc, tuple(int(s) for s in
                                              np.atleast_1d(shape)))
    v = const(value, dtype, loc)
    return select(compare("eq", x, x, loc) if x.dtype != "bool" else
                  compare("eq", cast(x, "int32", loc), 0, loc), v, v, loc)


def _dtype(dtype, loc):
    from ._tensor import DTYPES, dtype_name
    name = dtype_name(dtype)
    name = {"float64": "float32", "int64": "int32", "int": "int32"}.get(
        name, name)
    if name not in DTYPES and name != "bool":
        raise errors.UnsupportedError(
            f"unsupported dtype {name} (supported: {', '.join(DTYPES)})",
            *loc)
    return name


# Contractions ----------------------------------------------------------------

def tensordot(a, b, axes, loc):
    a, b = tensor(a, loc), tensor(b, loc)
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, numbers.Integral) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, numbers.Integral) else list(ax_b)
    ax_a = [_axis(x, a.ndim, loc, "np.tensordot") for x in ax_a]
    ax_b = [_axis(x, b.ndim, loc, "np.tensordot") for x in ax_b]
    if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j]
                                     for i, j in zip(ax_a, ax_b)):
        raise errors.ShapeError(
            f"np.tensordot: shape-mismatch for sum ({a.shape} axes {ax_a}, "
            f"{b.shape} axes {ax_b})", *loc)
    if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        raise errors.ShapeError("np.tensordot: an axis summed twice", *loc)
    # One generic: a's dimensions labelled in order, b's summed ones by the
    # label of the a dimension they pair with.
    letters = string.ascii_letters
    la = letters[:a.ndim]
    lb = "".join(la[ax_a[ax_b.index(j)]] if j in ax_b else letters[a.ndim + j]
                 for j in range(b.ndim))
    out = "".join(la[d] for d in range(a.ndim) if d not in ax_a) + "".join(
        lb[d] for d in range(b.ndim) if d not in ax_b)
    return einsum2(a, b, la, lb, out, loc)


def _permute(x, perm, loc):
    return transpose(x, perm, loc) if list(perm) != list(range(x.ndim)) else x


def _dot_operands(a, b, loc):
    """`a` and `b` as tensors (numbers kept), and their elementwise product
    when either is a scalar (what np.dot and np.inner give then), else
    None."""
    a = a if isinstance(a, numbers.Number) else tensor(a, loc)
    b = b if isinstance(b, numbers.Number) else tensor(b, loc)
    if isinstance(a, numbers.Number) or isinstance(b, numbers.Number) or \
            a.ndim == 0 or b.ndim == 0:
        return a, b, binary("mul", a, b, loc)
    return a, b, None


def dot(a, b, loc):
    a, b, scalar = _dot_operands(a, b, loc)
    if scalar is not None:
        return scalar
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, loc)
    return tensordot(a, b, ([a.ndim - 1], [max(b.ndim - 2, 0)]), loc)


def inner(a, b, loc):
    a, b, scalar = _dot_operands(a, b, loc)
    if scalar is not None:
        return scalar
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]), loc)


def outer(a, b, loc):
    a, b = ravel(a, loc), ravel(b, loc)
    return binary("mul", reshape(a, (a.shape[0], 1), loc),
                  reshape(b, (1, b.shape[0]), loc), loc)


def vdot(a, b, loc):
    return matmul(ravel(a, loc), ravel(b, loc), loc)


def trace_(x, offset, axis1, axis2, loc):
    x = tensor(x, loc)
    a1, a2 = _axis(axis1, x.ndim, loc, "np.trace"), _axis(axis2, x.ndim, loc,
                                                          "np.trace")
    return reduce("sum", diagonal(x, offset, a1, a2, loc), [-1], False, loc)


def diagonal(x, offset, axis1, axis2, loc):
    """The diagonal moved to the last axis: a masked sum over `axis2`, the
    other diagonal axis then sliced to the diagonal's length."""
    x = tensor(x, loc)
    a1 = _axis(axis1, x.ndim, loc, "np.diagonal")
    a2 = _axis(axis2, x.ndim, loc, "np.diagonal")
    if a1 == a2:
        raise errors.ShapeError("np.diagonal: axis1 and axis2 cannot be the "
                                "same", *loc)
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    y = _permute(x, rest + [a1, a2], loc)
    n, m = x.shape[a1], x.shape[a2]
    k = int(offset)
    length = max(0, min(n, m - k) if k >= 0 else min(n + k, m))
    if length == 0:
        raise errors.UnsupportedError("unsupported: an empty diagonal", *loc)
    mask = np.eye(n, m, k, dtype=bool)
    trace = active_trace(loc, "np.diagonal")
    picked = select(constant_array(trace, mask, loc), y, 0, loc)
    d = reduce("sum", picked, [-1], False, loc)
    start = 0 if k >= 0 else -k
    key = (Ellipsis, slice(start, start + length))
    return getitem(d, key, loc) if (start, length) != (0, n) else d


def diag(v, k, loc):
    v = tensor(v, loc)
    if v.ndim == 2:
        return diagonal(v, k, 0, 1, loc)
    if v.ndim != 1:
        raise errors.ShapeError("np.diag: input must be 1-d or 2-d", *loc)
    n = v.shape[0] + abs(int(k))
    mask = np.eye(n, n, int(k), dtype=bool)
    # Row i of the result holds v at column i + k: spread v along the
    # diagonal's axis, padded to n, then masked.
    k = int(k)
    padded = pad(v, (max(k, 0), max(-k, 0)), "constant", 0, loc)
    rows = reshape(padded, (1, n), loc) if k >= 0 else reshape(padded, (n, 1),
                                                               loc)
    trace = active_trace(loc, "np.diag")
    return select(constant_array(trace, mask, loc), rows, 0, loc)


def einsum(subscripts, operands, loc):
    """Two operands at a time, left to right: labels only one side still
    needs are summed first, shared labels needed later are batch
    dimensions, the others contracted by one matmul; a label repeated in
    one operand is its diagonal."""
    if not isinstance(subscripts, str):
        raise errors.UnsupportedError(
            "unsupported: np.einsum in the interleaved (operand, sublist) "
            "form; write the subscripts string", *loc)
    ops = [tensor(o, loc) for o in operands]
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise errors.ShapeError(
            f"np.einsum: {len(terms)} subscripts for {len(ops)} operands",
            *loc)
    pool = [c for c in string.ascii_letters if c not in spec]
    ell = 0
    for t, o in zip(terms, ops):
        if "..." in t:
            ell = max(ell, o.ndim - (len(t) - 3))
    ell_labels = "".join(pool[:ell])
    labels = []
    for t, o in zip(terms, ops):
        if "..." in t:
            e = o.ndim - (len(t) - 3)
            t = t.replace("...", ell_labels[ell - e:] if e else "")
        if len(t) != o.ndim or not all(c in string.ascii_letters for c in t):
            raise errors.ShapeError(
                f"np.einsum: subscripts {t!r} for an operand of rank "
                f"{o.ndim}", *loc)
        labels.append(t)
    if arrow:
        out = rhs.replace("...", ell_labels)
    else:
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell_labels + "".join(sorted(
            c for c, k in counts.items() if k == 1 and c not in ell_labels))
    if len(set(out)) != len(out) or any(
            c not in "".join(labels) for c in out):
        raise errors.ShapeError(f"np.einsum: bad output subscripts {out!r}",
                                *loc)
    sizes = {}
    for t, o in zip(labels, ops):
        for c, s in zip(t, o.shape):
            if sizes.get(c, 1) not in (1, s) and s != 1:
                raise errors.ShapeError(
                    f"np.einsum: label {c!r} has sizes {sizes[c]} and {s}",
                    *loc)
            sizes[c] = max(sizes.get(c, 1), s)
    items = [_diagonals(o, t, loc) for o, t in zip(ops, labels)]
    x, lx = items[0]
    for i in range(1, len(items)):
        later = set(out).union(*[set(t) for _, t in items[i + 1:]])
        last = out if i == len(items) - 1 else None
        x, lx = _contract(x, lx, items[i][0], items[i][1], later, last, loc)
    x, lx = _sum_out(x, lx, set(out), loc)
    return _permute(x, [lx.index(c) for c in out], loc)


def _diagonals(x, labels, loc):
    """`x` with each label repeated within `labels` reduced to its
    diagonal (kept at the first occurrence)."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        n = x.shape[i]
        shape = [1] * x.ndim
        shape[i], shape[j] = n, n
        mask = np.eye(n, dtype=bool).reshape(shape)
        trace = active_trace(loc, "np.einsum")
        x = reduce("sum", select(constant_array(trace, mask, loc), x, 0, loc),
                   [j], False, loc)
        labels = labels[:j] + labels[j + 1:]
    return x, labels


def _sum_out(x, labels, keep, loc):
    axes = [d for d, c in enumerate(labels) if c not in keep]
    if not axes:
        return x, labels
    return (reduce("sum", x, axes, False, loc),
            "".join(c for c in labels if c in keep))


def _drop(x, labels, c, loc):
    """`x` without its size-1 dimension labelled `c`."""
    i = labels.index(c)
    return (reshape(x, x.shape[:i] + x.shape[i + 1:], loc),
            labels[:i] + labels[i + 1:])


def _contract(a, la, b, lb, later, out, loc):
    """One pairwise step as one generic (the builder's `einsum`): the labels
    still needed `later` kept (in `out`'s order for the last step), the rest
    summed inside it."""
    # A label of one operand alone that nothing later needs is summed
    # first: a contraction whose every loop is batch, M, N or K is a BLAS
    # call (a reduction loop of one operand is not a GEMM dimension).
    a, la = _sum_out(a, la, later | set(lb), loc)
    b, lb = _sum_out(b, lb, later | set(la), loc)
    # A shared label of size 1 on one side broadcasts: that side drops it
    # (sum_i a * b_i == a * sum_i b_i; a kept label is b's alone).
    for c in [c for c in la if c in lb]:
        sa, sb = a.shape[la.index(c)], b.shape[lb.index(c)]
        if sa != sb:
            if sa == 1:
                a, la = _drop(a, la, c, loc)
            else:
                b, lb = _drop(b, lb, c, loc)
    if out is None:
        out = "".join([c for c in la if c in later] +
                      [c for c in lb if c in later and c not in la])
    return einsum2(a, b, la, lb, out, loc), out