"""numpy functions on traced tensors (`np.exp(t)`, `np.var(t, axis=0)`,
`np.concatenate([a, b])`, `np.einsum("ij,kj->ik", a, b)`).

`Tensor.__array_ufunc__` and `Tensor.__array_function__` land here: a ufunc
or function with an op of its own is recorded like the `mc.*` call it
stands for; the others are compositions of traced ops in `_npmath.py`
(elementwise math, reductions), `_npshape.py` (shapes, joins, contractions)
and `_npsort.py` (argmax, scans, sorting), called with numpy's signatures.
Anything else raises an UnsupportedError at the user's line that names the
`mc.` equivalent or the static alternative when there is one. numpy
dispatches from C, so `user_loc()` here is the user's line. The coverage
table is in docs/frontend.md ("numpy coverage").
"""
import re
import sys

import numpy as np

from . import _npmath as M, _npshape as S, _npsort as O, _ops, errors
from ._location import user_loc
from ._tensor import (active_trace, as_value, binary, cast, compare, matmul,
                      reduce, reshape, transpose, unary, wrap)

_BINARY = {np.add: "add", np.subtract: "sub", np.multiply: "mul",
           np.true_divide: "div", np.floor_divide: "floordiv",
           np.remainder: "mod", np.power: "pow", np.maximum: "max",
           np.minimum: "min"}
_COMPARE = {np.less: "lt", np.less_equal: "le", np.greater: "gt",
            np.greater_equal: "ge", np.equal: "eq", np.not_equal: "ne"}
_UNARY = {np.negative: "neg", np.absolute: "abs", np.fabs: "abs",
          np.exp: "exp", np.log: "log", np.tanh: "tanh", np.sqrt: "sqrt"}
# Ufuncs composed of traced ops (_npmath): ufunc -> fn(*inputs, loc).
_COMPOSED = {
    np.log1p: M.log1p, np.expm1: M.expm1, np.square: M.square,
    np.sign: M.sign, np.sin: M.sin, np.cos: M.cos, np.tan: M.tan,
    np.arctan: M.arctan, np.arcsin: M.arcsin, np.arccos: M.arccos,
    np.sinh: M.sinh, np.cosh: M.cosh, np.floor: M.floor, np.ceil: M.ceil,
    np.trunc: M.trunc, np.rint: lambda x, loc: M.round_(x, 0, loc),
    np.reciprocal: M.reciprocal, np.isnan: M.isnan, np.isinf: M.isinf,
    np.isfinite: M.isfinite, np.logical_not: M.logical_not,
    np.invert: M.invert, np.exp2: M.exp2,
    np.log2: lambda x, loc: M.log_base(x, 2.0, loc),
    np.log10: lambda x, loc: M.log_base(x, 10.0, loc),
    np.deg2rad: lambda x, loc: binary("mul", M.floating(x, loc),
                                      np.pi / 180, loc),
    np.rad2deg: lambda x, loc: binary("mul", M.floating(x, loc),
                                      180 / np.pi, loc),
    np.conjugate: lambda x, loc: M.tensor(x, loc),
    np.logaddexp: M.logaddexp, np.logaddexp2: M.logaddexp2,
    np.logical_and: M.logical_and, np.logical_or: M.logical_or,
    np.logical_xor: M.logical_xor,
    np.bitwise_and: lambda a, b, loc: M.bitwise("and", a, b, loc),
    np.bitwise_or: lambda a, b, loc: M.bitwise("or", a, b, loc),
    np.bitwise_xor: lambda a, b, loc: M.bitwise("xor", a, b, loc),
    np.arctan2: M.arctan2, np.hypot: M.hypot,
    np.fmax: lambda a, b, loc: M.fmax(a, b, "max", loc),
    np.fmin: lambda a, b, loc: M.fmax(a, b, "min", loc),
}
# Reductions of a ufunc (np.add.reduce) and what to write instead.
_REDUCE_HINT = {np.add: "sum", np.maximum: "max", np.minimum: "min"}
_METHODS = ("sum", "mean", "max", "min", "reshape", "transpose", "astype")
_OTHER_HINTS = {"divide": "x / y"}
# Functions whose result's shape depends on the data, and what to write.
_DATA_DEPENDENT = {
    "nonzero": "np.where(mask, x, 0) or a fixed-size top-k with np.sort",
    "argwhere": "np.where(mask, x, 0)",
    "flatnonzero": "np.where(mask, x, 0)",
    "unique": "a fixed vocabulary and mc.one_hot",
    "compress": "np.where(mask, x, 0)",
    "extract": "np.where(mask, x, 0)",
    "trim_zeros": "slices with static bounds",
}


