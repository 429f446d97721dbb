"""The numpy reference of a fuzz program, with error bounds.

`evaluate(program)` interprets the program's records with numpy in float64
(int64 for int32 values) from the exact input values, and carries with every
value a per-element bound on how far a correct float32/float16/bfloat16
implementation may be from it: each op adds its rounding (one unit roundoff
of its result dtype, a few for transcendental functions, `n` units for an
`n`-term sum or dot product, the worst case of any summation order) to the
error it inherits from its operands (propagated exactly for monotone
functions by evaluating them at the ends of the operands' intervals). An
element whose bound is infinite is not compared: a division by a value that
may be zero, a comparison of values closer than their errors, a cast to
int32 of a value within its error of an integer, an overflow of the result
dtype. Comparisons and `where` follow that: their ambiguous elements are
skipped (`where`'s result there may be either branch).

Endpoints run per rank: each rank gets its shard of the arguments and of the
sharded state, collectives combine the ranks of their groups, and `out=`
assembles the global results, exactly as docs/frontend.md describes. Actor
state persists across calls.

Dtypes follow numpy's promotion (Python numbers are weak, NEP 50) with
float64 read as float32 and int64 as int32: `int32 / int32` and
`int32 * 2.5` are float32, `float16 * 2.5` is float16.
"""

import itertools
import math

import numpy as np

from program import NP_CONSTANT_OPERAND, make_array

FLOATS = ("float32", "float16", "bfloat16")
UNIT = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
FMAX = {
    "float32": 3.4028234663852886e38,
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
}
# Subnormal spacing of float16: its absolute rounding floor.
TINY = {"float32": 1.5e-45, "float16": 6.0e-8, "bfloat16": 9.2e-41}
INT32_MAX = 2**31 - 1
# Units of roundoff allowed for a transcendental function's result.
TRANSCENDENTAL_ULPS = 8


class RefError(Exception):
    """numpy rejects the program (or its meaning is undefined): the compiler
    must refuse it at the user's line."""


class Value:
    """A value of the reference: `ref` (float64, int64 or bool), `err` (its
    float64 per-element error bound, inf where it is not compared), `dtype`
    (the dtype the compiled program must produce)."""

    __slots__ = ("ref", "err", "dtype")

    def __init__(self, ref, err, dtype):
        self.ref = np.asarray(ref)
        self.err = np.broadcast_to(np.asarray(err, np.float64), self.ref.shape).copy()
        self.dtype = dtype

    @property
    def shape(self):
        return tuple(self.ref.shape)

    def __repr__(self):
        return f"Value({self.dtype}{list(self.shape)})"


def _abs(v):
    return np.abs(v.ref.astype(np.float64))


def _f64(v):
    return v.ref.astype(np.float64)


def _nan_to_inf(e):
    return np.where(np.isnan(e), np.inf, e)


def finish(ref, err, dtype, ulps=1):
    """A Value of `dtype` from a float64/int64 `ref` with `err`, adding `ulps`
    units of roundoff and marking overflows as uncompared."""
    ref = np.asarray(ref)
    err = _nan_to_inf(np.asarray(err, np.float64))
    if dtype in FLOATS:
        ref = ref.astype(np.float64)
        with np.errstate(all="ignore"):
            mag = np.abs(ref)
            err = err + ulps * UNIT[dtype] * np.where(np.isfinite(mag), mag, 0.0)
            if ulps:
                err = err + TINY[dtype]
            err = np.where((mag + err > FMAX[dtype]) & np.isfinite(ref), np.inf, err)
    elif dtype == "int32":
        ref = np.asarray(ref).astype(np.int64)
        err = np.where(np.abs(ref) > INT32_MAX, np.inf, err)
    return Value(ref, _nan_to_inf(err), dtype)


def promote(a, b):
    """The result dtype of a binary op on dtypes (or "pyint"/"pyfloat")."""
    if a.startswith("py") and b.startswith("py"):
        raise RefError("an op on two Python numbers is not traced")
    if a.startswith("py"):
        a, b = b, a
    if b == "pyint":
        return "int32" if a == "bool" else a
    if b == "pyfloat":
        return a if a in FLOATS else "float32"
    if a == b:
        return a
    kinds = {a, b}
    if "bool" in kinds:
        return (kinds - {"bool"}).pop()
    return "float32"


def round_to(x, dtype):
    """`x` (a Python number) as `dtype` holds it, and the error of that."""
    if dtype == "float32":
        return float(np.float32(x)), 0.0
    if dtype == "float16":
        return float(np.float16(x)), 0.0
    if dtype == "bfloat16":
        return float(x), UNIT["bfloat16"] * abs(float(x))
    return x, 0.0


class Const:
    """A Python number operand: weak, it takes the other operand's dtype."""

    def __init__(self, x):
        self.x = x
        self.dtype = "pyfloat" if isinstance(x, float) else "pyint"

    def as_value(self, dtype):
        x = self.x
        if dtype in FLOATS:
            x, e = round_to(float(x), dtype)
            return Value(np.float64(x), e, dtype)
        if dtype == "int32" and isinstance(x, int):
            return Value(np.int64(x), 0.0, dtype)
        return Value(np.float64(x), 0.0, "float32")


