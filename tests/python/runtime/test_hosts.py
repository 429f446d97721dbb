"""A mesh across hosts (issue 17, items 2 and 5): network namespaces on this
machine are the hosts (scripts/netns-hosts.sh: own addresses on a bridge,
own loopback and abstract sockets, as containers on a real cluster), and
the workers are started on them torchrun-style, by this test, as a batch
system would (MONARCH_CONTROLLER, MONARCH_RANK, MONARCH_WORLD_SIZE; each
worker advertises its host's address on its route to the controller). The
controller runs on host 0. A data x tensor parallel training step and an
actor pipeline whose stages sit on different hosts compute numpy's numbers;
ranks of one host talk over shared memory, ranks of different hosts over
Gloo TCP, and the trace names the transport of every transfer; the
controller's same-host paths stay on its own host; nothing is left
behind. Needs root for the namespaces (skipped, with the reason, without)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from _multihost import driver_env, transports
from _procs import require_workers

WORKER = require_workers(why="hosts are real worker processes")

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "netns-hosts.sh"


@pytest.fixture
def hosts():
    """Two namespaces as hosts: [(namespace, address), ...]."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces as hosts need root")
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            pytest.skip(f"network namespaces as hosts need `{tool}`")
    prefix = f"mct{os.getpid()}"
    up = subprocess.run([SCRIPT, "up", "--hosts", "2", "--prefix", prefix],
                        capture_output=True, text=True, timeout=60)
    if up.returncode == 77 or "Operation not permitted" in up.stderr:
        pytest.skip(f"cannot create network namespaces: {up.stderr.strip()}")
    assert up.returncode == 0, up.stderr
    try:
        yield [tuple(line.split()) for line in up.stdout.splitlines()]
    finally:
        subprocess.run([SCRIPT, "down", "--prefix", prefix], timeout=60,
                       check=True)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True,
                              text=True).stdout
        assert prefix not in left, left


DRIVER = r'''
import json, os, socket, subprocess, sys
import monarch_compile as mc
from monarch_compile import _runtime
import _multihost

hosts = json.loads(sys.argv[1])
out_path = sys.argv[2]
addr0 = hosts[0][1]
with socket.socket() as s:
    s.bind((addr0, 0))
    port = s.getsockname()[1]
os.environ.update(MONARCH_CONTROLLER=f"{addr0}:{port}",
                  MONARCH_BIND_HOST=addr0, MONARCH_JOB_TOKEN="hosts-test")
workers = []
for rank in range(4):
    ns, addr = hosts[rank // 2]
    # No MONARCH_WORKER_HOST: each worker finds its host's address on its
    # route to the controller.
    env = dict(os.environ, MONARCH_RANK=str(rank), MONARCH_WORLD_SIZE="4",
               LOCAL_WORLD_SIZE="2")
    workers.append(subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{ns}", _runtime._worker_binary()],
        env=env))

mesh = mc.mesh(hosts=2, gpus=2, launcher="env")
_multihost.train_data_x_tensor_parallel(mesh)
_multihost.pipeline_across_hosts(mesh)
ctl = _runtime.controller_of(mesh)
pids = [ctl.worker_pid(r) for r in range(4)]
mesh.stop()
codes = [w.wait(timeout=20) for w in workers]
json.dump({"codes": codes, "pids": pids,
           "started": [w.pid for w in workers]}, open(out_path, "w"))
'''


def test_a_mesh_across_two_hosts_trains_and_pipelines_as_numpy(hosts,
                                                               tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    trace = tmp_path / "trace.json"
    result = tmp_path / "result.json"
    env = driver_env(MONARCH_TRACE=str(trace),
                     MONARCH_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        ["nsenter", f"--net=/run/netns/{hosts[0][0]}", sys.executable,
         str(driver), json.dumps(hosts), str(result)],
        capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]
    out = json.loads(result.read_text())
    assert out["codes"] == [0, 0, 0, 0], proc.stderr[-4000:]
    assert sorted(out["pids"]) == sorted(out["started"])
    # The controller's same-host fast path (a worker's abstract socket,
    # shared staging) was only tried with host 0's ranks: no dial of
    # another host's abstract socket was refused. (Workers dialling the
    # controller before it listens, and retrying, is the env launcher's
    # normal start.)
    assert "<Path: @monarch-worker" not in proc.stderr, proc.stderr[-4000:]

    assert_transports(trace)


def assert_transports(trace):
    """Within a host the gpus communicators are shared memory; the hosts
    communicators (data-parallel gradients) and the pipeline's transfer
    from host 0 to host 1 cross the network."""
    via = transports(trace)
    assert set(via) == {"shm", "gloo"}, via
    sends = [n for n in via["gloo"] if n.startswith(("send", "recv"))]
    assert sends and not [n for n in via["shm"]
                          if n.startswith(("send", "recv"))], via
