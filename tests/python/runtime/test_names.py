"""A compiled function named like an actor mesh runs (its symbol is renamed,
the actor's is kept so its state is found across functions)."""
import os
import pathlib

import numpy as np
import pytest

try:
    from monarch_compile._native import native
except ImportError as err:
    pytest.skip(f"the native extension is not built: {err}",
                allow_module_level=True)
if not hasattr(native, "Controller"):
    pytest.skip("this build's extension has no Controller binding",
                allow_module_level=True)
_WORKER = pathlib.Path(os.environ.get("MONARCH_WORKER_BIN") or (
    pathlib.Path(native.__file__).resolve().parent.parent / "bin" /
    "monarch-worker"))
if not _WORKER.exists():
    pytest.skip(f"monarch-worker is not built ({_WORKER})",
                allow_module_level=True)

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