def _operands(a, b):
    """Values of a binary op's operands and the result dtype."""
    dt = promote(a.dtype, b.dtype)
    va = a.as_value(dt) if isinstance(a, Const) else a
    vb = b.as_value(dt) if isinstance(b, Const) else b
    return va, vb, dt


def _box_bound(f, values):
    """max |f(corner) - f(center)| over the corners of the operands' error
    boxes: exact for functions monotone in each operand."""
    with np.errstate(all="ignore"):
        center = f(*[_f64(v) for v in values])
        err = np.zeros(np.shape(center))
        for signs in itertools.product((-1.0, 1.0), repeat=len(values)):
            corner = f(*[_f64(v) + s * v.err for v, s in zip(values, signs)])
            err = np.maximum(err, np.abs(corner - center))
        exact = np.ones(np.shape(center), bool)
        for v in values:
            exact &= np.broadcast_to(v.err == 0, np.shape(center))
        err = np.where(exact, 0.0, _nan_to_inf(err))
    return center, err


GELU_C = math.sqrt(2.0 / math.pi)

UNARY = {
    "relu": (lambda x: np.maximum(x, 0.0), 0),
    "exp": (np.exp, TRANSCENDENTAL_ULPS),
    "log": (np.log, TRANSCENDENTAL_ULPS),
    "tanh": (np.tanh, TRANSCENDENTAL_ULPS),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), TRANSCENDENTAL_ULPS),
    "gelu": (
        lambda x: 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x**3))),
        TRANSCENDENTAL_ULPS,
    ),
    "sqrt": (np.sqrt, TRANSCENDENTAL_ULPS),
    "abs": (np.abs, 0),
    "neg": (np.negative, 0),
}
INT_PRESERVING = ("relu", "abs", "neg")


def unary(name, x):
    f, ulps = UNARY[name]
    if x.dtype == "bool":
        raise RefError(f"{name} of a bool")
    if x.dtype == "int32" and name in INT_PRESERVING:
        return finish(f(x.ref), 0.0, "int32")
    dt = x.dtype if x.dtype in FLOATS else "float32"
    ref, err = _box_bound(f, [x])
    return finish(ref, err, dt, ulps)


def _broadcast(a, b):
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RefError(f"shapes {a.shape} and {b.shape} do not broadcast") from None


def binary(name, a, b):
    va, vb, dt = _operands(a, b)
    _broadcast(va, vb)
    if "bool" in (va.dtype, vb.dtype) and name not in ("maximum", "minimum"):
        raise RefError(f"{name} of a bool")
    x, y = va.ref, vb.ref
    ex, ey = va.err, vb.err
    ints = dt == "int32"
    with np.errstate(all="ignore"):
        if name in ("add", "sub"):
            ref = x + y if name == "add" else x - y
            return finish(ref, ex + ey, dt)
        if name == "mul":
            ref = x * y
            return finish(ref, ex * _abs(vb) + ey * _abs(va) + ex * ey, dt)
        if name in ("maximum", "minimum"):
            ref = np.maximum(x, y) if name == "maximum" else np.minimum(x, y)
            return finish(ref, np.maximum(ex, ey), dt, 0)
        if name == "div":
            q = _f64(va) / _f64(vb)
            margin = _abs(vb) - ey
            err = np.where(margin > 0, (ex + np.abs(q) * ey) / margin, np.inf)
            return finish(q, err, "float32" if ints else dt)
        if name == "floordiv":
            if ints:
                ref = np.floor_divide(x, y)
                return finish(ref, np.where(y == 0, np.inf, 0.0), dt)
            q = _f64(va) / _f64(vb)
            margin = _abs(vb) - ey
            eq = np.where(margin > 0, (ex + np.abs(q) * ey) / margin, np.inf)
            eq = eq + 2 * UNIT[dt] * np.abs(q)
            ref = np.floor_divide(_f64(va), _f64(vb))
            spread = np.floor(q + eq) - np.floor(q - eq)
            err = np.where(spread == 0, 0.0, np.inf)
            return finish(ref, err, dt, 0)
        if name == "pow":
            if ints:
                if np.any(y < 0):
                    raise RefError("integers to negative integer powers")
                return finish(np.power(x, y), 0.0, dt)
            ref, err = _box_bound(np.power, [va, vb])
            return finish(ref, err, dt, TRANSCENDENTAL_ULPS)
    raise ValueError(f"unknown binary op {name}")


def compare(name, a, b):
    va, vb, _ = _operands(a, b)
    _broadcast(va, vb)
    f = {
        "lt": np.less,
        "le": np.less_equal,
        "gt": np.greater,
        "ge": np.greater_equal,
        "eq": np.equal,
        "ne": np.not_equal,
    }[name]
    ref = f(va.ref, vb.ref)
    e = va.err + vb.err
    with np.errstate(all="ignore"):
        amb = (e > 0) & ~(np.abs(_f64(va) - _f64(vb)) > e)
    return Value(ref, np.where(amb, np.inf, 0.0), "bool")


