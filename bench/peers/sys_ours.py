import time; T0 = time.time()  # noqa: E401,E702  (cold start: the first line)
"""The workloads of common.py as monarch_compile user programs.

Only the public API of DESIGN.md section 3 (`import monarch_compile as mc`):
mc.mesh, mesh.slice, mesh.spawn, mc.Actor, mc.endpoint, mc.param,
endpoint.call and @mc.compile. Each workload is one compiled function; a
step is one call of it, which returns numpy arrays.

    python sys_ours.py [--workloads echo,chain4,...] [--cold]
"""
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


def setup_echo():
    mesh = mc.mesh(procs=1)
    a = mesh.spawn("echo", Echo)

    @mc.compile
    def echo_step(x):
        return a.echo.call(x)

    x = C.echo_input()
    echo_step.ir("planned", x)
    return (lambda: echo_step(x)), (lambda r: C.check_close("echo", r, C.ref_echo(x))), mesh.stop


def setup_chain4():
    mesh = mc.mesh(procs=C.CHAIN_LEN)
    actors = [_on_one(mesh, i).spawn(f"a{i}", AddOne) for i in range(C.CHAIN_LEN)]

    @mc.compile
    def chain(x):
        for a in actors:
            x = a.f.call(x)
        return x

    x = C.echo_input()
    chain.ir("planned", x)
    return (lambda: chain(x)), (lambda r: C.check_close("chain4", r, C.ref_chain(x))), mesh.stop


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
    scatter.ir("planned", x)
    return (lambda: scatter(x)), (lambda r: C.check_close("scatter4", r, C.ref_scatter(x))), mesh.stop


def setup_pipeline():
    w0, w1 = C.pipeline_weights()
    mesh = mc.mesh(procs=2)
    s0 = _on_one(mesh, 0).spawn("s0", Stage, w0)
    s1 = _on_one(mesh, 1).spawn("s1", Stage, w1)

    @mc.compile
    def pipeline(*xs):
        return tuple(s1.forward.call(s0.forward.call(x)) for x in xs)

    xs = C.pipeline_inputs()
    pipeline.ir("planned", *xs)
    want = C.ref_pipeline(xs, w0, w1)
    return ((lambda: pipeline(*xs)),
            (lambda r: C.check_close("pipeline", list(r), want, rtol=1e-3, atol=1e-3)),
            mesh.stop)


def setup_xfer(name):
    nbytes = C.XFER_SIZES[name]
    mesh = mc.mesh(procs=2)
    p = _on_one(mesh, 0).spawn("producer", Producer, C.xfer_buffer(nbytes))
    c = _on_one(mesh, 1).spawn("consumer", Consumer)

    @mc.compile
    def xfer():
        return c.consume.call(p.produce.call())

    xfer.trace()
    xfer.ir("planned")
    want = C.ref_xfer_sum(nbytes)
    return (xfer, (lambda r: C.check_close(name, r, want, rtol=1e-5)), mesh.stop)


SETUPS = {"echo": setup_echo, "chain4": setup_chain4,
          "scatter4": setup_scatter4, "pipeline": setup_pipeline}
SETUPS.update({n: (lambda n=n: setup_xfer(n)) for n in C.XFER_SIZES})


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
    args = C.parse_args()
    C.emit({"system": "ours", "version": _version()})
    if args.cold:
        try:
            C.emit({"workload": "cold", "value": cold(), "unit": "s", "steps": 1})
        except Exception as err:
            C.emit_error("cold", err)
        return
    C.run_warm(args.workloads, SETUPS)


def _version():
    import subprocess
    import pathlib
    root = pathlib.Path(mc.__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return f"monarch_compile @ {rev or 'unknown'}"


if __name__ == "__main__":
    main()
