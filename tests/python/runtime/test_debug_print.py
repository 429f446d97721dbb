"""mc.debug_print (issue 18 item 5) end to end on real workers: the lines
reach the caller prefixed by rank, identical lines of several ranks folded,
with each step's own values, and the values' text is numpy's str() of the
same numbers; bad formats fail at the user's line while tracing."""

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


def marker_line(path, marker):
    with open(path) as f:
        hits = [i + 1 for i, text in enumerate(f)
                if text.rstrip().endswith(f"# ERR:{marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def printed(capsys):
    return capsys.readouterr().out.splitlines()


def test_global_code_prints_whole_values_once_per_step_folded(meshes, capsys):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh)
    def step(x, w, k):
        x = mc.shard(x, gpus=0)
        y = mc.relu(x @ w - 3.0)
        mc.debug_print("step {} y {} total {:.3f}", k, y, y.sum())
        return mc.replicate(y.sum(axis=0))

    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    for k in range(3):
        x = rng.standard_normal((4, 3)).astype(np.float32) + k
        out = step(x, w, k)
        y = np.maximum(x @ w - np.float32(3.0), 0)
        np.testing.assert_allclose(out, y.sum(axis=0), rtol=1e-5, atol=1e-5)
        lines = printed(capsys)
        # Both ranks print the same whole values: one folded line.
        head = f"[ranks 0-1] step {k} y "
        assert lines[0].startswith(head), lines
        text = "\n".join(lines)[len(head):]
        shown, total = text.rsplit(" total ", 1)
        assert shown == str(y), (shown, str(y))
        assert float(total) == pytest.approx(float(y.sum()), abs=2e-3)


def test_endpoints_print_each_ranks_own_values(meshes, capsys):
    mesh = meshes(hosts=1, gpus=2)

    class Stage(mc.Actor):
        def __init__(self, w):
            self.w = mc.param(w)

        @mc.endpoint
        def forward(self, x):
            y = x @ self.w
            mc.debug_print("x {} w.sum {w:.2f} y {y}", x, w=self.w.sum(), y=y)
            return mc.all_reduce(y, "gpus")

    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    s = mesh.spawn("printer", Stage, w)

    @mc.compile
    def run(x):
        return s.forward.call(mc.shard(x, gpus=0, mesh=mesh))

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    out = run(x)
    np.testing.assert_allclose(out, x[:2] @ w + x[2:] @ w, rtol=1e-6)
    lines = printed(capsys)
    for r in range(2):
        shard = x[2 * r:2 * r + 2]
        want = f"[rank {r}] x {shard} w.sum {w.sum():.2f} y {shard @ w}"
        got = "\n".join(lines)
        assert want in got, (want, got)


def test_static_fields_specs_dtypes_and_braces(meshes, capsys):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh)
    def f(x, n):
        mask = x > 0.5
        idx = mc.arange(3)
        mc.debug_print("{{shape}} {x.shape} {} {:>6.1%} {mask} {idx} {n:+d}",
                       "lit", x.mean(), x=x, mask=mask, idx=idx, n=n)
        return x * 2.0

    x = np.array([0.25, 0.75, 1.0, 0.0], np.float32)
    f(x, np.int32(7))
    lines = printed(capsys)
    assert lines == [
        "[ranks 0-1] {shape} (4,) lit " + format(float(x.mean()), ">6.1%") +
        f" {x > 0.5} {np.arange(3, dtype=np.int32)} +7"], lines


def test_prints_under_value_and_grad_leave_the_gradients_alone(meshes, capsys):
    mesh = meshes(hosts=1, gpus=2)

    def loss_fn(w, x):
        loss = ((x @ w) ** 2).mean()
        mc.debug_print("loss {}", loss)
        return loss

    @mc.compile(mesh=mesh)
    def step(w, x):
        return mc.value_and_grad(loss_fn)(w, x)

    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    loss, g = step(w, x)
    want = ((x @ w) ** 2).mean()
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    np.testing.assert_allclose(g, 2 * x.T @ (x @ w) / (x @ w).size, rtol=1e-4)
    lines = printed(capsys)
    assert len(lines) == 1 and lines[0].startswith("[ranks 0-1] loss "), lines
    assert float(lines[0].split()[-1]) == pytest.approx(float(want), rel=1e-5)


def test_bad_formats_fail_at_the_users_line(meshes):
    mesh = meshes(hosts=1, gpus=2)
    x = np.ones(4, np.float32)

    @mc.compile(mesh=mesh)
    def spec(x):
        mc.debug_print("{:d}", x.sum())  # ERR:spec
        return x

    with pytest.raises(mc.TraceError) as e:
        spec(x)
    assert f"{__file__}:{marker_line(__file__, 'spec')}" in str(e.value)
    assert "Unknown format code 'd'" in str(e.value)

    @mc.compile(mesh=mesh)
    def missing(x):
        mc.debug_print("{} {}", x)  # ERR:missing
        return x

    with pytest.raises(mc.TraceError) as e:
        missing(x)
    assert f"{__file__}:{marker_line(__file__, 'missing')}" in str(e.value)
    assert "names no value" in str(e.value)

    @mc.compile(mesh=mesh)
    def grouping(x):
        mc.debug_print("{:,.2f}", x.sum())  # ERR:grouping
        return x

    with pytest.raises(mc.MonarchError) as e:
        grouping(x)
    assert f"{__file__}:{marker_line(__file__, 'grouping')}" in str(e.value)
    assert "unsupported format spec ',.2f'" in str(e.value)

    with pytest.raises(mc.TraceError, match="can only be used inside"):
        mc.debug_print("outside {}", 1)

    @mc.compile
    def no_mesh(x):
        mc.debug_print("x {}", x)  # ERR:nomesh
        return x

    with pytest.raises(mc.TraceError) as e:
        no_mesh(x)
    assert f"{__file__}:{marker_line(__file__, 'nomesh')}" in str(e.value)
    assert "give it one (@mc.compile(mesh=...))" in str(e.value)