def where(c, a, b):
    if c.dtype != "bool":
        raise RefError("mc.where needs a boolean condition")
    va, vb, dt = _operands(a, b)
    try:
        shape = np.broadcast_shapes(c.shape, va.shape, vb.shape)
    except ValueError:
        raise RefError(f"where: shapes {c.shape}, {va.shape}, {vb.shape}") from None
    ref = np.where(c.ref, va.ref, vb.ref)
    err = np.where(c.ref, va.err, vb.err)
    with np.errstate(all="ignore"):
        gap = np.abs(_f64(va) - _f64(vb))
        err = np.where(np.isinf(c.err), np.maximum(va.err, vb.err) + gap, err)
    return finish(np.broadcast_to(ref, shape), np.broadcast_to(err, shape), dt, 0)


def matmul(a, b):
    if a.dtype == "bool" or b.dtype == "bool":
        raise RefError("matmul of bools")
    dt = promote(a.dtype, b.dtype)
    try:
        ref = np.matmul(a.ref, b.ref)
    except ValueError as err:
        raise RefError(f"matmul: {err}") from None
    k = a.shape[-1]
    ax, bx = _abs(a), _abs(b)
    with np.errstate(all="ignore"):
        err = np.matmul(ax, b.err) + np.matmul(a.err, bx) + np.matmul(a.err, b.err)
        if dt == "int32":
            return finish(ref, err, dt)
        err = err + k * UNIT[dt] * np.matmul(ax, bx)
    return finish(ref.astype(np.float64), err, dt)


def norm_axes(axis, ndim):
    """The sorted tuple of axes `axis` (None, int or tuple) names."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise RefError(f"axis {a} is out of range for rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise RefError(f"repeated axis in {axis}")
    return tuple(sorted(out))


def reduce(name, x, axis, keepdims):
    if x.dtype == "bool" and name != "sum":
        raise RefError(f"{name} of bools")
    axes = norm_axes(axis, x.ref.ndim)
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    kw = dict(axis=axes, keepdims=keepdims)
    if x.dtype == "bool":  # numpy: the sum of bools is an integer (int32 here)
        return finish(np.sum(x.ref.astype(np.int64), **kw), np.sum(x.err, **kw), "int32")
    if name in ("max", "min"):
        if x.ref.size == 0:
            raise RefError(f"{name} of an empty tensor (numpy raises)")
        f = np.max if name == "max" else np.min
        return finish(f(x.ref, **kw), np.max(x.err, **kw), x.dtype, 0)
    if x.dtype == "int32" and name == "sum":
        return finish(np.sum(x.ref, **kw), np.sum(x.err, **kw), "int32")
    dt = x.dtype if x.dtype in FLOATS else "float32"
    u = UNIT[dt]
    total = np.sum(_f64(x), **kw)
    err = np.sum(x.err, **kw) + (n + 1) * u * np.sum(_abs(x), **kw)
    if name == "sum":
        return finish(total, err, dt)
    return finish(total / n, err / n, dt, 2)


def softmax(x, axis):
    if x.dtype == "bool":
        raise RefError("softmax of bools")
    norm_axes(axis, x.ref.ndim)
    dt = x.dtype if x.dtype in FLOATS else "float32"
    v = _f64(x)
    m = np.max(v, axis=axis, keepdims=True)
    ex = np.exp(v - m)
    y = ex / np.sum(ex, axis=axis, keepdims=True)
    n = x.shape[axis]
    emax = np.max(x.err, axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        err = y * (np.expm1(2 * emax) + (n + 2 * TRANSCENDENTAL_ULPS) * UNIT[dt])
    return finish(y, err, dt, 1)


def reshape(x, shape):
    try:
        return Value(x.ref.reshape(shape), x.err.reshape(shape), x.dtype)
    except ValueError as err:
        raise RefError(f"reshape: {err}") from None


def index(x, key):
    """numpy's `x[key]`: basic indexing (ints, slices, `...`, None) is exact;
    lists are numpy's advanced indexing (which mc refuses)."""
    key = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
    try:
        return Value(x.ref[key], x.err[key], x.dtype)
    except IndexError as err:
        raise RefError(f"index: {err}") from None


def take(x, i, axis, n):
    """numpy's `take(x, i % n, axis)` (exact; `i` must be exact)."""
    if not isinstance(i, Value) or i.dtype != "int32" or np.any(i.err != 0):
        raise RefError("take needs exact int32 indices")
    if x.shape[axis] != n:
        raise RefError(f"take: axis {axis} of {x.shape} is not {n}")
    idx = np.asarray(i.ref).astype(np.int64) % n
    return Value(np.take(x.ref, idx, axis=axis), np.take(x.err, idx, axis=axis), x.dtype)


