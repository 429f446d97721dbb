"""Proxy tensors: what a traced function computes with.

A `Tensor` stands for a value of the program being traced. It knows its
shape and dtype; every operation on it records an op (through the native
TraceBuilder) at the user's source line and returns a new proxy. It has no
data: asking for one (`bool(t)`, `float(t)`, `np.asarray(t)`) is an error
that points at the offending line.
"""
import numbers

import numpy as np

from . import _trace, errors
from ._location import user_loc

DTYPES = ("float32", "float16", "bfloat16", "int32")


_NUMPY_NAMES = {}


def numpy_dtype_name(dtype):
    """`dtype.name` of a numpy dtype, memoised: numpy 2 builds the name in
    Python on every access (a call with 160 pytree leaves spent about a
    millisecond there)."""
    name = _NUMPY_NAMES.get(dtype)
    if name is None:
        name = _NUMPY_NAMES[dtype] = dtype.name
    return name


def dtype_name(dtype):
    """Canonical dtype name for a string, numpy dtype or type."""
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, np.dtype):
        name = numpy_dtype_name(dtype)
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = getattr(dtype, "__name__", str(dtype))
    aliases = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
               "i32": "int32", "half": "float16", "float": "float32"}
    return aliases.get(name, name)


class Tensor:
    """A traced tensor (or scalar) of a compiled function or endpoint."""

    __slots__ = ("_trace", "_id", "shape", "dtype", "_scalar")
    __array_priority__ = 1000

    def __init__(self, trace, vid):
        self._trace = trace
        self._id = vid
        shape, dtype, scalar, _mesh, _dist = trace.builder.info(vid)
        self.shape = tuple(shape)
        self.dtype = dtype
        self._scalar = scalar

    # Introspection ------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def mesh(self):
        """Symbol of the mesh the value lives on ('' on the controller)."""
        return self._trace.builder.info(self._id)[3]

    @property
    def sharding(self):
        """Per tensor dimension, the mesh dimensions it is split over."""
        return [list(d) for d in self._trace.builder.info(self._id)[4][0]]

    def __repr__(self):
        kind = "scalar" if self._scalar else f"shape={self.shape}"
        return f"<traced Tensor {kind} dtype={self.dtype}>"

    def __len__(self):
        if self._scalar or not self.shape:
            raise errors.ConcretizationError(
                "len() of a traced scalar", *user_loc())
        return self.shape[0]

    # Concretization errors ----------------------------------------------
    def _concrete(self, what):
        raise errors.ConcretizationError(
            f"{what} of a traced tensor: its value is not known while "
            "tracing. Data-dependent Python control flow and conversions "
            "to Python numbers or numpy are not supported inside compiled "
            "functions and endpoints (use mc.where for elementwise choices, "
            "or return the value and inspect it after the call)",
            *user_loc())

    def __bool__(self):
        self._concrete("data-dependent control flow (bool())")

    def __float__(self):
        self._concrete("float()")

    def __int__(self):
        self._concrete("int()")

    def __index__(self):
        self._concrete("use as an index (__index__)")

    def __complex__(self):
        self._concrete("complex()")

    def __array__(self, *args, **kwargs):
        self._concrete("conversion to numpy (__array__)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """`np.exp(t)`, `np.maximum(t, 0)`, `ndarray + t`...: the ufuncs we
        have ops for are traced; others raise an UnsupportedError."""
        from ._numpy import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """`np.sum(t)`, `np.where(c, a, b)`, `np.reshape(t, s)`...: traced
        like the `mc.` function; others raise an UnsupportedError."""
        from ._numpy import array_function
        return array_function(func, types, args, kwargs)

    def __iter__(self):
        raise errors.UnsupportedError(
            "unsupported op: iterating over a traced tensor", *user_loc())

    def __getitem__(self, key):
        return getitem(self, key, user_loc())

    def __hash__(self):
        return id(self)

    # Arithmetic -----------------------------------------------------------
    def __add__(self, o):
        return binary("add", self, o, user_loc())

    def __radd__(self, o):
        return binary("add", o, self, user_loc())

    def __sub__(self, o):
        return binary("sub", self, o, user_loc())

    def __rsub__(self, o):
        return binary("sub", o, self, user_loc())

    def __mul__(self, o):
        return binary("mul", self, o, user_loc())

    def __rmul__(self, o):
        return binary("mul", o, self, user_loc())

    def __truediv__(self, o):
        return binary("div", self, o, user_loc())

    def __rtruediv__(self, o):
        return binary("div", o, self, user_loc())

    def __floordiv__(self, o):
        return binary("floordiv", self, o, user_loc())

    def __rfloordiv__(self, o):
        return binary("floordiv", o, self, user_loc())

    def __mod__(self, o):
        return binary("mod", self, o, user_loc())

    def __rmod__(self, o):
        return binary("mod", o, self, user_loc())

    def __pow__(self, o):
        loc = user_loc()
        if (isinstance(o, numbers.Integral) and not isinstance(o, bool) and
                1 <= o <= 8 and self.dtype in ("int32", "bool")):
            # numpy's integer power, exactly: repeated multiplication (the
            # float pow would round above 2**24).
            result = self if self.dtype == "int32" else cast(self, "int32",
                                                             loc)
            base = result
            for _ in range(int(o) - 1):
                result = binary("mul", result, base, loc)
            return result
        return binary("pow", self, o, loc)

    def __rpow__(self, o):
        return binary("pow", o, self, user_loc())

    def __matmul__(self, o):
        return matmul(self, o, user_loc())

    def __rmatmul__(self, o):
        return matmul(o, self, user_loc())

    def __neg__(self):
        return unary("neg", self, user_loc())

    def __pos__(self):
        return self

    def __abs__(self):
        return unary("abs", self, user_loc())

    def __lt__(self, o):
        return compare("lt", self, o, user_loc())

    def __le__(self, o):
        return compare("le", self, o, user_loc())

    def __gt__(self, o):
        return compare("gt", self, o, user_loc())

    def __ge__(self, o):
        return compare("ge", self, o, user_loc())

    def __eq__(self, o):
        return compare("eq", self, o, user_loc())

    def __ne__(self, o):
        return compare("ne", self, o, user_loc())

    # Methods ----------------------------------------------------------------
    def sum(self, axis=None, keepdims=False):
        return reduce("sum", self, axis, keepdims, user_loc())

    def mean(self, axis=None, keepdims=False):
        return reduce("mean", self, axis, keepdims, user_loc())

    def max(self, axis=None, keepdims=False):
        return reduce("max", self, axis, keepdims, user_loc())

    def min(self, axis=None, keepdims=False):
        return reduce("min", self, axis, keepdims, user_loc())

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape, user_loc())

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes, user_loc())

    @property
    def T(self):
        return transpose(self, (), user_loc())

    def astype(self, dtype, order="K", casting="unsafe", subok=True,
               copy=True):
        return cast(self, dtype, user_loc())

    # numpy's ndarray methods, as the numpy functions (_numpy.py).
    def ravel(self, order="C"):
        return _np_function("ravel", self)

    def flatten(self, order="C"):
        return _np_function("ravel", self)

    def copy(self, order="C"):
        return self

    def var(self, *args, **kwargs):
        return _np_function("var", self, *args, **kwargs)

    def std(self, *args, **kwargs):
        return _np_function("std", self, *args, **kwargs)

    def prod(self, *args, **kwargs):
        return _np_function("prod", self, *args, **kwargs)

    def any(self, *args, **kwargs):
        return _np_function("any", self, *args, **kwargs)

    def all(self, *args, **kwargs):
        return _np_function("all", self, *args, **kwargs)

    def squeeze(self, axis=None):
        return _np_function("squeeze", self, axis)

    def clip(self, *args, **kwargs):
        return _np_function("clip", self, *args, **kwargs)

    def round(self, decimals=0, out=None):
        return _np_function("round", self, decimals, out)

    def argmax(self, *args, **kwargs):
        return _np_function("argmax", self, *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return _np_function("argmin", self, *args, **kwargs)

    def cumsum(self, *args, **kwargs):
        return _np_function("cumsum", self, *args, **kwargs)

    def cumprod(self, *args, **kwargs):
        return _np_function("cumprod", self, *args, **kwargs)

    def argsort(self, *args, **kwargs):
        return _np_function("argsort", self, *args, **kwargs)

    def swapaxes(self, axis1, axis2):
        return _np_function("swapaxes", self, axis1, axis2)

    def repeat(self, repeats, axis=None):
        return _np_function("repeat", self, repeats, axis)

    def take(self, *args, **kwargs):
        return _np_function("take", self, *args, **kwargs)

    def dot(self, b, out=None):
        return _np_function("dot", self, b, out)

    def trace(self, *args, **kwargs):
        return _np_function("trace", self, *args, **kwargs)

    def diagonal(self, *args, **kwargs):
        return _np_function("diagonal", self, *args, **kwargs)

    def nonzero(self):
        return _np_function("nonzero", self)

    def sort(self, axis=-1, kind=None, order=None):
        raise errors.UnsupportedError(
            "unsupported: x.sort() sorts in place, and traced tensors are "
            "values; use y = np.sort(x, axis)", *user_loc())

    @property
    def mT(self):
        return _np_function("swapaxes", self, -1, -2)

    # Masks: & | ^ ~ of bool tensors (numpy's bitwise ufuncs).
    def __and__(self, o):
        return _bitwise("and", self, o)

    def __rand__(self, o):
        return _bitwise("and", o, self)

    def __or__(self, o):
        return _bitwise("or", self, o)

    def __ror__(self, o):
        return _bitwise("or", o, self)

    def __xor__(self, o):
        return _bitwise("xor", self, o)

    def __rxor__(self, o):
        return _bitwise("xor", o, self)

    def __invert__(self):
        from ._npmath import invert
        return invert(self, user_loc())


def _np_function(name, *args, **kwargs):
    """numpy's `np.<name>(*args, **kwargs)` on traced tensors."""
    from ._numpy import _FUNCTIONS
    return _FUNCTIONS[getattr(np, name)](*args, **kwargs)


def _bitwise(op, a, b):
    from ._npmath import bitwise
    return bitwise(op, a, b, user_loc())


#===----------------------------------------------------------------------===#
# Recording ops (shared by Tensor methods and the mc.* functions)
#===----------------------------------------------------------------------===#

def active_trace(loc, what):
    t = _trace.current()
    if t is None:
        raise errors.TraceError(
            f"{what} can only be used inside an @mc.compile function or an "
            "@mc.endpoint", *loc)
    return t


def wrap(trace, vid):
    return Tensor(trace, vid)


def as_value(trace, x, like, loc):
    """Value id of `x`: a Tensor, or a Python number made a constant with the
    dtype of `like` (weak typing, as numpy does with Python scalars)."""
    if isinstance(x, Tensor):
        if x._trace is not trace:
            raise errors.TraceError(
                "a tensor from another trace (a different compiled function "
                "or specialisation) was used here", *loc)
        return x._id
    if isinstance(x, (bool, np.bool_)):
        x = int(x)
    if isinstance(x, numbers.Number) and not isinstance(x, complex):
        # NEP 50: a Python number is weak and takes the tensor's dtype,
        # except that a float meeting an integer or bool tensor computes in
        # float (numpy's float64; float32 here) and an int meeting a bool
        # tensor in int32.
        is_float = isinstance(x, float) or (isinstance(x, numbers.Real) and
                                            not isinstance(x, numbers.Integral))
        dtype = like.dtype if isinstance(like, Tensor) else (
            "float32" if is_float else "int32")
        if is_float and dtype in ("int32", "bool"):
            dtype = "float32"
        elif dtype == "bool":
            dtype = "int32"
        return trace.call("constant", float(x), dtype, loc, loc=loc)
    if isinstance(x, (np.ndarray, np.generic)) or hasattr(x, "__array__"):
        return constant_array(trace, np.asarray(x), loc)._id
    raise errors.UnsupportedError(
        f"unsupported operand of type {type(x).__name__} in a traced "
        "function", *loc)


def _pair(a, b, loc, what):
    trace = active_trace(loc, what)
    other = b if isinstance(a, Tensor) else a
    ia = as_value(trace, a, b if isinstance(b, Tensor) else other, loc)
    ib = as_value(trace, b, a if isinstance(a, Tensor) else other, loc)
    return trace, ia, ib


def binary(op, a, b, loc):
    trace, ia, ib = _pair(a, b, loc, op)
    return wrap(trace, trace.call("binary", op, ia, ib, loc, loc=loc))


def compare(op, a, b, loc):
    trace, ia, ib = _pair(a, b, loc, "comparison")
    return wrap(trace, trace.call("compare", op, ia, ib, loc, loc=loc))


def unary(op, x, loc):
    trace = active_trace(loc, op)
    ix = as_value(trace, x, None, loc)
    return wrap(trace, trace.call("unary", op, ix, loc, loc=loc))


def matmul(a, b, loc):
    trace, ia, ib = _pair(a, b, loc, "matmul")
    return wrap(trace, trace.call("matmul", ia, ib, loc, loc=loc))


def einsum2(a, b, la, lb, out, loc):
    """One pairwise einsum step, one `linalg.generic` (the builder's
    `einsum`): labels unique within each operand, shared ones of one size."""
    trace, ia, ib = _pair(a, b, loc, "np.einsum")
    return wrap(trace, trace.call("einsum", ia, ib, la, lb, out, loc,
                                  loc=loc))


def _axes(axis):
    if axis is None:
        return []
    if isinstance(axis, (tuple, list)):
        return [int(a) for a in axis]
    return [int(axis)]


def reduce(op, x, axis, keepdims, loc):
    trace = active_trace(loc, op)
    ix = as_value(trace, x, None, loc)
    return wrap(trace, trace.call("reduce", op, ix, _axes(axis), bool(keepdims),
                                  loc, loc=loc))


def reshape(x, shape, loc):
    trace = active_trace(loc, "reshape")
    ix = as_value(trace, x, None, loc)
    return wrap(trace, trace.call("reshape", ix, [int(s) for s in shape], loc,
                                  loc=loc))


def transpose(x, axes, loc):
    trace = active_trace(loc, "transpose")
    ix = as_value(trace, x, None, loc)
    return wrap(trace, trace.call("transpose", ix, [int(a) for a in axes], loc,
                                  loc=loc))


def cast(x, dtype, loc):
    trace = active_trace(loc, "cast")
    name = dtype_name(dtype)
    if name not in DTYPES and name != "bool":
        raise errors.UnsupportedError(
            f"unsupported dtype {name} (supported: {', '.join(DTYPES)})", *loc)
    ix = as_value(trace, x, None, loc)
    return wrap(trace, trace.call("cast", ix, name, loc, loc=loc))


def _is_index_array(k):
    return isinstance(k, (Tensor, list, np.ndarray))


def take(x, indices, axis, loc):
    """numpy's `take(x, indices, axis)` for a traced `x`: `indices` is an
    integer tensor, list or array (negative entries count from the end;
    entries out of range are clamped into it)."""
    trace = active_trace(loc, "mc.take")
    if not isinstance(x, Tensor):
        x = constant_array(trace, np.asarray(x), loc)
    if x._scalar:
        raise errors.UnsupportedError("unsupported: indexing a traced scalar",
                                      *loc)
    if not isinstance(indices, Tensor):
        a = np.asarray(indices)
        if a.dtype == np.bool_ or a.dtype.kind not in "iu":
            if a.size or a.dtype == np.bool_:
                raise errors.UnsupportedError(
                    "unsupported: indexing with a boolean mask or a "
                    f"{a.dtype} array (only integer indices)", *loc)
            a = a.astype(np.int32)
        if axis is not None:
            n = x.shape[axis]
        else:
            n = int(np.prod(x.shape))
        if a.size and (a.min() < -n or a.max() >= n):
            bad = a.min() if a.min() < -n else a.max()
            raise errors.ShapeError(
                f"index {bad} is out of bounds for a dimension of size {n}",
                *loc)
        indices = constant_array(trace, a, loc)
    if indices._scalar:
        raise errors.UnsupportedError(
            "unsupported: a traced scalar as an index (use a 0-d tensor)",
            *loc)
    if axis is None:
        if x.ndim != 1:
            x = reshape(x, (-1,), loc)
        axis = 0
    return wrap(trace, trace.call("take", x._id, indices._id, int(axis), loc,
                                  loc=loc))


def getitem(x, key, loc):
    """`x[key]` with numpy's basic indexing: integers (negative count from
    the end), slices (negative steps too), `...` and `None` (a new axis);
    and one integer index tensor, list or array among them (a gather, as
    numpy's advanced indexing: `emb[tok]`, `x[:, idx]`)."""
    trace = active_trace(loc, "indexing")
    if x._scalar:
        raise errors.UnsupportedError("unsupported: indexing a traced scalar",
                                      *loc)
    key = key if isinstance(key, tuple) else (key,)
    arrays = [i for i, k in enumerate(key) if _is_index_array(k)]
    if len(arrays) > 1:
        raise errors.UnsupportedError(
            "unsupported: indexing with more than one index tensor, list or "
            "array", *loc)
    for k in key:
        if isinstance(k, (bool, np.bool_)):
            raise errors.UnsupportedError(
                "unsupported: indexing with a boolean (a mask)", *loc)
        if not (k is None or k is Ellipsis or isinstance(k, slice) or
                isinstance(k, numbers.Integral) or _is_index_array(k)):
            raise errors.UnsupportedError(
                f"unsupported index of type {type(k).__name__}", *loc)
    for k in key:
        if isinstance(k, slice) and k.step is not None and int(k.step) == 0:
            raise errors.ShapeError("slice step cannot be zero", *loc)
        if isinstance(k, Tensor) and k.dtype == "bool":
            raise errors.UnsupportedError(
                "unsupported: indexing with a boolean mask (its result's "
                "shape depends on the data); use mc.where", *loc)
    backwards = [i for i, k in enumerate(key)
                 if isinstance(k, slice) and k.step is not None and
                 int(k.step) < 0]
    if backwards:
        if arrays:
            raise errors.UnsupportedError(
                "unsupported: a negative slice step together with an index "
                "tensor, list or array", *loc)
        return _backwards(x, key, backwards, loc)
    if arrays:
        return _advanced(x, key, arrays[0], loc)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise errors.ShapeError("an index can only have a single ellipsis",
                                *loc)
    if used > x.ndim:
        raise errors.ShapeError(
            f"too many indices for a tensor of shape {x.shape}: {used}", *loc)
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - used))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (x.ndim - sum(
        1 for k in expanded if k is not None)))
    offsets, sizes, strides, drop, out_shape, new_axes = [], [], [], [], [], []
    d = 0
    for k in expanded:
        if k is None:
            new_axes.append(len(out_shape))
            out_shape.append(1)
            continue
        n = x.shape[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step <= 0:
                raise errors.UnsupportedError(
                    f"unsupported: a slice step of {step}", *loc)
            size = max(0, (stop - start + step - 1) // step)
            offsets.append(start if size else 0)
            sizes.append(size)
            strides.append(step)
            out_shape.append(size)
        else:
            i = int(k)
            if i < -n or i >= n:
                raise errors.ShapeError(
                    f"index {i} is out of bounds for dimension {d} of size {n}",
                    *loc)
            offsets.append(i % n)
            sizes.append(1)
            strides.append(1)
            drop.append(d)
        d += 1
    if list(offsets) == [0] * x.ndim and sizes == list(x.shape) and not drop:
        result = x
    else:
        result = wrap(trace, trace.call("slice", x._id, offsets, sizes,
                                        strides, drop, loc, loc=loc))
    if new_axes:
        result = reshape(result, tuple(out_shape), loc)
    return result


def _axis_of(x, key, at):
    """The axis of `x[key']` that `key[at]` (a slice or an index array)
    indexes, where `key'` is `key` with `key[at]` a full slice: every entry
    before it that keeps an axis (a slice, None, or the dimensions an
    ellipsis stands for)."""
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    axis = 0
    for k in key[:at]:
        if k is Ellipsis:
            axis += x.ndim - used
        elif k is None or isinstance(k, slice):
            axis += 1
    return axis


def _backwards(x, key, at, loc):
    """`x[key]` where the slices at positions `at` step backwards: the other
    entries first (those slices kept whole), then a gather of each of those
    dimensions in the order the slice walks it."""
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > x.ndim:
        raise errors.ShapeError(
            f"too many indices for a tensor of shape {x.shape}: {used}", *loc)
    # The dimension of x each entry indexes.
    dims, d = {}, 0
    for i, k in enumerate(key):
        if k is Ellipsis:
            d += x.ndim - used
        elif k is not None:
            dims[i] = d
            d += 1
    basic = list(key)
    walks = []
    for i in at:
        order = list(range(*key[i].indices(x.shape[dims[i]])))
        if not order:
            raise errors.UnsupportedError(
                "unsupported: an empty slice (a dimension of size 0)", *loc)
        basic[i] = slice(None)
        walks.append((i, order))
    y = getitem(x, tuple(basic), loc)
    for i, order in walks:
        y = take(y, np.asarray(order, np.int32), _axis_of(x, key, i), loc)
    return y


def _advanced(x, key, at, loc):
    """`x[key]` where `key[at]` is an index array: the basic part first (the
    array's place kept by a full slice), then a take along the axis the
    array indexes. As numpy, the array's dimensions go where it stood when
    the advanced indices (the array and any integers) are adjacent, and
    first otherwise."""
    basic = list(key)
    basic[at] = slice(None)
    y = getitem(x, tuple(basic), loc)
    axis = _axis_of(x, key, at)
    out = take(y, key[at], axis, loc)
    advanced = [i for i, k in enumerate(key)
                if _is_index_array(k) or (isinstance(k, numbers.Integral))]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    nd = np.ndim(key[at]) if not isinstance(key[at], Tensor) else \
        key[at].ndim
    if not adjacent and axis != 0:
        perm = list(range(axis, axis + nd)) + \
            [d for d in range(out.ndim) if not axis <= d < axis + nd]
        out = transpose(out, perm, loc)
    return out


def constant_array(trace, array, loc):
    """A numpy array captured by a traced function, embedded as a constant
    (numpy constants the function closes over, `mc.zeros`, ...). float64 and
    int64 become float32 and int32 (the dtypes the compiler has); an int64
    outside int32's range is refused. Booleans are int32 constants cast."""
    a = np.asarray(array)
    name = dtype_name(a.dtype)
    if name == "bool":
        c = constant_array(trace, a.astype(np.int32), loc)
        return cast(c, "bool", loc)
    if name in ("float64",):
        a = a.astype(np.float32)
    elif name in ("int64", "int16", "int8", "uint8", "uint16", "uint32"):
        if a.size and (a.min() < np.iinfo(np.int32).min or
                       a.max() > np.iinfo(np.int32).max):
            raise errors.UnsupportedError(
                f"unsupported: a {name} constant outside int32's range", *loc)
        a = a.astype(np.int32)
    name = dtype_name(a.dtype)
    if name not in DTYPES:
        raise errors.UnsupportedError(
            f"unsupported dtype {name} for a constant (supported: "
            f"{', '.join(DTYPES)})", *loc)
    flat = np.ascontiguousarray(a).reshape(-1)
    bits = flat.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[flat.itemsize])
    if flat.size > 1 and (bits == bits[0]).all():
        flat = flat[:1]  # a splat: every element's bits equal, stored once
    if name == "bfloat16":
        data = flat.view(np.uint16).tobytes()
    else:
        data = flat.tobytes()
    return wrap(trace, trace.call("constant_tensor", data, list(a.shape), name,
                                  loc, loc=loc))
