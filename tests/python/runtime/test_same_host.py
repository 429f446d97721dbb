"""The same-host fast path (docs/executor.md): tensors of 16 KB and more go
to and from same-host workers through a shared staging area and a buffer
pool instead of the control messages. Numerics against numpy with the path
on and off (MONARCH_LOCAL_CONTROL=0), results that stay intact after later
calls (their storage is pooled and reused once numpy frees them), and inputs
the caller changes between calls."""

import gc
import os

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


class Stage(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def forward(self, x):
        return mc.relu(x @ self.w)


def _pipeline(mesh, w0, w1, micro_batches):
    s0 = mesh.slice(procs=slice(0, 1)).spawn("s0", Stage, w0)
    s1 = mesh.slice(procs=slice(1, 2)).spawn("s1", Stage, w1)

    @mc.compile
    def pipeline(*xs):
        return tuple(s1.forward.call(s0.forward.call(x)) for x in xs)

    return pipeline


def _staging_areas():
    """The controller's staging memfds, from /proc/self/fd."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "monarch:staging-rank-" in target:
            names.append(target)
    return names


def _ref(xs, w0, w1):
    return [np.maximum(np.maximum(x @ w0, 0) @ w1, 0) for x in xs]


@pytest.fixture
def local_control(request, monkeypatch):
    monkeypatch.setenv("MONARCH_LOCAL_CONTROL", request.param)
    return request.param


@pytest.mark.parametrize("local_control", ["1", "0"], indirect=True)
def test_staged_pipeline_matches_numpy(local_control):
    rng = np.random.default_rng(7)
    # 128 x 64 float32 = 32 KB per micro-batch: staged when the path is on.
    w0 = rng.standard_normal((64, 64)).astype(np.float32) / 8
    w1 = rng.standard_normal((64, 64)).astype(np.float32) / 8
    with mc.mesh(procs=2) as mesh:
        f = _pipeline(mesh, w0, w1, 4)
        kept = []
        for call in range(3):
            xs = [rng.standard_normal((128, 64)).astype(np.float32)
                  for _ in range(4)]
            out = f(*xs)
            want = _ref(xs, w0, w1)
            for got, ref in zip(out, want):
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
            kept.append((out, want))
        # The controller (this process) holds a staging area per rank
        # exactly when the path is on.
        assert bool(_staging_areas()) == (local_control == "1")
        # Earlier results are still what they were: their bytes are not
        # storage that a later call wrote into.
        for out, want in kept:
            for got, ref in zip(out, want):
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_freed_results_are_reused_without_mixing_calls():
    rng = np.random.default_rng(11)
    w0 = np.eye(64, dtype=np.float32)
    w1 = np.eye(64, dtype=np.float32)
    with mc.mesh(procs=2) as mesh:
        f = _pipeline(mesh, w0, w1, 2)
        x = np.abs(rng.standard_normal((128, 64))).astype(np.float32)
        for call in range(6):
            # Each call's results are dropped before the next: their storage
            # goes back to the pool and carries the next call's bytes.
            y = x + call
            a, b = f(y, 2 * y)
            np.testing.assert_array_equal(a, y)
            np.testing.assert_array_equal(b, 2 * y)
            del a, b
        # The caller's arrays are never written.
        np.testing.assert_array_equal(y, x + 5)


def _rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def test_a_large_feed_leaves_nothing_behind_after_stop():
    # Issue 16 item 11: a 200 MiB feed left this process 250 MB larger
    # after stop() (the buffer pool kept the input's copy).
    # First a small run: the compiler's and the runtime's own first-use
    # memory is not what is measured.
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def warm(v):
            return v * 2.0

        warm(np.ones(4, np.float32))
    x = np.ones(50 << 20, np.float32)
    gc.collect()
    before = _rss_mb()
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def inc(v):
            return v + 1.0

        out = inc(x)
        ends = (float(out[0]), float(out[-1]))
        del out
        assert ends == (2.0, 2.0)
    gc.collect()
    grown = _rss_mb() - before
    assert grown < 64, f"the process is {grown} MB larger after stop()"


def test_a_result_is_freed_when_its_last_reference_goes():
    # Without waiting for the garbage collector: the results' structure was
    # rebuilt by a recursive closure, a reference cycle that kept every
    # result array (and its pooled storage) alive until gc ran.
    import weakref
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def pair(v):
            return {"a": v + 1.0, "b": (v * 2.0, [v - 1.0])}

        v = np.arange(1 << 16, dtype=np.float32)
        gc.disable()
        try:
            out = pair(v)
            np.testing.assert_array_equal(out["b"][1][0], v - 1)
            alive = weakref.ref(out["a"])
            del out
            assert alive() is None
        finally:
            gc.enable()