# numpy functions on traced tensors (issue 33's table), by how their error
# bound follows: moves of elements (exact: the error moves with them),
# elementwise functions monotone in x (the error box's corners bound them),
# 1-Lipschitz ones (sin, cos: the input's error plus their own), sorts (a
# sort is 1-Lipschitz in the max norm of each slice) and running sums.
NP_MOVES = {
    "flip": lambda a, at: np.flip(a, axis=at["axis"]),
    "roll": lambda a, at: np.roll(a, at["shift"], axis=at["axis"]),
    "swapaxes": lambda a, at: np.swapaxes(a, at["axis1"], at["axis2"]),
    "expand_dims": lambda a, at: np.expand_dims(a, at["axis"]),
    "ravel": lambda a, at: np.ravel(a),
    "tile": lambda a, at: np.tile(a, at["reps"]),
    "repeat": lambda a, at: np.repeat(a, at["repeats"], axis=at["axis"]),
    "pad": lambda a, at: np.pad(a, at["width"]),
    "moveaxis": lambda a, at: np.moveaxis(a, at["source"], at["destination"]),
    "squeeze": lambda a, at: np.squeeze(a),
    "fliplr": lambda a, at: np.fliplr(a),
    "flipud": lambda a, at: np.flipud(a),
    "tril": lambda a, at: np.tril(a, at["k"]),
    "triu": lambda a, at: np.triu(a, at["k"]),
    "diagonal": lambda a, at: np.diagonal(a, at["offset"]),
    "concatenate": lambda a, at: np.concatenate([a, a], axis=at["axis"]),
    "stack": lambda a, at: np.stack([a, a], axis=at["axis"]),
    "broadcast_to": lambda a, at: np.broadcast_to(a, at["shape"]),
    "atleast_2d": lambda a, at: np.atleast_2d(a),
    "take": lambda a, at: np.take(a, at["indices"], axis=at["axis"]),
}
NP_MONOTONE = {
    "log1p": (np.log1p, TRANSCENDENTAL_ULPS),
    "expm1": (np.expm1, TRANSCENDENTAL_ULPS),
    "arctan": (np.arctan, TRANSCENDENTAL_ULPS),
    "sinh": (np.sinh, TRANSCENDENTAL_ULPS),
    "square": (np.square, 1),
    "floor": (np.floor, 0),
    "ceil": (np.ceil, 0),
    "sign": (np.sign, 0),
    "exp2": (np.exp2, TRANSCENDENTAL_ULPS),
    "trunc": (np.trunc, 0),
    "fix": (np.fix, 0),
    "rint": (np.rint, 0),
    "deg2rad": (np.deg2rad, 2),
    "rad2deg": (np.rad2deg, 2),
    # With the constant operands the program passes: still monotone.
    "clip": (lambda v: np.clip(v, *NP_CONSTANT_OPERAND["clip"]), 0),
    "fmax": (lambda v: np.fmax(v, *NP_CONSTANT_OPERAND["fmax"]), 0),
    "fmin": (lambda v: np.fmin(v, *NP_CONSTANT_OPERAND["fmin"]), 0),
    "logaddexp": (lambda v: np.logaddexp(v, *NP_CONSTANT_OPERAND["logaddexp"]),
                  TRANSCENDENTAL_ULPS),
}
NP_LIPSCHITZ = {"sin": np.sin, "cos": np.cos}
# Functions that reduce or scan along an axis (`at["axis"]`, but trace,
# which takes the diagonal of the first two), each with its own bound in
# npfn: the sort's (median, ptp), the sum's (average, trace), products,
# variances, and uncompared ties (argmax, any).
NP_REDUCTIONS = ["sort", "cumsum", "median", "ptp", "average", "trace", "prod",
                 "var", "std", "argmax", "argmin", "any", "all",
                 "count_nonzero"]
NP_FUNCTIONS = (sorted(NP_MOVES) + sorted(NP_MONOTONE) +
                sorted(NP_LIPSCHITZ) + NP_REDUCTIONS)
# Functions of two tensors (the "npfn2" op kind).
NP_FUNCTIONS2 = ["einsum"]


