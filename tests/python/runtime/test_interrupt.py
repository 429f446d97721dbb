"""Ctrl-C during a long step (issue 16 item 8): SIGINT, sent to this process
while a compiled function waits for a 6 s step, aborts the step on every
rank and raises KeyboardInterrupt within 0.5 s. Without a restart policy the
mesh then says it must be replaced, and a new mesh runs; with one, the next
call recovers and computes the right numbers. No worker is left behind."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers("set_recovery_policy",
                why="interrupt tests need real worker processes")

import monarch_compile as mc  # noqa: E402

from _procs import worker_children  # noqa: E402

RANKS = 2


def interrupt_after(seconds):
    """SIGINT to this process in `seconds`; returns where the time goes."""
    sent = []

    def fire():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Timer(seconds, fire).start()
    return sent


def test_ctrl_c_aborts_the_step_and_the_mesh_says_to_replace_it(monkeypatch):
    # Every rank sleeps 6 s at the first instruction of step 1.
    monkeypatch.setenv("MONARCH_FAULT_INJECT", "sleep:1:0:6000")
    x = np.arange(4, dtype=np.float32)
    with mc.mesh(gpus=RANKS) as mesh:
        @mc.compile(mesh=mesh)
        def inc(v):
            return v + 1.0

        np.testing.assert_array_equal(inc(x), x + 1)
        sent = interrupt_after(0.5)
        with pytest.raises(KeyboardInterrupt):
            inc(x)
        elapsed = time.monotonic() - sent[0]
        assert elapsed < 0.5, f"KeyboardInterrupt {elapsed:.2f} s after SIGINT"
        with pytest.raises(mc.ExecutionError,
                           match="interrupted.*create a new mesh"):
            inc(x)
    assert worker_children() == []
    monkeypatch.delenv("MONARCH_FAULT_INJECT")
    with mc.mesh(gpus=RANKS) as mesh:
        @mc.compile(mesh=mesh)
        def inc2(v):
            return v + 2.0

        np.testing.assert_array_equal(inc2(x), x + 2)
    assert worker_children() == []


class Counter(mc.Actor):
    def __init__(self, start):
        self.total = mc.param(start)

    @mc.endpoint
    def add(self, v):
        self.total = self.total + v
        return self.total


def test_with_a_policy_the_next_call_recovers(monkeypatch):
    monkeypatch.setenv("MONARCH_FAULT_INJECT", "sleep:2:0:6000")
    one = np.ones(4, np.float32)
    with mc.mesh(gpus=RANKS) as mesh:
        counter = mesh.spawn("counter", Counter, np.zeros(4, np.float32))

        @mc.compile(on_failure=mc.Restart(max_retries=1, checkpoint_every=1))
        def add(v):
            return counter.add.call(v)

        np.testing.assert_array_equal(add(one), one)
        np.testing.assert_array_equal(add(one), 2 * one)
        sent = interrupt_after(0.5)
        with pytest.raises(KeyboardInterrupt):
            add(one)
        elapsed = time.monotonic() - sent[0]
        assert elapsed < 0.5, f"KeyboardInterrupt {elapsed:.2f} s after SIGINT"
        # The interrupted step did not happen: the state is the checkpoint's.
        monkeypatch.delenv("MONARCH_FAULT_INJECT")
        with pytest.warns(RuntimeWarning, match="restarted"):
            np.testing.assert_array_equal(add(one), 3 * one)
        assert mc.recovery_stats(mesh)["restarts"] == 1
    assert worker_children() == []
