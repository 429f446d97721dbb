"""Across hosts (issue 17 item 6): two network namespaces on this machine as
hosts (scripts/netns-hosts.sh), the controller on host 0, one worker per
host started torchrun-style. Each row is ours against a floor measured in
the same run between the same namespaces:

- bandwidth: an actor on host 0 sends an N-byte tensor (its state) to an
  actor on host 1, which sums it; against raw TCP moving the same bytes
  between the namespaces into a numpy buffer that is then summed. Both are
  N / (time(N) - time(4 KB)): the fixed cost of a step (or of a round trip)
  is left out of both.
- dispatch: a no-op compiled step on 4 workers (2 per host: each adds one
  to its shard of a 4 x 4 input, the controller gathers the shards),
  against a TCP fan-out floor (one small request to each of 4 peers, 2 per
  host, and their replies). Beside it, for information, the same step
  replicated on the ranks first (an all_gather across the hosts between
  the workers: more than dispatch).

Needs root (network namespaces). Usage: python3 bench/hosts/hosts_bench.py
[--quick]. Prints a table with the ratios (targets: bandwidth >= 0.9x raw
TCP, dispatch <= 1.5x the fan-out floor)."""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]

PEER = r'''
import socket, sys, numpy as np
addr, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((addr, port)); srv.listen(8)
print("ready", flush=True)
while True:
    c, _ = srv.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        head = c.recv(8, socket.MSG_WAITALL)
        if len(head) < 8:
            break
        n = int.from_bytes(head, "little")
        if n == 0:
            c.close(); sys.exit(0)
        buf = bytearray(n); view = memoryview(buf); got = 0
        while got < n:
            got += c.recv_into(view[got:], n - got)
        if mode == "sum":
            np.frombuffer(buf, np.float32).sum()
        c.sendall(b"k")
    c.close()
'''

# The drivers' timer: the median of n calls after two warm-ups.
MEDIAN = r'''
def median(fn, n):
    fn(); fn()
    times = []
    for _ in range(n):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return statistics.median(times)
'''

DRIVER = r'''
import json, os, socket, statistics, subprocess, sys, time
import numpy as np
import monarch_compile as mc
from monarch_compile import _runtime

hosts = json.loads(sys.argv[1]); sizes = json.loads(sys.argv[2])
reps = int(sys.argv[3]); out = {}
addr0 = hosts[0][1]
''' + MEDIAN + r'''
def start(world, per_host, token):
    with socket.socket() as s:
        s.bind((addr0, 0)); port = s.getsockname()[1]
    os.environ.update(MONARCH_CONTROLLER=f"{addr0}:{port}",
                      MONARCH_BIND_HOST=addr0, MONARCH_JOB_TOKEN=token)
    procs = []
    for rank in range(world):
        ns, _ = hosts[rank // per_host]
        env = dict(os.environ, MONARCH_RANK=str(rank),
                   MONARCH_WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(per_host))
        procs.append(subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{ns}", _runtime._worker_binary()],
            env=env))
    return procs

# Bandwidth: host 0's actor state to host 1's actor.
procs = start(2, 1, "bw")
mesh = mc.mesh(hosts=2, gpus=1, launcher="env")

class Source(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)
    @mc.endpoint
    def emit(self):
        return self.w

class Sink(mc.Actor):
    def __init__(self):
        pass
    @mc.endpoint
    def take(self, x):
        return x.sum()

ours = {}
for n in sizes:
    src = mesh.slice(hosts=0).spawn(f"src{n}", Source,
                                    np.ones(n // 4, np.float32))
    dst = mesh.slice(hosts=1).spawn(f"dst{n}", Sink)
    @mc.compile
    def move():
        return dst.take.call(src.emit.call())
    assert float(move()) == n // 4
    ours[n] = median(move, reps)
mesh.stop()
for p in procs: p.wait(timeout=20)
out["ours_bw"] = ours

# Dispatch: a no-op step on 4 workers, 2 per host.
procs = start(4, 2, "dispatch")
mesh = mc.mesh(hosts=2, gpus=2, launcher="env")
@mc.compile(mesh=mesh)
def nop(x):
    # Each rank gets its shard and returns it plus one; the controller
    # gathers the result from the shards: nothing between the workers.
    return mc.shard(x, hosts=0, gpus=1) + 1.0
@mc.compile(mesh=mesh)
def gathered(x):
    # The same, replicated on the ranks first: an all_gather over all four.
    return mc.replicate(mc.shard(x, hosts=0, gpus=1) + 1.0)
x = np.zeros((4, 4), np.float32)
assert (nop(x) == 1.0).all() and (gathered(x) == 1.0).all()
out["ours_dispatch"] = median(lambda: nop(x), reps * 10)
out["ours_gathered"] = median(lambda: gathered(x), reps * 10)
mesh.stop()
for p in procs: p.wait(timeout=20)
print("RESULT " + json.dumps(out))
'''