def _hint(name):
    """' (use mc.NAME)' when monarch_compile has a function of that name."""
    if name in _OTHER_HINTS:
        return f" (use {_OTHER_HINTS[name]})"
    if callable(getattr(sys.modules[__package__], name, None)):
        method = f" or x.{name}()" if name in _METHODS else ""
        return f" (use mc.{name}{method})"
    return ""


def _ufunc_name(ufunc, method):
    name = f"np.{ufunc.__name__}"
    return name if method == "__call__" else f"{name}.{method}"


def array_ufunc(ufunc, method, inputs, kwargs):
    loc = user_loc()
    name = _ufunc_name(ufunc, method)
    if method != "__call__":
        red = _REDUCE_HINT.get(ufunc) if method == "reduce" else None
        hint = (f" (use mc.{red}(x, axis=0) or x.{red}(axis=0))" if red
                else "")
        raise errors.UnsupportedError(
            f"unsupported: {name} on a traced tensor{hint}", *loc)
    _check_kwargs(name, kwargs, loc)
    if ufunc in _BINARY:
        return binary(_BINARY[ufunc], *inputs, loc)
    if ufunc in _COMPARE:
        return compare(_COMPARE[ufunc], *inputs, loc)
    if ufunc in _UNARY:
        return unary(_UNARY[ufunc], *inputs, loc)
    if ufunc is np.positive:
        return _tensor(inputs[0], loc)
    if ufunc is np.matmul:
        return matmul(*inputs, loc)
    if ufunc in _COMPOSED:
        return _COMPOSED[ufunc](*inputs, loc)
    raise errors.UnsupportedError(
        f"unsupported: numpy ufunc {name} on a traced tensor"
        f"{_hint(ufunc.__name__)}", *loc)


def _check_kwargs(name, kwargs, loc):
    """Refuses out=, dtype= and any other keyword that is not its default."""
    for k, v in kwargs.items():
        if v is None or (k == "where" and v is True):
            continue
        what = {"out": "out= (assign the result instead)",
                "dtype": "dtype= (cast with x.astype(dtype) instead)"}.get(
                    k, f"{k}=")
        raise errors.UnsupportedError(
            f"unsupported: {name} with {what} on a traced tensor", *loc)


def _tensor(x, loc):
    """`x` as a Tensor (refusing ndarrays and other non-tensors)."""
    trace = active_trace(loc, "a numpy function")
    return wrap(trace, as_value(trace, x, None, loc))


def _reduction(op):
    # np.sum(a, axis, dtype, out, keepdims), np.max(a, axis, out, keepdims).
    def with_dtype(a, axis=None, dtype=None, out=None, keepdims=False,
                   **rest):
        loc = user_loc()
        _check_kwargs(f"np.{op}", dict(dtype=dtype, out=out, **rest), loc)
        return reduce(op, a, axis, keepdims, loc)

    def without_dtype(a, axis=None, out=None, keepdims=False, **rest):
        loc = user_loc()
        _check_kwargs(f"np.{op}", dict(out=out, **rest), loc)
        return reduce(op, a, axis, keepdims, loc)

    return with_dtype if op in ("sum", "mean") else without_dtype


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    loc = user_loc()
    shape = newshape if shape is None else shape
    if order != "C":
        raise errors.UnsupportedError(
            f"unsupported: np.reshape with order={order!r}", *loc)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return reshape(a, tuple(shape), loc)


def _transpose(a, axes=None):
    return transpose(a, tuple(axes or ()), user_loc())


def _where(condition, *xy):
    if len(xy) != 2:
        raise errors.UnsupportedError(
            "unsupported: np.where(condition) without x and y (the indices "
            "of a traced tensor are data dependent); use mc.where(cond, a, b)",
            *user_loc())
    return _ops.where(condition, *xy)


def _astype(x, dtype, /, *, copy=True, device=None):
    return cast(x, dtype, user_loc())


# numpy's functions with numpy's signatures; a keyword we do not support
# (out=, dtype=, where=...) is refused by _check_kwargs unless it is its
# default.

def _no(name, **kwargs):
    _check_kwargs(name, kwargs, user_loc())


