"""Loss and layer helpers built from the traced ops (no kernels of their
own): `mc.log_softmax`, `mc.cross_entropy`, `mc.layer_norm`, `mc.rms_norm`,
`mc.silu`, `mc.causal_mask`. They differentiate like the ops they are made of."""
import numpy as np

from . import errors
from ._location import user_loc
from ._tensor import (Tensor, active_trace, binary, compare, constant_array,
                      reduce, reshape, unary, wrap)


def _tensor(x, what, loc):
    active_trace(loc, what)
    if not isinstance(x, Tensor) or x._scalar:
        raise errors.TraceError(f"{what} needs a traced tensor", *loc)
    return x


def _log_softmax(x, axis, loc):
    m = reduce("max", x, axis, True, loc)
    shifted = binary("sub", x, m, loc)
    lse = unary("log", reduce("sum", unary("exp", shifted, loc), axis, True,
                              loc), loc)
    return binary("sub", shifted, lse, loc)


def log_softmax(x, axis=-1):
    """`x - logsumexp(x, axis)`, computed stably (shifted by the max)."""
    loc = user_loc()
    return _log_softmax(_tensor(x, "mc.log_softmax", loc), axis, loc)


def cross_entropy(logits, labels, reduction="mean"):
    """`torch.nn.functional.cross_entropy(logits, labels)` for class logits
    on the last axis and integer `labels` of the leading shape: the mean
    (or `"sum"`, or `"none"`: per element) of `-log_softmax(logits)[label]`."""
    loc = user_loc()
    logits = _tensor(logits, "mc.cross_entropy", loc)
    if isinstance(labels, Tensor):
        lab = labels
    else:
        lab = constant_array(active_trace(loc, "mc.cross_entropy"),
                             np.asarray(labels, np.int32), loc)
    if lab.dtype != "int32" or tuple(lab.shape) != tuple(logits.shape[:-1]):
        raise errors.ShapeError(
            f"mc.cross_entropy: labels must be int32 of shape "
            f"{tuple(logits.shape[:-1])}, got {lab.dtype} {tuple(lab.shape)}",
            *loc)
    logp = _log_softmax(logits, -1, loc)
    # The label's log-probability by a gather (one read per row), not a
    # product with a one-hot of the labels (n per row); its adjoint is a
    # scatter-add along the class axis.
    trace = active_trace(loc, "mc.cross_entropy")
    at = reshape(lab, tuple(lab.shape) + (1,), loc)
    picked = reshape(wrap(trace, trace.call("take_along", logp._id, at._id,
                                            logp.ndim - 1, loc, loc=loc)),
                     tuple(lab.shape), loc)
    nll = binary("mul", picked, -1.0, loc)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return reduce("sum", nll, None, False, loc)
    if reduction == "mean":
        return reduce("mean", nll, None, False, loc)
    raise errors.TraceError(
        f"mc.cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
        f"{reduction!r}", *loc)


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """`torch.nn.functional.layer_norm` over the last axis (biased
    variance), then `* weight + bias` when given."""
    loc = user_loc()
    x = _tensor(x, "mc.layer_norm", loc)
    mean = reduce("mean", x, -1, True, loc)
    centered = binary("sub", x, mean, loc)
    var = reduce("mean", binary("mul", centered, centered, loc), -1, True, loc)
    y = binary("div", centered, unary("sqrt", binary("add", var, float(eps),
                                                     loc), loc), loc)
    if weight is not None:
        y = binary("mul", y, weight, loc)
    if bias is not None:
        y = binary("add", y, bias, loc)
    return y


def rms_norm(x, weight=None, eps=1e-6):
    """`x / sqrt(mean(x**2, last axis) + eps)`, then `* weight`."""
    loc = user_loc()
    x = _tensor(x, "mc.rms_norm", loc)
    ms = reduce("mean", binary("mul", x, x, loc), -1, True, loc)
    y = binary("div", x, unary("sqrt", binary("add", ms, float(eps), loc),
                               loc), loc)
    return binary("mul", y, weight, loc) if weight is not None else y


def silu(x):
    """`x * sigmoid(x)` (SiLU, swish; `jax.nn.silu`,
    `torch.nn.functional.silu`): the gate of a SwiGLU MLP."""
    loc = user_loc()
    x = _tensor(x, "mc.silu", loc)
    return binary("mul", x, unary("sigmoid", x, loc), loc)


def causal_mask(n):
    """The (n, n) boolean mask of a causal attention (`j <= i`): use it with
    `mc.where(mask, scores, -1e9)`. Built as `arange(n)[:, None] >=
    arange(n)[None, :]` from two n-element constants, so the comparison
    fuses into the kernel that applies it instead of reading an n x n
    constant (issue 36 item 4)."""
    loc = user_loc()
    trace = active_trace(loc, "mc.causal_mask")
    rows = constant_array(trace, np.arange(n, dtype=np.int32).reshape(n, 1),
                          loc)
    cols = constant_array(trace, np.arange(n, dtype=np.int32).reshape(1, n),
                          loc)
    return compare("ge", rows, cols, loc)
