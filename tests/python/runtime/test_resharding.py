"""Moving a sharded dimension (split along 0, then along another dimension
over the same mesh dimension) runs as one all_to_all, against numpy."""
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


@pytest.mark.parametrize("n,shape", [(4, (8, 16)), (2, (6, 4, 10)),
                                     (4, (4, 8))])
def test_moving_a_split_dimension_is_one_all_to_all(n, shape):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(shape).astype(np.float32)
    with mc.mesh(gpus=n) as mesh:
        @mc.compile(mesh=mesh)
        def f(x):
            x = mc.shard(x, gpus=0)
            y = x * 2.0 + 1.0
            y = mc.shard(y, gpus=len(shape) - 1)
            return mc.replicate(mc.tanh(y))

        np.testing.assert_allclose(f(x), np.tanh(x * 2 + 1), rtol=1e-5,
                                   atol=1e-6)
        planned = f.ir("planned")
        assert "monarch.collective all_to_all" in planned
        # Only the final replicate gathers (one per rank).
        assert planned.count("monarch.collective all_gather") == n
