import time; T0 = time.time()  # noqa: E401,E702  (cold start: the first line)
"""The workloads of common.py on PyTorch Monarch (`torchmonarch`), run from
the benchmark venv.

Monarch has no graph compiler: a step is what a Monarch user writes, the
driver calling endpoints (`call_one(...).get()`), with futures in flight
where the workload allows it (the 8 micro-batches of the pipeline, the four
workers of scatter4, which are one 4-proc actor mesh called with `call`).
The transfer is actor to actor: the consumer holds the producer's actor
mesh and pulls the buffer from it. One proc mesh of 6 processes (spawned
with `this_host().spawn_procs`) serves every workload; it is stopped at exit,
also on errors.

    python sys_monarch.py [--workloads echo,chain4,...] [--cold]
"""
import common as C

from monarch.actor import Actor, endpoint, this_host  # noqa: E402

NPROCS = C.FANOUT + 2


class Worker(Actor):
    def __init__(self, w=None, nbytes=0):
        self.w = w
        self.buf = C.xfer_buffer(nbytes) if nbytes else None

    @endpoint
    def echo(self, x):
        return x

    @endpoint
    def f(self, x):
        return x + 1.0

    @endpoint
    def g(self, values):
        a, b, c, d = values
        return a + b + c + d

    @endpoint
    def forward(self, x):
        import numpy as np
        return np.maximum(x @ self.w, 0.0)

    @endpoint
    def produce(self):
        return self.buf



class Puller(Actor):
    """Monarch forbids mixing sync and async endpoints in one class."""

    def __init__(self, producer):
        self.producer = producer

    @endpoint
    async def pull(self):
        t = await self.producer.produce.call_one()
        return float(t.sum(dtype="float64"))


_PROCS = []
_COUNT = [0]


def _procs():
    if not _PROCS:
        _PROCS.append(this_host().spawn_procs(per_host={"procs": NPROCS}))
    return _PROCS[0]


def _spawn(lo, hi, *args, cls=Worker, **kwargs):
    _COUNT[0] += 1
    return _procs().slice(procs=slice(lo, hi)).spawn(f"a{_COUNT[0]}", cls, *args, **kwargs)


def _noop():
    pass


def setup_echo():
    a = _spawn(0, 1)
    x = C.echo_input()
    return (lambda: a.echo.call_one(x).get()), (lambda r: C.check_close("echo", r, x)), _noop


def setup_chain4():
    actors = [_spawn(i, i + 1) for i in range(C.CHAIN_LEN)]
    x = C.echo_input()

    def step():
        y = x
        for a in actors:
            y = a.f.call_one(y).get()
        return y
    return step, (lambda r: C.check_close("chain4", r, C.ref_chain(x))), _noop


def setup_scatter4():
    src = _spawn(0, 1)
    workers = _spawn(1, 1 + C.FANOUT)
    sink = _spawn(C.FANOUT + 1, C.FANOUT + 2)
    x = C.echo_input()

    def step():
        y = src.f.call_one(x).get()
        ys = list(workers.f.call(y).get().values())
        return sink.g.call_one(ys).get()
    return step, (lambda r: C.check_close("scatter4", r, C.ref_scatter(x))), _noop


def setup_pipeline():
    w0, w1 = C.pipeline_weights()
    s0, s1 = _spawn(0, 1, w0), _spawn(1, 2, w1)
    xs = C.pipeline_inputs()
    want = C.ref_pipeline(xs, w0, w1)

    def step():
        first = [s0.forward.call_one(x) for x in xs]          # all in flight
        second = [s1.forward.call_one(f.get()) for f in first]
        return [f.get() for f in second]
    return step, (lambda r: C.check_close("pipeline", r, want, rtol=1e-3, atol=1e-3)), _noop


def setup_xfer(name):
    nbytes = C.XFER_SIZES[name]
    p = _spawn(0, 1, nbytes=nbytes)
    c = _spawn(1, 2, p, cls=Puller)
    want = C.ref_xfer_sum(nbytes)
    return ((lambda: c.pull.call_one().get()),
            (lambda r: C.check_close(name, r, want, rtol=1e-5)), _noop)


SETUPS = {"echo": setup_echo, "chain4": setup_chain4,
          "scatter4": setup_scatter4, "pipeline": setup_pipeline}
SETUPS.update({n: (lambda n=n: setup_xfer(n)) for n in C.XFER_SIZES})


def cold():
    procs = this_host().spawn_procs(per_host={"procs": 1})
    try:
        a = procs.spawn("echo", Worker)
        x = C.echo_input()
        r = a.echo.call_one(x).get()
        dt = time.time() - T0
        C.check_close("cold", r, x)
        return dt
    finally:
        procs.stop().get()


def _version():
    from importlib import metadata
    out = []
    for dist in ("torchmonarch", "torch"):
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            out.append(f"{dist} not installed")
    return ", ".join(out)


def main():
    args = C.parse_args()
    C.emit({"system": "monarch", "version": _version()})
    try:
        if args.cold:
            try:
                C.emit({"workload": "cold", "value": cold(), "unit": "s", "steps": 1})
            except Exception as err:
                C.emit_error("cold", err)
            return
        C.run_warm(args.workloads, SETUPS)
    except Exception as err:
        for w in args.workloads:
            C.emit_error(w, err)
    finally:
        if _PROCS:
            _PROCS[0].stop().get()


if __name__ == "__main__":
    main()
