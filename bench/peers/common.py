"""Shared definitions of the peer benchmarks: workloads, data, timing, output.

Every system driver (`sys_ours.py`, `sys_ray.py`, `sys_monarch.py`) imports
this module, so the data sizes, the reference results (plain numpy) and the
timing loop are the same for every system. A driver prints one JSON object
per line; the harness (`harness.py`) reads them.

Workloads (CPU only):
  echo          one actor returns its 1 KB input (256 float32)
  chain4        x -> a0 -> a1 -> a2 -> a3 -> result, each actor adds 1
  scatter4      x -> src (+1) -> 4 workers (+1 each) -> sink (sum of the 4)
  pipeline      two stages, each relu(x @ W) with W 256x256 float32, 8
                micro-batches of 256x256 per step
  xfer_1MB ...  a producer actor's resident float32 buffer is sent to a
                consumer actor, which returns its sum (GB/s)
  cold          fresh process: first line of the program -> first echo result
"""
import json
import statistics
import sys
import time

import numpy as np

ECHO_ELEMS = 256                      # 1 KB of float32
CHAIN_LEN = 4
FANOUT = 4
PIPE_DIM = 256                        # W is PIPE_DIM x PIPE_DIM
PIPE_MICROBATCHES = 8
PIPE_ROWS = 256                       # each micro-batch is PIPE_ROWS x PIPE_DIM
XFER_SIZES = {"xfer_1MB": 1 << 20, "xfer_16MB": 16 << 20, "xfer_64MB": 64 << 20}

LATENCY_WORKLOADS = ("echo", "chain4", "scatter4", "pipeline")
WARM_WORKLOADS = LATENCY_WORKLOADS + tuple(XFER_SIZES)
ALL_WORKLOADS = WARM_WORKLOADS + ("cold",)

# Per measurement: warm-up steps, then steps until either the step count or
# the time budget is reached (at least MIN_STEPS).
WARMUP = {"echo": 20, "chain4": 10, "scatter4": 10, "pipeline": 3}
MAX_STEPS = {"echo": 300, "chain4": 200, "scatter4": 200, "pipeline": 40}
MIN_STEPS = 5
TIME_BUDGET_S = 1.5


def echo_input():
    return np.arange(ECHO_ELEMS, dtype=np.float32)


def pipeline_weights():
    rng = np.random.default_rng(1)
    scale = np.float32(1.0 / np.sqrt(PIPE_DIM))
    w0 = (rng.standard_normal((PIPE_DIM, PIPE_DIM), dtype=np.float32) * scale)
    w1 = (rng.standard_normal((PIPE_DIM, PIPE_DIM), dtype=np.float32) * scale)
    return w0, w1


def pipeline_inputs():
    rng = np.random.default_rng(2)
    return [rng.standard_normal((PIPE_ROWS, PIPE_DIM), dtype=np.float32)
            for _ in range(PIPE_MICROBATCHES)]


def xfer_buffer(nbytes):
    """The producer's resident buffer; its sum is exact in float32."""
    n = nbytes // 4
    return (np.arange(n, dtype=np.int64) % 8).astype(np.float32) * np.float32(0.25)


# Reference results (numpy on one machine) ------------------------------------
def ref_echo(x):
    return x


def ref_chain(x):
    return x + np.float32(CHAIN_LEN)


def ref_scatter(x):
    return np.float32(FANOUT) * (x + np.float32(2))


def ref_pipeline(xs, w0, w1):
    relu = lambda a: np.maximum(a, np.float32(0))
    return [relu(relu(x @ w0) @ w1) for x in xs]


def ref_xfer_sum(nbytes):
    return float(xfer_buffer(nbytes).astype(np.float64).sum())


def check_close(name, got, want, rtol=1e-4, atol=1e-4):
    """Raises if a system's result differs from the numpy reference."""
    if isinstance(want, list):
        if len(got) != len(want):
            raise AssertionError(f"{name}: {len(got)} results, want {len(want)}")
        for g, w in zip(got, want):
            check_close(name, g, w, rtol, atol)
        return
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.size != w.size or not np.allclose(g.reshape(w.shape), w, rtol=rtol, atol=atol):
        raise AssertionError(f"{name}: result differs from the numpy reference")


# Timing ---------------------------------------------------------------------
def time_steps(step, workload):
    """Runs `step` (one full, completed step) repeatedly; per-step seconds."""
    warm = WARMUP.get(workload, 2)
    most = MAX_STEPS.get(workload, 30)
    for _ in range(warm):
        step()
    samples = []
    start = time.perf_counter()
    while len(samples) < most:
        t = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t)
        if len(samples) >= MIN_STEPS and time.perf_counter() - start > TIME_BUDGET_S:
            break
    return samples


def summarize(workload, samples):
    """One result record from per-step seconds: latency (us) or GB/s."""
    med = statistics.median(samples)
    if workload in XFER_SIZES:
        return {"workload": workload, "value": XFER_SIZES[workload] / med / 1e9,
                "unit": "GB/s", "steps": len(samples)}
    return {"workload": workload, "value": med * 1e6, "unit": "us",
            "steps": len(samples)}


def emit(record):
    print("RESULT " + json.dumps(record), flush=True)


def emit_error(workload, err):
    msg = f"{type(err).__name__}: {err}".strip().splitlines()
    emit({"workload": workload, "error": " ".join(m.strip() for m in msg)[:400]})


def parse_args(argv=None):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--workloads", default=",".join(WARM_WORKLOADS))
    p.add_argument("--cold", action="store_true",
                   help="measure the cold start (first line -> first result)")
    args = p.parse_args(argv)
    args.workloads = [w for w in args.workloads.split(",") if w]
    return args


def run_warm(workloads, setups):
    """Runs each workload through `setups[name]() -> (step, check, close)`;
    a failing workload emits an error record and the next one still runs."""
    for w in workloads:
        close = None
        try:
            t = time.perf_counter()
            step, check, close = setups[w]()
            check(step())
            t_setup = time.perf_counter() - t
            rec = summarize(w, time_steps(step, w))
            rec["setup_s"] = round(t_setup, 3)
            emit(rec)
        except Exception as err:  # reported in the table, never fatal
            emit_error(w, err)
        finally:
            if close is not None:
                try:
                    close()
                except Exception as err:
                    print(f"close({w}) failed: {err}", file=sys.stderr)
