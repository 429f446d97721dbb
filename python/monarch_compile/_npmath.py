"""numpy's elementwise functions and reductions, composed of traced ops.

`np.log1p`, `np.sin`, `np.round`, `np.var`, `np.prod`, `np.linalg.norm`...
have no op of their own: each is a composition of the builder's ops
(`binary`, `unary`, `compare`, `select`, `reduce`, `slice`, ...), so it
partitions like them and differentiates through their VJP rules. Where the
composition that is accurate in value has a poor derivative (`log1p` as
`log(u) * x / (u - 1)`), the value is the accurate one and the gradient that
of a simple surrogate (`log(1 + x)`), see `_value_of`.

Every function takes the user's location `loc` last; the callers in
`_numpy.py` and `_tensor.py` pass `user_loc()`.
"""
import contextlib
import functools
import math
import numbers

import numpy as np

from . import errors
from ._tape import stop_gradient
from ._tensor import (Tensor, active_trace, as_value, binary, cast, compare,
                      constant_array, getitem, reduce, reshape, unary, wrap)

FLOATS = ("float32", "float16", "bfloat16")


# Helpers ---------------------------------------------------------------------

def tensor(x, loc):
    """`x` as a Tensor: numbers and arrays become constants."""
    trace = active_trace(loc, "a numpy function")
    if isinstance(x, Tensor):
        as_value(trace, x, None, loc)
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
        raise errors.UnsupportedError(
            "unsupported: a list of traced tensors where an array is "
            "expected (use np.stack(list))", *loc)
    return constant_array(trace, np.asarray(x), loc)


def select(c, a, b, loc):
    """`where(c, a, b)` located at `loc`."""
    trace = active_trace(loc, "where")
    like = a if isinstance(a, Tensor) else b
    return wrap(trace, trace.call(
        "select", as_value(trace, c, None, loc), as_value(trace, a, like, loc),
        as_value(trace, b, like, loc), loc, loc=loc))


def const(value, dtype, loc, shape=()):
    """A constant tensor of `shape` filled with `value`, of `dtype`."""
    trace = active_trace(loc, "a constant")
    if dtype in ("float32", "int32", "bool"):
        return constant_array(trace, np.full(shape, value, dtype), loc)
    return cast(constant_array(trace, np.full(shape, value, np.float32), loc),
                dtype, loc)


def concat(parts, axis, loc):
    """Tensors `parts` joined along `axis` (one concatenate op)."""
    trace = active_trace(loc, "concatenate")
    if len(parts) == 1:
        return parts[0]
    return wrap(trace, trace.call("concatenate", [p._id for p in parts],
                                  int(axis), loc, loc=loc))


@contextlib.contextmanager
def untaped(loc):
    """Ops built inside are not recorded by the active `mc.vjp` tapes: for
    the differentiation they are constants (JAX's stop_gradient)."""
    with stop_gradient(active_trace(loc, "a numpy function")):
        yield


def _value_of(exact_fn, surrogate, loc):
    """`exact_fn()`'s value with `surrogate`'s gradient:
    `surrogate + stop_gradient(exact - surrogate)`. The difference of two
    close floats is exact (Sterbenz), so the sum is exactly `exact`.
    Both branches of the final select carry the surrogate's gradient."""
    with untaped(loc):
        exact = exact_fn()
        delta = binary("sub", exact, surrogate, loc)
        same = compare("eq", exact, surrogate, loc)
    # Where both are the same infinity the difference is NaN: keep it out.
    return select(same, surrogate, binary("add", surrogate, delta, loc), loc)


def floating(x, loc):
    """`x` as a float tensor (integers and booleans compute in float32, as
    numpy's float64 ones do)."""
    x = tensor(x, loc)
    return x if x.dtype in FLOATS else cast(x, "float32", loc)


