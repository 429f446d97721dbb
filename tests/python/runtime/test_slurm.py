"""The slurm launcher on a real SLURM cluster (issue 17, items 1, 3 and 4 in
part): scripts/local-slurm.sh starts munge, slurmctld and one slurmd per
host, each host a network namespace with its own address; a program on
host 0 (where the client commands reach the cluster) makes
`mc.mesh(hosts=2, gpus=2, launcher="slurm")`, and its workers are one srun
job step, two tasks per node, placed by SLURM. The data x tensor parallel
training step and a pipeline with a stage per node compute numpy's
numbers, across-node transfers go over Gloo and within-node ones over
shared memory; a worker killed on node 1 stops the job with the rank
within 5 s, and so does scancel of the step, naming it; under a restart
policy a kill on node 1 brings the job back as a new step with a
fault-free run's numbers; monarch-run launches with srun too; nothing is
left behind: no job, no worker, no daemon, no namespace. Needs root
(skipped with the reason without)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from _multihost import driver_env, transports
from _procs import _unavailable, require_workers

WORKER = require_workers(why="SLURM runs real worker processes")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SCRIPT = ROOT / "scripts" / "local-slurm.sh"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("a local SLURM cluster needs root")
    missing = [t for t in ("munged", "slurmctld", "slurmd", "srun", "ip",
                           "nsenter") if shutil.which(t) is None]
    if missing:
        _unavailable(f"a local SLURM cluster needs {', '.join(missing)} "
                     "(scripts/setup.sh installs them)")
    folder = tmp_path_factory.mktemp("slurm")
    prefix = f"mcs{os.getpid()}"
    args = ["--dir", str(folder / "cluster"), "--prefix", prefix]
    up = subprocess.run([SCRIPT, "up", "--hosts", "2"] + args,
                        capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stdout + up.stderr
    env = {}
    for line in up.stdout.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    try:
        yield env
    finally:
        subprocess.run([SCRIPT, "down"] + args, timeout=60, check=True)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True,
                              text=True).stdout
        assert prefix not in left, left
        assert cluster_processes(env["SLURM_CONF"]) == []


def cluster_processes(conf):
    """Live (non-zombie) slurmctld, slurmd and slurmstepd of the cluster
    whose configuration is `conf`."""
    out = []
    for entry in os.listdir("/proc"):
        try:
            comm = open(f"/proc/{entry}/comm").read().strip()
            stat = open(f"/proc/{entry}/stat").read()
            environ = open(f"/proc/{entry}/environ", "rb").read()
        except OSError:
            continue
        state = stat[stat.rindex(")") + 2:].split()[0]
        if (comm in ("slurmctld", "slurmd", "slurmstepd") and state != "Z"
                and f"SLURM_CONF={conf}".encode() in environ.split(b"\0")):
            out.append((int(entry), comm))
    return out


def run_on_host0(cluster, tmp_path, body, timeout=180):
    """Runs `body` (Python) on host 0 with the cluster's client settings;
    returns the finished process."""
    driver = tmp_path / "driver.py"
    driver.write_text(body)
    env = driver_env(MONARCH_TRACE=str(tmp_path / "trace.json"),
                     MONARCH_CACHE_DIR=str(tmp_path / "cache"),
                     MONARCH_BIND_HOST="10.77.0.10",
                     SLURM_CONF=cluster["SLURM_CONF"])
    return subprocess.run(
        ["nsenter", f"--net={cluster['MONARCH_SLURM_NETNS']}", sys.executable,
         str(driver)], capture_output=True, text=True, timeout=timeout,
        env=env)


def squeue(cluster, seconds=10):
    """The cluster's job queue once it is empty, or after `seconds` (a
    cancelled job shows as completing, CG, for a moment)."""
    import time
    deadline = time.monotonic() + seconds
    while True:
        queue = subprocess.run(
            ["nsenter", f"--net={cluster['MONARCH_SLURM_NETNS']}", "squeue",
             "-h"], capture_output=True, text=True, timeout=30,
            env=dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])
        ).stdout.strip()
        if not queue or time.monotonic() > deadline:
            return queue
        time.sleep(0.1)


def live_workers():
    """monarch-worker processes of this machine that are not zombies."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            state = stat[stat.rindex(")") + 2:].split()[0]
            if "monarch-worker" in name and state != "Z":
                env = open(f"/proc/{entry}/environ", "rb").read()
                if b"MONARCH_LAUNCHER=slurm" in env:
                    out.append(int(entry))
    return out


