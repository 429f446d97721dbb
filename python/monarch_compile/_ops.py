"""The `mc.*` tensor functions, placement and collectives."""
from . import errors
from ._location import user_loc
from ._tensor import (Tensor, active_trace, as_value, binary, cast, reduce,
                      reshape as _reshape, transpose as _transpose, unary, wrap)

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
