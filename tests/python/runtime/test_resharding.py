"""Moving a sharded dimension (split along 0, then along another dimension
over the same mesh dimension) runs as one all_to_all, against numpy."""

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

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
        # Nothing gathers: the final replicate's value leaves the step as
        # each rank's shard, assembled by the controller.
        assert planned.count("monarch.collective all_gather") == 0
