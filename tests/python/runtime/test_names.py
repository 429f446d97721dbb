"""A compiled function named like an actor mesh runs (its symbol is renamed,
the actor's is kept so its state is found across functions)."""

import inspect

import numpy as np
import pytest

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


class Holder(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def plus(self, x):
        return self.w + x


def test_two_actors_spawned_under_one_name_keep_their_own_shapes():
    # Issue 16 item 10: they were accepted at spawn and failed at load.
    with mc.mesh(gpus=2) as mesh:
        a = mesh.spawn("h", Holder, np.full(4, 1.0, np.float32))
        b = mesh.spawn("h", Holder, np.full(8, 2.0, np.float32))

        @mc.compile
        def both(x, y):
            return a.plus.call(x), b.plus.call(y)

        x, y = np.arange(4, dtype=np.float32), np.arange(8, dtype=np.float32)
        ra, rb = both(x, y)
        np.testing.assert_array_equal(ra, x + 1)
        np.testing.assert_array_equal(rb, y + 2)


def test_spawn_on_a_stopped_mesh_raises_at_the_users_line():
    mesh = mc.mesh(gpus=2)
    mesh.stop()
    with pytest.raises(mc.MeshError, match="was stopped") as err:
        line = inspect.currentframe().f_lineno + 1
        mesh.spawn("late", Holder, np.zeros(4, np.float32))
    assert f"{__file__}:{line}:" in str(err.value), str(err.value)