def _f32_math(nargs):
    """Decorator of a math composition whose first `nargs` arguments are its
    operands (numbers or tensors) and whose last is `loc`: float16 and
    bfloat16 operands are computed in float32 and the result rounded once,
    as numpy computes its float16 math (a float16 sinh of 0.0044 lost 5% to
    the cancellation of two float16 exponentials: the fuzzer)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapped(*args):
            loc = args[-1]
            ops = [a if isinstance(a, numbers.Number) else floating(a, loc)
                   for a in args[:nargs]]
            dts = {o.dtype for o in ops if not isinstance(o, numbers.Number)}
            if dts <= {"float32"}:
                return fn(*ops, *args[nargs:])
            out = dts.pop() if len(dts) == 1 else "float32"
            up = [o if isinstance(o, numbers.Number) or o.dtype == "float32"
                  else cast(o, "float32", loc) for o in ops]
            r = fn(*up, *args[nargs:])
            return cast(r, out, loc) if out != "float32" else r
        return wrapped
    return deco


def _in_f32(x, fn, loc):
    """`fn(x)` computed in float32 and rounded once to `x`'s dtype: what
    `_f32_math(1)` does for a function, for a composition built inline."""
    return _f32_math(1)(lambda x, loc: fn(x))(x, loc)


def normalize_axes(axis, ndim, loc, what):
    """`axis` (None, an int or a sequence) as a sorted list of axes."""
    if axis is None:
        return list(range(ndim))
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1):
            raise errors.ShapeError(
                f"{what}: axis {a} is out of bounds for a tensor of rank "
                f"{ndim}", *loc)
        out.append(a % max(ndim, 1))
    if len(set(out)) != len(out):
        raise errors.ShapeError(f"{what}: repeated axis in {axis!r}", *loc)
    return sorted(out)


def _no_bool(x, name, loc):
    if x.dtype == "bool":
        raise errors.UnsupportedError(
            f"unsupported: {name} of a bool tensor (numpy has no loop for it "
            "either; cast with x.astype(np.int32))", *loc)


# Elementwise -----------------------------------------------------------------

def log1p(x, loc):
    def f(x):
        u = binary("add", x, 1.0, loc)
        log_u = unary("log", u, loc)

        def exact():
            # Goldberg: log(u) * x / (u - 1) cancels the rounding of 1 + x.
            r = binary("mul", log_u, binary("div", x, binary(
                "sub", u, 1.0, loc), loc), loc)
            r = select(compare("eq", u, math.inf, loc), u, r, loc)
            return select(compare("eq", u, 1.0, loc), x, r, loc)
        return _value_of(exact, log_u, loc)
    return _in_f32(x, f, loc)


def expm1(x, loc):
    def f(x):
        u = unary("exp", x, loc)
        surrogate = binary("sub", u, 1.0, loc)

        def exact():
            # Kahan: (u - 1) * x / log(u).
            um1 = binary("sub", u, 1.0, loc)
            r = binary("mul", um1, binary("div", x, unary("log", u, loc), loc),
                       loc)
            r = select(compare("eq", u, math.inf, loc), u, r, loc)
            r = select(compare("eq", um1, -1.0, loc), -1.0, r, loc)
            return select(compare("eq", u, 1.0, loc), x, r, loc)
        return _value_of(exact, surrogate, loc)
    return _in_f32(x, f, loc)


def square(x, loc):
    x = tensor(x, loc)
    if x.dtype == "bool":
        x = cast(x, "int32", loc)
    return binary("mul", x, x, loc)


def sign(x, loc):
    x = tensor(x, loc)
    _no_bool(x, "np.sign", loc)
    # x * 0 keeps NaN (and gives a zero gradient); 1 and -1 are constants.
    rest = select(compare("lt", x, 0, loc), -1, binary("mul", x, 0, loc), loc)
    return select(compare("gt", x, 0, loc), 1, rest, loc)


def floor(x, loc):
    x = tensor(x, loc)
    return x if x.dtype not in FLOATS else binary("floordiv", x, 1.0, loc)


def ceil(x, loc):
    x = tensor(x, loc)
    if x.dtype not in FLOATS:
        return x
    return unary("neg", binary("floordiv", unary("neg", x, loc), 1.0, loc),
                 loc)


def trunc(x, loc):
    x = tensor(x, loc)
    if x.dtype not in FLOATS:
        return x
    return select(compare("lt", x, 0, loc), ceil(x, loc), floor(x, loc), loc)


def _rint(x, loc):
    """Round half to even, exactly: on |x|, f = floor, d = |x| - f (exact),
    up when d > 0.5, to the even one of f, f + 1 when d == 0.5."""
    a = unary("abs", x, loc)
    f = binary("floordiv", a, 1.0, loc)
    d = binary("sub", a, f, loc)
    up = binary("add", f, 1.0, loc)
    r = select(compare("gt", d, 0.5, loc), up, f, loc)
    r = select(compare("eq", d, 0.5, loc),
               binary("add", f, binary("mod", f, 2.0, loc), loc), r, loc)
    return select(compare("lt", x, 0, loc), unary("neg", r, loc), r, loc)


def round_(x, decimals, loc):
    """`np.round(x, decimals)`: half to even; with decimals, numpy's
    `rint(x * 10**d) / 10**d`."""
    x = tensor(x, loc)
    decimals = int(decimals)
    if x.dtype not in FLOATS:
        if decimals >= 0:
            return x
        raise errors.UnsupportedError(
            "unsupported: np.round of an integer tensor with negative "
            "decimals", *loc)
    if decimals == 0:
        return _rint(x, loc)
    scale = float(10.0 ** abs(decimals))
    if decimals > 0:
        return binary("div", _rint(binary("mul", x, scale, loc), loc), scale,
                      loc)
    return binary("mul", _rint(binary("div", x, scale, loc), loc), scale, loc)


def reciprocal(x, loc):
    x = tensor(x, loc)
    if x.dtype in FLOATS:
        return binary("div", 1.0, x, loc)
    # numpy's integer 1 / x truncates: 1 and -1 keep, everything else is 0.
    if x.dtype == "bool":
        x = cast(x, "int32", loc)
    return select(compare("eq", unary("abs", x, loc), 1, loc), x, 0, loc)


def _pair(a, b, loc):
    """Two operands of a float binary function, at least one a Tensor."""
    a = a if isinstance(a, numbers.Number) else floating(a, loc)
    b = b if isinstance(b, numbers.Number) else floating(b, loc)
    return a, b


@_f32_math(2)
def logaddexp(a, b, loc):
    """numpy's: `max + log1p(exp(-|a - b|))`, `a + log(2)` at equality
    (the mean there, so that ties split the gradient as JAX does)."""
    a, b = _pair(a, b, loc)
    d = binary("sub", a, b, loc)
    m = binary("max", a, b, loc)
    r = binary("add", m, log1p(unary("exp", unary("neg", unary(
        "abs", d, loc), loc), loc), loc), loc)
    mid = binary("add", binary("mul", binary("add", a, b, loc), 0.5, loc),
                 math.log(2.0), loc)
    return select(compare("eq", a, b, loc), mid, r, loc)


@_f32_math(2)
def logaddexp2(a, b, loc):
    ln2 = math.log(2.0)
    a, b = _pair(a, b, loc)
    return binary("div", logaddexp(binary("mul", a, ln2, loc),
                                   binary("mul", b, ln2, loc), loc), ln2, loc)


def isnan(x, loc):
    x = tensor(x, loc)
    return compare("ne", x, x, loc)


def isinf(x, loc):
    x = tensor(x, loc)
    if x.dtype not in FLOATS:
        return compare("ne", x, x, loc)
    return compare("eq", unary("abs", x, loc), math.inf, loc)


def isfinite(x, loc):
    x = tensor(x, loc)
    if x.dtype not in FLOATS:
        return compare("eq", x, x, loc)
    return compare("eq", binary("sub", x, x, loc), 0.0, loc)


def to_bool(x, loc):
    x = tensor(x, loc)
    return x if x.dtype == "bool" else compare("ne", x, 0, loc)


def logical_and(a, b, loc):
    return binary("min", to_bool(a, loc), to_bool(b, loc), loc)


def logical_or(a, b, loc):
    return binary("max", to_bool(a, loc), to_bool(b, loc), loc)


def logical_xor(a, b, loc):
    return compare("ne", to_bool(a, loc), to_bool(b, loc), loc)


def logical_not(x, loc):
    return compare("eq", tensor(x, loc), 0, loc)


def bitwise(op, a, b, loc):
    """`&`, `|`, `^` of bool tensors (numpy's bitwise ufuncs on masks)."""
    for t in (a, b):
        if isinstance(t, Tensor) and t.dtype != "bool":
            raise errors.UnsupportedError(
                f"unsupported: bitwise {op} of a {t.dtype} tensor (only of "
                "bool tensors: masks)", *loc)
        if isinstance(t, numbers.Number) and not isinstance(
                t, (bool, np.bool_)):
            raise errors.UnsupportedError(
                f"unsupported: bitwise {op} with a number (only of bool "
                "tensors: masks)", *loc)
    return {"and": logical_and, "or": logical_or,
            "xor": logical_xor}[op](a, b, loc)


def invert(x, loc):
    x = tensor(x, loc)
    if x.dtype != "bool":
        raise errors.UnsupportedError(
            f"unsupported: bitwise not (~) of a {x.dtype} tensor (only of "
            "bool tensors: masks)", *loc)
    return logical_not(x, loc)


def clip(x, lo, hi, loc):
    """`minimum(maximum(x, lo), hi)` (numpy's order; at a bound the gradient
    splits as `maximum`/`minimum` ties do, as in JAX)."""
    x = tensor(x, loc)
    if lo is None and hi is None:
        raise errors.TraceError("np.clip: one of min or max must be given",
                                *loc)
    if lo is not None:
        x = binary("max", x, lo if isinstance(lo, numbers.Number)
                   else tensor(lo, loc), loc)
    if hi is not None:
        x = binary("min", x, hi if isinstance(hi, numbers.Number)
                   else tensor(hi, loc), loc)
    return x


def fmax(a, b, op, loc):
    """`np.fmax`/`np.fmin`: like maximum/minimum, but a NaN loses."""
    m = binary(op, a, b, loc)
    nan_a = compare("ne", a, a, loc) if isinstance(a, Tensor) else None
    nan_b = compare("ne", b, b, loc) if isinstance(b, Tensor) else None
    if nan_b is not None:
        m = select(nan_b, a, m, loc)
    if nan_a is not None:
        m = select(nan_a, b, m, loc)
    return m


# Trigonometry (polynomials after a Cody-Waite reduction) ---------------------

# pi/2 in three parts whose products with the quadrant count k (|k| < 2**12)
# are exact in float32 (cephes' sinf constants scaled to pi/2).
_PIO2 = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)
# Minimax polynomials on [-pi/4, pi/4] (cephes sinf/cosf).
_SIN = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_COS = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)


