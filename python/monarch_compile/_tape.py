"""The tape of reverse-mode differentiation, and the walk back along it.

While a function under `mc.vjp` (and so `mc.grad`, `mc.value_and_grad`)
runs, a `Tape` observing the trace records every tensor op the builder
makes: its primitive, operands, result and the user's line. `backward`
walks the tape in reverse and asks each primitive's adjoint rule
(`_vjp_rules.py`, registered on the primitive table) for its operands'
cotangents, summing where a value is used twice. `stop_gradient` hides
the ops built inside it from the tapes.
"""
import contextlib

from . import errors
from ._tensor import binary, wrap


class Tape:
    """The tensor ops a trace built while it was active: (primitive, args,
    result id, loc) in program order. An observer of the trace
    (`Trace.observers`)."""

    def __init__(self):
        self.entries = []

    def __call__(self, prim, args, out, loc):
        # An op the builder folded away returns its operand: nothing to
        # record.
        if prim.makes_tensors and not (isinstance(out, int) and
                                       out in prim.operands(args)):
            self.entries.append((prim, args, out, loc))


@contextlib.contextmanager
def stop_gradient(trace):
    """Ops built inside are not recorded by the active tapes: for the
    differentiation they are constants (JAX's stop_gradient)."""
    saved = [o for o in trace.observers if isinstance(o, Tape)]
    trace.observers[:] = [o for o in trace.observers
                          if not isinstance(o, Tape)]
    try:
        yield
    finally:
        trace.observers.extend(saved)


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def backward(trace, tape, seeds, wrt):
    """Cotangents of the value ids `wrt` given `seeds` ({id: Tensor}) for
    results of the ops on `tape`; None where no gradient reaches."""
    live = set(wrt)
    for prim, args, out, loc in tape.entries:
        if any(i in live for i in prim.operands(args)):
            live.update(_outputs(out))
    ct = dict(seeds)
    for prim, args, out, loc in reversed(tape.entries):
        if not any(i in live for i in prim.operands(args)):
            continue
        outs = _outputs(out)
        if not any(o in ct for o in outs):
            continue
        if prim.vjp is None or len(outs) != 1:
            raise errors.UnsupportedError(
                f"mc.grad: no gradient for {prim.label}", *loc)
        g = ct[out]
        y = wrap(trace, out)
        for i, gi in prim.vjp(trace, args, y, g, loc).items():
            if gi is None or i not in live:
                continue
            ct[i] = binary("add", ct[i], gi, loc) if i in ct else gi
    return [ct.get(w) for w in wrt]
