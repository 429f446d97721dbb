import time; T0 = time.time()  # noqa: E401,E702  (cold start: the first line)
"""The workloads of common.py as monarch_compile user programs.

Only the public Python API (`import monarch_compile as mc`, docs/frontend.md):
mc.mesh, mesh.slice, mesh.spawn, mc.Actor, mc.endpoint, mc.param,
endpoint.call and @mc.compile. Each workload is one compiled function; a
step is one call of it, which returns numpy arrays.

    python sys_ours.py [--workloads echo,chain4,...] [--cold]
"""
import pathlib
import subprocess

import numpy as np

import common as C

import monarch_compile as mc  # noqa: E402


class Echo(mc.Actor):
    @mc.endpoint
    def echo(self, x):
        return x


class AddOne(mc.Actor):
    @mc.endpoint
    def f(self, x):
        return x + 1.0


class Sum4(mc.Actor):
    @mc.endpoint
    def g(self, a, b, c, d):
        return a + b + c + d


class Stage(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def forward(self, x):
        return mc.relu(x @ self.w)


class Producer(mc.Actor):
    def __init__(self, buf):
        self.buf = mc.param(buf)

    @mc.endpoint
    def produce(self):
        return self.buf


class Consumer(mc.Actor):
    @mc.endpoint
    def consume(self, t):
        return mc.sum(t)


def _on_one(mesh, i):
    return mesh.slice(procs=slice(i, i + 1))


class Prog:
    """One workload: a compiled function, its arguments, the check of its
    result against numpy, and the mesh to stop."""

    def __init__(self, fn, args, check, mesh):
        self.fn, self.args, self.check, self.mesh = fn, args, check, mesh
        fn.trace(*args)
        fn.ir("planned")          # compiles (raises here if it cannot)

    def python(self):
        """(step, check, close) for common.run_warm: a step is one call."""
        return (lambda: self.fn(*self.args)), self.check, self.mesh.stop


def setup_echo():
    mesh = mc.mesh(procs=1)
    a = mesh.spawn("echo", Echo)

    @mc.compile
    def echo_step(x):
        return a.echo.call(x)

    x = C.echo_input()
    return Prog(echo_step, [x], lambda r: C.check_close("echo", r, C.ref_echo(x)), mesh)


def setup_chain4():
    mesh = mc.mesh(procs=C.CHAIN_LEN)
    actors = [_on_one(mesh, i).spawn(f"a{i}", AddOne) for i in range(C.CHAIN_LEN)]

    @mc.compile
    def chain(x):
        for a in actors:
            x = a.f.call(x)
        return x

    x = C.echo_input()
    return Prog(chain, [x], lambda r: C.check_close("chain4", r, C.ref_chain(x)), mesh)


def setup_scatter4():
    mesh = mc.mesh(procs=C.FANOUT + 2)
    src = _on_one(mesh, 0).spawn("src", AddOne)
    workers = [_on_one(mesh, 1 + i).spawn(f"w{i}", AddOne) for i in range(C.FANOUT)]
    sink = _on_one(mesh, C.FANOUT + 1).spawn("sink", Sum4)

    @mc.compile
    def scatter(x):
        y = src.f.call(x)
        return sink.g.call(*[w.f.call(y) for w in workers])

    x = C.echo_input()
    return Prog(scatter, [x], lambda r: C.check_close("scatter4", r, C.ref_scatter(x)), mesh)


def setup_pipeline():
    w0, w1 = C.pipeline_weights()
    mesh = mc.mesh(procs=2)
    s0 = _on_one(mesh, 0).spawn("s0", Stage, w0)
    s1 = _on_one(mesh, 1).spawn("s1", Stage, w1)

    @mc.compile
    def pipeline(*xs):
        return tuple(s1.forward.call(s0.forward.call(x)) for x in xs)

    xs = C.pipeline_inputs()
    want = C.ref_pipeline(xs, w0, w1)
    return Prog(pipeline, xs,
                lambda r: C.check_close("pipeline", list(r), want, rtol=1e-3, atol=1e-3), mesh)


def setup_xfer(name):
    nbytes = C.XFER_SIZES[name]
    mesh = mc.mesh(procs=2)
    p = _on_one(mesh, 0).spawn("producer", Producer, C.xfer_buffer(nbytes))
    c = _on_one(mesh, 1).spawn("consumer", Consumer)

    @mc.compile
    def xfer():
        return c.consume.call(p.produce.call())

    want = C.ref_xfer_sum(nbytes)
    return Prog(xfer, [], lambda r: C.check_close(name, r, want, rtol=1e-5), mesh)


PROGS = {"echo": setup_echo, "chain4": setup_chain4,
          "scatter4": setup_scatter4, "pipeline": setup_pipeline}
PROGS.update({n: (lambda n=n: setup_xfer(n)) for n in C.XFER_SIZES})
SETUPS = {w: (lambda w=w: PROGS[w]().python()) for w in PROGS}


# Through the CLI: the same traced programs compiled by monarch-compile and
# run by monarch-run (C++ controller; no Python per step) -------------------
CLI_STEPS = {"echo": 2000, "chain4": 1000, "scatter4": 1000, "pipeline": 100,
             "xfer_1MB": 400, "xfer_16MB": 60, "xfer_64MB": 20}
CLI_PAIRS = 3


def cli_tools():
    """monarch-compile and monarch-run of the build whose extension we use
    (or of $MONARCH_BENCH_CLI_BIN)."""
    import os
    import sys
    bindir = os.environ.get("MONARCH_BENCH_CLI_BIN")
    if bindir:
        bindir = pathlib.Path(bindir)
    else:
        native = sys.modules["_monarch_native"]
        bindir = pathlib.Path(native.__file__).resolve().parents[1] / "bin"
    return bindir / "monarch-compile", bindir / "monarch-run"


def _timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - t


def cli_workload(w, tmp):
    """Per-step seconds of `w` through monarch-run: the wall time of K=1+N
    steps minus that of K=1 (medians of CLI_PAIRS runs each), over N."""
    import statistics
    compiler, runner = cli_tools()
    prog = PROGS[w]()
    try:
        spec = prog.fn.trace(*prog.args)
        mlir, plan, out = tmp / f"{w}.mlir", tmp / f"{w}.mcplan", tmp / f"{w}.out"
        mlir.write_text(prog.fn.ir("traced"))
        r = subprocess.run([str(compiler), str(mlir), "-o", str(plan)],
                           capture_output=True, text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(f"monarch-compile failed: {r.stderr.strip()[-300:]}")
        cmd = [str(runner), str(plan), "--program", prog.fn.__name__]
        if prog.args:
            cmd.append("--inputs")
            for i, a in enumerate(prog.args):
                np.save(tmp / f"{w}.in{i}.npy", np.asarray(a))
                cmd.append(str(tmp / f"{w}.in{i}.npy"))
        for (actor, state), value in spec.state_values().items():
            path = tmp / f"{w}.{actor}.{state}.npy"
            np.save(path, value)
            cmd += ["--state", f"@{actor}::@{state}={path}"]
        r = subprocess.run(cmd + ["--outputs", str(out)], capture_output=True,
                           text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(f"monarch-run failed: {r.stderr.strip()[-300:]}")
        outs = [np.load(p) for p in sorted(out.glob("output*.npy"),
                                           key=lambda p: int(p.stem[6:]))]
        prog.check(outs if len(outs) > 1 else outs[0])
        n = CLI_STEPS[w]
        small, big = [], []
        for _ in range(CLI_PAIRS):
            small.append(_timed(cmd + ["--steps", "1"]))
            big.append(_timed(cmd + ["--steps", str(1 + n)]))
        per_step = (statistics.median(big) - statistics.median(small)) / n
        if per_step <= 0:
            raise RuntimeError("the step time is below the noise of process start")
        return per_step
    finally:
        prog.mesh.stop()


def run_cli(workloads):
    import tempfile
    with tempfile.TemporaryDirectory(prefix="bench-peers-cli-") as d:
        for w in workloads:
            try:
                rec = C.summarize(w, [cli_workload(w, pathlib.Path(d))])
                rec["steps"] = CLI_STEPS[w]
                C.emit(rec)
            except Exception as err:
                C.emit_error(w, err)


def cold():
    mesh = mc.mesh(procs=1)
    a = mesh.spawn("echo", Echo)

    @mc.compile
    def echo_step(x):
        return a.echo.call(x)

    x = C.echo_input()
    r = echo_step(x)
    dt = time.time() - T0
    C.check_close("cold", r, x)
    mesh.stop()
    return dt


def main():
    import sys
    via_cli = "--via-cli" in sys.argv
    args = C.parse_args([a for a in sys.argv[1:] if a != "--via-cli"])
    version = _version()
    if via_cli:
        try:
            comp, run = cli_tools()
            version += f", {comp.resolve()}, {run.resolve()}"
        except (KeyError, IndexError):
            pass
    C.emit({"system": "ours", "version": version})
    if via_cli:
        if args.cold:
            C.emit_error("cold", RuntimeError(
                "not applicable: the CLI row has no program whose first line starts the clock"))
        else:
            run_cli(args.workloads)
        return
    if args.cold:
        try:
            C.emit({"workload": "cold", "value": cold(), "unit": "s", "steps": 1})
        except Exception as err:
            C.emit_error("cold", err)
        return
    C.run_warm(args.workloads, SETUPS)


def _version():
    root = pathlib.Path(mc.__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return f"monarch_compile @ {rev or 'unknown'}"


if __name__ == "__main__":
    main()