def _poly(z, coeffs, loc):
    p = coeffs[0]
    for c in coeffs[1:]:
        p = binary("add", binary("mul", p, z, loc), c, loc)
    return p


def _sincos(x, which, loc):
    """sin (which=0) or cos (which=1) in float32: k = round(x / (pi/2)),
    r = x - k pi/2 (three exact products), then sin or cos of r by quadrant.
    The quadrant count k carries no gradient (floor), so the gradient is the
    polynomials' derivative: cos and -sin to float32 accuracy."""
    k = _rint(binary("mul", x, 2.0 / math.pi, loc), loc)
    r = x
    for c in _PIO2:
        r = binary("sub", r, binary("mul", k, c, loc), loc)
    z = binary("mul", r, r, loc)
    s = binary("add", r, binary("mul", binary("mul", r, z, loc),
                                _poly(z, _SIN, loc), loc), loc)
    c = binary("add", binary("sub", 1.0, binary("mul", z, 0.5, loc), loc),
               binary("mul", binary("mul", z, z, loc), _poly(z, _COS, loc),
                      loc), loc)
    q = binary("mod", binary("add", k, float(which), loc), 4.0, loc)
    # q = 0: s, 1: c, 2: -s, 3: -c
    out = select(compare("lt", q, 1.5, loc),
                 select(compare("lt", q, 0.5, loc), s, c, loc),
                 select(compare("lt", q, 2.5, loc), unary("neg", s, loc),
                        unary("neg", c, loc), loc), loc)
    # inf and NaN give NaN, as numpy (x - x is NaN for both).
    return select(compare("eq", binary("sub", x, x, loc), 0.0, loc), out,
                  binary("sub", x, x, loc), loc)


