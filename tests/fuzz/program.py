"""Fuzz programs as data, and their rendering as Python source.

A `Program` is a list of `Op` records over named values: the body of one
`@mc.compile` function, plus optional actors (`Actor`, with `mc.param` state
and `@mc.endpoint` bodies, themselves lists of `Op`). `render(program)` prints
the self-contained reproducer that the fuzzer runs (`inputs()`, `program(mesh)`
and a `__main__` block); the numpy reference interprets the same records
(reference.py).

Operands of an op are value names (str) or Python numbers (int, float).
"""

import copy
import dataclasses
from dataclasses import dataclass, field

# The input arrays: printed verbatim into every reproducer and executed by the
# reference, so both see the same numbers.
ARRAY_HELPER = '''\
def _array(seed, shape, dtype, positive=False):
    """A reproducible input: uniform in [-2, 2] ([0.5, 2] if positive),
    integers in [-4, 4] ([1, 4])."""
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        return rng.integers(1 if positive else -4, 5, size=shape).astype(np.int32)
    low = 0.5 if positive else -2.0
    return rng.uniform(low, 2.0, size=shape).astype(np.float32).astype(dtype)
'''

_helper_ns = {}
exec("import numpy as np\n" + ARRAY_HELPER, _helper_ns)
make_array = _helper_ns["_array"]

BINARY_SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "pow": "**",
    "floordiv": "//",
}
COMPARE_SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass
class Op:
    """`out = kind(args, **attrs)`; `out` is a tuple of names (empty for ops
    without results: state writes, `.broadcast` calls)."""

    kind: str
    out: tuple
    args: tuple = ()
    attrs: dict = field(default_factory=dict)

    def names(self):
        """The value names this op reads."""
        return [a for a in self.args if isinstance(a, str)]


@dataclass
class Input:
    """A function argument (or an actor's initial state): `_array(seed, ...)`."""

    name: str
    shape: tuple
    dtype: str
    seed: int
    positive: bool = False
    split: dict = field(default_factory=dict)  # only for params: {mesh dim: tensor dim}


@dataclass
class Endpoint:
    """An `@mc.endpoint` method: per-rank ops over its arguments and state.

    `out` is the endpoint's `out=` (None, a dict, a reduction name or a tuple
    of those)."""

    name: str
    args: list
    ops: list
    results: list
    out: object = None


@dataclass
class Actor:
    """An `mc.Actor` subclass spawned once; `slice` is None (the whole mesh)
    or {mesh dim: (start, stop)}."""

    var: str
    cls: str
    spawn_name: str
    params: list
    endpoints: list
    slice: dict = None

    def endpoint(self, name):
        return next(e for e in self.endpoints if e.name == name)

    def mesh_dims(self, mesh):
        dims = dict(mesh)
        for d, (a, b) in (self.slice or {}).items():
            dims[d] = b - a
        return dims


@dataclass
class Program:
    """One compiled function `f` over `inputs`, run `calls` times on a mesh
    `mesh` (a tuple of (dim, size) pairs); `compile_mesh` says whether
    `@mc.compile` is given `mesh=`."""

    mesh: tuple
    inputs: list
    ops: list
    results: list
    actors: list = field(default_factory=list)
    calls: int = 1
    compile_mesh: bool = True
    tag: str = "p"

    def copy(self):
        return copy.deepcopy(self)

    def actor(self, var):
        return next(a for a in self.actors if a.var == var)

    def size(self):
        """A measure the shrinker decreases: ops, results, inputs, elements."""
        n = len(self.ops) + len(self.results) + len(self.inputs)
        for a in self.actors:
            n += 2 + len(a.params)
            for e in a.endpoints:
                n += 1 + len(e.ops) + len(e.args) + len(e.results)
        for i in self.inputs + [p for a in self.actors for p in a.params]:
            for d in i.shape:
                n += d - 1
        for _, s in self.mesh:
            n += s - 1
        return n