def npfn(name, x, at):
    """numpy's function `name` (NP_FUNCTIONS) of `x` with attributes `at`."""
    if x.dtype == "bool":
        raise RefError(f"np.{name} of bools")
    if name in NP_MOVES:
        f = NP_MOVES[name]
        try:
            return Value(f(x.ref, at), f(x.err, at), x.dtype)
        except (ValueError, IndexError) as err:
            raise RefError(f"np.{name}: {err}") from None
    if x.dtype == "int32":
        raise RefError(f"np.{name} of integers (not drawn)")
    dt = x.dtype
    if name in NP_MONOTONE:
        f, ulps = NP_MONOTONE[name]
        ref, err = _box_bound(f, [x])
        return finish(ref, err, dt, ulps)
    if name in NP_LIPSCHITZ:
        with np.errstate(all="ignore"):
            ref = NP_LIPSCHITZ[name](_f64(x))
        # Own error: a few units of the result and of the argument's
        # reduction by pi/2 (docs/frontend.md's measured bound).
        return finish(ref, x.err + 8 * UNIT[dt] * (1 + _abs(x)), dt,
                      TRANSCENDENTAL_ULPS)
    if name == "trace":
        if x.ref.ndim < 2:
            raise RefError("np.trace needs 2 dimensions")
        diag = Value(np.moveaxis(np.diagonal(x.ref), -1, 0),
                     np.moveaxis(np.diagonal(x.err), -1, 0), dt)
        return reduce("sum", diag, 0, False)
    axis = at["axis"]
    norm_axes(axis, x.ref.ndim)
    if x.shape[axis] == 0 and name not in ("sort", "cumsum", "prod"):
        # numpy raises (ptp, argmax) or warns and gives NaN (var, median).
        raise RefError(f"np.{name} over an empty axis")
    if name == "average":
        return reduce("mean", x, axis, False)
    n = x.shape[axis]
    u = UNIT[dt]
    if name in ("argmax", "argmin"):
        v = _f64(x) if name == "argmax" else -_f64(x)
        if n == 0:
            raise RefError(f"np.{name} of an empty axis")
        ref = np.argmax(v, axis=axis)
        best = np.take_along_axis(v, np.expand_dims(ref, axis), axis)
        best_err = np.take_along_axis(x.err, np.expand_dims(ref, axis), axis)
        others = np.ones(v.shape, bool)
        np.put_along_axis(others, np.expand_dims(ref, axis), False, axis)
        with np.errstate(all="ignore"):
            # Another element that may be the extreme (or a NaN anywhere,
            # whose first one numpy picks: not drawn) makes it ambiguous.
            close = others & ~(best - v > best_err + x.err)
            amb = np.any(close | np.isnan(v), axis=axis)
        return Value(ref.astype(np.int64), np.where(amb, np.inf, 0.0), "int32")
    if name in ("any", "all", "count_nonzero"):
        nz = _f64(x) != 0
        with np.errstate(all="ignore"):
            unsure = np.any((x.err > 0) & ~(np.abs(_f64(x)) > x.err), axis=axis)
        f = {"any": np.any, "all": np.all,
             "count_nonzero": lambda a, axis: np.count_nonzero(a, axis=axis)}
        ref = f[name](nz, axis=axis)
        return Value(ref if name != "count_nonzero" else ref.astype(np.int64),
                     np.where(unsure, np.inf, 0.0),
                     "bool" if name != "count_nonzero" else "int32")
    if name == "prod":
        ax = _abs(x)
        with np.errstate(all="ignore"):
            # |prod(x + d) - prod(x)| <= prod(|x| + e) - prod(|x|), and the
            # roundoff of n products.
            bound = np.prod(ax + x.err, axis=axis) - np.prod(ax, axis=axis)
            err = bound + (n + 1) * u * np.prod(ax, axis=axis)
        return finish(np.prod(_f64(x), axis=axis), err, dt)
    if name in ("var", "std"):
        v = _f64(x)
        with np.errstate(all="ignore"):
            d = v - np.mean(v, axis=axis, keepdims=True)
            # Each deviation moves by the element's error, the mean's, and
            # the mean's roundoff.
            e = (x.err + np.max(x.err, axis=axis, keepdims=True) +
                 (n + 2) * u * np.max(np.abs(v), axis=axis, keepdims=True))
            var = np.mean(d * d, axis=axis)
            evar = (np.mean(2 * np.abs(d) * e + e * e, axis=axis) +
                    (n + 3) * u * var)
            if name == "var":
                return finish(var, evar, dt, 2)
            sd = np.sqrt(var)
            esd = np.minimum(np.sqrt(evar), evar / np.where(sd > 0, sd, np.inf))
        return finish(sd, esd, dt, 2)
    if name == "median":
        err = np.max(x.err, axis=axis)
        return finish(np.median(_f64(x), axis=axis), err, dt, 1)
    if name == "ptp":
        err = 2 * np.max(x.err, axis=axis)
        return finish(np.ptp(_f64(x), axis=axis), err, dt, 1)
    if name == "sort":
        err = np.max(x.err, axis=axis, keepdims=True)
        return finish(np.sort(_f64(x), axis=axis),
                      np.broadcast_to(err, x.shape), dt, 0)
    if name == "cumsum":
        n = x.shape[axis]
        total = np.cumsum(_f64(x), axis=axis)
        err = np.cumsum(x.err, axis=axis) + (n + 1) * UNIT[dt] * np.cumsum(
            _abs(x), axis=axis)
        return finish(total, err, dt)
    raise ValueError(f"np.{name} is not drawn")


def npfn2(name, a, b, at):
    """numpy's function `name` (NP_FUNCTIONS2) of `a` and `b`."""
    if a.dtype == "bool" or b.dtype == "bool":
        raise RefError(f"np.{name} of bools")
    dt = promote(a.dtype, b.dtype)
    spec = at["spec"]
    try:
        ref = np.einsum(spec, a.ref.astype(np.float64 if dt in FLOATS else
                                           np.int64), b.ref)
    except ValueError as err:
        raise RefError(f"np.einsum: {err}") from None
    # matmul's bound, with k the number of terms summed into each result.
    la, lb = spec.split("->")[0].split(",")
    out = spec.split("->")[1]
    sizes = dict(zip(la, a.shape)) | dict(zip(lb, b.shape))
    k = int(np.prod([n for c, n in sizes.items() if c not in out]))
    ax, bx = _abs(a), _abs(b)
    with np.errstate(all="ignore"):
        err = (np.einsum(spec, ax, b.err) + np.einsum(spec, a.err, bx) +
               np.einsum(spec, a.err, b.err))
        if dt == "int32":
            return finish(ref, err, dt)
        err = err + (k + 1) * UNIT[dt] * np.einsum(spec, ax, bx)
    return finish(ref.astype(np.float64), err, dt)


