"""PyTorch DDP peer of bench/training's MLP step (issue 35).

    python torch_ddp.py RANKS WIDTH BATCH STEPS

Runs the MLP step of bench/training (relu(x @ w1) @ w2, MSE, SGD) under
torch.nn.parallel.DistributedDataParallel with the gloo backend, one
process per rank and one thread per process, the global batch split over
the ranks (as `mc.shard(x, gpus=0)` splits ours), and prints one JSON line:
{"step": median seconds of a step on rank 0, "ranks": N}. RANKS 1 runs the
same step in this process without DDP. Run it with a Python that has torch
(bench/training/torch_venv.sh makes one under the build folder); a failure
prints {"error": ...}.
"""

import json
import os
import socket
import subprocess
import sys
import time


def _step_times(rank, ranks, width, batch, steps):
    import torch
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    w1 = torch.randn(width, width, generator=g)
    w2 = torch.randn(width, width, generator=g)
    x = torch.randn(batch, width, generator=g)
    t = torch.randn(batch, width, generator=g)
    rows = batch // ranks
    x, t = x[rank * rows:(rank + 1) * rows], t[rank * rows:(rank + 1) * rows]

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = torch.nn.Parameter(w1.clone())
            self.w2 = torch.nn.Parameter(w2.clone())

        def forward(self, x):
            return torch.relu(x @ self.w1) @ self.w2

    model = MLP()
    if ranks > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = ((model(x) - t) ** 2).mean()
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def _worker(rank, ranks, width, batch, steps, port):
    import datetime

    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # A rank that dies leaves the others waiting for it: bounded, not gloo's
    # default half hour.
    dist.init_process_group("gloo", rank=rank, world_size=ranks,
                            timeout=datetime.timedelta(seconds=120))
    try:
        median = _step_times(rank, ranks, width, batch, steps)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"step": median, "ranks": ranks}), flush=True)


def main():
    if sys.argv[1] == "--worker":
        rank, ranks, width, batch, steps, port = map(int, sys.argv[2:8])
        _worker(rank, ranks, width, batch, steps, port)
        return
    ranks, width, batch, steps = map(int, sys.argv[1:5])
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(json.dumps({"error": f"torch not importable: {e}"}))
        return
    if ranks == 1:
        print(json.dumps({"step": _step_times(0, 1, width, batch, steps),
                          "ranks": 1}))
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--worker", str(r), str(ranks), str(width),
         str(batch), str(steps), str(port)],
        stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=env) for r in range(ranks)]
    try:
        out, err = procs[0].communicate(timeout=600)
        for p in procs[1:]:
            p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        print(json.dumps({"error": "DDP step timed out"}))
        return
    lines = [ln for ln in (out or "").splitlines() if ln.startswith("{")]
    if procs[0].returncode != 0 or not lines:
        print(json.dumps({"error": f"DDP rank 0 failed: {err[-300:]}"}))
        return
    print(lines[-1])


if __name__ == "__main__":
    main()