def replace(obj, **changes):
    return dataclasses.replace(obj, **changes)


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------


def _operand(a):
    if isinstance(a, str):
        return a
    return repr(a)


# How a program calls the numpy functions of reference.NP_MONOTONE that take
# constant operands after x (the reference computes with the same ones).
NP_CONSTANT_OPERAND = {"clip": (-0.5, 0.75), "fmax": (0.25,), "fmin": (-0.25,),
                       "logaddexp": (0.5,)}


def _kwargs(d):
    return ", ".join(f"{k}={v}" for k, v in d.items())


def render_op(op):
    """One line of Python for `op` (without indentation)."""
    k, a, at = op.kind, op.args, op.attrs
    lhs = ", ".join(op.out)
    if k == "binary":
        if at["op"] in ("maximum", "minimum"):
            expr = f"mc.{at['op']}({_operand(a[0])}, {_operand(a[1])})"
        else:
            expr = f"{_operand(a[0])} {BINARY_SYMBOLS[at['op']]} {_operand(a[1])}"
    elif k == "compare":
        expr = f"{_operand(a[0])} {COMPARE_SYMBOLS[at['op']]} {_operand(a[1])}"
    elif k == "where":
        expr = f"mc.where({', '.join(_operand(x) for x in a)})"
    elif k == "unary":
        style = at.get("style", "fn")
        if style == "neg":
            expr = f"-{a[0]}"
        elif style == "abs":
            expr = f"abs({a[0]})"
        else:
            expr = f"mc.{at['op']}({a[0]})"
    elif k == "matmul":
        if at.get("style") == "fn":
            expr = f"mc.matmul({a[0]}, {a[1]})"
        else:
            expr = f"{a[0]} @ {a[1]}"
    elif k == "reduce":
        kw = {}
        if at["axis"] is not None:
            kw["axis"] = repr(at["axis"])
        if at["keepdims"]:
            kw["keepdims"] = "True"
        if at.get("style") == "fn":
            expr = f"mc.{at['op']}({a[0]}{', ' if kw else ''}{_kwargs(kw)})"
        else:
            expr = f"{a[0]}.{at['op']}({_kwargs(kw)})"
    elif k == "softmax":
        expr = f"mc.softmax({a[0]}, axis={at['axis']})"
    elif k == "npfn":
        kw = {key: repr(v) for key, v in at.items() if key != "fn"}
        if at["fn"] == "pad":  # numpy's pad takes its widths positionally
            expr = f"np.pad({a[0]}, {at['width']!r})"
        elif at["fn"] in NP_CONSTANT_OPERAND:
            consts = ", ".join(repr(c) for c in NP_CONSTANT_OPERAND[at["fn"]])
            expr = f"np.{at['fn']}({a[0]}, {consts})"
        elif at["fn"] in ("concatenate", "stack"):
            expr = f"np.{at['fn']}([{a[0]}, {a[0]}], axis={at['axis']})"
        else:
            expr = f"np.{at['fn']}({a[0]}{', ' if kw else ''}{_kwargs(kw)})"
    elif k == "npfn2":
        expr = f"np.einsum({at['spec']!r}, {a[0]}, {a[1]})"
    elif k == "index":
        expr = f"{a[0]}[{render_key(at['key'])}]"
    elif k == "take":
        if at["style"] == "index":
            expr = f"{a[0]}[{a[1]} % {at['n']}]"
        else:
            expr = f"mc.take({a[0]}, {a[1]} % {at['n']}, axis={at['axis']})"
    elif k == "reshape":
        expr = f"{a[0]}.reshape({tuple(at['shape'])!r})"
    elif k == "transpose":
        if at["axes"] is None:
            expr = f"{a[0]}.T"
        else:
            expr = f"{a[0]}.transpose({tuple(at['axes'])!r})"
    elif k == "astype":
        expr = f"{a[0]}.astype(mc.{at['dtype']})"
    elif k == "shard":
        spec = dict(at["spec"])
        if at.get("mesh"):
            spec = {"mesh": at["mesh"], **spec}
        expr = f"mc.shard({a[0]}, {_kwargs(spec)})"
    elif k == "replicate":
        expr = f"mc.replicate({a[0]})"
    elif k == "call":
        args = ", ".join(_operand(x) for x in a)
        expr = f"{at['actor']}.{at['endpoint']}.{at.get('method', 'call')}({args})"
    elif k == "state_get":
        expr = f"self.{at['name']}"
    elif k == "state_set":
        return f"self.{at['name']} = {a[0]}"
    elif k == "all_reduce":
        expr = f"mc.all_reduce({a[0]}, {_dims(at['dims'])}, op={at['op']!r})"
    elif k == "all_gather":
        expr = f"mc.all_gather({a[0]}, {_dims(at['dims'])}, axis={at['axis']})"
    elif k == "reduce_scatter":
        expr = (
            f"mc.reduce_scatter({a[0]}, {_dims(at['dims'])}, axis={at['axis']}, "
            f"op={at['op']!r})"
        )
    elif k == "broadcast":
        expr = f"mc.broadcast({a[0]}, {_dims(at['dims'])}, root={at['root']})"
    else:
        raise ValueError(f"unknown op kind {k}")
    return f"{lhs} = {expr}" if lhs else expr