def transpose(x, axes):
    if axes is not None:
        if sorted(a % max(x.ref.ndim, 1) for a in axes) != list(range(x.ref.ndim)):
            raise RefError(f"transpose axes {axes} for rank {x.ref.ndim}")
    return Value(np.transpose(x.ref, axes), np.transpose(x.err, axes), x.dtype)


def astype(x, dtype):
    if x.dtype == dtype:
        return x
    if x.dtype == "bool":
        raise RefError("casts of bools are not generated")
    if dtype == "int32":
        if x.dtype == "int32":
            return x
        v = _f64(x)
        with np.errstate(all="ignore"):
            ref = np.trunc(v)
            spread = np.trunc(v + x.err) - np.trunc(v - x.err)
            err = np.where(spread == 0, 0.0, np.inf)
            err = np.where(np.isfinite(v) & (np.abs(v) < 2**31 - 1), err, np.inf)
        return finish(np.where(np.isfinite(ref), ref, 0).astype(np.int64), err, "int32")
    widening = (x.dtype == "int32") or (
        x.dtype in ("float16", "bfloat16") and dtype == "float32"
    )
    return finish(_f64(x), x.err, dtype, 0 if widening and x.dtype != "int32" else 1)


def collective(kind, values, attrs):
    """One group's collective: `values` are the group's members in order."""
    n = len(values)
    op = attrs.get("op")
    if kind == "broadcast":
        root = attrs["root"]
        if not 0 <= root < n:
            raise RefError(f"broadcast root {root} out of range for {n} ranks")
        return [values[root]] * n
    if kind == "all_gather":
        axis = attrs["axis"]
        if values[0].ref.ndim == 0:
            raise RefError("all_gather of a 0-d value")
        norm_axes(axis, values[0].ref.ndim)
        ref = np.concatenate([v.ref for v in values], axis=axis)
        err = np.concatenate([v.err for v in values], axis=axis)
        return [Value(ref, err, values[0].dtype)] * n
    dt = values[0].dtype
    refs = np.stack([v.ref for v in values])
    errs = np.stack([v.err for v in values])
    if op in ("max", "min"):
        f = np.max if op == "max" else np.min
        red = finish(f(refs, axis=0), np.max(errs, axis=0), dt, 0)
    elif dt == "int32":
        if op != "sum":
            raise RefError(f"{op} of int32 values is not generated")
        red = finish(np.sum(refs, axis=0), 0.0, dt)
    else:
        total = np.sum(refs.astype(np.float64), axis=0)
        err = np.sum(errs, axis=0) + (n + 1) * UNIT[dt] * np.sum(np.abs(refs), axis=0)
        if op == "sum":
            red = finish(total, err, dt)
        elif op == "avg":
            red = finish(total / n, err / n, dt, 2)
        else:
            raise RefError(f"unknown reduction {op}")
    if kind == "all_reduce":
        return [red] * n
    axis = attrs["axis"]
    norm_axes(axis, red.ref.ndim)
    if red.shape[axis] % n:
        raise RefError(
            f"reduce_scatter: dimension {red.shape[axis]} is not divisible by {n}"
        )
    refs = np.split(red.ref, n, axis=axis)
    errs = np.split(red.err, n, axis=axis)
    return [Value(r, e, dt) for r, e in zip(refs, errs)]


# ---------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------


def eval_local(op, get):
    """The outputs of a non-collective, non-call op; `get(name)` reads a value."""

    def arg(a):
        return get(a) if isinstance(a, str) else Const(a)

    k, at = op.kind, op.attrs
    args = [arg(a) for a in op.args]
    if k == "binary":
        if all(isinstance(a, Const) for a in args):
            raise RefError("an op on two Python numbers")
        return [binary(at["op"], *args)]
    if k == "compare":
        return [compare(at["op"], *args)]
    if k == "where":
        if isinstance(args[0], Const):
            raise RefError("where of a constant condition")
        if all(isinstance(a, Const) for a in args[1:]):
            raise RefError("where of two constants")
        return [where(*args)]
    if k == "unary":
        return [unary(at["op"], args[0])]
    if k == "matmul":
        return [matmul(*args)]
    if k == "reduce":
        return [reduce(at["op"], args[0], at["axis"], at["keepdims"])]
    if k == "softmax":
        return [softmax(args[0], at["axis"])]
    if k == "reshape":
        return [reshape(args[0], tuple(at["shape"]))]
    if k == "index":
        return [index(args[0], tuple(at["key"]))]
    if k == "take":
        return [take(args[0], args[1], at["axis"], at["n"])]
    if k == "transpose":
        return [transpose(args[0], at["axes"])]
    if k == "astype":
        return [astype(args[0], at["dtype"])]
    if k == "npfn":
        return [npfn(at["fn"], args[0], at)]
    if k == "npfn2":
        return [npfn2(at["fn"], args[0], args[1], at)]
    if k in ("shard", "replicate"):
        return [args[0]]
    raise ValueError(f"op {k} is not local")


