"""The differential fuzzer of gradients: random differentiable programs,
differentiated with `mc.value_and_grad` in compiled functions on 1x1, 1x2
and 2x2 meshes with random shardings, against float64 central finite
differences of the same program run by numpy.

Each program is Python source over a namespace `F` and ordinary operators,
so the same text runs on traced tensors (`F` = monarch_compile) and on numpy
arrays (`F` = a numpy stand-in below): values keep the shape (M, N), built
from elementwise ops, smooth unary math, `@` with (N, N) inputs, softmax,
reductions broadcast back, transposes through reshapes, slices with any
step, gathers with constant indices, concatenation, `where` on a mask
of another input, and numpy's own functions (`NUMPY`: ufuncs, scans,
sorts, statistics, einsum, pads) called on the traced tensors as on arrays. The loss is `sum(result * weights)`.

    python3 tests/fuzz/gradfuzz.py --programs 200 --seed 1     # long mode
    pytest tests/fuzz/test_gradfuzz.py                         # in make test

A failure prints the program's source, its shapes and seed: a
self-contained reproducer.
"""
import argparse
import random
import sys
import types

import numpy as np

UNARY = ["F.tanh({a})", "F.sigmoid({a})", "F.gelu({a})", "F.exp({a} * 0.5)",
         "F.sqrt({a} * {a} + 1.0)", "-{a}", "F.log({a} * {a} + 0.5)"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b} * {b} + 1.0)",
          "F.maximum({a}, {b} + 3.0)", "{a} * 0.7 + {b} ** 2"]


# numpy's own functions, called on traced tensors as on arrays (issue 33's
# table): each keeps the shape (M, N); `{b}` is another value of that shape.
NUMPY = ["np.sin({a})", "np.cos({a}) * {b}", "np.arctan({a})",
         "np.log1p({a} * {a})", "np.expm1({a} * 0.5)", "np.square({a})",
         "np.sinh({a} * 0.5)", "np.logaddexp({a}, {b})",
         "np.hypot({a}, {b} + 2.0)", "np.clip({a}, -0.4, 0.6)",
         "np.cumsum({a}, axis=1)", "np.cumprod({a} * 0.5 + 1.0, axis=0)",
         "np.sort({a}, axis=1)", "np.flip({a}, axis=0)",
         "np.roll({a}, 1, axis=1)", "np.tril({a})", "np.triu({a}, 1) + {b}",
         "np.var({a}, axis=0, keepdims=True) * {a}",
         "np.std({a}, axis=1, keepdims=True) + {a}",
         "np.median({a}, axis=1, keepdims=True) * {a}",
         "np.linalg.norm({a}, axis=0, keepdims=True) * {a}",
         "np.prod({a} * 0.5 + 1.0, axis=1, keepdims=True) * {a}",
         "np.average({a}, axis=0) * {a}",
         "np.einsum('ij,ij->ij', {a}, {b})",
         "np.einsum('ij,kj->ik', {a}, {b}) @ {a} * 0.1",
         "np.einsum('ij,kj,kl->il', {a}, {b}, {a}) * 0.1",
         "np.tensordot({a}, {b}, axes=([1], [1])) @ {b} * 0.1",
         "np.pad({a}, ((0, 0), (1, 1)))[:, 1:-1] + "
         "np.pad({a}, ((1, 0), (0, 0)), mode='edge')[:-1]",
         "np.take_along_axis({a}, np.argsort({b}, axis=1), axis=1)"]