def sin(x, loc):
    return _in_f32(x, lambda x: _sincos(x, 0, loc), loc)


def cos(x, loc):
    return _in_f32(x, lambda x: _sincos(x, 1, loc), loc)


def tan(x, loc):
    return _in_f32(x, lambda x: binary("div", _sincos(x, 0, loc),
                                       _sincos(x, 1, loc), loc), loc)


_ATAN = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1,
         -3.33329491539e-1)


def _arctan(x, loc):
    """cephes atanf: |x| reduced to [0, tan(pi/8)] by atan(x) = pi/2 -
    atan(1/x) and atan(x) = pi/4 + atan((x-1)/(x+1)), then a polynomial."""
    a = unary("abs", x, loc)
    big = compare("gt", a, 2.414213562373095, loc)
    mid = compare("gt", a, 0.4142135623730950, loc)
    safe = select(compare("eq", a, 0.0, loc), 1.0, a, loc)
    y0 = select(big, math.pi / 2, select(mid, math.pi / 4, 0.0, loc), loc)
    t = select(big, binary("div", -1.0, safe, loc),
               select(mid, binary("div", binary("sub", a, 1.0, loc),
                                  binary("add", a, 1.0, loc), loc), a, loc),
               loc)
    z = binary("mul", t, t, loc)
    p = binary("add", binary("mul", binary("mul", _poly(z, _ATAN, loc), z,
                                           loc), t, loc), t, loc)
    r = binary("add", y0, p, loc)
    return select(compare("lt", x, 0, loc), unary("neg", r, loc), r, loc)


