"""Random fuzz programs over the public `monarch_compile` API.

`generate(seed, features)` builds a `Program` (program.py) op by op: every
proposed op is evaluated at once with the numpy reference (reference.py) and
kept only when its values stay moderate and mostly comparable (no overflow,
no log of a negative number, no division by a value near zero), so programs
are long enough to be interesting without drowning in noise.

What is generated: elementwise `+ - * / **` (and `//` where mc.Tensor has
it) between tensors with numpy broadcasting and with Python int and float
scalars on either side, unary mc.relu/exp/log/tanh/sigmoid/gelu/sqrt/abs/neg
and `-x`/`abs(x)`, mc.maximum/minimum, comparisons and mc.where, `@` (numpy's
rules: 1-D operands, broadcast batch dims, mixed dtypes), indexing
(ints, slices with any step, `...`, None, one list of ints among them) and
gathers by traced int32 tensors (`mc.take(x, i % n, axis)`, `x[i % n]`),
sum/mean/max/min over None/int/tuple/negative axes with
and without keepdims (sum of bools too), mc.softmax, reshape, transpose and .T, astype
among float32/float16/bfloat16/int32, mc.shard/mc.replicate on 1x1, 1x2,
1x4 and 2x2 meshes, several results; actors with mc.param state (replicated
or split), endpoints with out= (None, {dim: axis}, reductions), collectives
(all_reduce, all_gather, reduce_scatter where exported, broadcast) and state
updates, called once or twice; numpy's functions as numpy users call them
on traced tensors (reference.NP_FUNCTIONS: moves, pads, triangles, takes,
concatenations, rounding and monotone ufuncs, sin, cos, sort, cumsum,
median, ptp, average, trace, with numpy's keyword names) and np.einsum of
two tensors (reference.NP_FUNCTIONS2).
Shapes use sizes 1, 3, 5, 7, 8, 12, 16, 33 and 0-d values; dtypes float32,
float16 and int32 inputs.
"""

import importlib.util
import random

import numpy as np

import reference as R
from program import Actor, Endpoint, Input, Op, Program

MESHES = [
    (("hosts", 1), ("gpus", 1)),
    (("hosts", 1), ("gpus", 2)),
    (("hosts", 1), ("gpus", 4)),
    (("hosts", 2), ("gpus", 2)),
]
SIZES = [1, 3, 5, 7, 8, 12, 16, 33, 2, 4, 6]
SIZE_WEIGHTS = [3, 3, 2, 2, 6, 4, 4, 1, 3, 4, 2]
INT_CONSTS = [1, 2, 3, -1, 0]
FLOAT_CONSTS = [0.5, 2.5, -1.5, 0.25, 3.0, 2.0, -0.75]
# Largest magnitude a generated value may reach, per dtype.
LIMIT = {"float32": 1e4, "float16": 300.0, "bfloat16": 1e4, "int32": 1e5, "bool": 1}
UNARIES = ["relu", "exp", "log", "tanh", "sigmoid", "gelu", "sqrt", "abs", "neg"]
REDUCTIONS = ["sum", "mean", "max", "min"]


def default_features():
    """What the installed monarch_compile supports (and what the fuzzer may
    use), detected from the public API."""
    import monarch_compile as mc

    bf16_results = importlib.util.find_spec("ml_dtypes") is not None
    return {
        "floordiv": hasattr(mc.Tensor, "__floordiv__"),
        "reduce_scatter": hasattr(mc, "reduce_scatter"),
        "bf16_results": bf16_results,
        "bool_results": True,
        # numpy's functions on traced tensors (issue 33's table).
        "numpy_functions": hasattr(mc.Tensor, "__array_function__"),
    }


def matmul_ok(a, b):
    """Whether numpy's matmul accepts operands of shapes `a` and `b`."""
    if not a or not b:
        return False
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        return False
    try:
        np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        return False
    return True


class Rejected(Exception):
    """A proposed op is not usable here."""


