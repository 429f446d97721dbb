"""The primitive table: every operation of the native `TraceBuilder` that
traced code reaches through `Trace.call`, once (JAX's `Primitive`).

A `Primitive` names its builder method, says which of the call's arguments
are the tensor operands a gradient flows to, whether it makes tensors at
all (declarations of meshes, actors and functions do not), the name a user
knows it by in errors, and carries its VJP rule, registered beside the
rule's code in `_vjp_rules.py` with `@def_vjp(name)`.

`Trace.call` looks every call up here (a builder method without an entry is
refused: a new op cannot reach the transforms unannounced) and hands the
primitive, its arguments, result and the user's line to the trace's
observers; `mc.vjp`'s tape is one. The backward pass asks the primitive for
its operands and its rule; a tensor-making primitive without a rule that a
gradient has to cross raises at the user's line, naming the primitive.

Shapes and dtypes are not evaluated here: the native builder infers them,
and refuses a bad one at the user's line, before the op exists (one set of
shape rules, in C++, shared with the C++ builder API; see docs/frontend.md
"The primitive table").
"""


class Primitive:
    """One builder operation as the tracer's transforms see it."""

    __slots__ = ("name", "makes_tensors", "label", "_operands", "vjp")

    def __init__(self, name, operands, makes_tensors, label):
        self.name = name
        self.makes_tensors = makes_tensors
        self.label = label or name
        self._operands = operands
        # (trace, args, result Tensor, cotangent, loc) -> {value id: grad};
        # None: no gradient crosses it (an error where one has to).
        self.vjp = None

    def operands(self, args):
        """The value ids among `args` a gradient flows back to."""
        return list(self._operands(args)) if self._operands else []

    def __repr__(self):
        return f"Primitive({self.name!r})"


PRIMITIVES = {}


def define(name, operands=None, makes_tensors=True, label=None):
    """Adds the primitive for builder method `name`; `operands(args)` gives
    the value ids of its differentiable operands."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} defined twice")
    prim = Primitive(name, operands, makes_tensors, label)
    PRIMITIVES[name] = prim
    return prim


def def_vjp(name):
    """Decorator: registers the VJP rule of primitive `name`."""
    def register(rule):
        prim = PRIMITIVES[name]
        if prim.vjp is not None:
            raise ValueError(f"primitive {name!r} has a VJP rule already")
        prim.vjp = rule
        return rule
    return register


def _first(args):
    return [args[0]]


def _second(args):
    return [args[1]]


def _second_and_third(args):
    return [args[1], args[2]]


# Tensor operations: (method, operands).
for _name, _ops in (
        ("binary", _second_and_third),     # (op, a, b, loc)
        ("compare", _second_and_third),    # (op, a, b, loc)
        # (cond, a, b, loc): the condition carries no gradient.
        ("select", lambda args: [args[1], args[2]]),
        ("unary", _second),                # (op, x, loc)
        ("matmul", lambda args: [args[0], args[1]]),
        ("einsum", lambda args: [args[0], args[1]]),  # (a, b, la, lb, out, loc)
        ("reduce", _second),               # (op, x, axes, keepdims, loc)
        ("softmax", _first),
        ("reshape", _first),
        ("slice", _first),
        ("take", _first),                  # (x, index, axis, loc)
        ("take_along", _first),            # (x, index, axis, loc)
        ("scatter_add", _first),           # (values, index, n, axis, loc)
        ("scatter_add_along", _first),     # (values, index, n, axis, loc)
        ("transpose", _first),
        ("cast", _first),
        ("concatenate", lambda args: list(args[0])),
        ("shard", _first),
        ("replicate", _first),
        ("place", _first),
        ("transfer", _first),
        ("all_reduce", _first),
        ("all_gather", _first),
        ("reduce_scatter", _first)):
    define(_name, _ops)

define("broadcast_from", _first, label="mc.broadcast")
define("call", lambda args: list(args[2]),
       label="an actor endpoint call (differentiate inside the endpoint)")
# Leaves: tensors made from no traced operand.
for _name in ("constant", "constant_tensor", "state_get"):
    define(_name)
# Declarations, effects and queries: no tensor results.
for _name in ("declare_mesh", "declare_slice", "declare_actor_class",
              "declare_actor_mesh", "begin_function", "end_function",
              "begin_endpoint", "end_endpoint", "add_state", "state_set",
              "broadcast", "debug_print", "local_shape", "lower",
              "plan_summary", "dump_stages"):
    define(_name, makes_tensors=False)
