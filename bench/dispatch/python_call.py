"""The cost of calling a compiled function from Python (issue 35 item 6):
a compiled no-op (`x + 1.0` on 256 float32, one kernel launch) on one local
worker, p50 over many calls, against the same step driven from C++: the same
plan and input through `monarch-run --steps K` (the C++ controller, no
Python per step), measured in the same run. Target: the Python call within
1.5x of the same step from C++, and <= 25 us on this machine. The floor row
is `dispatch_bench`'s step of one no-op launch on f32[1] (a smaller step:
no 1 KB feed and fetch, an empty kernel), which this bench compared against
before the same-plan row.

    MONARCH_BUILD_DIR=build python3 bench/dispatch/python_call.py [--calls N]
        [--steps K]
"""
import argparse
import os
import pathlib
import re
import subprocess
import tempfile
import time

import numpy as np

import monarch_compile as mc
from monarch_compile import _runtime


def python_p50(calls):
    """(p50 us of the Python call, its .mcplan bytes, program name, input)."""
    with mc.mesh(gpus=1) as mesh:
        @mc.compile(mesh=mesh)
        def f(x):
            return x + 1.0

        x = np.ones(256, np.float32)
        for _ in range(300):
            f(x)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            f(x)
            times.append(time.perf_counter() - start)
        spec = f._last
        plan = _runtime._compile(f, spec, spec.trace.name)
    times.sort()
    return times[len(times) // 2] * 1e6, plan, spec.trace.name, x


def same_plan_cpp_us(build, plan, program, x, steps):
    """The same step (same plan, input and result) from C++: `monarch-run
    --steps K` on one local worker, (T(1 + steps) - T(1)) / steps, the
    least of 3 runs (a mean, so no kinder to C++ than the Python p50)."""
    exe = pathlib.Path(build) / "bin" / "monarch-run"
    if not exe.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "f.mcplan"
        path.write_bytes(plan.to_bytes())
        inputs = pathlib.Path(tmp) / "x.npy"
        np.save(inputs, x)

        def run(k):
            start = time.perf_counter()
            subprocess.run([str(exe), str(path), "--program", program,
                            "--inputs", str(inputs), "--steps", str(k)],
                           check=True, capture_output=True, timeout=300)
            return time.perf_counter() - start

        best = None
        for _ in range(3):
            per = (run(1 + steps) - run(1)) / steps * 1e6
            best = per if best is None else min(best, per)
        return best


def cpp_step_us(build):
    exe = pathlib.Path(build) / "bench" / "bin" / "dispatch_bench"
    if not exe.exists():
        return None
    out = subprocess.run([str(exe), "500"], capture_output=True, text=True,
                         timeout=300).stdout
    m = re.search(r"step of 1 launch ([0-9.]+) us", out)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--steps", type=int, default=20000,
                    help="steps of the same plan through monarch-run")
    args = ap.parse_args()
    build = os.environ.get("MONARCH_BUILD_DIR", "build")
    ours, plan, program, x = python_p50(args.calls)
    print(f"python call (1 worker, 1 launch): p50 {ours:.1f} us")
    same = same_plan_cpp_us(build, plan, program, x, args.steps)
    if same is not None:
        ratio = ours / same
        print(f"the same step from C++ (monarch-run --steps {args.steps}, "
              f"same plan and input): {same:.1f} us; ratio {ratio:.2f}  "
              f"target: <= 1.5x and <= 25 us "
              f"{'met' if ratio <= 1.5 and ours <= 25 else 'not met'}")
    cpp = cpp_step_us(build)
    if cpp is None:
        print("dispatch_bench not built: no floor row")
        return
    print(f"floor: dispatch_bench's step of 1 no-op launch on f32[1]: "
          f"{cpp:.1f} us (Python call / floor {ours / cpp:.2f})")


if __name__ == "__main__":
    main()
