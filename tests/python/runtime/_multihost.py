"""What the multi-host tests run on a mesh of 2 hosts x 2 processes
(test_hosts.py: workers started torchrun-style in network namespaces;
test_slurm.py: started by the slurm launcher): a data x tensor parallel
value_and_grad training step against a float64 numpy model, and an actor
pipeline with one stage per host. Imported by their driver scripts, which
run inside host 0's namespace."""
import os
import pathlib

import numpy as np

import monarch_compile as mc

HERE = pathlib.Path(__file__).resolve().parent


def driver_env(**extra):
    """This process's environment for a driver script run on host 0, plus
    `extra`: the package and this folder (for `import _multihost`) on its
    path."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE.parents[2] / "python"), str(HERE)] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def train_data_x_tensor_parallel(mesh, steps=3):
    @mc.compile(mesh=mesh)
    def train_step(w1, w2, x, t):
        def loss_fn(w1, w2, x, t):
            x = mc.shard(x, hosts=0)          # data parallel over hosts
            w1 = mc.shard(w1, gpus=1)         # Megatron: columns, then rows
            w2 = mc.shard(w2, gpus=0)
            y = mc.relu(x @ w1) @ w2
            return ((y - t) ** 2).mean()
        loss, (g1, g2) = mc.value_and_grad(loss_fn, argnums=(0, 1))(
            w1, w2, x, t)
        return loss, w1 - 0.1 * g1, w2 - 0.1 * g2

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((16, 8)).astype(np.float32) / 4
    w2 = rng.standard_normal((8, 4)).astype(np.float32) / 4
    x = rng.standard_normal((8, 16)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    r1, r2 = w1.astype(np.float64), w2.astype(np.float64)
    for _ in range(steps):
        loss, w1, w2 = train_step(w1, w2, x, t)
        h = x @ r1
        y = np.maximum(h, 0) @ r2
        d = 2 * (y - t) / y.size
        want = ((y - t) ** 2).mean()
        g2 = np.maximum(h, 0).T @ d
        g1 = x.T @ ((d @ r2.T) * (h > 0))
        r1, r2 = r1 - 0.1 * g1, r2 - 0.1 * g2
        np.testing.assert_allclose(loss, want, rtol=1e-4)
        np.testing.assert_allclose(w1, r1, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(w2, r2, rtol=1e-4, atol=1e-5)


class Stage(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def forward(self, x):
        return mc.relu(x @ self.w)


def pipeline_across_hosts(mesh):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    b = rng.standard_normal((4, 4)).astype(np.float32)
    s0 = mesh.slice(hosts=0).spawn("s0", Stage, a)   # on host 0
    s1 = mesh.slice(hosts=1).spawn("s1", Stage, b)   # on host 1

    @mc.compile
    def pipeline(v):
        return s1.forward.call(s0.forward.call(v))

    v = rng.standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(pipeline(v),
                               np.maximum(np.maximum(v @ a, 0) @ b, 0),
                               rtol=1e-5, atol=1e-5)


def pipeline_within_and_across_hosts(mesh):
    """Three stages: host 0's rank 0, host 0's rank 1, then host 1. The
    first hand-off stays on host 0, the second crosses to host 1, in one
    communicator over both hosts."""
    rng = np.random.default_rng(2)
    ws = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(3)]
    s0 = mesh.slice(hosts=0, gpus=0).spawn("p0", Stage, ws[0])
    s1 = mesh.slice(hosts=0, gpus=1).spawn("p1", Stage, ws[1])
    s2 = mesh.slice(hosts=1).spawn("p2", Stage, ws[2])

    @mc.compile
    def three(v):
        return s2.forward.call(s1.forward.call(s0.forward.call(v)))

    v = rng.standard_normal((6, 4)).astype(np.float32)
    want = v
    for w in ws:
        want = np.maximum(want @ w, 0)
    for _ in range(3):
        np.testing.assert_allclose(three(v), want, rtol=1e-5, atol=1e-5)


def train_data_parallel_over_every_rank(mesh, steps=3):
    """Data parallel over both dimensions: the gradients' all_reduce spans
    the 2 x 2 mesh, two members per host, so it is hierarchical (shared
    memory within each host, Gloo across); against float64 numpy. Returns
    what plan_summary() says of the step's transports."""
    @mc.compile(mesh=mesh)
    def train_step(w, x, t):
        def loss_fn(w, x, t):
            y = mc.shard(x, hosts=0, gpus=0) @ w
            return ((y - t) ** 2).mean()
        loss, g = mc.value_and_grad(loss_fn)(w, x, t)
        return loss, w - 0.1 * g

    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 4)).astype(np.float32) / 4
    x = rng.standard_normal((8, 16)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    r = w.astype(np.float64)
    for _ in range(steps):
        loss, w = train_step(w, x, t)
        y = x @ r
        want = ((y - t) ** 2).mean()
        r = r - 0.1 * (x.T @ (2 * (y - t) / y.size))
        np.testing.assert_allclose(loss, want, rtol=1e-4)
        np.testing.assert_allclose(w, r, rtol=1e-4, atol=1e-5)
    return sorted(set(train_step.plan_summary(w, x, t).transports.values()))


def transports(trace_path):
    """{transport: [slice names]} of the communication in a MONARCH_TRACE."""
    import json
    events = json.loads(open(trace_path).read())["traceEvents"]
    out = {}
    for e in events:
        if e.get("cat") in ("collective", "send", "recv"):
            name, _, via = e["name"].rpartition(" via ")
            out.setdefault(via if name else "", []).append(e["name"])
    return out
