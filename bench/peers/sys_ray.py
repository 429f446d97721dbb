import time; T0 = time.time()  # noqa: E401,E702  (cold start: the first line)
"""The workloads of common.py on Ray Compiled Graphs (`ray.dag` +
`experimental_compile()`), run from the benchmark venv.

Each workload is one compiled DAG over actors; a step is one
`compiled.execute(...)` and `ray.get` of its result. Ray starts its own local
cluster (`ray.init(num_cpus=...)`), shut down at exit, also on errors.

    python sys_ray.py [--workloads echo,chain4,...] [--cold]
"""
import os

import common as C

# The first execution may wait for actor processes on a loaded 2-core machine.
os.environ.setdefault("RAY_CGRAPH_get_timeout", "120")
os.environ.setdefault("RAY_CGRAPH_submit_timeout", "120")
# A graph that moved MB-sized arrays for more than a few steps never finishes
# teardown (ray 2.60; its actors stay busy): those graphs are torn down with
# kill_actors=True, which waits this long before force-killing them.
os.environ.setdefault("RAY_CGRAPH_teardown_timeout", "3")

import ray  # noqa: E402
from ray.dag import InputNode, MultiOutputNode  # noqa: E402


@ray.remote(num_cpus=0)
class Worker:
    """Every workload's actor methods; a pool of these serves all DAGs (a
    compiled graph's teardown leaves its actors free for the next one)."""

    def __init__(self):
        self.w = None
        self.buf = None

    def set_weight(self, w):
        self.w = w

    def set_buffer(self, nbytes):
        self.buf = C.xfer_buffer(nbytes)

    def echo(self, x):
        return x

    def f(self, x):
        return x + 1.0

    def g(self, a, b, c, d):
        return a + b + c + d

    def forward(self, x):
        import numpy as np
        return np.maximum(x @ self.w, 0.0)

    def produce(self, _tick):
        return self.buf

    def consume(self, t):
        return float(t.sum(dtype="float64"))


_POOL = []


def _pool(n):
    """n ready actors (created once per driver, reused by every workload)."""
    while len(_POOL) < n:
        _POOL.append(Worker.remote())
    ray.get([a.__ray_ready__.remote() for a in _POOL[:n]], timeout=120)
    return _POOL[:n]


def _compiled(dag, step_args, check, buffer_bytes=None, kill_actors=False):
    # Channels start at 1e6 bytes and grow on demand: size them up front.
    kwargs = {"_buffer_size_bytes": buffer_bytes} if buffer_bytes else {}
    cdag = dag.experimental_compile(**kwargs)

    def step():
        return ray.get(cdag.execute(*step_args))
    return step, check, (lambda: cdag.teardown(kill_actors=kill_actors))


def setup_echo():
    (a,) = _pool(1)
    with InputNode() as inp:
        dag = a.echo.bind(inp)
    x = C.echo_input()
    return _compiled(dag, (x,), lambda r: C.check_close("echo", r, C.ref_echo(x)))


def setup_chain4():
    actors = _pool(C.CHAIN_LEN)
    with InputNode() as inp:
        node = inp
        for a in actors:
            node = a.f.bind(node)
    x = C.echo_input()
    return _compiled(node, (x,), lambda r: C.check_close("chain4", r, C.ref_chain(x)))


def setup_scatter4():
    src, *workers, sink = _pool(C.FANOUT + 2)
    with InputNode() as inp:
        y = src.f.bind(inp)
        dag = sink.g.bind(*[w.f.bind(y) for w in workers])
    x = C.echo_input()
    return _compiled(dag, (x,), lambda r: C.check_close("scatter4", r, C.ref_scatter(x)))


def setup_pipeline():
    w0, w1 = C.pipeline_weights()
    s0, s1 = _pool(2)
    ray.get([s0.set_weight.remote(w0), s1.set_weight.remote(w1)], timeout=120)
    with InputNode() as inp:
        dag = MultiOutputNode([s1.forward.bind(s0.forward.bind(inp[i]))
                               for i in range(C.PIPE_MICROBATCHES)])
    xs = C.pipeline_inputs()
    want = C.ref_pipeline(xs, w0, w1)
    return _compiled(dag, tuple(xs),
                     lambda r: C.check_close("pipeline", list(r), want, rtol=1e-3, atol=1e-3))


def setup_xfer(name):
    nbytes = C.XFER_SIZES[name]
    p, c = Worker.remote(), Worker.remote()      # killed at teardown, see above
    ray.get(p.set_buffer.remote(nbytes), timeout=120)
    with InputNode() as inp:
        dag = c.consume.bind(p.produce.bind(inp))
    want = C.ref_xfer_sum(nbytes)
    return _compiled(dag, (0,), lambda r: C.check_close(name, r, want, rtol=1e-5),
                     buffer_bytes=nbytes + (1 << 20), kill_actors=True)


SETUPS = {"echo": setup_echo, "chain4": setup_chain4,
          "scatter4": setup_scatter4, "pipeline": setup_pipeline}
SETUPS.update({n: (lambda n=n: setup_xfer(n)) for n in C.XFER_SIZES})


def _init():
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False,
             log_to_driver=False, configure_logging=False)


def main():
    args = C.parse_args()
    C.emit({"system": "ray", "version": f"ray {ray.__version__}"})
    try:
        _init()
        if args.cold:
            try:
                step, check, close = setup_echo()
                r = step()
                dt = time.time() - T0
                check(r)
                close()
                C.emit({"workload": "cold", "value": dt, "unit": "s", "steps": 1})
            except Exception as err:
                C.emit_error("cold", err)
            return
        C.run_warm(args.workloads, SETUPS)
    except Exception as err:
        for w in (["cold"] if args.cold else args.workloads):
            C.emit_error(w, err)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