class Generator:
    def __init__(self, seed, features, max_ops=9):
        self.rng = random.Random(seed)
        self.seed = seed
        self.features = features
        self.max_ops = max_ops
        self.counter = 0

    # -- small helpers ---------------------------------------------------
    def chance(self, p):
        return self.rng.random() < p

    def choice(self, xs, weights=None):
        return (
            self.rng.choices(xs, weights=weights)[0] if weights else self.rng.choice(xs)
        )

    def size(self):
        return self.choice(SIZES, SIZE_WEIGHTS)

    def fresh_seed(self):
        return self.rng.randrange(1 << 30)

    def name(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def dtype(self):
        return self.choice(["float32", "float16", "int32"], [80, 10, 10])

    def const(self, dtype):
        if dtype == "int32" and self.chance(0.7):
            return self.choice(INT_CONSTS)
        if self.chance(0.3):
            return self.choice(INT_CONSTS)
        return self.choice(FLOAT_CONSTS)

    # -- programs --------------------------------------------------------
    def program(self, tag):
        rng = self.rng
        mesh = self.choice(MESHES, [1, 3, 4, 3])
        self.mesh = dict(mesh)
        self.prog = Program(mesh=mesh, inputs=[], ops=[], results=[], tag=tag)
        self.ev = R.Evaluation(self.prog)
        self.env, self.dist = {}, {}
        self.dims = [self.size() for _ in range(4)]
        if self.chance(0.3):
            self.add_actor()
            for _ in range(10):
                try:
                    self.propose_call()
                    break
                except Rejected:
                    pass
        n_ops = rng.randint(1, self.max_ops)
        attempts = 0
        while len(self.prog.ops) < n_ops and attempts < 8 * n_ops:
            attempts += 1
            try:
                self.controller_op()
            except Rejected:
                pass
        if not self.prog.ops:
            self.prog.inputs.clear()
            self.env.clear()
            self.dist.clear()
            self.simple_op()
        self.choose_results()
        if self.prog.actors and any(
            op.kind == "state_set"
            for a in self.prog.actors
            for e in a.endpoints
            for op in e.ops
        ):
            self.prog.calls = 2 if self.chance(0.5) else 1
        elif self.chance(0.05):
            self.prog.calls = 2
        self.prog.actors = [a for a in self.prog.actors if a.endpoints]
        used = {n for op in self.prog.ops for n in op.names()} | set(self.prog.results)
        self.prog.inputs = [i for i in self.prog.inputs if i.name in used]
        if self.prog.actors and self.chance(0.1):
            self.prog.compile_mesh = False
        return self.prog

    def simple_op(self):
        x = self.new_input((self.dims[0],), "float32")
        out = self.name("v")
        op = Op("binary", (out,), (x, 1.0), {"op": "add"})
        self.ev.step(op, self.env, self.dist)
        self.prog.ops.append(op)

    def choose_results(self):
        prog = self.prog
        if not any(op.out for op in prog.ops):
            self.simple_op()
        produced = [n for op in prog.ops for n in op.out]
        candidates = [n for n in produced if self.returnable(n)]
        if not candidates:
            candidates = [n for n in produced] or [i.name for i in prog.inputs]
        results = [candidates[-1]] if candidates else []
        for _ in range(self.rng.randint(0, 2)):
            pool = candidates + (
                [i.name for i in prog.inputs] if self.chance(0.1) else []
            )
            r = self.choice(pool)
            if r not in results:
                results.append(r)
        final = []
        for r in results:
            v = self.env[r]
            if v.dtype == "bfloat16" and not self.features["bf16_results"]:
                out = self.name("v")
                op = Op("astype", (out,), (r,), {"dtype": "float32"})
                self.ev.step(op, self.env, self.dist)
                prog.ops.append(op)
                r = out
            if v.dtype == "bool" and not self.features["bool_results"]:
                continue
            final.append(r)
        prog.results = final or [produced[-1]]

    def returnable(self, name):
        v = self.env[name]
        if v.dtype == "bool":
            return self.features["bool_results"] and self.chance(0.3)
        return True

    # -- inputs ------------------------------------------------------------
    def shape(self, ndim=None):
        if ndim is None:
            ndim = self.choice([0, 1, 2, 3], [1, 4, 8, 3])
        return tuple(self.choice(self.dims) for _ in range(ndim))

    def new_input(self, shape, dtype, positive=False):
        if dtype not in ("float32", "float16", "int32"):
            dtype = "float32"  # no bfloat16 numpy arrays to pass in
        name = f"x{len(self.prog.inputs)}"
        i = Input(name, tuple(shape), dtype, self.fresh_seed(), positive)
        self.prog.inputs.append(i)
        self.env[name] = R.input_value(i)
        self.dist[name] = {}
        return name

    def broadcast_shape_like(self, shape):
        """A shape that broadcasts with `shape`."""
        shape = list(shape)
        if shape and self.chance(0.4):
            shape = (
                shape[self.rng.randint(1, len(shape)) :] if self.chance(0.5) else shape
            )
        out = [1 if self.chance(0.25) else d for d in shape]
        if len(out) < 3 and self.chance(0.1):
            out = [1] + out
        return tuple(out)

    # -- value selection ---------------------------------------------------
    def pick(self, env, pred=lambda v: True):
        names = [n for n, v in env.items() if pred(v)]
        if not names:
            raise Rejected()
        weights = [i + 1 for i in range(len(names))]
        return self.choice(names, weights)

    def operand(self, env, pred, make_shape, dtype, positive=False, local=False):
        """An existing value satisfying `pred`, or a new input."""
        if not local and (self.chance(0.35) or not any(pred(v) for v in env.values())):
            return self.new_input(make_shape(), dtype, positive)
        return self.pick(env, pred)

    # -- op proposals (shared by functions and endpoints) --------------------
    def propose_local(self, env, local):
        """A random op over `env`; `local` (endpoint bodies) creates no inputs."""
        kinds = ["binary", "unary", "matmul", "reduce", "compare", "where", "softmax"]
        kinds += ["reshape", "transpose", "astype", "index", "take"]
        weights = [26, 12, 12, 10, 4, 4, 3, 5, 4, 5, 8, 4]
        if self.features.get("numpy_functions"):
            kinds += ["npfn", "npfn2"]
            weights += [8, 3]
        kind = self.choice(kinds, weights)
        return getattr(self, "propose_" + kind)(env, local)

    def numeric(self, v):
        return v.dtype != "bool"

    def propose_binary(self, env, local):
        a = self.pick(env, self.numeric)
        va = env[a]
        ops = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
        weights = [20, 15, 20, 12, 7, 6, 6]
        if self.features["floordiv"]:
            ops.append("floordiv")
            weights.append(5)
        op = self.choice(ops, weights)
        if op == "pow":
            return self.propose_pow(env, a, local)
        if self.chance(0.3):
            c = self.const(va.dtype)
            if op in ("div", "floordiv") and c == 0:
                c = 2
            args = (a, c) if self.chance(0.6) else (c, a)
        else:
            dt = va.dtype if self.chance(0.9) else self.dtype()
            pos = op in ("div", "floordiv")

            def compatible(v):
                if not self.numeric(v) or (v.dtype != dt):
                    return False
                try:
                    np.broadcast_shapes(v.shape, va.shape)
                except ValueError:
                    return False
                return True

            b = self.operand(
                env,
                compatible,
                lambda: self.broadcast_shape_like(va.shape),
                dt,
                pos,
                local,
            )
            args = (a, b) if self.chance(0.7) else (b, a)
        return Op("binary", (None,), args, {"op": op})

    def propose_pow(self, env, a, local):
        va = env[a]
        r = self.rng.random()
        if va.dtype == "int32":
            return Op("binary", (None,), (a, self.choice([0, 1, 2, 3])), {"op": "pow"})
        if r < 0.6:
            c = self.choice([2, 3, 0.5, -1, 2.0, 1.5])
            return Op("binary", (None,), (a, c), {"op": "pow"})
        if r < 0.8:
            return Op("binary", (None,), (self.choice([2.0, 0.5, 3]), a), {"op": "pow"})
        b = self.operand(
            env,
            lambda v: v.shape == va.shape and v.dtype == va.dtype,
            lambda: va.shape,
            va.dtype,
            False,
            local,
        )
        return Op("binary", (None,), (a, b), {"op": "pow"})

    def propose_unary(self, env, local):
        op = self.choice(UNARIES)
        if op in ("log", "sqrt") and not local and self.chance(0.5):
            a = self.new_input(self.shape(), self.choice(["float32", "float16"]), True)
        else:
            a = self.pick(env, self.numeric)
        style = "fn"
        if op == "neg" and self.chance(0.5):
            style = "neg"
        if op == "abs" and self.chance(0.5):
            style = "abs"
        return Op("unary", (None,), (a,), {"op": op, "style": style})

    def batch_like(self, batch):
        """Batch dims that broadcast with `batch` (numpy's matmul rules):
        some dims 1 or, against a 1, any size; sometimes fewer or one more."""
        out = []
        for d in batch:
            r = self.rng.random()
            if r < 0.2:
                out.append(1)
            elif r < 0.35 and d == 1:
                out.append(self.choice(self.dims))
            else:
                out.append(d)
        if out and self.chance(0.2):
            out = out[self.rng.randint(1, len(out)) :]
        if len(out) < 2 and self.chance(0.15):
            out = [self.choice([1] + self.dims)] + out
        return tuple(out)

    def matmul_partner(self, shape, right):
        """A shape that numpy's matmul accepts with `shape`, on the right of
        it (`right`) or on its left: 1-D, 2-D or batched with broadcasting."""
        if right:
            k, batch = shape[-1], shape[:-2]
        else:
            k, batch = shape[0] if len(shape) == 1 else shape[-2], shape[:-2]
        n = self.choice(self.dims)
        core = (k, n) if right else (n, k)
        r = self.rng.random()
        if r < 0.15:
            return (k,)
        if r < 0.4 or (not batch and self.chance(0.6)):
            return core
        if not batch:
            batch = (self.choice(self.dims),)
        return self.batch_like(batch) + core

    def propose_matmul(self, env, local):
        a = self.pick(env, lambda v: self.numeric(v) and 1 <= v.ref.ndim <= 4)
        va = env[a]
        right = self.chance(0.75)  # `a` is the left operand
        dt = va.dtype if self.chance(0.85) else self.dtype()
        want = self.matmul_partner(va.shape, right)

        def compatible(v):
            if not self.numeric(v) or v.dtype != dt:
                return False
            pair = (va.shape, v.shape) if right else (v.shape, va.shape)
            return matmul_ok(*pair)

        b = self.operand(env, compatible, lambda: want, dt, False, local)
        style = "fn" if self.chance(0.2) else "op"
        return Op("matmul", (None,), (a, b) if right else (b, a), {"style": style})

    def index_item(self, n):
        """One entry of an index for a dim of size `n`."""
        if n == 0:
            return slice(None)
        r = self.rng.random()
        if r < 0.3:
            i = self.rng.randrange(n)
            return i - n if self.chance(0.3) else i
        if r < 0.45:
            return slice(None)
        if self.chance(0.08):  # backwards (a gather of that dimension)
            start = self.rng.randrange(n) if self.chance(0.5) else None
            return slice(start, None, -self.choice([1, 1, 2, 3]))
        step = self.choice([None, None, 1, 2, 3])
        start = self.rng.randrange(n) if self.chance(0.6) else None
        stop = self.rng.randint(1, n) if self.chance(0.5) else None
        if start is not None and self.chance(0.2):
            start -= n
        if stop is not None and self.chance(0.2):
            stop -= n
        if self.chance(0.05):
            stop = n + self.choice([1, 5])  # clipped, as numpy does
        s = slice(start, stop, step)
        if len(range(*s.indices(n))) == 0 and not self.chance(0.05):
            return slice(start, None, step)  # mostly not empty
        return s

    def propose_index(self, env, local):
        a = self.pick(env, lambda v: v.ref.ndim >= 1 or self.chance(0.05))
        shape = env[a].shape
        if self.chance(0.02) and shape:  # a list index: a gather
            n = shape[0]
            key = [[self.rng.randrange(n) for _ in range(self.rng.randint(1, 3))]]
        elif self.chance(0.1) and shape and all(shape):
            # One list (negative entries too) among basic entries.
            key = [self.index_item(n) for n in shape]
            d = self.rng.randrange(len(shape))
            n = shape[d]
            key[d] = [self.rng.randrange(-n, n) for _ in range(self.rng.randint(1, 4))]
            if self.chance(0.3) and len(key) < 6:
                key.insert(self.rng.randint(0, len(key)), None)
        else:
            key = [self.index_item(n) for n in shape]
            full = slice(None)
            if key and self.chance(0.3):  # trailing `:` are implicit
                while key and key[-1] == full:
                    key.pop()
            if self.chance(0.25):
                # `...` for a run of `:` (possibly empty) at either end.
                if self.chance(0.5):
                    i = 0
                    while i < len(key) and key[i] == full and self.chance(0.7):
                        i += 1
                    key = [Ellipsis] + key[i:]
                else:
                    j = len(key)
                    while j > 0 and key[j - 1] == full and self.chance(0.7):
                        j -= 1
                    key = key[:j] + [Ellipsis]
            for _ in range(self.choice([0, 0, 0, 1, 2])):
                if len(shape) + len(key) < 8:
                    key.insert(self.rng.randint(0, len(key)), None)
        if not key:
            key = [Ellipsis] if self.chance(0.5) else [None]
        return Op("index", (None,), (a,), {"key": tuple(key)})

    def propose_take(self, env, local):
        """A gather by a traced int32 tensor: `mc.take(x, i % n, axis=a)` or
        `x[i % n]` (the `%` keeps every index in range)."""
        a = self.pick(env, lambda v: v.ref.ndim >= 1 and all(v.shape))
        shape = env[a].shape

        def indices(v):
            return v.dtype == "int32" and v.ref.ndim <= 3 and np.all(v.err == 0)

        i = self.operand(
            env, indices, lambda: self.small_shape(), "int32", False, local
        )
        axis = self.rng.randrange(len(shape))
        style = "index" if axis == 0 and self.chance(0.5) else "take"
        if style == "take" and self.chance(0.3):
            axis -= len(shape)
        n = shape[axis]
        return Op("take", (None,), (a, i), {"axis": axis, "n": n, "style": style})

    def small_shape(self):
        return tuple(self.rng.randint(1, 4) for _ in range(self.rng.randint(0, 2)))

    def axis_choice(self, ndim):
        if ndim == 0 or self.chance(0.3):
            return None
        if ndim == 1 or self.chance(0.55):
            a = self.rng.randrange(ndim)
            return a - ndim if self.chance(0.3) else a
        count = self.rng.randint(1, ndim)
        axes = self.rng.sample(range(ndim), count)
        return tuple(x - ndim if self.chance(0.3) else x for x in axes)

    def propose_reduce(self, env, local):
        op = self.choice(REDUCTIONS)
        # numpy: the sum of bools counts them (an int32 here).
        a = self.pick(env, self.numeric if op != "sum" else lambda v: True)
        va = env[a]
        attrs = {
            "op": op,
            "axis": self.axis_choice(va.ref.ndim),
            "keepdims": self.chance(0.35),
            "style": "fn" if self.chance(0.3) else "method",
        }
        return Op("reduce", (None,), (a,), attrs)

    def propose_npfn(self, env, local):
        """One of numpy's functions (reference.NP_FUNCTIONS), called as numpy
        users write it on a traced tensor."""
        fn = self.choice(R.NP_FUNCTIONS)
        a = self.pick(env, lambda v: self.numeric(v) and v.ref.ndim >= 1)
        nd = env[a].ref.ndim
        at = {"fn": fn}
        shape = env[a].shape
        if fn in ("flip", "roll", "repeat", "concatenate") or (
                fn in R.NP_REDUCTIONS and fn != "trace"):
            at["axis"] = self.rng.randrange(-nd, nd)
        if fn == "moveaxis":
            at["source"] = self.rng.randrange(-nd, nd)
            at["destination"] = self.rng.randrange(-nd, nd)
        elif fn in ("tril", "triu"):
            at["k"] = self.choice([0, 0, 1, -1])
        elif fn == "diagonal":
            # A diagonal numpy finds non-empty (ours refuses an empty one).
            at["offset"] = self.choice([0, 0, 1, -1]) if nd >= 2 and min(
                shape[0], shape[1]) > 1 else 0
        elif fn == "stack":
            at["axis"] = self.rng.randrange(-nd - 1, nd + 1)
        elif fn == "broadcast_to":
            at["shape"] = (self.choice([1, 2, 3]),) + tuple(shape)
        elif fn == "take":
            at["axis"] = self.rng.randrange(-nd, nd)
            n = max(shape[at["axis"]], 1)
            at["indices"] = [self.rng.randrange(-n, n) for _ in range(
                self.choice([1, 2, 3]))]
        if fn == "roll":
            at["shift"] = self.choice([1, -1, 2, 3])
        elif fn == "repeat":
            at["repeats"] = self.choice([2, 3])
        elif fn == "swapaxes":
            at["axis1"], at["axis2"] = (self.rng.randrange(nd),
                                       self.rng.randrange(-nd, nd))
        elif fn == "expand_dims":
            at["axis"] = self.rng.randrange(-nd - 1, nd + 1)
        elif fn == "tile":
            at["reps"] = tuple(self.choice([1, 2]) for _ in range(nd))
        elif fn == "pad":
            at["width"] = tuple((self.choice([0, 1]), self.choice([0, 2]))
                                for _ in range(nd))
        return Op("npfn", (None,), (a,), at)

    def propose_npfn2(self, env, local):
        """`np.einsum` of two tensors: `a`'s dimensions labelled, `b` made of
        some of them (shared: batch or contracted) and new ones, the result
        a random order of a random subset of the labels."""
        a = self.pick(env, lambda v: self.numeric(v) and 1 <= v.ref.ndim <= 3)
        va = env[a]
        la = "ijk"[:va.ref.ndim]
        shared = [c for c in la if self.chance(0.6)] or [la[-1]]
        lb = shared + ["pq"[i] for i in range(self.choice([0, 1, 1, 2]))]
        self.rng.shuffle(lb)
        lb = "".join(lb)
        sizes = dict(zip(la, va.shape)) | {"p": self.choice([1, 2, 3]),
                                          "q": self.choice([2, 4])}
        want = tuple(sizes[c] for c in lb)
        labels = sorted(set(la + lb))
        out = [c for c in labels if self.chance(0.5)]
        self.rng.shuffle(out)

        def compatible(v):
            return v.dtype == va.dtype and tuple(v.shape) == want

        b = self.operand(env, compatible, lambda: want, va.dtype, False, local)
        return Op("npfn2", (None,), (a, b),
                  {"fn": "einsum", "spec": f"{la},{lb}->{''.join(out)}"})

    def propose_compare(self, env, local):
        a = self.pick(env, self.numeric)
        va = env[a]
        op = self.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        if self.chance(0.5):
            b = self.choice([0, 0.5, 1, -0.5])
        else:
            b = self.operand(
                env,
                lambda v: self.numeric(v)
                and v.dtype == va.dtype
                and v.shape == va.shape,
                lambda: self.broadcast_shape_like(va.shape),
                va.dtype,
                False,
                local,
            )
        return Op("compare", (None,), (a, b), {"op": op})

    def propose_where(self, env, local):
        c = self.pick(env, lambda v: v.dtype == "bool")
        vc = env[c]

        def branch():
            if self.chance(0.3):
                return self.choice([0.0, 1.0, -1.0, 2.5])
            return self.operand(
                env,
                lambda v: self.numeric(v) and v.shape == vc.shape,
                lambda: vc.shape,
                "float32",
                False,
                local,
            )

        a, b = branch(), branch()
        if not isinstance(a, str) and not isinstance(b, str):
            raise Rejected()
        return Op("where", (None,), (c, a, b))

    def propose_softmax(self, env, local):
        a = self.pick(env, lambda v: self.numeric(v) and v.ref.ndim >= 1)
        nd = env[a].ref.ndim
        axis = self.rng.randrange(-nd, nd) if self.chance(0.5) else -1
        return Op("softmax", (None,), (a,), {"axis": axis})

    def propose_reshape(self, env, local):
        a = self.pick(env, lambda v: True)
        shape = list(env[a].shape)
        r = self.rng.random()
        if r < 0.3:
            shape.insert(self.rng.randint(0, len(shape)), 1)
        elif r < 0.45 and 1 in shape:
            shape.remove(1)
        elif r < 0.65:
            shape = [int(np.prod(shape))]
        elif r < 0.85 and len(shape) >= 2:
            i = self.rng.randrange(len(shape) - 1)
            shape[i : i + 2] = [shape[i] * shape[i + 1]]
        else:
            n = int(np.prod(shape))
            f = [d for d in range(2, n) if n % d == 0]
            if not f:
                raise Rejected()
            d = self.choice(f)
            shape = [d, n // d]
        if self.chance(0.1) and shape:
            shape[self.rng.randrange(len(shape))] = -1
        return Op("reshape", (None,), (a,), {"shape": tuple(shape)})

    def propose_transpose(self, env, local):
        a = self.pick(env, lambda v: v.ref.ndim >= 2)
        nd = env[a].ref.ndim
        if nd == 2 and self.chance(0.5):
            axes = None
        else:
            axes = list(range(nd))
            self.rng.shuffle(axes)
            if self.chance(0.2):
                axes = [x - nd for x in axes]
            axes = tuple(axes)
        return Op("transpose", (None,), (a,), {"axes": axes})

    def propose_astype(self, env, local):
        a = self.pick(env, self.numeric)
        dt = self.choice(
            [
                d
                for d in ("float32", "float16", "bfloat16", "int32")
                if d != env[a].dtype
            ]
        )
        return Op("astype", (None,), (a,), {"dtype": dt})

    # -- acceptance ------------------------------------------------------
    def acceptable(self, values):
        for v in values:
            if v.dtype == "bool":
                if v.ref.size and np.mean(np.isinf(v.err)) > 0.5:
                    return False
                continue
            ref = v.ref.astype(np.float64)
            if not np.all(np.isfinite(ref)):
                return False
            if ref.size and np.max(np.abs(ref)) > LIMIT[v.dtype]:
                return False
            if ref.size and np.mean(np.isinf(v.err)) > 0.3:
                return False
        return True

    # -- the compiled function -------------------------------------------
    def controller_op(self):
        kinds = ["local", "where", "shard", "replicate", "call"]
        weights = [70, 4, 16, 5, 14 if self.prog.actors else 0]
        kind = self.choice(kinds, weights)
        if not self.env and kind != "call":
            self.new_input(self.shape(), self.dtype())
        if kind == "local":
            op = self.propose_local(self.env, False)
        elif kind == "where":
            if not any(v.dtype == "bool" for v in self.env.values()):
                self.commit(self.propose_compare(self.env, False))
            op = self.propose_where(self.env, False)
        elif kind == "shard":
            op = self.propose_shard()
        elif kind == "replicate":
            op = Op("replicate", (None,), (self.pick(self.env),))
        else:
            self.propose_call()
            return
        self.commit(op)

    def commit(self, op):
        out = tuple(self.name("v") if o is None else o for o in op.out)
        op.out = out
        env, dist = dict(self.env), dict(self.dist)
        states = {k: [dict(s) for s in v] for k, v in self.ev.states.items()}
        try:
            self.ev.step(op, env, dist)
            if not self.acceptable([env[n] for n in out]):
                raise Rejected()
        except (R.RefError, Rejected):
            self.ev.states = states
            raise Rejected() from None
        self.env, self.dist = env, dist
        self.prog.ops.append(op)

    def propose_shard(self):
        a = self.pick(self.env, lambda v: v.ref.ndim >= 1)
        shape = self.env[a].shape
        spec = self.shard_spec(shape, self.mesh)
        if not spec:
            raise Rejected()
        return Op("shard", (None,), (a,), {"spec": spec})

    def shard_spec(self, shape, mesh, sometimes_bad=True):
        dims = list(mesh)
        self.rng.shuffle(dims)
        count = self.rng.randint(1, len(dims))
        spec = {}
        free = list(range(len(shape)))
        for d in dims[:count]:
            good = [t for t in free if shape[t] % mesh[d] == 0]
            if sometimes_bad and self.chance(0.04):
                good = free
            if not good:
                continue
            t = self.choice(good)
            if sometimes_bad and spec and self.chance(0.03):
                t = list(spec.values())[0]  # two mesh dims on one tensor dim
            else:
                free.remove(t)
            spec[d] = t - len(shape) if self.chance(0.15) else t
        return {d: spec[d] for d in mesh if d in spec}

    # -- actors ------------------------------------------------------------
    def add_actor(self):
        i = len(self.prog.actors)
        sl = None
        if self.chance(0.3):
            if self.mesh["gpus"] > 1:
                g = self.mesh["gpus"]
                sl = self.choice([{"gpus": (0, g // 2)}, {"gpus": (g // 2, g)}])
            elif self.mesh["hosts"] > 1:
                sl = {"hosts": (1, 2)}
        tag = f"{self.prog.tag}_{i}".replace("-", "_")
        actor = Actor(
            var=f"actor{i}",
            cls=f"Stage{i}",
            spawn_name=f"s{tag}",
            params=[],
            endpoints=[],
            slice=sl,
        )
        dims = actor.mesh_dims(self.mesh)
        for j in range(self.rng.randint(0, 2)):
            shape = self.shape(self.choice([1, 2, 2, 3]))
            dtype = self.choice(["float32", "float16"], [9, 1])
            split = {}
            if shape and self.chance(0.4):
                d = self.choice(list(dims))
                good = [t for t in range(len(shape)) if shape[t] % dims[d] == 0]
                if good:
                    split = {d: self.choice(good)}
            actor.params.append(
                Input(f"p{j}", shape, dtype, self.fresh_seed(), False, split)
            )
        self.prog.actors.append(actor)

    def varying(self, dist, dims):
        return {d for d in dist if dims.get(d, 1) > 1}

    def propose_call(self):
        actor = self.choice(self.prog.actors)
        dims = actor.mesh_dims(self.mesh)
        args, varies = [], {}
        for _ in range(self.rng.randint(0, 2)):
            known = [
                n
                for n, d in self.dist.items()
                if d is not None and self.numeric(self.env[n])
            ]
            if known and self.chance(0.6):
                a = self.choice(known)
            else:
                a = self.new_input(
                    self.shape(), self.choice(["float32", "int32"], [9, 1])
                )
            if self.chance(0.4) and self.env[a].ref.ndim >= 1:
                spec = self.shard_spec(self.env[a].shape, dims, sometimes_bad=False)
                if spec:
                    s = self.name("v")
                    self.commit(Op("shard", (s,), (a,), {"spec": spec}))
                    a = s
            args.append(a)
        if self.chance(0.3):
            args.append(self.choice([0.5, -0.25, 2.0, 3]))
        if not args and not actor.params:
            a = self.new_input(self.shape(), "float32")
            args.append(a)
        ep = Endpoint(name=f"e{len(actor.endpoints)}", args=[], ops=[], results=[])
        for k, a in enumerate(args):
            ep.args.append(f"a{k}")
            varies[f"a{k}"] = (
                self.varying(self.dist[a], dims) if isinstance(a, str) else set()
            )
        op = Op("call", (), tuple(args), {"actor": actor.var, "endpoint": ep.name})
        actor.endpoints.append(ep)
        try:
            envs = self.ev.endpoint_args(op, self.env, self.dist, actor)
            self.endpoint_body(actor, ep, envs, varies, dims)
        except (Rejected, R.RefError):
            actor.endpoints.remove(ep)
            raise Rejected() from None
        if not ep.results:
            op.attrs["method"] = "broadcast"
        elif self.chance(0.1):
            op.attrs["method"] = "broadcast"
        else:
            op.out = tuple(self.name("v") for _ in ep.results)
        try:
            self.commit(op)
        except Rejected:
            actor.endpoints.remove(ep)
            raise

    def endpoint_body(self, actor, ep, envs, varies, dims):
        state = [dict(s) for s in self.ev.state(actor)]
        pvaries = {p.name: self.varying(p.split, dims) for p in actor.params}
        local = {n: v for n, v in envs[0].items()}
        n_ops = self.rng.randint(1, 6)
        attempts = 0
        while len(ep.ops) < n_ops and attempts < 10 * n_ops:
            attempts += 1
            try:
                op, new_varies = self.propose_body_op(
                    actor, ep, local, varies, pvaries, dims
                )
            except Rejected:
                continue
            trial = [dict(e) for e in envs]
            trial_state = [dict(s) for s in state]
            try:
                R.endpoint_op(op, trial, trial_state, dims)
            except R.RefError:
                continue
            if op.out and not self.acceptable([e[op.out[0]] for e in trial]):
                continue
            envs[:] = trial
            state[:] = trial_state
            ep.ops.append(op)
            local = dict(envs[0])
            if op.out:
                varies[op.out[0]] = new_varies
        produced = [n for op in ep.ops for n in op.out if envs[0][n].dtype != "bool"]
        if not produced or self.chance(0.1):
            return
        results = [produced[-1]]
        if self.chance(0.3):
            r = self.choice(produced)
            if r not in results:
                results.append(r)
        specs = []
        for r in results:
            if envs[0][r].dtype == "bfloat16" and not self.features["bf16_results"]:
                raise Rejected()
            specs.append(self.out_spec(envs[0][r], varies[r], dims))
        ep.results = results
        if all(s == specs[0] for s in specs):
            ep.out = specs[0]
        else:
            ep.out = tuple(specs)

    def out_spec(self, v, varies, dims):
        nd = v.ref.ndim
        reductions = (
            ["sum", "avg", "max", "min"]
            if v.dtype != "int32"
            else ["sum", "max", "min"]
        )
        if not varies:
            r = self.rng.random()
            if r < 0.5 or (nd == 0 and r < 0.7):
                return None
            if r < 0.7 and nd >= 1:
                return {self.choice(list(dims)): self.rng.randrange(nd)}
            return self.choice(reductions)
        if nd >= len(varies) and self.chance(0.6):
            axes = self.rng.sample(range(nd), len(varies))
            return {d: t for d, t in zip([d for d in dims if d in varies], axes)}
        return self.choice(reductions)

    def propose_body_op(self, actor, ep, env, varies, pvaries, dims):
        """An op of an endpoint body and the mesh dims its result varies over."""
        r = self.rng.random()
        if r < 0.15 and actor.params:
            p = self.choice(actor.params)
            return Op("state_get", (self.name("t"),), (), {"name": p.name}), set(
                pvaries[p.name]
            )
        if r < 0.3:
            return self.propose_collective(env, varies, dims)
        if r < 0.38 and actor.params:
            p = self.choice(actor.params)
            want = [
                n
                for n, v in env.items()
                if n.startswith("t")
                and v.dtype == p.dtype
                and v.shape == self.local_shape(p, dims)
                and varies.get(n, set()) <= pvaries[p.name]
            ]
            if not want:
                raise Rejected()
            return Op("state_set", (), (self.choice(want),), {"name": p.name}), set()
        op = self.propose_local(env, True)
        op.out = (self.name("t"),)
        vs = set()
        for a in op.args:
            if isinstance(a, str):
                vs |= varies.get(a, set())
        return op, vs

    def local_shape(self, p, dims):
        shape = list(p.shape)
        for d, t in p.split.items():
            shape[t] //= dims[d]
        return tuple(shape)

    def propose_collective(self, env, varies, dims):
        a = self.pick(env, self.numeric)
        va = env[a]
        names = list(dims)
        kinds = ["all_reduce", "all_gather", "broadcast"]
        weights = [5, 3, 2]
        if self.features["reduce_scatter"]:
            kinds.append("reduce_scatter")
            weights.append(2)
        kind = self.choice(kinds, weights)
        over = [d for d in names if self.chance(0.6)] or [self.choice(names)]
        n = int(np.prod([dims[d] for d in over]))
        out = self.name("t")
        vs = set(varies.get(a, set()))
        if kind == "all_reduce":
            ops = (
                ["sum", "avg", "max", "min"]
                if va.dtype != "int32"
                else ["sum", "max", "min"]
            )
            attrs = {"dims": over, "op": self.choice(ops)}
            vs -= set(over)
        elif kind == "all_gather":
            if va.ref.ndim == 0:
                raise Rejected()
            attrs = {"dims": over, "axis": self.rng.randrange(va.ref.ndim)}
            vs -= set(over)
        elif kind == "broadcast":
            attrs = {"dims": over, "root": self.rng.randrange(n)}
            vs -= set(over)
        else:
            good = [t for t in range(va.ref.ndim) if va.shape[t] % n == 0]
            if not good:
                raise Rejected()
            ops = (
                ["sum", "avg", "max", "min"]
                if va.dtype != "int32"
                else ["sum", "max", "min"]
            )
            attrs = {"dims": over, "axis": self.choice(good), "op": self.choice(ops)}
            vs |= {d for d in over if dims[d] > 1}
        return Op(kind, (out,), (a,), attrs), vs


def generate(seed, features, tag=None, max_ops=9):
    """A valid random program (its reference evaluates) for `seed`."""
    for attempt in range(50):
        g = Generator(seed * 1000 + attempt, features, max_ops)
        prog = g.program(tag or f"s{seed}")
        try:
            R.evaluate(prog)
        except R.RefError:
            continue
        return prog
    raise RuntimeError(f"could not generate a valid program for seed {seed}")