def arctan(x, loc):
    return _in_f32(x, lambda x: _arctan(x, loc), loc)


@_f32_math(2)
def arctan2(y, x, loc):
    """numpy's quadrant rules from atan(y / x); atan2(+-0, +-0) and the
    infinities as numpy gives them for finite nonzero operands."""
    y, x = floating(y, loc), floating(x, loc)
    safe_x = select(compare("eq", x, 0.0, loc), 1.0, x, loc)
    base = _arctan(binary("div", y, safe_x, loc), loc)
    # x < 0: add pi with the sign of y; x == 0: +-pi/2 (0 when y == 0).
    pi_y = select(compare("lt", y, 0.0, loc), -math.pi, math.pi, loc)
    r = select(compare("lt", x, 0.0, loc), binary("add", base, pi_y, loc),
               base, loc)
    half = select(compare("lt", y, 0.0, loc), -math.pi / 2,
                  select(compare("gt", y, 0.0, loc), math.pi / 2, 0.0, loc),
                  loc)
    return select(compare("eq", x, 0.0, loc),
                  binary("add", half, binary("mul", y, 0.0, loc), loc), r, loc)


@_f32_math(1)
def arcsin(x, loc):
    x = floating(x, loc)
    c = unary("sqrt", binary("sub", 1.0, binary("mul", x, x, loc), loc), loc)
    return arctan2(x, c, loc)


@_f32_math(1)
def arccos(x, loc):
    x = floating(x, loc)
    s = unary("sqrt", binary("sub", 1.0, binary("mul", x, x, loc), loc), loc)
    return arctan2(s, x, loc)


@_f32_math(1)
def sinh(x, loc):
    """On a = |x|, with E = expm1(a): e^a - e^-a = E + E / (E + 1), which
    keeps full precision for tiny x (exp(x) - exp(-x) cancels there); the
    sign of x put back (sinh(-0.0) is -0.0, sinh(inf) inf)."""
    a = unary("abs", x, loc)
    e = expm1(a, loc)
    s = binary("mul", binary("add", e, binary("div", e, binary(
        "add", e, 1.0, loc), loc), loc), 0.5, loc)
    s = select(compare("eq", e, math.inf, loc), math.inf, s, loc)
    s = select(compare("eq", x, 0.0, loc), x, s, loc)
    return select(compare("lt", x, 0.0, loc), unary("neg", s, loc), s, loc)


@_f32_math(1)
def cosh(x, loc):
    x = floating(x, loc)
    return binary("mul", binary("add", unary("exp", x, loc), unary(
        "exp", unary("neg", x, loc), loc), loc), 0.5, loc)


