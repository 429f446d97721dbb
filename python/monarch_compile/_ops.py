"""The `mc.*` tensor functions, placement and collectives."""
from . import errors
from ._location import user_loc
import numpy as _np

from ._tensor import (Tensor, _np_function, active_trace, as_value, binary,
                      cast, compare, constant_array, dtype_name, reduce,
                      reshape as _reshape, transpose as _transpose, unary,
                      wrap)

float32 = "float32"
float16 = "float16"
bfloat16 = "bfloat16"
int32 = "int32"


def _unary(name):
    def op(x):
        return unary(name, x, user_loc())
    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return op


relu = _unary("relu")
exp = _unary("exp")
log = _unary("log")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
gelu = _unary("gelu")
sqrt = _unary("sqrt")
abs = _unary("abs")
neg = _unary("neg")


def rsqrt(x):
    """Elementwise 1 / sqrt(x)."""
    loc = user_loc()
    return binary("div", 1.0, unary("sqrt", x, loc), loc)


def argmax(x, axis=None, keepdims=False):
    """The index of the largest element along `axis` (of the flattened `x`
    when None), the first of ties and of NaNs, as int32: `np.argmax`'s."""
    return _np_function("argmax", x, axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    """The index of the smallest element along `axis`, as `np.argmin`."""
    return _np_function("argmin", x, axis, keepdims=keepdims)


def add(a, b):
    return binary("add", a, b, user_loc())


def sub(a, b):
    return binary("sub", a, b, user_loc())


def mul(a, b):
    return binary("mul", a, b, user_loc())


def div(a, b):
    return binary("div", a, b, user_loc())


def maximum(a, b):
    return binary("max", a, b, user_loc())


def minimum(a, b):
    return binary("min", a, b, user_loc())


def matmul(a, b):
    from ._tensor import matmul as _matmul
    return _matmul(a, b, user_loc())


def where(cond, a, b):
    """Elementwise `a if cond else b` (the traced replacement for `if`)."""
    loc = user_loc()
    trace = active_trace(loc, "where")
    like = a if isinstance(a, Tensor) else b
    ic = as_value(trace, cond, None, loc)
    ia = as_value(trace, a, like, loc)
    ib = as_value(trace, b, like, loc)
    return wrap(trace, trace.call("select", ic, ia, ib, loc, loc=loc))


def sum(x, axis=None, keepdims=False):
    return reduce("sum", x, axis, keepdims, user_loc())


def mean(x, axis=None, keepdims=False):
    return reduce("mean", x, axis, keepdims, user_loc())


def max(x, axis=None, keepdims=False):
    return reduce("max", x, axis, keepdims, user_loc())


def min(x, axis=None, keepdims=False):
    return reduce("min", x, axis, keepdims, user_loc())


def softmax(x, axis=-1):
    loc = user_loc()
    trace = active_trace(loc, "softmax")
    ix = as_value(trace, x, None, loc)
    return wrap(trace, trace.call("softmax", ix, int(axis), loc, loc=loc))


def reshape(x, shape):
    return _reshape(x, tuple(shape), user_loc())


def transpose(x, axes=()):
    return _transpose(x, tuple(axes or ()), user_loc())


def astype(x, dtype):
    return cast(x, dtype, user_loc())


def _tensor_arg(x, loc, what):
    trace = active_trace(loc, what)
    if not isinstance(x, Tensor):
        raise errors.TraceError(f"{what} needs a traced tensor, got "
                                f"{type(x).__name__}", *loc)
    return trace, as_value(trace, x, None, loc)


def shard(x, mesh=None, **split):
    """`mc.shard(x, gpus=0)`: split tensor dim 0 over mesh dimension "gpus"
    (several keywords split several dimensions); other dims are whole. The
    compiler inserts the collectives a resharding needs. `mesh` picks the
    mesh for a value not on one yet (default: the compiled function's)."""
    loc = user_loc()
    trace, ix = _tensor_arg(x, loc, "mc.shard")
    for d, t in split.items():
        if isinstance(t, bool) or not isinstance(t, int):
            raise errors.ShardingError(
                f"mc.shard: {d}= must be a tensor dimension (int), got {t!r}",
                *loc)
    mesh_sym = trace.mesh_symbol(mesh, loc) if mesh is not None else ""
    pairs = list(split.items())
    return wrap(trace, trace.call("shard", ix, pairs, mesh_sym, loc, loc=loc))


def replicate(x):
    """`mc.replicate(x)`: the whole value on every rank of its mesh."""
    loc = user_loc()
    trace, ix = _tensor_arg(x, loc, "mc.replicate")
    return wrap(trace, trace.call("replicate", ix, loc, loc=loc))


def _dims(dims):
    return [dims] if isinstance(dims, str) else list(dims)


def all_reduce(x, dims, op="sum"):
    """Per-rank code: reduce over mesh dimensions `dims` (sum/avg/max/min)."""
    loc = user_loc()
    trace, ix = _tensor_arg(x, loc, "all_reduce")
    return wrap(trace, trace.call("all_reduce", ix, _dims(dims), op, loc, loc=loc))


def all_gather(x, dims, axis=0):
    """Per-rank code: concatenate the ranks' tensors along `axis`."""
    loc = user_loc()
    trace, ix = _tensor_arg(x, loc, "all_gather")
    return wrap(trace, trace.call("all_gather", ix, _dims(dims), int(axis), loc,
                                  loc=loc))


def reduce_scatter(x, dims, axis=0, op="sum"):
    """Per-rank code: reduce, then keep this rank's block along `axis`."""
    loc = user_loc()
    trace, ix = _tensor_arg(x, loc, "reduce_scatter")
    return wrap(trace, trace.call("reduce_scatter", ix, _dims(dims), int(axis),
                                  op, loc, loc=loc))


def broadcast(x, dims, root=0):
    """Per-rank code: every rank gets the value of rank `root` along `dims`."""
    loc = user_loc()
    trace, ix = _tensor_arg(x, loc, "broadcast")
    return wrap(trace, trace.call("broadcast_from", ix, _dims(dims), int(root),
                                  loc, loc=loc))


# Printing ------------------------------------------------------------------

_SAMPLE = {"bool": True, "int32": 1, "int64": 1, "int8": 1, "int16": 1,
           "uint8": 1}


def debug_print(fmt, *args, **kwargs):
    """`mc.debug_print("step {} loss {:.4f}", k, loss)` prints on the
    workers while the step runs, with that step's values (like
    `jax.debug.print`; a Python `print` runs only while tracing). `fmt` is
    str.format syntax: `{}`, `{0}`, `{name}` and format specs. In an
    endpoint each rank prints its own values; in a compiled function every
    rank of the values' mesh prints them whole. Lines reach the caller
    prefixed by rank, identical lines of several ranks folded
    (`[ranks 0-3] ...`). Python values (shapes, numbers, strings) are
    formatted while tracing."""
    import string

    loc = user_loc()
    trace = active_trace(loc, "mc.debug_print")
    if not isinstance(fmt, str):
        raise errors.TraceError(
            f"mc.debug_print: the format must be a str, got "
            f"{type(fmt).__name__}", *loc)
    formatter = string.Formatter()
    out = []
    ids = []
    auto = 0

    def literal(text):
        out.append(text.replace("{", "{{").replace("}", "}}"))

    try:
        parsed = list(formatter.parse(fmt))
    except ValueError as e:
        raise errors.TraceError(f"mc.debug_print: bad format {fmt!r}: {e}",
                                *loc) from None
    for text, field, spec, conversion in parsed:
        literal(text)
        if field is None:
            continue
        if field == "" or field[0] in ".[":
            field = str(auto) + field
            auto += 1
        if "{" in (spec or ""):
            raise errors.TraceError(
                "mc.debug_print: nested fields in a format spec are not "
                f"supported ({{{field}:{spec}}})", *loc)
        try:
            value, _ = formatter.get_field(field, args, kwargs)
        except (IndexError, KeyError, AttributeError, TypeError) as e:
            raise errors.TraceError(
                f"mc.debug_print: format field {{{field}}} names no value "
                f"({type(e).__name__}: {e})", *loc) from None
        if not isinstance(value, Tensor):
            # Static: formatted now, as Python would.
            try:
                literal(format(formatter.convert_field(value, conversion),
                               spec or ""))
            except (ValueError, TypeError) as e:
                raise errors.TraceError(
                    f"mc.debug_print: {{{field}}}: {e}", *loc) from None
            continue
        if conversion:
            raise errors.TraceError(
                f"mc.debug_print: conversion !{conversion} of traced value "
                f"{{{field}}} is not supported", *loc)
        if spec:
            # Checked with Python's own rules on an element of its dtype.
            sample = _SAMPLE.get(value.dtype, 0.5)
            try:
                format(sample, spec)
            except ValueError as e:
                raise errors.TraceError(
                    f"mc.debug_print: spec {spec!r} of {{{field}}} "
                    f"({value.dtype}): {e}", *loc) from None
        as_value(trace, value, None, loc)  # same trace
        out.append("{%d%s}" % (len(ids), ":" + spec if spec else ""))
        ids.append(value._id)
    trace.call("debug_print", "".join(out), ids, loc, loc=loc)


# Array building ------------------------------------------------------------

def _constant(array, loc, what):
    return constant_array(active_trace(loc, what), array, loc)


def _np_dtype(dtype, default):
    name = dtype_name(dtype) if dtype is not None else default
    if name == "bfloat16":
        from ._runtime import _bfloat16
        return _bfloat16("bfloat16 constants")
    return _np.dtype(name)


def zeros(shape, dtype=float32):
    """`np.zeros(shape, dtype)` as a constant of the traced function."""
    loc = user_loc()
    return _constant(_np.zeros(shape, _np_dtype(dtype, "float32")), loc,
                     "mc.zeros")


def ones(shape, dtype=float32):
    loc = user_loc()
    return _constant(_np.ones(shape, _np_dtype(dtype, "float32")), loc,
                     "mc.ones")


def full(shape, fill_value, dtype=None):
    loc = user_loc()
    if dtype is None:
        dtype = "int32" if isinstance(fill_value, int) else "float32"
    return _constant(_np.full(shape, fill_value, _np_dtype(dtype, "float32")),
                     loc, "mc.full")


def arange(start, stop=None, step=1, dtype=None):
    """`np.arange` (int32 for integer arguments, else float32)."""
    loc = user_loc()
    values = _np.arange(start, stop, step) if stop is not None else \
        _np.arange(start)
    if dtype is None:
        dtype = "int32" if values.dtype.kind in "iu" else "float32"
    return _constant(values.astype(_np_dtype(dtype, "float32")), loc,
                     "mc.arange")


def _triangle(x, k, lower, what, loc):
    if not isinstance(x, Tensor) or x.ndim < 1:
        raise errors.ShapeError(f"{what} needs a tensor of rank 1 or more",
                                *loc)
    # A vector is numpy's too: its rows broadcast to a square.
    n, m = x.shape[-2:] if x.ndim >= 2 else (x.shape[0], x.shape[0])
    # The mask compares two aranges (`j <= i + k` below the diagonal,
    # `j >= i + k` above it), so it fuses into the kernel that applies it
    # instead of reading an n x m constant (issue 36 item 4).
    trace = active_trace(loc, what)
    rows = constant_array(trace, _np.arange(n, dtype=_np.int32).reshape(n, 1)
                          + int(k), loc)
    cols = constant_array(trace, _np.arange(m, dtype=_np.int32).reshape(1, m),
                          loc)
    mask = compare("ge" if lower else "le", rows, cols, loc)
    return where(mask, x, 0)


def tril(x, k=0):
    """The lower triangle of the last two dimensions (`np.tril`)."""
    return _triangle(x, k, True, "mc.tril", user_loc())


def triu(x, k=0):
    """The upper triangle of the last two dimensions (`np.triu`)."""
    return _triangle(x, k, False, "mc.triu", user_loc())


def concatenate(tensors, axis=0):
    """`np.concatenate`: joins tensors along `axis` (in compiled functions it
    runs on whole values)."""
    loc = user_loc()
    trace = active_trace(loc, "mc.concatenate")
    tensors = list(tensors)
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    ids = [as_value(trace, t, like, loc) for t in tensors]
    return wrap(trace, trace.call("concatenate", ids, int(axis), loc, loc=loc))


def stack(tensors, axis=0):
    """`np.stack`: a new dimension `axis` (negative counts from the end)."""
    loc = user_loc()
    trace = active_trace(loc, "mc.stack")
    parts = []
    for t in tensors:
        if not isinstance(t, Tensor):
            t = constant_array(trace, _np.asarray(t), loc)
        a = axis if axis >= 0 else axis + t.ndim + 1
        shape = list(t.shape)
        shape.insert(a, 1)
        parts.append(_reshape(t, tuple(shape), loc))
    a = axis if axis >= 0 else axis + parts[0].ndim
    return wrap(trace, trace.call("concatenate", [p._id for p in parts], a,
                                  loc, loc=loc))


def split(x, indices_or_sections, axis=0):
    """`np.split`: a list of slices of `x` along `axis` (equal sections of
    an int, or at the given indices)."""
    loc = user_loc()
    from ._tensor import getitem
    if not isinstance(x, Tensor):
        raise errors.TraceError("mc.split needs a traced tensor", *loc)
    a = axis if axis >= 0 else axis + x.ndim
    n = x.shape[a]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or n % indices_or_sections:
            raise errors.ShapeError(
                f"mc.split: {n} does not split into {indices_or_sections} "
                "equal sections", *loc)
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = [slice(None)] * x.ndim
        key[a] = slice(lo, hi)
        out.append(getitem(x, tuple(key), loc))
    return out


def one_hot(indices, num_classes, dtype=float32):
    """`(indices[..., None] == arange(num_classes))` as `dtype`."""
    loc = user_loc()
    from ._tensor import compare, reshape as _rs
    trace = active_trace(loc, "mc.one_hot")
    if not isinstance(indices, Tensor):
        indices = constant_array(trace, _np.asarray(indices), loc)
    classes = constant_array(trace, _np.arange(num_classes, dtype=_np.int32),
                             loc)
    expanded = _rs(indices, tuple(indices.shape) + (1,), loc)
    return cast(compare("eq", expanded, classes, loc), dtype_name(dtype), loc)


def take(x, indices, axis=None):
    """numpy's `take`: elements of `x` at integer `indices` along `axis`
    (`None`: of the flattened `x`). The result has shape
    `x.shape[:axis] + indices.shape + x.shape[axis+1:]`. Negative indices
    count from the end; a traced index out of range is clamped into it (as
    JAX's gather); a constant one is refused."""
    from ._tensor import take as _take
    return _take(x, indices, axis, user_loc())