def test_srun_starts_a_two_node_mesh_that_computes_numpys_numbers(
        cluster, tmp_path):
    proc = run_on_host0(cluster, tmp_path, '''
import json, os
import monarch_compile as mc
from monarch_compile import _runtime
import _multihost

mesh = mc.mesh(hosts=2, gpus=2, launcher="slurm")
_multihost.train_data_x_tensor_parallel(mesh)
_multihost.pipeline_across_hosts(mesh)
ctl = _runtime.controller_of(mesh)
pids = [ctl.worker_pid(r) for r in range(4)]
mesh.stop()
print(json.dumps(pids))
''')
    assert proc.returncode == 0, proc.stderr[-6000:]
    pids = json.loads(proc.stdout.splitlines()[-1])
    assert len(set(pids)) == 4 and all(pids), pids
    # SLURM placed ranks 0-1 on node h0 and 2-3 on h1: the communicators
    # within a node are shared memory, across nodes Gloo.
    via = transports(tmp_path / "trace.json")
    assert set(via) == {"shm", "gloo"}, via
    assert squeue(cluster) == ""
    assert live_workers() == []


FAULT = """
import os, signal, subprocess, time
import numpy as np
import monarch_compile as mc
from monarch_compile import _runtime

mesh = mc.mesh(hosts=2, gpus=2, launcher="slurm")

@mc.compile(mesh=mesh)
def f(x):
    return mc.replicate((mc.shard(x, hosts=0, gpus=1) * 2.0).sum(axis=0))

x = np.ones((4, 4), np.float32)
np.testing.assert_allclose(f(x), np.full(4, 8.0, np.float32))
{fault}
start = time.monotonic()
try:
    while time.monotonic() - start < 10:
        f(x)
        time.sleep(0.05)
    print("NOT STOPPED")
except mc.ExecutionError as e:
    print(f"STOPPED {{time.monotonic() - start:.2f}} {{e}}")
"""


def stopped_by(cluster, tmp_path, fault):
    """Runs steps on a 2-node slurm mesh after `fault` (Python run on host
    0 once the first step matched); (seconds to stop, the error), checked
    to be under the 5 s bound, with nothing left behind."""
    proc = run_on_host0(cluster, tmp_path, FAULT.format(fault=fault))
    assert proc.returncode == 0, proc.stderr[-6000:]
    line = next((l for l in proc.stdout.splitlines()
                 if l.startswith(("STOPPED ", "NOT STOPPED"))), "")
    assert line.startswith("STOPPED "), proc.stdout + proc.stderr[-3000:]
    seconds, message = line.split(" ", 2)[1:]
    assert float(seconds) < 5.0, line
    assert squeue(cluster) == ""
    assert live_workers() == []
    return float(seconds), message


def test_a_worker_killed_on_node_1_stops_the_job_naming_its_rank(
        cluster, tmp_path):
    _, message = stopped_by(cluster, tmp_path, (
        "os.kill(_runtime.controller_of(mesh).worker_pid(3), signal.SIGKILL)"))
    assert "rank 3" in message and "node h1" in message, message


