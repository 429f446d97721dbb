"""Scalar arithmetic in an @mc.compile function (`lr2 = lr * 0.5`) on its
runtime scalar arguments: monarch-split-control-data sinks it into the
worker programs (docs/plan.md), so the controller still only sends
messages. Numerics against numpy, for several argument values of one trace."""

import numpy as np


from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402

from _procs import worker_children  # noqa: E402


class Weights(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def update(self, g, lr):
        self.w = self.w - lr * g

    @mc.endpoint
    def scaled(self, x, s):
        return x @ self.w * s


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_scalar_arithmetic_feeds_an_endpoint():
    rng = np.random.default_rng(7)
    w = rand(rng, 4, 4)
    with mc.mesh(gpus=2) as mesh:
        a = mesh.spawn("a", Weights, w)

        @mc.compile
        def step(g, lr):
            lr2 = lr * 0.5
            a.update.broadcast(g, lr2)

        @mc.compile
        def read(x, lr, k):
            # Two values from one argument, an integer argument converted,
            # and a math function: all recomputed on the workers.
            s = (lr - 1.0) * (lr + 1.0) / k.astype(mc.float32)
            return a.scaled.call(x, s)

        x = rand(rng, 3, 4)
        for lr in (np.float32(0.5), np.float32(-3.0)):
            g = rand(rng, 4, 4)
            assert step(g, lr) is None
            w = w - np.float32(lr * 0.5) * g
            k = np.int32(3)
            s = (lr - 1) * (lr + 1) / np.float32(k)
            np.testing.assert_allclose(read(x, lr, k), x @ w * s, rtol=1e-5,
                                       atol=1e-5)
        assert step.trace_count == 1 and read.trace_count == 1
    assert worker_children() == []


def test_controller_ir_is_messages_only():
    with mc.mesh(gpus=2) as mesh:
        a = mesh.spawn("a", Weights, np.eye(4, dtype=np.float32))

        @mc.compile
        def step(g, lr):
            a.update.broadcast(g, lr * 0.5)

        g, lr = np.ones((4, 4), np.float32), np.float32(0.25)
        split = step.ir("split", g, lr)
        controller = split[split.index("func.func @step("):]
        assert "arith.mulf" not in controller
        worker = split[split.index("func.func @step.worker"):
                       split.index("func.func @step(")]
        assert "arith.mulf" in worker