def _index_item(k):
    if k is Ellipsis:
        return "..."
    if isinstance(k, slice):
        text = "" if k.start is None else str(k.start)
        text += ":" + ("" if k.stop is None else str(k.stop))
        if k.step is not None:
            text += ":" + str(k.step)
        return text
    return repr(k)  # int, None or a list


def render_key(key):
    """The subscript of `x[...]` for `key`, a tuple of ints, slices, `...`,
    None and (rarely) lists: `1`, `:, 2:5`, `None, ...`."""
    return ", ".join(_index_item(k) for k in key) if key else "()"


def _dims(dims):
    return repr(dims[0]) if len(dims) == 1 else repr(list(dims))


def _out_spec(out):
    return repr(out)


def _render_actor(actor):
    lines = [f"class {actor.cls}(mc.Actor):"]
    names = [p.name for p in actor.params]
    lines.append(f"    def __init__({', '.join(['self'] + names)}):")
    for p in actor.params:
        split = "".join(f", {d}={t}" for d, t in p.split.items())
        lines.append(f"        self.{p.name} = mc.param({p.name}{split})")
    if not actor.params:
        lines.append("        pass")
    for ep in actor.endpoints:
        lines.append("")
        if ep.out is None:
            lines.append("    @mc.endpoint")
        else:
            lines.append(f"    @mc.endpoint(out={_out_spec(ep.out)})")
        lines.append(f"    def {ep.name}(self{''.join(', ' + a for a in ep.args)}):")
        for op in ep.ops:
            lines.append("        " + render_op(op))
        if ep.results:
            lines.append("        return " + ", ".join(ep.results))
        elif not ep.ops:
            lines.append("        pass")
    return lines


def _array_call(i):
    shape = tuple(i.shape)
    pos = ", positive=True" if i.positive else ""
    return f"_array({i.seed}, {shape!r}, {i.dtype!r}{pos})"


