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


def _run_profiled(tmp_path, monkeypatch, seed, steps):
    """SOURCE's step, written to tmp_path/model.py, run `steps` times on 2
    ranks with MONARCH_KERNEL_PROFILE=tmp_path/profile (numpy's numbers
    checked); returns the model's path."""
    monkeypatch.setenv("MONARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MONARCH_KERNEL_PROFILE", str(tmp_path / "profile"))
    x, w, expected = _case(seed)
    model = tmp_path / "model.py"
    with mc.mesh(hosts=1, gpus=2) as mesh:
        step = _load(model, SOURCE)(mesh)
        for _ in range(steps):
            np.testing.assert_allclose(step(x, w), expected, rtol=1e-5,
                                       atol=1e-4)
    return model


def test_each_rank_writes_its_loop_nests_at_the_users_lines(tmp_path,
                                                            monkeypatch):
    steps = 3
    model = _run_profiled(tmp_path, monkeypatch, seed=3, steps=steps)
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


def test_the_trace_shows_each_loop_nest_inside_its_kernel(tmp_path,
                                                          monkeypatch):
    """MONARCH_TRACE with MONARCH_KERNEL_PROFILE: every launch's slice holds
    one slice per loop nest the kernel ran (op and shapes, at the user's
    line), on the same rank and stream, within the launch's time."""
    import json

    trace_path = tmp_path / "trace.json"
    monkeypatch.setenv("MONARCH_TRACE", str(trace_path))
    steps = 3
    model = _run_profiled(tmp_path, monkeypatch, seed=4, steps=steps)
    events = json.loads(trace_path.read_text())["traceEvents"]
    launches = [e for e in events if e.get("cat") == "kernel"]
    nests = [e for e in events if e.get("cat") == "loop nest"]
    assert launches and nests, events
    matmul_line = f"{model}:{_line_of('x @ w')}:"
    for rank_pid in {e["pid"] for e in launches}:
        mine = [e for e in nests if e["pid"] == rank_pid]
        blas = [e for e in mine if "(blas) 4x16:f32, 16x4:f32 -> 4x4:f32"
                in e["name"]]
        assert len(blas) == steps, mine
        assert all(e["args"]["loc"].startswith(matmul_line) for e in blas)
        for nest in mine:
            inside = [l for l in launches
                      if l["pid"] == nest["pid"] and l["tid"] == nest["tid"]
                      and l["ts"] <= nest["ts"]
                      and nest["ts"] + nest["dur"] <= l["ts"] + l["dur"]]
            assert len(inside) == 1, (nest, launches)
    # The nests of one launch: as many as the kernel's loop nests, each step.
    per_launch = len(nests) / len(launches)
    assert per_launch == int(per_launch) and per_launch >= 2, (nests, launches)
