"""monarch-shard-weight-update (issue 35): a data-parallel step whose averaged
gradient only feeds a plain SGD update runs the update on each rank's rows
between a reduce_scatter and an all_gather. The numbers are numpy's (a
float64 reference of the same steps), in actor code and under global
semantics, on 2 and 4 ranks, the new weight kept on the workers or not;
the plan has the reduce_scatter where the rewrite applies and the
all_reduce with the knob off."""

import os

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402

# 256 x 256 float32: 256 KiB, the pass's default smallest gradient.
WIDTH, BATCH, LR = 256, 8, 0.05


def data(seed, steps, batch=BATCH):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((WIDTH, WIDTH)) * 0.1).astype(np.float32)
    batches = [(rng.standard_normal((batch, WIDTH)).astype(np.float32),
                rng.standard_normal((batch, WIDTH)).astype(np.float32))
               for _ in range(steps)]
    return w, batches


def reference(w, batches):
    """numpy, float64: w -= lr * d/dw mean((x @ w - t)^2), per batch."""
    w = w.astype(np.float64)
    out = []
    for x, t in batches:
        x, t = x.astype(np.float64), t.astype(np.float64)
        d = 2.0 * (x @ w - t) / t.size
        w = w - LR * (x.T @ d)
        out.append(w.copy())
    return out


class Regression(mc.Actor):
    """Each rank's gradient of its rows of the batch, averaged explicitly,
    then plain SGD."""

    def __init__(self, w):
        self.p = [mc.param(w)]
        self.opt = mc.optim.SGD(self.p, lr=LR)

    @mc.endpoint
    def step(self, x, t):
        def loss_fn(p, x, t):
            return ((x @ p[0] - t) ** 2).mean()

        _, g = mc.value_and_grad(loss_fn)(self.p, x, t)
        self.opt.step([mc.all_reduce(gi, "gpus", "avg") for gi in g])
        return self.p[0]


@pytest.mark.parametrize("ranks", [2, 4])
def test_actor_sgd_updates_rows_and_matches_numpy(meshes, ranks):
    w, batches = data(ranks, 3)
    mesh = meshes(gpus=ranks)
    actor = mesh.spawn(f"rows{ranks}", Regression, w)

    @mc.compile(mesh=mesh)
    def step(x, t):
        return actor.step.call(mc.shard(x, gpus=0), mc.shard(t, gpus=0))

    planned = step.ir("planned", *batches[0])
    assert "reduce_scatter avg" in planned and "all_gather" in planned
    for got, want in zip((step(x, t) for x, t in batches),
                         reference(w, batches)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_global_sgd_updates_rows_kept_or_not(meshes):
    # A batch large enough that the partitioner all-reduces the gradient
    # (with 8 rows it gathers the rows instead, which moves less).
    w, batches = data(7, 3, batch=512)
    mesh = meshes(gpus=2)

    def loss_fn(w, x, t):
        return ((mc.shard(x, gpus=0) @ w - mc.shard(t, gpus=0)) ** 2).mean()

    @mc.compile(mesh=mesh)
    def step(w, x, t):
        return w - LR * mc.grad(loss_fn)(w, x, t)

    @mc.compile(mesh=mesh, donate_argnums=(0,))
    def kept(w, x, t):
        return w - LR * mc.grad(loss_fn)(w, x, t)

    assert "reduce_scatter" in step.ir("planned", w, *batches[0])
    # Kept (donated): the all_gather writes the resident value.
    assert "reduce_scatter" in kept.ir("planned", w, *batches[0])
    ours, theirs = w, w
    for (x, t), want in zip(batches, reference(w, batches)):
        ours = step(ours, x, t)
        theirs = kept(theirs, x, t)
        np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(theirs), want, rtol=1e-4,
                                   atol=1e-5)


def test_the_knob_keeps_the_all_reduce(meshes, monkeypatch):
    w, batches = data(9, 1, batch=512)
    mesh = meshes(gpus=2)

    def loss_fn(w, x, t):
        return ((mc.shard(x, gpus=0) @ w - mc.shard(t, gpus=0)) ** 2).mean()

    monkeypatch.setenv("MONARCH_SHARD_UPDATE", "0")

    @mc.compile(mesh=mesh)
    def step(w, x, t):
        return w - LR * mc.grad(loss_fn)(w, x, t)

    planned = step.ir("planned", w, *batches[0])
    assert "reduce_scatter" not in planned and "all_reduce" in planned
    np.testing.assert_allclose(step(w, *batches[0]),
                               reference(w, batches)[0], rtol=1e-4, atol=1e-5)
    assert os.environ["MONARCH_SHARD_UPDATE"] == "0"


@pytest.mark.parametrize("seed", range(6))
def test_random_update_chains_match_numpy(meshes, seed):
    """Random elementwise chains between the reduced gradient and the one
    value that leaves them (their other inputs the replicated weight, a
    replicated bias row broadcast over the rows, scalars): the rewrite
    applies and the numbers are numpy's."""
    rng = np.random.default_rng(100 + seed)
    w = (rng.standard_normal((WIDTH, WIDTH)) * 0.1).astype(np.float32)
    b = rng.standard_normal((WIDTH,)).astype(np.float32)
    x = rng.standard_normal((512, WIDTH)).astype(np.float32)
    t = rng.standard_normal((512, WIDTH)).astype(np.float32)
    steps = [(int(rng.integers(0, 5)), float(rng.uniform(0.5, 2.0)))
             for _ in range(int(rng.integers(1, 5)))]

    def chain(u, w, b, maximum):
        for kind, c in steps:
            if kind == 0:
                u = u * c
            elif kind == 1:
                u = u + w
            elif kind == 2:
                u = u - b
            elif kind == 3:
                u = maximum(u, w * c)
            else:
                u = u * u
        return w - LR * u

    mesh = meshes(gpus=2)

    def loss_fn(w, x, t):
        return ((mc.shard(x, gpus=0) @ w - mc.shard(t, gpus=0)) ** 2).mean()

    @mc.compile(mesh=mesh)
    def step(w, b, x, t):
        return chain(mc.grad(loss_fn)(w, x, t), w, b, mc.maximum)

    assert "reduce_scatter" in step.ir("planned", w, b, x, t), steps
    x64, t64, w64 = (a.astype(np.float64) for a in (x, t, w))
    g = x64.T @ (2.0 * (x64 @ w64 - t64) / t64.size)
    want = chain(g, w64, b.astype(np.float64), np.maximum)
    np.testing.assert_allclose(step(w, b, x, t), want, rtol=1e-4, atol=1e-5,
                               err_msg=str(steps))
