"""mc.mesh(..., launcher=...) (docs/frontend.md, "API"): "local" forks the workers,
"env" runs on workers someone else started (here: this test, as a batch
system would), and "slurm" without srun and unknown names are refused at
the user's line."""

import os
import socket
import subprocess

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402
from monarch_compile import _runtime  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_env_launcher_runs_on_workers_started_elsewhere(monkeypatch):
    port, token = free_port(), "launcher-test-token"
    monkeypatch.setenv("MONARCH_CONTROLLER", f"127.0.0.1:{port}")
    monkeypatch.setenv("MONARCH_JOB_TOKEN", token)
    workers = []
    try:
        for rank in range(2):
            env = dict(os.environ, MONARCH_RANK=str(rank),
                       MONARCH_WORLD_SIZE="2")
            workers.append(subprocess.Popen(
                [_runtime._worker_binary()], env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        mesh = mc.mesh(gpus=2, launcher="env")
        assert mesh.launcher == "env"

        @mc.compile(mesh=mesh)
        def f(x):
            return mc.replicate((mc.shard(x, gpus=0) * 2.0).sum(axis=0))

        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        np.testing.assert_allclose(f(x), (x * 2).sum(axis=0))
        pids = {_runtime.controller_of(mesh).worker_pid(r) for r in range(2)}
        assert pids == {w.pid for w in workers}
        mesh.stop()
        for w in workers:
            assert w.wait(timeout=15) == 0, w.stderr.read().decode()
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()


def test_launcher_refusals_name_the_line(monkeypatch):
    # The slurm launcher itself runs in test_slurm.py, on a local cluster.
    monkeypatch.setenv("MONARCH_SLURM_SRUN", "no-such-srun")
    with pytest.raises(mc.MeshError) as e:
        mc.mesh(gpus=2, launcher="slurm")  # LINE:slurm
    assert "no-such-srun" in str(e.value) and "test_launchers.py" in str(
        e.value)
    with pytest.raises(mc.MeshError, match="launcher must be one of"):
        mc.mesh(gpus=2, launcher="ssh")
    monkeypatch.delenv("MONARCH_CONTROLLER", raising=False)
    with pytest.raises(mc.MeshError, match="set MONARCH_CONTROLLER"):
        mc.mesh(gpus=2, launcher="env")
    assert mc.mesh(gpus=1, launcher="local").launcher == "local"
    assert mc.mesh(gpus=2).slice(gpus=0).launcher == "local"
