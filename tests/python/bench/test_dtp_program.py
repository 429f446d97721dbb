"""The data x tensor x pipeline step that bench/compile_scaling/dtp_scaling.py
compiles at up to 4,096 ranks computes numpy's numbers (run on 8 local
workers: 2 hosts x 2 stages x 2 gpus), and the bench runs at its smallest
size."""
import os
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve()
SCALING = HERE.parents[3] / "bench" / "compile_scaling"
sys.path.insert(0, str(SCALING))
sys.path.insert(0, str(HERE.parents[1] / "runtime"))

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402
import dtp_program as P  # noqa: E402


def test_the_step_matches_numpy_on_every_axis():
    rng = np.random.default_rng(0)
    w = P.weights(rng)
    x, t = P.batch(rng, 2)
    lr = np.float32(0.01)
    with mc.mesh(hosts=2, stages=2, gpus=2) as mesh:
        train = P.program(mesh, w)
        ref = w
        for _ in range(2):
            loss = float(train(x, t, lr))
            want, ref = P.numpy_step(ref, x, t, float(lr))
            np.testing.assert_allclose(loss, want, rtol=1e-4)
        summary = train.plan_summary(x, t, lr)
    kinds = {c["kind"] for c in summary.collectives}
    assert "all_reduce" in kinds  # over gpus (Megatron) and hosts (data)
    # The stage boundary: activations forward, their gradient back.
    assert summary.bytes_moved


def test_the_bench_runs_at_its_smallest_size():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in [str(HERE.parents[3] / "python"),
                    os.environ.get("PYTHONPATH", "")] if p))
    proc = subprocess.run(
        [sys.executable, str(SCALING / "dtp_scaling.py"), "--ranks", "8"],
        capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    row = next(l for l in proc.stdout.splitlines()
               if l.split()[:2] == ["8", "1x2x4"])
    # Compiled, loaded and simulated: a predicted step in microseconds.
    assert float(row.split()[-3]) > 0, row