def test_monarch_run_launches_a_plan_with_srun(cluster, tmp_path):
    """`monarch-run PLAN --launcher=slurm`: the plan's mesh (hosts = 1,
    gpus = 4) as one node of four tasks; the pipeline's result is numpy's."""
    import numpy as np
    build = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", ROOT / "build"))
    plan = tmp_path / "pipeline.mcplan"
    subprocess.run([build / "bin" / "monarch-compile",
                    ROOT / "examples" / "ir" / "pipeline.mlir", "-o", plan],
                   check=True, timeout=300)
    rng = np.random.default_rng(3)
    for name, shape in (("x", (8, 4)), ("w0", (4, 4)), ("w1", (4, 4))):
        np.save(tmp_path / f"{name}.npy",
                rng.standard_normal(shape).astype(np.float32))
    env = dict(os.environ, MONARCH_BIND_HOST="10.77.0.10",
               SLURM_CONF=cluster["SLURM_CONF"])
    proc = subprocess.run(
        ["nsenter", f"--net={cluster['MONARCH_SLURM_NETNS']}",
         build / "bin" / "monarch-run", plan, "--launcher=slurm",
         "--inputs", tmp_path / "x.npy",
         "--state", f"@s0::@w={tmp_path / 'w0.npy'}",
         "--state", f"@s1::@w={tmp_path / 'w1.npy'}",
         "--outputs", tmp_path / "out"],
        capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    load = lambda n: np.load(tmp_path / n)  # noqa: E731
    np.testing.assert_allclose(load("out/output0.npy"),
                               load("x.npy") @ load("w0.npy") @ load("w1.npy"),
                               rtol=1e-5, atol=1e-5)
    assert squeue(cluster) == ""
    assert live_workers() == []


def test_the_restart_policy_brings_a_two_node_job_back_after_a_kill(
        cluster, tmp_path):
    """A worker killed on node 1 under `on_failure=mc.Restart(...)`: the
    launcher ends the step and srun starts a new one (a new generation) in
    the same allocation,
    actor state comes back from the last checkpoint, and the counts are a
    fault-free run's."""
    proc = run_on_host0(cluster, tmp_path, '''
import os, signal, subprocess, warnings
import numpy as np
import monarch_compile as mc
from monarch_compile import _runtime

class Counter(mc.Actor):
    def __init__(self, start):
        self.total = mc.param(start)

    @mc.endpoint
    def add(self, v):
        self.total = self.total + v
        return mc.all_reduce(self.total, "hosts")

mesh = mc.mesh(hosts=2, gpus=2, launcher="slurm")
counter = mesh.spawn("counter", Counter, np.zeros(4, np.float32))

@mc.compile(on_failure=mc.Restart(max_retries=1, checkpoint_every=1))
def add(v):
    return counter.add.call(v)

one = np.ones(4, np.float32)
def jobs():
    return subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True,
                          text=True, check=True).stdout.split()

got = [add(one)[0], add(one)[0]]
before = jobs()
pids = [_runtime.controller_of(mesh).worker_pid(r) for r in range(4)]
os.kill(pids[3], signal.SIGKILL)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    got += [add(one)[0] for _ in range(2)]
stats = mc.recovery_stats(mesh)
new = [_runtime.controller_of(mesh).worker_pid(r) for r in range(4)]
after = jobs()
mesh.stop()
print("JOBS", before == after and len(after) == 1)
print("RESULT", [float(g) for g in got], stats["restarts"],
      len(set(new) & set(pids)), len(caught))
''')
    assert proc.returncode == 0, proc.stderr[-6000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT"))
    values, restarts, shared, warned = line.split(" ", 1)[1].rsplit(" ", 3)
    # all_reduce over hosts of a per-host running total: 2, 4, 6, 8.
    assert values == "[2.0, 4.0, 6.0, 8.0]", line
    assert int(restarts) == 1 and int(shared) == 0 and int(warned) >= 1, line
    # The launcher asked for one allocation (salloc) and the restart is a
    # new step of it, not a new job.
    assert "JOBS True" in proc.stdout, proc.stdout
    assert squeue(cluster) == ""
    assert live_workers() == []


def test_scancel_of_the_step_stops_the_job_within_5_s(cluster, tmp_path):
    _, message = stopped_by(cluster, tmp_path, (
        'job = subprocess.run(["squeue", "-h", "-o", "%i"], '
        'capture_output=True, text=True, check=True).stdout.split()\n'
        'subprocess.run(["scancel"] + job, check=True)'))
    assert "srun" in message and "was cancelled" in message, message
