"""`monarch-calibrate [-o TOPOLOGY.json]` (issue 19): measures this
machine's rates for the plan simulator and writes a topology file that
`monarch-compile --simulate=TOPOLOGY.json` and `fn.simulate(...,
topology="TOPOLOGY.json")` read (docs/plan.md, "Simulation").

Measured on one local worker, as a step runs there:
- `flops_per_us`: a compiled step of eight 512x512x512 float32 matmuls
  (the kernels' BLAS calls, one thread per worker), less a no-op step;
- `mem_bytes_per_us`: a compiled elementwise step over 16M floats (read
  and written: 128 MB), less the no-op step;
- `cores_per_host`: the cores this process may run on (the local mesh's
  workers share them);
- `call_us`, `array_us` and `rank_us`: the controller's share of a step,
  from Python: a no-op step of one small array in and out (`call_us`), the
  extra time of one with 32 in and 32 out, per array (`array_us`), and of
  the no-op step on 4 workers, per further rank (`rank_us`), each less
  what the simulator predicts the ranks spend on them;
- `controller_bytes_per_us`: the memory rate above, at which the
  controller copies the arrays it feeds and fetches;
The launch and communication rates stay the `base` preset's
(`dispatch_bench` and `transfer_bench` measure them: docs/executor.md). Prints the rates and the file written.
"""
import argparse
import json
import os
import time

import numpy as np


def _best(fn, args, calls):
    fn(*args)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def measure(calls=7):
    import monarch_compile as mc
    n = 512
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = (rng.standard_normal((n, n)) / n ** 0.5).astype(np.float32)
    big = np.ones(1 << 24, np.float32)
    tiny = np.ones(16, np.float32)
    with mc.mesh(gpus=1) as mesh:
        @mc.compile(mesh=mesh)
        def noop(x):
            return x + 1.0

        @mc.compile(mesh=mesh)
        def matmuls(a, b):
            y = a
            for _ in range(8):
                y = (y @ b) * 0.5
            return y[:1, :1]

        @mc.compile(mesh=mesh)
        def stream(x):
            return (x * 1.5 + 0.5).sum()

        @mc.compile(mesh=mesh)
        def many(*xs):
            return [x + 1.0 for x in xs]

        t0 = _best(noop, (tiny,), calls)
        arrays = tuple(tiny.copy() for _ in range(32))
        t64 = _best(many, arrays, calls)
        # What the ranks do in those two steps is the simulator's to
        # predict (each array's feed, fetch and kernel work): the
        # controller's share is the rest.
        ranks_only = {"base": "this-machine", "call_us": 0, "array_us": 0,
                      "rank_us": 0, "controller_bytes_per_us": 0}
        s0 = noop.simulate(tiny, topology=ranks_only)["steps"][0]["step_us"]
        s64 = many.simulate(*arrays,
                            topology=ranks_only)["steps"][0]["step_us"]
        mm = _best(matmuls, (a, b), calls)
        st = _best(stream, (big,), calls)
    # Each further rank a call reaches: the no-op step on 4 workers.
    with mc.mesh(gpus=4) as mesh4:
        @mc.compile(mesh=mesh4)
        def noop4(x):
            return x + 1.0

        t4 = _best(noop4, (tiny,), calls)
        s4 = noop4.simulate(tiny, topology=ranks_only)["steps"][0]["step_us"]
    flops = 8 * 2 * n ** 3 / max(mm - t0, 1e-6) / 1e6
    # The elementwise step reads the array once into the kernel (fed into
    # the arena: one more copy of it, 64 MB each way counted).
    mem = 3 * big.nbytes / max(st - t0, 1e-6) / 1e6
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    return {"flops_per_us": round(flops, 1), "mem_bytes_per_us": round(mem, 1),
            "cores_per_host": cores,
            # The controller stages and reassembles arrays at the same rate.
            "controller_bytes_per_us": round(mem, 1),
            "call_us": round(max(t0 * 1e6 - s0, 0.0), 1),
            "array_us": round(max((t64 - t0) * 1e6 - (s64 - s0), 0.0) / 62,
                              2),
            "rank_us": round(max((t4 - t0) * 1e6 - (s4 - s0), 0.0) / 3, 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="monarch-calibrate",
        description="Measure this machine's rates for the plan simulator "
        "and write a topology file (--simulate=FILE).")
    ap.add_argument("-o", "--output", default="this-machine.json")
    ap.add_argument("--base", default="this-machine",
                    help="the preset whose other rates the file keeps")
    args = ap.parse_args(argv)
    rates = measure()
    topology = {"base": args.base, **rates}
    with open(args.output, "w") as f:
        json.dump(topology, f, indent=2)
        f.write("\n")
    print(f"monarch-calibrate: {rates['flops_per_us'] / 1e3:.1f} GFLOP/s, "
          f"{rates['mem_bytes_per_us'] / 1e3:.1f} GB/s, "
          f"{rates['cores_per_host']} cores, a call {rates['call_us']} us, "
          f"{rates['array_us']} us an array, {rates['rank_us']} us a rank; "
          f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
