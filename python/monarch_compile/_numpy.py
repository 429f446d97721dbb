"""numpy functions on traced tensors (`np.exp(t)`, `np.sum(t, axis=0)`).

`Tensor.__array_ufunc__` and `Tensor.__array_function__` land here: the
ufuncs and functions we have ops for are recorded like the `mc.*` call they
stand for; anything else raises an UnsupportedError at the user's line that
names the `mc.` equivalent when there is one. An ndarray operand is refused
as everywhere in traced code (`as_value`). numpy dispatches from C, so
`user_loc()` here is the user's line.
"""
import re
import sys

import numpy as np

from . import _ops, errors
from ._location import user_loc
from ._tensor import (active_trace, as_value, binary, cast, compare, matmul,
                      reduce, reshape, transpose, unary, wrap)

_BINARY = {np.add: "add", np.subtract: "sub", np.multiply: "mul",
           np.true_divide: "div", np.floor_divide: "floordiv",
           np.remainder: "mod", np.power: "pow", np.maximum: "max",
           np.minimum: "min"}
_COMPARE = {np.less: "lt", np.less_equal: "le", np.greater: "gt",
            np.greater_equal: "ge", np.equal: "eq", np.not_equal: "ne"}
_UNARY = {np.negative: "neg", np.absolute: "abs", np.exp: "exp",
          np.log: "log", np.tanh: "tanh", np.sqrt: "sqrt"}
# Reductions of a ufunc (np.add.reduce) and what to write instead.
_REDUCE_HINT = {np.add: "sum", np.maximum: "max", np.minimum: "min"}
_METHODS = ("sum", "mean", "max", "min", "reshape", "transpose", "astype")
_OTHER_HINTS = {"dot": "x @ w or mc.matmul", "inner": "x @ w or mc.matmul",
                "tensordot": "x @ w or mc.matmul", "divide": "x / y",
                "clip": "mc.minimum(mc.maximum(x, lo), hi)"}


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


_FUNCTIONS = {np.sum: _reduction("sum"), np.mean: _reduction("mean"),
              np.max: _reduction("max"), np.amax: _reduction("max"),
              np.min: _reduction("min"), np.amin: _reduction("min"),
              np.reshape: _reshape, np.transpose: _transpose, np.where: _where}
if hasattr(np, "astype"):
    _FUNCTIONS[np.astype] = _astype


def array_function(func, types, args, kwargs):
    handler = _FUNCTIONS.get(func)
    name = getattr(func, "__name__", repr(func))
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
