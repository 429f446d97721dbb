"""bench/compile_scaling/dtp_scaling.py: a data x tensor x pipeline training
step compiled and simulated as the mesh grows (issue 15 item 5, issue 19
item 4).

The step (`dtp_program.py` beside this file): two pipeline stages, actors on
the halves of the mesh's `stages` dimension, each a Megatron MLP whose
first weight is split by columns and second by rows over `gpus` (tensor
parallel 8, fewer below 16 ranks), data parallel over `hosts` (the rest);
stage 1 sends its input's gradient back to stage 0, and every weight
gradient is all-reduced over `hosts`. For N = 8, 64, 512 and 4,096 ranks it
is traced on `mc.mesh(hosts=D, stages=2, gpus=T)` without starting workers,
compiled by `monarch-compile -v` with the caches off (the passes include
`monarch-verify-plan`), loaded as a worker would (bench/bin/plan_load), and
simulated on the `dgx-h200` preset (`monarch-compile PLAN --simulate`).
Prints each size, the ratios to the 8-rank figures and the targets; asserts
nothing.

Targets (issue 15): at 4,096 ranks compile + verify under 10 s and 2 GiB on
a 2-core machine, compile time within 3x of the 8-rank figure, .mcplan size
and worker load time within 2x. Issue 19: the 4,096-rank step simulated in
under 10 s with its predicted step time and communication share.

    python3 bench/compile_scaling/dtp_scaling.py [--ranks 8,64,512,4096]
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(HERE))

import monarch_compile as mc  # noqa: E402
import dtp_program  # noqa: E402
from rank_scaling import measure  # noqa: E402


def shape(n):
    """(data, tensor) parallel degrees of n ranks with 2 pipeline stages."""
    tensor = min(8, n // 2)
    if n % (2 * tensor):
        sys.exit(f"{n} ranks: not 2 stages x {tensor} x data parallel")
    return n // (2 * tensor), tensor


def traced(n):
    """The traced IR of the step on n ranks, and the seconds tracing took."""
    hosts, gpus = shape(n)
    rng = np.random.default_rng(0)
    w = dtp_program.weights(rng)
    x, t = dtp_program.batch(rng, hosts)
    start = time.perf_counter()
    mesh = mc.mesh(hosts=hosts, stages=2, gpus=gpus)
    train = dtp_program.program(mesh, w)
    text = train.ir("traced", x, t, np.float32(0.01))
    return text, time.perf_counter() - start


def simulate(build, plan):
    """(predicted step us, communication share, seconds the simulation
    took) on the dgx-h200 preset."""
    start = time.perf_counter()
    proc = subprocess.run([str(build / "bin" / "monarch-compile"), str(plan),
                           "--simulate=dgx-h200"], capture_output=True,
                          text=True, timeout=600)
    seconds = time.perf_counter() - start
    step = re.search(r"predicted step ([\d.]+) us", proc.stdout)
    comm = re.search(r"(\d+)% in communication", proc.stdout)
    if proc.returncode != 0 or not step:
        sys.exit(f"--simulate failed:\n{proc.stdout}{proc.stderr}")
    return (float(step.group(1)), int(comm.group(1)) if comm else -1,
            seconds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="8,64,512,4096")
    args = ap.parse_args()
    build = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", ROOT / "build"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for (n, trace_s, wall, passes_s, peak_kb, size, kernels, load,
             plan) in measure([int(r) for r in args.ranks.split(",")],
                              traced, tmp):
            step_us, comm, sim_s = simulate(build, plan)
            rows.append((n, shape(n), trace_s, wall, passes_s, peak_kb, size,
                         load, kernels, step_us, comm, sim_s))
    print("dtp scaling: 2 pipeline stages x tensor parallel x data parallel "
          "training step, monarch-compile -v (verification included), caches "
          "off; simulated on dgx-h200")
    print(f"{'ranks':>6} {'DxPxT':>9}{'trace s':>9}{'compile s':>11}"
          f"{'passes s':>10}{'peak MB':>9}{'plan KB':>9}{'load ms':>9}"
          f"{'sim s':>7}{'step us':>9}{'comm':>6}  kernels/distinct")
    for (n, (d, t), trace_s, wall, passes_s, peak_kb, size, load, kernels,
         step_us, comm, sim_s) in rows:
        print(f"{n:>6} {f'{d}x2x{t}':>9}{trace_s:>9.2f}{wall:>11.2f}"
              f"{passes_s:>10.2f}{peak_kb / 1024:>9.0f}{size / 1024:>9.0f}"
              f"{load:>9.2f}{sim_s:>7.2f}{step_us:>9.1f}{comm:>5}%  "
              f"{kernels}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"ratios {b[0]}/{a[0]} ranks: compile {b[3] / a[3]:.1f}x "
              f"(target 3x), plan size {b[6] / a[6]:.1f}x (2x), load "
              f"{b[7] / a[7]:.1f}x (2x)")
    print("targets (issue 15): 4096 ranks compile + verify < 10 s and "
          "< 2 GiB; (issue 19) simulated in < 10 s")


if __name__ == "__main__":
    main()