@_f32_math(1)
def log_base(x, base, loc):
    return binary("mul", unary("log", floating(x, loc), loc),
                  1.0 / math.log(base), loc)


@_f32_math(1)
def exp2(x, loc):
    return binary("pow", 2.0, floating(x, loc), loc)


@_f32_math(2)
def hypot(a, b, loc):
    a, b = _pair(a, b, loc)
    return _root(binary("add", binary("mul", a, a, loc),
                        binary("mul", b, b, loc), loc), loc)


def _root(s, loc):
    """`sqrt(s)` of a sum of squares (s >= 0) whose gradient is 0 where s
    is 0: the derivative of a norm or a standard deviation at zero is the
    subgradient 0 (numpy's central differences, torch's norm), not sqrt's
    infinite slope times a zero one (nan). The sqrt reads 1 there, so no
    inf enters the backward; a NaN stays a NaN."""
    zero = compare("eq", s, 0.0, loc)
    return select(zero, 0.0, unary("sqrt", select(zero, 1.0, s, loc), loc),
                  loc)


# Reductions ------------------------------------------------------------------

def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _count(x, axes):
    return int(np.prod([x.shape[a] for a in axes])) if axes else 1


def prod(x, axis, keepdims, loc):
    x = tensor(x, loc)
    if x.dtype == "bool":
        x = cast(x, "int32", loc)
    axes = normalize_axes(axis, x.ndim, loc, "np.prod")
    out_shape = _reduced_shape(x.shape, axes, keepdims)
    if any(x.shape[a] == 0 for a in axes):
        return const(1, x.dtype, loc, out_shape)
    # One product reduction: a split axis leaves partial products that an
    # all_reduce(prod) completes.
    return reduce("prod", x, axes, keepdims, loc)


def var(x, axis, ddof, keepdims, loc, what="np.var"):
    """numpy's two-pass variance: `sum((x - mean)**2) / (n - ddof)`."""
    x = floating(x, loc)
    axes = normalize_axes(axis, x.ndim, loc, what)
    n = _count(x, axes)
    m = reduce("mean", x, axes, True, loc)
    d = binary("sub", x, m, loc)
    s = reduce("sum", binary("mul", d, d, loc), axes, bool(keepdims), loc)
    return binary("div", s, float(max(n - ddof, 0)), loc)


def std(x, axis, ddof, keepdims, loc):
    return _root(var(x, axis, ddof, keepdims, loc, "np.std"), loc)


def any_(x, axis, keepdims, loc, op="max"):
    x = tensor(x, loc)
    axes = normalize_axes(axis, x.ndim, loc, "np.any" if op == "max"
                          else "np.all")
    b = cast(to_bool(x, loc), "int32", loc)
    return compare("ne", reduce(op, b, axes, bool(keepdims), loc), 0, loc)


def all_(x, axis, keepdims, loc):
    return any_(x, axis, keepdims, loc, op="min")


def ptp(x, axis, keepdims, loc):
    x = tensor(x, loc)
    return binary("sub", reduce("max", x, normalize_axes(
        axis, x.ndim, loc, "np.ptp"), bool(keepdims), loc), reduce(
            "min", x, normalize_axes(axis, x.ndim, loc, "np.ptp"),
            bool(keepdims), loc), loc)


def count_nonzero(x, axis, keepdims, loc):
    x = tensor(x, loc)
    axes = normalize_axes(axis, x.ndim, loc, "np.count_nonzero")
    return reduce("sum", cast(to_bool(x, loc), "int32", loc), axes,
                  bool(keepdims), loc)


def average(x, axis, weights, keepdims, loc):
    x = floating(x, loc)
    axes = normalize_axes(axis, x.ndim, loc, "np.average")
    if weights is None:
        return reduce("mean", x, axes, bool(keepdims), loc)
    w = weights if isinstance(weights, Tensor) else tensor(
        np.asarray(weights, np.float32), loc)
    if w.ndim == 1 and x.ndim > 1:
        if len(axes) != 1 or w.shape[0] != x.shape[axes[0]]:
            raise errors.ShapeError(
                "np.average: 1-D weights need one axis of their length", *loc)
        shape = [1] * x.ndim
        shape[axes[0]] = w.shape[0]
        w = reshape(w, tuple(shape), loc)
    num = reduce("sum", binary("mul", x, w, loc), axes, bool(keepdims), loc)
    den = reduce("sum", binary("add", binary("mul", x, 0.0, loc), w, loc)
                 if tuple(w.shape) != tuple(x.shape) else w, axes,
                 bool(keepdims), loc)
    return binary("div", num, den, loc)


