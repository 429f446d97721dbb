"""The cost of calling a compiled function from Python (issue 35 item 6):
a compiled no-op (`x + 1.0` on 256 float32, one kernel launch) on one local
worker, p50 over many calls, against the same shape of step driven from C++
(`dispatch_bench`'s "step of 1 launch", measured in the same run). Target: the
Python call within 1.5x of the C++ step, and <= 25 us on this machine.

    MONARCH_BUILD_DIR=build python3 bench/dispatch/python_call.py [--calls N]
"""
import argparse
import os
import pathlib
import re
import subprocess
import time

import numpy as np

import monarch_compile as mc


def python_p50(calls):
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
    times.sort()
    return times[len(times) // 2] * 1e6


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
    args = ap.parse_args()
    build = os.environ.get("MONARCH_BUILD_DIR", "build")
    ours = python_p50(args.calls)
    cpp = cpp_step_us(build)
    print(f"python call (1 worker, 1 launch): p50 {ours:.1f} us")
    if cpp is None:
        print("dispatch_bench not built: no C++ row")
        return
    ratio = ours / cpp
    print(f"C++ step of 1 launch (dispatch_bench): {cpp:.1f} us; ratio "
          f"{ratio:.2f}  target: <= 1.5x and <= 25 us "
          f"{'met' if ratio <= 1.5 and ours <= 25 else 'not met'}")


if __name__ == "__main__":
    main()
