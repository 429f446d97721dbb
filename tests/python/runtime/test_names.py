"""A compiled function named like an actor mesh runs (its symbol is renamed,
the actor's is kept so its state is found across functions)."""

import numpy as np

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


def test_function_named_like_its_actor_runs_and_shares_state():
    class Acc(mc.Actor):
        def __init__(self, w):
            self.w = mc.param(w)

        @mc.endpoint
        def acc(self, x):
            self.w = self.w + x

        @mc.endpoint
        def read(self):
            return self.w * 1.0

    w = np.arange(4, dtype=np.float32)
    x = np.full(4, 0.5, np.float32)
    with mc.mesh(gpus=2) as mesh:
        a = mesh.spawn("acc", Acc, w)

        @mc.compile
        def acc(x):  # the same name as the actor mesh
            a.acc.broadcast(x)

        @mc.compile
        def read():
            return a.read.call()

        acc(x)
        acc(x)
        np.testing.assert_allclose(read(), w + 2 * x)
        assert "func.func @acc_fn(" in acc.ir("traced")
