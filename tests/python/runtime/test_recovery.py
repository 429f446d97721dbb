"""`on_failure=mc.Restart(...)` with real worker processes: a worker killed
with SIGKILL between steps or in the middle of one, a worker that dies at
the same step after every restart, the default (no policy) failing fast,
and bad policies refused. Training results and actor state are checked
against numpy, and no worker process may be left behind."""
import os
import signal
import threading
import time

import numpy as np
import pytest


from _procs import require_workers  # noqa: E402

require_workers("set_recovery_policy",
                why="recovery tests need real worker processes")

import monarch_compile as mc  # noqa: E402
from monarch_compile import _runtime  # noqa: E402

from _procs import worker_children  # noqa: E402

RANKS = 2
LR = np.float32(0.05)


class MLP(mc.Actor):
    def __init__(self, w1, w2):
        self.w1 = mc.param(w1)
        self.w2 = mc.param(w2)

    @mc.endpoint
    def train_step(self, x, t, lr):
        h0 = x @ self.w1
        h = mc.relu(h0)
        d = h @ self.w2 - t
        loss = mc.all_reduce((d * d).mean(), "gpus", "avg")
        g2 = h.T @ d
        g1 = x.T @ mc.where(h0 > 0, d @ self.w2.T, 0.0)
        self.w1 = self.w1 - lr * mc.all_reduce(g1, "gpus", "avg")
        self.w2 = self.w2 - lr * mc.all_reduce(g2, "gpus", "avg")
        return loss


def numpy_step(w1, w2, x, t, lr):
    """The same data-parallel SGD step on one machine."""
    h0 = x @ w1
    h = np.maximum(h0, 0)
    d = h @ w2 - t
    g2 = (h.T @ d) / RANKS
    g1 = (x.T @ np.where(h0 > 0, d @ w2.T, 0)) / RANKS
    return np.mean(d * d), w1 - lr * g1, w2 - lr * g2


def problem(seed):
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((8, 16), dtype=np.float32) * 0.3
    w2 = rng.standard_normal((16, 4), dtype=np.float32) * 0.3
    batches = [rng.standard_normal((8, 8), dtype=np.float32)
               for _ in range(8)]
    targets = [np.tanh(b[:, :4]) for b in batches]
    return w1, w2, batches, targets


def state(mesh, key, rank):
    dtype, shape, data = _runtime.controller_of(mesh).get_actor_state(key,
                                                                      rank)
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def wait_failed(mesh, timeout=3.0):
    ctl = _runtime.controller_of(mesh)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ctl.health():
            return True
        time.sleep(0.01)
    return False