def _prod(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    _no("np.prod", dtype=dtype, out=out, **rest)
    return M.prod(a, axis, keepdims, user_loc())


def _var_like(fn, name):
    def f(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
          correction=None, **rest):
        _no(name, dtype=dtype, out=out, **rest)
        ddof = correction if correction is not None else ddof
        return fn(a, axis, ddof, keepdims, user_loc())
    return f


def _bool_reduction(fn, name):
    def f(a, axis=None, out=None, keepdims=False, **rest):
        _no(name, out=out, **rest)
        return fn(a, axis, keepdims, user_loc())
    return f


def _nan_reduction(op):
    def f(a, axis=None, *args, keepdims=False, **rest):
        _no(f"np.nan{op}", **dict(zip(("dtype", "out"), args)), **rest)
        return M.nan_reduce(op, a, axis, keepdims, user_loc())
    return f


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    _no("np.average", returned=returned or None)
    return M.average(a, axis, weights, keepdims, user_loc())


def _count_nonzero(a, axis=None, *, keepdims=False):
    return M.count_nonzero(a, axis, keepdims, user_loc())


def _ptp(a, axis=None, out=None, keepdims=False):
    _no("np.ptp", out=out)
    return M.ptp(a, axis, keepdims, user_loc())


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no("np.median", out=out)
    return O.median(a, axis, keepdims, user_loc())


def _norm(x, ord=None, axis=None, keepdims=False):
    return M.norm(x, ord, axis, keepdims, user_loc())


def _arg(op):
    def f(a, axis=None, out=None, *, keepdims=False):
        _no(f"np.arg{op}", out=out)
        return O.arg_reduce(a, axis, keepdims, op, user_loc())
    return f


def _scan(op, name):
    def f(a, axis=None, dtype=None, out=None):
        _no(name, dtype=dtype, out=out)
        return O.scan(a, axis, op, user_loc(), name)
    return f


def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no("np.sort", order=order)
    return O.sort(a, axis, user_loc())


def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _no("np.argsort", order=order)
    return O.argsort(a, axis, user_loc())


def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *,
          min=np._NoValue, max=np._NoValue, **rest):
    _no("np.clip", out=out, **rest)
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    return M.clip(a, lo, hi, user_loc())


def _round(a, decimals=0, out=None):
    _no("np.round", out=out)
    return M.round_(a, decimals, user_loc())


def _fix(x, out=None):
    _no("np.fix", out=out)
    return M.trunc(x, user_loc())


def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting=None):
    _no("np.concatenate", out=out, dtype=dtype)
    return S.concatenate(arrays, axis, user_loc())


def _stack(arrays, axis=0, out=None, *, dtype=None, casting=None):
    _no("np.stack", out=out, dtype=dtype)
    return S.stack(arrays, axis, user_loc())


def _joiner(fn, name):
    def f(tup, *, dtype=None, casting=None):
        _no(name, dtype=dtype)
        return fn(tup, user_loc())
    return f


def _split(exact, name):
    def f(ary, indices_or_sections, axis=0):
        return S.split(ary, indices_or_sections, axis, user_loc(), exact, name)
    return f


def _take(a, indices, axis=None, out=None, mode="raise"):
    _no("np.take", out=out)
    return S.take_np(a, indices, axis, mode, user_loc())


def _take_along_axis(arr, indices, axis=-1):
    return S.take_along_axis(arr, indices, axis, user_loc())


def _pad(array, pad_width, mode="constant", *, constant_values=0, **rest):
    _no("np.pad", **{k: v for k, v in rest.items()
                     if not (k == "reflect_type" and v == "even")})
    return S.pad(array, pad_width, mode, constant_values, user_loc())


def _like(value):
    def f(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        return S.full_like(a, value, dtype, shape, user_loc())
    return f


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None,
               *, device=None):
    return S.full_like(a, fill_value, dtype, shape, user_loc())


def _einsum(*operands, out=None, optimize=False, dtype=None, casting=None,
            order=None):
    _no("np.einsum", out=out, dtype=dtype)
    if not operands:
        raise errors.TraceError("np.einsum: no subscripts", *user_loc())
    return S.einsum(operands[0], operands[1:], user_loc())


def _data_dependent(name):
    def f(*args, **kwargs):
        raise errors.UnsupportedError(
            f"unsupported: np.{name} on a traced tensor (its result's shape "
            f"depends on the data; use {_DATA_DEPENDENT[name]})", *user_loc())
    return f


def _loc(fn):
    """`fn(*args, loc)` as a numpy-signature function of `*args`."""
    def f(*args):
        return fn(*args, user_loc())
    return f