def split_global(value, dist, dims):
    """Each rank's part of a global value distributed as `dist` ({mesh dim:
    tensor dim}) over a mesh `dims` ({name: size}); ranks row-major."""
    names = list(dims)
    per_dim = {}
    for d, t in dist.items():
        if d not in dims:
            continue
        if value.ref.ndim == 0 or not -value.ref.ndim <= t < value.ref.ndim:
            raise RefError(f"cannot split a value of shape {value.shape} on dim {t}")
        per_dim.setdefault(t % value.ref.ndim, []).append(d)
    parts = []
    for coords in itertools.product(*[range(dims[n]) for n in names]):
        c = dict(zip(names, coords))
        index = [slice(None)] * value.ref.ndim
        for t, ds in per_dim.items():
            count, pos = 1, 0
            for d in names:  # outermost (mesh order) first
                if d in ds:
                    pos = pos * dims[d] + c[d]
                    count *= dims[d]
            size = value.shape[t]
            if size % count:
                raise RefError(
                    f"dimension {t} of size {size} is not divisible by {count}"
                )
            chunk = size // count
            index[t] = slice(pos * chunk, (pos + 1) * chunk)
        index = tuple(index)
        parts.append(Value(value.ref[index], value.err[index], value.dtype))
    return parts


def _agree(a, b):
    with np.errstate(all="ignore"):
        d = np.abs(a.ref.astype(np.float64) - b.ref.astype(np.float64))
        ok = (d <= 2 * (a.err + b.err)) | (np.isnan(a.ref) & np.isnan(b.ref))
        return a.shape == b.shape and bool(
            np.all(ok | np.isinf(a.err) | np.isinf(b.err))
        )


def assemble(parts, spec, dims):
    """The global result of per-rank `parts` for an `out=` spec."""
    names = list(dims)
    sizes = [dims[n] for n in names]
    if isinstance(spec, str):
        return collective("all_reduce", parts, {"op": spec})[0]
    spec = dict(spec or {})
    for d in spec:
        if d not in dims:
            raise RefError(f"out= names mesh dim {d} the actor's mesh does not have")
    grid = {}
    for i, coords in enumerate(itertools.product(*[range(s) for s in sizes])):
        grid[coords] = parts[i]
    # Ranks along dims the result is not split over must agree.
    for coords, v in grid.items():
        base = tuple(c if n in spec else 0 for n, c in zip(names, coords))
        if not _agree(v, grid[base]):
            raise RefError(
                "endpoint results differ across ranks of a replicated mesh dim"
            )

    def build(level, prefix):
        if level == len(names):
            return grid[prefix]
        n = names[level]
        if n not in spec:
            return build(level + 1, prefix + (0,))
        vals = [build(level + 1, prefix + (c,)) for c in range(dims[n])]
        t = spec[n]
        if vals[0].ref.ndim == 0 or not -vals[0].ref.ndim <= t < vals[0].ref.ndim:
            raise RefError(f"out= dimension {t} out of range")
        return Value(
            np.concatenate([v.ref for v in vals], axis=t),
            np.concatenate([v.err for v in vals], axis=t),
            vals[0].dtype,
        )

    return build(0, ())


def out_specs(ep, count):
    out = ep.out
    if isinstance(out, (tuple, list)):
        if len(out) != count:
            raise RefError("out= has the wrong number of entries")
        return list(out)
    return [out] * count


def out_dist(spec):
    """The distribution of an endpoint result on the actor's mesh."""
    return dict(spec) if isinstance(spec, dict) else {}