FLOOR = r'''
import json, socket, statistics, sys, time
import numpy as np
peers = json.loads(sys.argv[1]); sizes = json.loads(sys.argv[2])
reps = int(sys.argv[3]); out = {}
''' + MEDIAN + r'''def connect(addr, port):
    s = socket.create_connection((addr, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
bw = connect(*peers["sum"])
floor = {}
for n in sizes:
    payload = np.ones(n // 4, np.float32).tobytes()
    def once():
        bw.sendall(n.to_bytes(8, "little")); bw.sendall(payload)
        assert bw.recv(1) == b"k"
    floor[n] = median(once, reps)
bw.sendall((0).to_bytes(8, "little"))
out["floor_bw"] = floor
fan = [connect(a, p) for a, p in peers["fanout"]]
small = (64).to_bytes(8, "little") + bytes(64)
def fanout():
    for s in fan: s.sendall(small)
    for s in fan: assert s.recv(1) == b"k"
out["floor_dispatch"] = median(fanout, reps * 10)
for s in fan: s.sendall((0).to_bytes(8, "little"))
print("RESULT " + json.dumps(out))
'''


def result_of(proc):
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("hosts_bench: needs root (network namespaces); skipped")
        return 0
    # Up to 64 MB: an actor's initial state crosses the control plane in one
    # message, at most MONARCH_MAX_MESSAGE_BYTES (256 MiB by default).
    sizes = [1 << 20, 16 << 20] if args.quick else [1 << 20, 16 << 20,
                                                     64 << 20]
    reps = 5 if args.quick else 9
    prefix = f"mcb{os.getpid()}"
    script = ROOT / "scripts" / "netns-hosts.sh"
    subprocess.run([script, "reap"], capture_output=True, timeout=60)
    up = subprocess.run([script, "up", "--hosts", "2", "--prefix", prefix],
                        capture_output=True, text=True, check=True)
    hosts = [line.split() for line in up.stdout.splitlines()]
    peers = []
    try:
        # The floor: raw TCP from host 0 to peers on the hosts.
        def peer(host, port, mode):
            p = subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{hosts[host][0]}",
                 sys.executable, "-c", PEER, hosts[host][1], str(port), mode],
                stdout=subprocess.PIPE, text=True)
            assert p.stdout.readline().strip() == "ready"
            peers.append(p)
            return [hosts[host][1], port]
        spec = {"sum": peer(1, 29601, "sum"),
                "fanout": [peer(h, 29602 + i, "plain")
                           for i, h in enumerate((0, 0, 1, 1))]}
        floor = subprocess.run(
            ["nsenter", f"--net=/run/netns/{hosts[0][0]}", sys.executable,
             "-c", FLOOR, json.dumps(spec), json.dumps([4096] + sizes),
             str(reps)],
            capture_output=True, text=True, timeout=600, check=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "python")] + ([env["PYTHONPATH"]]
                                      if env.get("PYTHONPATH") else []))
        ours = subprocess.run(
            ["nsenter", f"--net=/run/netns/{hosts[0][0]}", sys.executable,
             "-c", DRIVER, json.dumps(hosts), json.dumps([4096] + sizes),
             str(reps)], capture_output=True, text=True, timeout=900, env=env)
        if ours.returncode != 0:
            print(ours.stderr[-4000:])
            return 1
        f, o = result_of(floor), result_of(ours)
    finally:
        for p in peers:
            p.kill()
        subprocess.run([script, "down", "--prefix", prefix], check=True)
    base, floor_base = o["ours_bw"]["4096"], f["floor_bw"]["4096"]
    print("row                          ours            floor (raw TCP)  ratio")
    for n in sizes:
        mine = n / (o["ours_bw"][str(n)] - base) / 1e9
        raw = n / (f["floor_bw"][str(n)] - floor_base) / 1e9
        print(f"bandwidth {n >> 20:4d} MB, host 0 -> 1  {mine:6.2f} GB/s     "
              f"{raw:6.2f} GB/s      {mine / raw:4.2f}x (target >= 0.9)")
    d, fd = o["ours_dispatch"] * 1e6, f["floor_dispatch"] * 1e6
    print(f"dispatch, 4 workers on 2 hosts  {d:7.1f} us       {fd:7.1f} us  "
          f"      {d / fd:4.2f}x (target <= 1.5)")
    g = o["ours_gathered"] * 1e6
    print(f"  the same with an all_gather   {g:7.1f} us       {fd:7.1f} us  "
          f"      {g / fd:4.2f}x (a step, not dispatch)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