_FUNCTIONS = {
    np.sum: _reduction("sum"), np.mean: _reduction("mean"),
    np.max: _reduction("max"), np.amax: _reduction("max"),
    np.min: _reduction("min"), np.amin: _reduction("min"),
    np.reshape: _reshape, np.transpose: _transpose, np.where: _where,
    # reductions
    np.prod: _prod, np.var: _var_like(M.var, "np.var"),
    np.std: _var_like(M.std, "np.std"),
    np.any: _bool_reduction(M.any_, "np.any"),
    np.all: _bool_reduction(M.all_, "np.all"),
    np.nansum: _nan_reduction("sum"), np.nanmean: _nan_reduction("mean"),
    np.nanmax: _nan_reduction("max"), np.nanmin: _nan_reduction("min"),
    np.average: _average, np.count_nonzero: _count_nonzero, np.ptp: _ptp,
    np.median: _median, np.linalg.norm: _norm,
    np.argmax: _arg("max"), np.argmin: _arg("min"),
    np.cumsum: _scan("add", "np.cumsum"), np.cumprod: _scan("mul",
                                                           "np.cumprod"),
    np.sort: _sort, np.argsort: _argsort,
    # elementwise functions that are not ufuncs
    np.clip: _clip, np.round: _round, np.around: _round, np.fix: _fix,
    # shape
    np.ravel: lambda a, order="C": S.ravel(a, user_loc()),
    np.expand_dims: lambda a, axis: S.expand_dims(a, axis, user_loc()),
    np.squeeze: lambda a, axis=None: S.squeeze(a, axis, user_loc()),
    # numpy's parameter names (np.swapaxes(x, axis1=0, axis2=1) is numpy).
    np.swapaxes: lambda a, axis1, axis2: S.swapaxes(a, axis1, axis2,
                                                    user_loc()),
    np.moveaxis: lambda a, source, destination: S.moveaxis(
        a, source, destination, user_loc()),
    np.broadcast_to: lambda array, shape, subok=False: S.broadcast_to(
        array, shape, user_loc()),
    np.broadcast_arrays: lambda *args, subok=False: S.broadcast_arrays(
        args, user_loc()),
    np.tile: lambda A, reps: S.tile(A, reps, user_loc()),
    np.repeat: lambda a, repeats, axis=None: S.repeat(a, repeats, axis,
                                                      user_loc()),
    np.pad: _pad,
    np.flip: lambda m, axis=None: S.flip(m, axis, user_loc()),
    np.fliplr: lambda m: S.flip(m, 1, user_loc()),
    np.flipud: lambda m: S.flip(m, 0, user_loc()),
    np.roll: lambda a, shift, axis=None: S.roll(a, shift, axis, user_loc()),
    np.atleast_1d: lambda a: S.atleast(a, 1, user_loc()),
    np.atleast_2d: lambda a: S.atleast(a, 2, user_loc()),
    np.atleast_3d: lambda a: S.atleast(a, 3, user_loc()),
    np.shape: lambda a: tuple(a.shape), np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
    np.copy: lambda a, order="K", subok=False: M.tensor(a, user_loc()),
    # joining and splitting
    np.concatenate: _concatenate, np.stack: _stack,
    np.hstack: _joiner(S.hstack, "np.hstack"),
    np.vstack: _joiner(S.vstack, "np.vstack"),
    np.column_stack: lambda tup: S.column_stack(tup, user_loc()),
    np.split: _split(True, "np.split"),
    np.array_split: _split(False, "np.array_split"),
    np.take: _take, np.take_along_axis: _take_along_axis,
    np.tril: lambda m, k=0: _ops.tril(m, k),
    np.triu: lambda m, k=0: _ops.triu(m, k),
    # contractions
    np.dot: lambda a, b, out=None: (_no("np.dot", out=out),
                                    S.dot(a, b, user_loc()))[1],
    np.tensordot: lambda a, b, axes=2: S.tensordot(a, b, axes, user_loc()),
    np.inner: _loc(S.inner), np.vdot: _loc(S.vdot),
    np.outer: lambda a, b, out=None: (_no("np.outer", out=out),
                                      S.outer(a, b, user_loc()))[1],
    np.einsum: _einsum,
    np.trace: lambda a, offset=0, axis1=0, axis2=1, dtype=None, out=None: (
        _no("np.trace", dtype=dtype, out=out),
        S.trace_(a, offset, axis1, axis2, user_loc()))[1],
    np.diagonal: lambda a, offset=0, axis1=0, axis2=1: S.diagonal(
        a, offset, axis1, axis2, user_loc()),
    np.diag: lambda v, k=0: S.diag(v, k, user_loc()),
    # arrays like a traced one
    np.zeros_like: _like(0), np.ones_like: _like(1),
    np.empty_like: _like(0), np.full_like: _full_like,
}
for _name in _DATA_DEPENDENT:
    _FUNCTIONS[getattr(np, _name)] = _data_dependent(_name)
if hasattr(np, "astype"):
    _FUNCTIONS[np.astype] = _astype


def array_function(func, types, args, kwargs):
    handler = _FUNCTIONS.get(func)
    name = getattr(func, "__name__", repr(func))
    module = getattr(func, "__module__", "") or ""
    if module.startswith("numpy.") and module.split(".")[1] in (
            "linalg", "fft", "random"):
        name = f"{module.split('.')[1]}.{name}"
    if handler is None:
        raise errors.UnsupportedError(
            f"unsupported: np.{name} on a traced tensor{_hint(name)}",
            *user_loc())
    try:
        return handler(*args, **kwargs)
    except TypeError as err:
        if isinstance(err, errors.TraceError):
            raise
        loc = user_loc()
        message = re.sub(r"^[\w.<>]+\(\)", f"np.{name}()", str(err))
        raise errors.UnsupportedError(
            f"unsupported call of np.{name} on a traced tensor: {message}",
            *loc) from None