def render_core(program):
    """The lines that say what the program does: its actor classes,
    `inputs()` and `program(mesh)` (what a failure report shows)."""
    out = []
    for actor in program.actors:
        out += _render_actor(actor)
        out += ["", ""]
    out.append("def inputs():")
    if program.inputs:
        for i in program.inputs:
            out.append(f"    {i.name} = {_array_call(i)}")
        names = ", ".join(i.name for i in program.inputs)
        out.append(
            f"    return ({names},)"
            if len(program.inputs) == 1
            else f"    return {names}"
        )
    else:
        out.append("    return ()")
    out += ["", ""]
    out.append("def program(mesh):")
    for actor in program.actors:
        where = "mesh"
        if actor.slice:
            rng = ", ".join(f"{d}=slice({a}, {b})" for d, (a, b) in actor.slice.items())
            where = f"mesh.slice({rng})"
        params = ", ".join(_array_call(p) for p in actor.params)
        sep = ", " if params else ""
        out.append(
            f"    {actor.var} = {where}.spawn({actor.spawn_name!r}, {actor.cls}{sep}{params})"
        )
    if program.actors:
        out.append("")
    out.append(
        "    @mc.compile(mesh=mesh)" if program.compile_mesh else "    @mc.compile"
    )
    out.append(f"    def f({', '.join(i.name for i in program.inputs)}):")
    for op in program.ops:
        out.append("        " + render_op(op))
    if len(program.results) == 1:
        out.append(f"        return {program.results[0]}")
    elif program.results:
        out.append(f"        return {', '.join(program.results)}")
    out.append("")
    out.append("    return f")
    return out


def render_summary(program):
    """A short text of the program for reports: mesh, calls and core."""
    head = f"# mesh {dict(program.mesh)}, {program.calls} call(s)"
    return "\n".join([head] + render_core(program))


def render(program, expected=None):
    """The reproducer source of `program`. `expected` (optional) is a list,
    per call, of (value, tolerance) pairs per result to embed as a check."""
    mesh = ", ".join(f"{d}={s}" for d, s in program.mesh)
    out = [
        f'"""Fuzz program {program.tag} (tests/fuzz): a reproducer.',
        "",
        "Run it with `python3 THIS_FILE`; it prints the results"
        + (" and checks them against numpy." if expected else "."),
        '"""',
        "import numpy as np",
        "",
        "import monarch_compile as mc",
        "",
        f"MESH = dict({mesh})",
        f"CALLS = {program.calls}",
        "",
        "",
    ]
    out += ARRAY_HELPER.splitlines()
    out += ["", ""]
    out += render_core(program)
    out += ["", ""]
    if expected:
        out.append("# Per call, per result: numpy's value and the tolerance.")
        out.append("inf, nan = np.inf, np.nan")
        out.append("EXPECTED = [")
        for call in expected:
            out.append("    [")
            for value, tol in call:
                out.append(f"        ({_literal(value)}, {_literal(tol)}),")
            out.append("    ],")
        out.append("]")
        out += ["", ""]
    out.append('if __name__ == "__main__":')
    out.append("    with mc.mesh(**MESH) as mesh:")
    out.append("        f = program(mesh)")
    out.append("        for call in range(CALLS):")
    out.append("            results = f(*inputs())")
    out.append(
        "            results = results if isinstance(results, tuple) else (results,)"
    )
    out.append("            for i, r in enumerate(results):")
    out.append('                print(f"call {call} result {i}:", r.dtype, r.shape)')
    out.append("                print(r)")
    if expected:
        out.append("                want, tol = EXPECTED[call][i]")
        out.append(
            "                bad = ~(np.abs(r.astype(np.float64) - want) <= tol)"
        )
        out.append(
            "                bad &= ~(np.isnan(want) & np.isnan(r.astype(np.float64)))"
        )
        out.append("                bad &= ~np.isinf(tol)")
        out.append(
            '                print("  numpy:", want.astype(r.dtype) if r.dtype != bool else want)'
        )
        out.append(
            '                print("  mismatches:", int(bad.sum()), "of", bad.size)'
        )
    return "\n".join(out) + "\n"


def _literal(a):
    """A Python expression for the numpy array `a`."""
    import numpy as np

    a = np.asarray(a)
    with np.printoptions(threshold=10**6, floatmode="unique", linewidth=10**6):
        body = np.array2string(a, separator=", ").replace("\n", " ")
    dtype = "bool" if a.dtype == bool else "float64"
    return f"np.array({body}, dtype={dtype!r})"