def numpy_namespace():
    def softmax(x, axis=-1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    return types.SimpleNamespace(
        tanh=np.tanh, exp=np.exp, sqrt=np.sqrt, log=np.log,
        sigmoid=lambda x: 1 / (1 + np.exp(-x)),
        gelu=lambda x: 0.5 * x * (1 + np.tanh(
            0.7978845608028654 * (x + 0.044715 * x ** 3))),
        maximum=np.maximum, minimum=np.minimum, where=np.where,
        softmax=softmax, take=np.take, concatenate=np.concatenate,
        shard=lambda x, **k: x, replicate=lambda x: x)


class Program:
    def __init__(self, seed, mesh, inputs, lines, result, shards):
        self.seed, self.mesh, self.inputs = seed, mesh, inputs
        self.lines, self.result, self.shards = lines, result, shards

    def source(self):
        args = ", ".join(n for n, _ in self.inputs)
        body = [f"    {line}" for line in self.shards + self.lines]
        return "\n".join([f"def fn({args}):", *body,
                          f"    return {self.result}"])


def generate(seed, max_ops=7):
    rng = random.Random(seed)
    m = rng.choice([2, 4, 6])
    n = rng.choice([2, 4, 6])
    mesh = rng.choice([dict(hosts=1, gpus=1), dict(hosts=1, gpus=2),
                       dict(hosts=2, gpus=2)])
    inputs = [("x0", (m, n))]
    values = ["x0"]
    lines = []
    k = 0

    def new(expr):
        nonlocal k
        k += 1
        name = f"v{k}"
        lines.append(f"{name} = {expr}")
        values.append(name)
        return name

    def pick():
        return rng.choice(values[-3:] if rng.random() < 0.7 else values)

    def new_input(shape):
        name = f"x{len(inputs)}"
        inputs.append((name, shape))
        return name

    for _ in range(rng.randint(2, max_ops)):
        r = rng.random()
        a = pick()
        if rng.random() < 0.2:
            b = pick() if rng.random() < 0.6 else new_input((m, n))
            new(rng.choice(NUMPY).format(a=a, b=b))
        elif r < 0.25:
            new(rng.choice(UNARY).format(a=a))
        elif r < 0.45:
            b = pick() if rng.random() < 0.6 else new_input((m, n))
            if rng.random() < 0.5:
                values.append(b)
            new(rng.choice(BINARY).format(a=a, b=b))
        elif r < 0.57:
            w = new_input((n, n))
            new(f"{a} @ {w}" if rng.random() < 0.7 else f"{a} @ {w}.T")
        elif r < 0.63:
            new(f"F.softmax({a}, axis={rng.choice([0, 1, -1])})")
        elif r < 0.70:
            red = rng.choice(["sum", "mean", "max"])
            if red == "max":
                new(f"{a} * {a}.max(axis=1, keepdims=True)")
            else:
                new(f"{a} * {a}.{red}(axis=0)")
        elif r < 0.75:
            new(f"{a}.reshape(({n}, {m})).T * 1.5")
        elif r < 0.82:
            step = rng.choice([-1, 1])
            axis = rng.choice([0, 1])
            new(f"{a}[::{step}]" if axis == 0 else f"{a}[:, ::{step}] + 0.0")
        elif r < 0.88:
            perm = [rng.randrange(n) for _ in range(n)]
            new(f"F.take({a}, {perm}, axis=1)")
        elif r < 0.93:
            cut = rng.randrange(1, n) if n > 1 else 1
            new(f"F.concatenate([{a}[:, {cut}:], {a}[:, :{cut}]], axis=1)")
        else:
            mask = new_input((m, n))
            b = pick()
            new(f"F.where({mask} > 0.3, {a}, {b} * 2.0)")
    shards = []
    sizes = mesh
    for name, shape in inputs:
        if rng.random() < 0.5:
            dim, size = rng.choice([("gpus", sizes["gpus"]),
                                    ("hosts", sizes["hosts"])])
            axis = rng.randrange(len(shape))
            if size > 1 and shape[axis] % size == 0:
                shards.append(f"{name} = F.shard({name}, {dim}={axis})")
    return Program(seed, mesh, inputs, lines, values[-1], shards)


def arrays(prog):
    rng = np.random.default_rng(prog.seed)
    return [rng.uniform(-1.5, 1.5, size=s).astype(np.float32)
            for _, s in prog.inputs]


def finite_differences(f, xs, eps=1e-6):
    xs = [x.astype(np.float64) for x in xs]
    grads = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus = [y.copy() for y in xs]
            minus = [y.copy() for y in xs]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        grads.append(g)
    return grads


def check(prog, mc, meshes=None):
    """None when mc's gradients match, else a message."""
    src = prog.source()
    xs = arrays(prog)
    np_ns = {"F": numpy_namespace(), "np": np}
    exec(src, np_ns)
    out = np.asarray(np_ns["fn"](*[x.astype(np.float64) for x in xs]))
    weights = np.random.default_rng(prog.seed + 2).uniform(
        0.5, 1.5, size=out.shape).astype(np.float32)
    mc_ns = {"F": mc, "np": np}
    exec(src, mc_ns)
    fn = mc_ns["fn"]

    def loss(*a):
        return (fn(*a) * weights).sum()

    mesh = meshes(**prog.mesh) if meshes else mc.mesh(**prog.mesh)
    try:
        @mc.compile(mesh=mesh)
        def step(*a):
            value, grads = mc.value_and_grad(
                loss, argnums=tuple(range(len(a))))(*a)
            return value, grads

        value, grads = step(*xs)
    except mc.TraceError as err:
        return f"refused: {err}"
    finally:
        if not meshes:
            mesh.stop()

    def np_loss(*a):
        return float(np.sum(np_ns["fn"](*a) * weights))

    want = finite_differences(np_loss, xs)
    ref = np_loss(*[x.astype(np.float64) for x in xs])
    if not np.isclose(float(value), ref, rtol=1e-4, atol=1e-4):
        return f"loss {float(value)} != numpy {ref}"
    for (name, _), g, w in zip(prog.inputs, grads, want):
        # float32 against float64: relative 2e-3 per element, plus 2e-4 of
        # the gradient's largest magnitude (cancellations).
        scale = max(1.0, float(np.abs(w).max()))
        g = np.asarray(g, np.float64)
        bad = np.abs(g - w) > 2e-3 * np.abs(w) + 2e-4 * scale
        if not np.all(np.isfinite(g)) or bad.any():
            i = np.unravel_index(int(np.argmax(np.abs(g - w))), w.shape)
            return (f"gradient of {name}: {int(bad.sum())} of {w.size} "
                    f"elements differ; at {tuple(int(j) for j in i)} got "
                    f"{g[i]:.6g}, numpy {w[i]:.6g}")
    return None


def report(prog, message):
    return (f"# gradfuzz seed {prog.seed} on mesh {prog.mesh}, inputs "
            f"{prog.inputs}: {message}\n{prog.source()}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve()
                           .parents[2] / "python"))
    import monarch_compile as mc
    made = {}

    def meshes(**dims):
        key = tuple(sorted(dims.items()))
        if key not in made:
            made[key] = mc.mesh(**dims)
        return made[key]

    failures = refused = 0
    for s in range(args.seed, args.seed + args.programs):
        prog = generate(s)
        message = check(prog, mc, meshes)
        if message and message.startswith("refused"):
            refused += 1
        elif message:
            failures += 1
            print(report(prog, message))
    for m in made.values():
        m.stop()
    print(f"gradfuzz: {args.programs} programs, {failures} failed, "
          f"{refused} refused")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