class Evaluation:
    """Runs a program's reference: `run()` gives the results of every call.
    The generator also steps it op by op (`new_env`, `step`)."""

    def __init__(self, program):
        self.program = program
        self.mesh = dict(program.mesh)
        self.states = {}  # actor var -> [per-rank {param: Value}]

    def run(self):
        return [self.call() for _ in range(self.program.calls)]

    def state(self, actor):
        """The actor's per-rank state, initialized from its params."""
        if actor.var not in self.states:
            dims = actor.mesh_dims(self.mesh)
            ranks = int(np.prod(list(dims.values())))
            state = [{} for _ in range(ranks)]
            for p in actor.params:
                for r, part in enumerate(split_global(input_value(p), p.split, dims)):
                    state[r][p.name] = part
            self.states[actor.var] = state
        return self.states[actor.var]

    def new_env(self):
        env = {i.name: input_value(i) for i in self.program.inputs}
        return env, {name: {} for name in env}

    def call(self):
        env, dist = self.new_env()
        for op in self.program.ops:
            self.step(op, env, dist)
        return [env[r] for r in self.program.results]

    def step(self, op, env, dist):
        """Runs one op of the compiled function on `env` (name -> Value) and
        `dist` (name -> its distribution, None when not known)."""
        if op.kind == "call":
            outs, dists = self.endpoint_call(op, env, dist)
        else:
            outs = eval_local(op, env.__getitem__)
            d = None
            if op.kind == "shard":
                d = dict(op.attrs["spec"])
            elif op.kind == "replicate":
                d = {}
            dists = [d] * len(outs)
        if len(outs) != len(op.out):
            raise RefError(f"{len(op.out)} names for {len(outs)} results")
        for name, v, d in zip(op.out, outs, dists):
            env[name] = v
            dist[name] = d

    def endpoint_args(self, op, env, dist, actor):
        """Per rank, the endpoint's arguments {name: Value}."""
        ep = actor.endpoint(op.attrs["endpoint"])
        dims = actor.mesh_dims(self.mesh)
        ranks = int(np.prod(list(dims.values())))
        if len(op.args) != len(ep.args):
            raise RefError("wrong number of endpoint arguments")
        envs = [{} for _ in range(ranks)]
        for name, a in zip(ep.args, op.args):
            if isinstance(a, str):
                if dist.get(a) is None:
                    raise RefError(f"the distribution of {a} is not known")
                parts = split_global(env[a], dist[a], dims)
            else:
                dt = "float32" if isinstance(a, float) else "int32"
                x = np.asarray(a, np.float64 if dt == "float32" else np.int64)
                parts = [Value(x, 0.0, dt)] * ranks
            for r in range(ranks):
                envs[r][name] = parts[r]
        return envs

    def endpoint_call(self, op, env, dist):
        actor = self.program.actor(op.attrs["actor"])
        ep = actor.endpoint(op.attrs["endpoint"])
        dims = actor.mesh_dims(self.mesh)
        envs = self.endpoint_args(op, env, dist, actor)
        state = self.state(actor)
        for body_op in ep.ops:
            endpoint_op(body_op, envs, state, dims)
        specs = out_specs(ep, len(ep.results))
        outs = [
            assemble([e[name] for e in envs], s, dims)
            for name, s in zip(ep.results, specs)
        ]
        if op.attrs.get("method") == "broadcast":
            return [], []
        return outs, [out_dist(s) for s in specs]


def endpoint_op(op, envs, state, dims):
    """Runs one op of an endpoint body on every rank's env and state."""
    k = op.kind
    if k == "state_get":
        for e, s in zip(envs, state):
            e[op.out[0]] = s[op.attrs["name"]]
        return
    if k == "state_set":
        for e, s in zip(envs, state):
            old, new = s[op.attrs["name"]], e[op.args[0]]
            if old.shape != new.shape or old.dtype != new.dtype:
                raise RefError("a state update changes the state's shape or dtype")
            s[op.attrs["name"]] = new
        return
    if k in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"):
        names = list(dims)
        over = op.attrs["dims"]
        for d in over:
            if d not in dims:
                raise RefError(f"a collective over unknown mesh dim {d}")
        groups = {}
        for r, c in enumerate(itertools.product(*[range(dims[n]) for n in names])):
            key = tuple(x for n, x in zip(names, c) if n not in over)
            groups.setdefault(key, []).append(r)
        for members in groups.values():
            outs = collective(k, [envs[r][op.args[0]] for r in members], op.attrs)
            for r, v in zip(members, outs):
                envs[r][op.out[0]] = v
        return
    if k == "call":
        raise RefError("endpoints calling endpoints")
    for e in envs:
        for name, v in zip(op.out, eval_local(op, e.__getitem__)):
            e[name] = v


def input_value(i):
    a = make_array(i.seed, tuple(i.shape), i.dtype, i.positive)
    ref = a.astype(np.int64 if i.dtype == "int32" else np.float64)
    return Value(ref, 0.0, i.dtype)


def evaluate(program):
    """The reference results of `program` per call, or RefError."""
    try:
        return Evaluation(program).run()
    except RefError:
        raise
    except (ValueError, IndexError, TypeError, KeyError) as err:
        raise RefError(f"{type(err).__name__}: {err}") from None


TOLERANCE_FLOOR = {
    "float32": (1e-5, 1e-6),
    "float16": (1e-3, 1e-4),
    "bfloat16": (8e-3, 1e-3),
}


def tolerance(v):
    """Per element: how far a result may be from `v.ref` (inf: not compared)."""
    rtol, atol = TOLERANCE_FLOOR.get(v.dtype, (0.0, 0.0))
    with np.errstate(all="ignore"):
        mag = np.abs(v.ref.astype(np.float64))
        mag = np.where(np.isfinite(mag), mag, 0.0)
        return 2 * v.err + rtol * mag + atol


def mismatches(got, v):
    """Boolean mask of the elements of `got` outside `v`'s tolerance."""
    tol = tolerance(v)
    g = np.asarray(got)
    if v.dtype == "bool":
        return (g != v.ref) & ~np.isinf(tol)
    g = g.astype(np.float64)
    want = v.ref.astype(np.float64)
    with np.errstate(all="ignore"):
        close = np.abs(g - want) <= tol
        same = (g == want) | (np.isnan(g) & np.isnan(want))
    return ~(close | same | np.isinf(tol))
