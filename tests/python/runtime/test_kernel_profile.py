"""MONARCH_KERNEL_PROFILE (issue 36, item 1; docs/kernels.md, "Profiling a
kernel"): the kernels are compiled with a timer around every loop nest, and
each worker appends its table, with the user's lines, to `<path>.rank<N>`
when the job ends. The numbers stay numpy's."""
import numpy as np

from _procs import require_workers  # noqa: E402

WORKER = require_workers()

import monarch_compile as mc  # noqa: E402

# The model of test_kernel_cache.py: relu(x @ w) squared and summed, the
# batch split over "gpus".
from test_kernel_cache import SOURCE, _case, _load  # noqa: E402


def _line_of(text):
    return next(i for i, line in enumerate(SOURCE.split("\n"), 1)
                if text in line)


def test_each_rank_writes_its_loop_nests_at_the_users_lines(tmp_path,
                                                            monkeypatch):
    monkeypatch.setenv("MONARCH_CACHE_DIR", str(tmp_path / "cache"))
    prefix = tmp_path / "profile"
    monkeypatch.setenv("MONARCH_KERNEL_PROFILE", str(prefix))
    x, w, expected = _case(3)
    model = tmp_path / "model.py"
    steps = 3
    with mc.mesh(hosts=1, gpus=2) as mesh:
        step = _load(model, SOURCE)(mesh)
        for _ in range(steps):
            np.testing.assert_allclose(step(x, w), expected, rtol=1e-5,
                                       atol=1e-4)
    matmul_line = f"{model}:{_line_of('x @ w')}:"
    for rank in (0, 1):
        text = (tmp_path / f"profile.rank{rank}").read_text()
        assert "kernel profile of plan 'step" in text, text
        assert f"rank {rank}" in text, text
        rows = [line.split() for line in text.splitlines()
                if matmul_line in line]
        # The matmul is a BLAS call, run once per step on this rank's rows.
        blas = [r for r in rows if "(blas)" in r]
        assert blas, text
        assert int(blas[0][2]) == steps, text  # the calls column
        assert float(blas[0][0]) > 0, text  # total ms
        assert "4x16:f32, 16x4:f32 -> 4x4:f32" in text, text
        assert "loop nests (time inside kernels" in text, text