def train_and_check(mesh, train, w1, w2, batches, targets, before_step):
    """Runs every batch through `train` and numpy; `before_step(i)` may
    inject a fault. Returns the reference weights."""
    for i, (x, t) in enumerate(zip(batches, targets)):
        before_step(i)
        loss = float(np.asarray(train(x, t, LR)))
        ref, w1, w2 = numpy_step(w1, w2, x, t, LR)
        assert np.isclose(loss, ref, rtol=1e-4, atol=1e-6), (i, loss, ref)
    for rank in range(RANKS):
        np.testing.assert_allclose(state(mesh, "@mlp::@w1", rank), w1,
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(state(mesh, "@mlp::@w2", rank), w2,
                                   rtol=1e-4, atol=1e-5)
    return w1, w2


def test_a_kill_between_steps_is_recovered_with_numpys_results():
    w1, w2, batches, targets = problem(0)
    with mc.mesh(gpus=RANKS) as mesh:
        mlp = mesh.spawn("mlp", MLP, w1, w2)

        @mc.compile(mesh=mesh,
                    on_failure=mc.Restart(max_retries=2, checkpoint_every=3))
        def train(x, t, lr):
            return mlp.train_step.call(mc.shard(x, gpus=0),
                                       mc.shard(t, gpus=0), lr)

        old = []

        def kill_before(i):
            # Before the first checkpoint (the initial parameters' writes
            # and step 0 are replayed) and after the second one.
            if i in (1, 5):
                ctl = _runtime.controller_of(mesh)
                pids = [ctl.worker_pid(r) for r in range(RANKS)]
                old.extend(pids)
                os.kill(pids[1 if i == 5 else 0], signal.SIGKILL)
                assert wait_failed(mesh)

        with pytest.warns(RuntimeWarning) as record:
            train_and_check(mesh, train, w1, w2, batches, targets,
                            kill_before)
        # One warning per restart, naming the rank killed.
        texts = [str(w.message) for w in record
                 if issubclass(w.category, RuntimeWarning)]
        assert len(texts) == 2, texts
        assert "restarted 1 time" in texts[0] and "rank 0" in texts[0]
        assert "rank 1" in texts[1] and "SIGKILL" in texts[1]
        stats = mc.recovery_stats(mesh)
        assert stats["restarts"] == 2 and stats["recoveries"] == 2
        # Checkpoints after steps 2 and 5 (the 3rd and 6th): step 0 was
        # replayed after the first kill, steps 3 and 4 after the second.
        assert stats["replayed_steps"] == 3
        assert stats["checkpoints"] == 2
        assert "rank 1" in stats["last_failure"]
        assert "SIGKILL" in stats["last_failure"]
        ctl = _runtime.controller_of(mesh)
        new = [ctl.worker_pid(r) for r in range(RANKS)]
        assert set(new).isdisjoint(old)
        assert sorted(worker_children()) == sorted(new)
    assert worker_children() == []


def test_a_kill_in_the_middle_of_a_step_retries_it(monkeypatch):
    # Every rank sleeps 1 s at the first instruction of step 4 (each
    # generation: the retried step sleeps again); rank 1 is killed there.
    monkeypatch.setenv("MONARCH_FAULT_INJECT", "sleep:4:0:1000")
    w1, w2, batches, targets = problem(1)
    with mc.mesh(gpus=RANKS) as mesh:
        mlp = mesh.spawn("mlp", MLP, w1, w2)

        # No mesh=: the mesh comes from the actor.
        @mc.compile(on_failure=mc.Restart(max_retries=1))
        def train(x, t, lr):
            return mlp.train_step.call(mc.shard(x, gpus=0),
                                       mc.shard(t, gpus=0), lr)

        killed = []

        def kill_during(i):
            if i != 4:
                return
            pid = _runtime.controller_of(mesh).worker_pid(1)

            def kill():
                killed.append(time.monotonic())
                os.kill(pid, signal.SIGKILL)

            threading.Timer(0.3, kill).start()

        with pytest.warns(RuntimeWarning, match="restarted 1 time"):
            train_and_check(mesh, train, w1, w2, batches, targets,
                            kill_during)
        assert killed
        stats = mc.recovery_stats(mesh)
        assert stats["restarts"] == 1
        assert stats["replayed_steps"] == 0   # checkpoint_every=1
        assert "rank 1" in stats["last_failure"]
        assert stats["last_recovery_ms"] > 0
    assert worker_children() == []


def test_dying_after_every_restart_raises_with_the_count(monkeypatch):
    monkeypatch.setenv("MONARCH_FAULT_INJECT", "exit:2:0")
    with mc.mesh(gpus=RANKS) as mesh:
        @mc.compile(mesh=mesh, on_failure=mc.Restart(max_retries=2))
        def inc(x):
            return x + 1.0

        x = np.zeros(4, np.float32)
        np.testing.assert_array_equal(inc(x), x + 1)
        np.testing.assert_array_equal(inc(x), x + 1)
        with pytest.warns(RuntimeWarning):
            with pytest.raises(mc.ExecutionError) as err:
                inc(x)
        text = str(err.value)
        assert "exited with code 3" in text
        assert "gave up after 2 restarts" in text
        assert mc.recovery_stats(mesh)["restarts"] == 2
    assert worker_children() == []


def test_without_a_policy_a_kill_in_a_step_fails_fast(monkeypatch):
    monkeypatch.setenv("MONARCH_FAULT_INJECT", "sleep:1:0:3000")
    with mc.mesh(gpus=RANKS) as mesh:
        @mc.compile(mesh=mesh)
        def inc(x):
            return x + 1.0

        x = np.zeros(4, np.float32)
        inc(x)
        pid = _runtime.controller_of(mesh).worker_pid(1)
        killed = []

        def kill():
            killed.append(time.monotonic())
            os.kill(pid, signal.SIGKILL)

        threading.Timer(0.3, kill).start()
        with pytest.raises(mc.ExecutionError, match="rank 1") as err:
            inc(x)
        elapsed = time.monotonic() - killed[0]
        assert elapsed < 2.0, elapsed
        assert "gave up" not in str(err.value)
        assert mc.recovery_stats(mesh)["restarts"] == 0
    assert worker_children() == []


def test_a_policy_can_join_a_running_mesh_and_must_agree():
    with mc.mesh(gpus=RANKS) as mesh:
        acc = mesh.spawn("acc", Accumulator, np.zeros(4, np.float32))

        @mc.compile
        def add(x):
            acc.add.broadcast(x)

        @mc.compile(on_failure=mc.Restart(max_retries=1, checkpoint_every=2))
        def add_safely(x):
            acc.add.broadcast(x)

        @mc.compile(on_failure=mc.Restart(max_retries=5))
        def add_otherwise(x):
            acc.add.broadcast(x)

        total = np.zeros(4, np.float32)
        for i in range(2):            # started without a policy
            x = np.full(4, i + 1, np.float32)
            add(x)
            total += x
        x = np.arange(4, dtype=np.float32)
        add_safely(x)                 # the policy joins: checkpoint now
        total += x
        assert _runtime.controller_of(mesh).recovery_policy() == (1, 2)
        with pytest.raises(mc.UnsupportedError, match="same restart policy"):
            add_otherwise(x)
        os.kill(_runtime.controller_of(mesh).worker_pid(0), signal.SIGKILL)
        assert wait_failed(mesh)
        # A function without on_failure runs on the mesh's policy too.
        with pytest.warns(RuntimeWarning, match="add\\(\\): .*rank 0"):
            add(x)
        total += x
        for rank in range(RANKS):
            np.testing.assert_array_equal(state(mesh, "@acc::@s", rank),
                                          total)
        assert mc.recovery_stats(mesh)["restarts"] == 1
    assert worker_children() == []


class Accumulator(mc.Actor):
    def __init__(self, s):
        self.s = mc.param(s)

    @mc.endpoint
    def add(self, x):
        self.s = self.s + x


def test_bad_policies_are_clear_errors():
    with pytest.raises(ValueError, match="max_retries must be >= 0, got -1"):
        mc.Restart(max_retries=-1)
    with pytest.raises(ValueError, match="checkpoint_every must be >= 1"):
        mc.Restart(max_retries=1, checkpoint_every=0)
    with pytest.raises(TypeError, match="max_retries must be an int"):
        mc.Restart(max_retries=1.5)
    with pytest.raises(TypeError, match="checkpoint_every must be an int"):
        mc.Restart(checkpoint_every="3")
    with pytest.raises(TypeError, match="must be an int, got bool"):
        mc.Restart(max_retries=True)
    with pytest.raises(TypeError, match="on_failure must be mc.Restart"):
        mc.compile(on_failure="restart")
    with pytest.raises(TypeError, match="pass an instance"):
        mc.compile(lambda x: x, on_failure=mc.Restart)
    assert repr(mc.Restart(max_retries=2, checkpoint_every=4)) == \
        "mc.Restart(max_retries=2, checkpoint_every=4)"
    assert mc.Restart(2, 4) == mc.Restart(max_retries=2, checkpoint_every=4)
    # Accepted with and without mesh=, as a decorator and as a call.
    p = mc.Restart(max_retries=1)
    assert mc.compile(lambda x: x, on_failure=p).on_failure is p
    with mc.mesh(gpus=1) as mesh:
        assert mc.compile(mesh=mesh, on_failure=p)(lambda x: x).on_failure \
            is p