def nan_reduce(op, x, axis, keepdims, loc):
    """`np.nansum`/`nanmean`/`nanmax`/`nanmin`: NaNs ignored."""
    x = tensor(x, loc)
    if x.dtype not in FLOATS:
        return reduce(op, x, normalize_axes(axis, x.ndim, loc, f"np.nan{op}"),
                      bool(keepdims), loc)
    axes = normalize_axes(axis, x.ndim, loc, f"np.nan{op}")
    nan = compare("ne", x, x, loc)
    if op == "sum":
        return reduce("sum", select(nan, 0.0, x, loc), axes, bool(keepdims),
                      loc)
    if op == "mean":
        s = reduce("sum", select(nan, 0.0, x, loc), axes, bool(keepdims), loc)
        n = reduce("sum", cast(logical_not(nan, loc), x.dtype, loc), axes,
                   bool(keepdims), loc)
        return binary("div", s, n, loc)
    fill = -math.inf if op == "max" else math.inf
    r = reduce(op, select(nan, fill, x, loc), axes, bool(keepdims), loc)
    # All-NaN slices stay NaN, as numpy gives.
    all_nan = all_(nan, axes, keepdims, loc)
    return select(all_nan, math.nan, r, loc)


def norm(x, ord, axis, keepdims, loc):
    """`np.linalg.norm`: vector norms (2, 1, inf, -inf, 0, p) and the
    matrix norms that need no decomposition (fro, 1, -1, inf, -inf)."""
    x = floating(x, loc)
    if axis is None:
        if ord is None:
            return _root(reduce("sum", binary("mul", x, x, loc), None,
                                bool(keepdims), loc), loc)
        if x.ndim not in (1, 2):
            raise errors.ShapeError(
                "np.linalg.norm: an ord needs a 1-D or 2-D tensor (or axis)",
                *loc)
        axes = list(range(x.ndim))
    else:
        axes = [int(a) % x.ndim for a in (axis if isinstance(
            axis, (tuple, list)) else (axis,))]
    kd = bool(keepdims)
    a = unary("abs", x, loc)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return _root(reduce("sum", binary("mul", x, x, loc), axes, kd,
                                loc), loc)
        if ord == math.inf:
            return reduce("max", a, axes, kd, loc)
        if ord == -math.inf:
            return reduce("min", a, axes, kd, loc)
        if ord == 0:
            return cast(count_nonzero(x, axes, kd, loc), x.dtype, loc)
        if ord == 1:
            return reduce("sum", a, axes, kd, loc)
        if isinstance(ord, str):
            raise errors.UnsupportedError(
                f"unsupported: np.linalg.norm ord={ord!r} of a vector", *loc)
        p = float(ord)
        return binary("pow", reduce("sum", binary("pow", a, p, loc), axes, kd,
                                    loc), 1.0 / p, loc)
    if len(axes) != 2:
        raise errors.ShapeError("np.linalg.norm: axis must be an int or a "
                                "pair", *loc)
    row, col = axes
    if ord in (None, "fro"):
        return _root(reduce("sum", binary("mul", x, x, loc), axes, kd, loc),
                     loc)
    if ord in (1, -1, math.inf, -math.inf):
        # 1: max over columns of the column sums; inf: over rows.
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        s = reduce("sum", a, [summed], True, loc)
        r = reduce("max" if ord in (1, math.inf) else "min", s, [other], True,
                   loc)
        shape = _reduced_shape(x.shape, axes, kd)
        return reshape(r, shape, loc)
    raise errors.UnsupportedError(
        f"unsupported: np.linalg.norm ord={ord!r} of a matrix (it needs a "
        "singular value decomposition; 'fro', 1, -1, inf and -inf are "
        "supported)", *loc)
