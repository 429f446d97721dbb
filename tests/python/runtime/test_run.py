"""Calling @mc.compile functions runs them on local monarch-worker processes
(docs/frontend.md, "API"): numerics against numpy, actor state across calls,
plan reuse, errors as Python exceptions, and no process left behind."""
import os
import pathlib
import signal
import time

import numpy as np
import pytest


from _procs import require_workers  # noqa: E402

WORKER = require_workers()

import monarch_compile as mc  # noqa: E402
from monarch_compile import _runtime  # noqa: E402

from _procs import worker_children  # noqa: E402


def rand(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


def test_data_parallel_step_matches_numpy():
    rng = np.random.default_rng(0)
    with mc.mesh(hosts=1, gpus=4) as mesh:
        @mc.compile(mesh=mesh)
        def step(x, w):
            x = mc.shard(x, gpus=0)
            y = mc.relu(x @ w)
            return mc.replicate(y.sum(axis=0))

        np_x, np_w = rand(rng, 8, 4), rand(rng, 4, 4)
        out = step(np_x, np_w)
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
        np.testing.assert_allclose(out, np.maximum(np_x @ np_w, 0).sum(axis=0),
                                   rtol=1e-5, atol=1e-5)
        # New inputs, same specialisation: the compiled plan is reused.
        np_x2 = rand(rng, 8, 4)
        out2 = step(np_x2, np_w)
        np.testing.assert_allclose(out2, np.maximum(np_x2 @ np_w, 0).sum(axis=0),
                                   rtol=1e-5, atol=1e-5)
        assert step.trace_count == 1
        assert len(worker_children()) == 4
    assert worker_children() == []


def test_a_saved_plan_runs_under_monarch_run(tmp_path):
    """`fn.save_plan(path, *args)` writes the native Plan's bytes, the
    .mcplan file: monarch-run runs it on its own workers (its first
    controller program is the function) and computes what the call did."""
    import subprocess
    build = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", "build"))
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def affine(x):
            return mc.replicate(mc.shard(x, gpus=0) * 3.0 + 1.0)

        x = np.arange(8, dtype=np.float32).reshape(4, 2)
        np.testing.assert_array_equal(affine(x), x * 3 + 1)
        spec = affine._last
        plan = _runtime._compile(affine, spec, spec.trace.name)
        path = affine.save_plan(tmp_path / "f.mcplan", x)
    data = plan.to_bytes()
    assert isinstance(data, bytes) and len(data) > 0
    assert path.read_bytes() == data
    np.save(tmp_path / "x.npy", x)
    out = subprocess.run(
        [str(build / "bin" / "monarch-run"), str(path), "--inputs",
         str(tmp_path / "x.npy"), "--outputs", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "output0.npy"), x * 3 + 1)


def _count_compiles(monkeypatch):
    compiles = []
    real = _runtime._compile

    def counting(compiled, spec, program):
        compiles.append(program)
        return real(compiled, spec, program)

    monkeypatch.setattr(_runtime, "_compile", counting)
    return compiles


def test_calling_twice_reuses_the_compiled_plan(monkeypatch):
    compiles = _count_compiles(monkeypatch)
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def double(x):
            return x * 2.0, x + 1.0

        rng = np.random.default_rng(3)
        for _ in range(3):
            x = rand(rng, 2, 3)
            a, b = double(x)
            np.testing.assert_array_equal(a, x * 2)
            np.testing.assert_array_equal(b, x + 1)
        assert compiles == ["double"]


def test_a_second_specialisation_runs_beside_the_first(monkeypatch):
    compiles = _count_compiles(monkeypatch)
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def double(x):
            return x * 2.0, x + 1.0

        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(double(x)[0], x * 2)
        y = np.ones((4,), np.float32)
        np.testing.assert_array_equal(double(y)[0], y * 2)
        np.testing.assert_array_equal(double(x)[1], x + 1)
        assert compiles == ["double", "double__spec1"]


class Stage(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def forward(self, x):
        return mc.relu(x @ self.w)

    @mc.endpoint
    def update(self, g, lr):
        g = mc.all_reduce(g, "gpus")
        self.w = self.w - lr * g


class OneRankGroups(mc.Actor):
    """Collectives over "gpus", of one rank here, beside one over "hosts"."""

    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def step(self, x):
        g = mc.all_reduce(x @ self.w, "gpus", "avg")
        rows = mc.all_gather(g, "gpus", 0)
        part = mc.reduce_scatter(rows, "gpus", 0, "sum")
        return mc.all_reduce(part, "hosts", "sum")


def test_collectives_over_one_rank_groups_are_their_inputs():
    # On hosts=2, gpus=1 every "gpus" group is one rank: the compiler drops
    # those collectives (no communicator is planned for them) and the
    # result is still numpy's.
    rng = np.random.default_rng(5)
    w = rand(rng, 4, 3)
    with mc.mesh(hosts=2, gpus=1) as mesh:
        actor = mesh.spawn("one", OneRankGroups, w)

        @mc.compile(mesh=mesh)
        def f(x):
            return actor.step.call(mc.shard(x, hosts=0))

        x = rand(rng, 6, 4)
        out = f(x)
        want = x[:3] @ w + x[3:] @ w
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        # Each of the 2 ranks' plans keeps its "hosts" all_reduce only.
        planned = f.ir("planned", x)
        assert planned.count("monarch.collective all_reduce") == 2, planned
        assert "all_gather" not in planned.split("monarch.plan", 1)[1]


def test_pipeline_of_actors_and_state_across_calls():
    rng = np.random.default_rng(1)
    w0, w1 = rand(rng, 4, 4), rand(rng, 4, 4)
    with mc.mesh(hosts=1, gpus=4) as mesh:
        s0 = mesh.slice(gpus=slice(0, 2)).spawn("s0", Stage, w0)
        s1 = mesh.slice(gpus=slice(2, 4)).spawn("s1", Stage, w1)

        @mc.compile
        def pipeline(x):
            return s1.forward.call(s0.forward.call(x))

        @mc.compile
        def update(g0, g1):
            s0.update.broadcast(g0, 0.25)
            s1.update.broadcast(g1, 0.25)

        def ref(x, a, b):
            return np.maximum(np.maximum(x @ a, 0) @ b, 0)

        x = rand(rng, 8, 4)
        np.testing.assert_allclose(pipeline(x), ref(x, w0, w1), rtol=1e-5,
                                   atol=1e-5)
        g0, g1 = rand(rng, 4, 4), rand(rng, 4, 4)
        assert update(g0, g1) is None
        # Each stage's gradient is all-reduced over its 2 ranks (summed).
        w0 = w0 - 0.25 * 2 * g0
        w1 = w1 - 0.25 * 2 * g1
        np.testing.assert_allclose(pipeline(x), ref(x, w0, w1), rtol=1e-4,
                                   atol=1e-4)
        assert update(g0, g1) is None
        w0 = w0 - 0.25 * 2 * g0
        w1 = w1 - 0.25 * 2 * g1
        np.testing.assert_allclose(pipeline(x), ref(x, w0, w1), rtol=1e-4,
                                   atol=1e-4)
        ctl = _runtime.controller_of(mesh)
        dtype, shape, data = ctl.get_actor_state("@s1::@w", 3)
        got = np.frombuffer(data, dtype=dtype).reshape(shape)
        np.testing.assert_allclose(got, w1, rtol=1e-5, atol=1e-5)


class Rows(mc.Actor):
    def __init__(self, k):
        self.k = np.float32(k)

    @mc.endpoint(out={"hosts": 0})
    def scale(self, x):
        return x * self.k + 1.0


def test_split_values_cross_between_slices_as_shards():
    # A value split over "hosts" crosses between actor meshes where "hosts"
    # has the same size as shards (issue 15): each rank receives the rows it
    # needs from a rank holding them, with no all_gather to the whole value
    # anywhere. One holder to two receivers (one of them itself, the slices
    # overlap) and back, two holders to one receiver.
    rng = np.random.default_rng(3)
    x = rand(rng, 8, 3)
    with mc.mesh(hosts=2, gpus=2) as mesh:
        a = mesh.slice(gpus=slice(0, 1)).spawn("a", Rows, 2.0)
        b = mesh.spawn("b", Rows, 3.0)

        @mc.compile(mesh=mesh)
        def f(x):
            y = a.scale.call(mc.shard(x, hosts=0))
            z = b.scale.call(y)
            return a.scale.call(z)

        want = ((x * 2 + 1) * 3 + 1) * 2 + 1
        np.testing.assert_allclose(f(x), want, rtol=1e-6)
        planned = f.ir("planned", x)
        assert "all_gather" not in planned
        plan = planned[planned.index("monarch.rank_program"):
                       planned.index("func.func @f(")]
        # A program per rank, or per class and a member per other rank.
        assert (plan.count("monarch.rank_program") +
                plan.count("monarch.rank_member")) == 4
        assert "tensor<8x3xf32>" not in plan


class Sharded(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w, gpus=1)          # columns split over "gpus"

    @mc.endpoint(out={"gpus": 1})
    def forward(self, x):
        return x @ self.w


def test_sharded_param_is_set_per_rank():
    rng = np.random.default_rng(2)
    w = rand(rng, 4, 8)
    with mc.mesh(gpus=4) as mesh:
        a = mesh.spawn("a", Sharded, w)

        @mc.compile
        def fwd(x):
            return a.forward.call(x)

        x = rand(rng, 3, 4)
        np.testing.assert_allclose(fwd(x), x @ w, rtol=1e-5, atol=1e-5)
        dtype, shape, data = _runtime.controller_of(mesh).get_actor_state(
            "@a::@w", 2)
        np.testing.assert_array_equal(
            np.frombuffer(data, dtype=dtype).reshape(shape), w[:, 4:6])


def test_calling_a_stopped_mesh_is_a_clear_error():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def inc(x):
        return x + 1.0

    x = np.zeros(4, np.float32)
    np.testing.assert_array_equal(inc(x), x + 1)
    mesh.stop()
    assert worker_children() == []
    with pytest.raises(mc.ExecutionError, match="was stopped") as err:
        inc(x)
    assert isinstance(err.value, RuntimeError)


def test_a_killed_worker_raises_naming_the_rank():
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def inc(x):
            return x + 1.0

        x = np.zeros(4, np.float32)
        inc(x)
        pid = _runtime.controller_of(mesh).worker_pid(1)
        assert pid > 0
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        with pytest.raises(mc.ExecutionError, match="rank 1") as err:
            while time.monotonic() < deadline:
                inc(x)
                time.sleep(0.05)
        assert isinstance(err.value, RuntimeError)
    assert worker_children() == []


SCRIPT = '''
import os, sys
import numpy as np
import monarch_compile as mc
from monarch_compile import _runtime

mesh = mc.mesh(gpus=2)

@mc.compile(mesh=mesh)
def step(x, w):
    x = mc.shard(x, gpus=0)
    return mc.replicate(mc.relu(x @ w).sum(axis=0))

ctl = None
try:
    step(np.ones((8, 4), np.float32), np.ones((4, 4), np.float32))
except mc.ExecutionError as err:
    print("ERROR", type(err).__name__, isinstance(err, RuntimeError), err)
ctl = _runtime.controller_of(mesh)
if ctl is not None and ctl.running():
    print("PIDS", *[ctl.worker_pid(r) for r in range(2)])
sys.stdout.flush()
# No mesh.stop(): interpreter exit must stop the workers.
'''


def _run_script(tmp_path, env_extra):
    import subprocess
    import sys
    script = tmp_path / "user_program.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, **env_extra)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pathlib.Path(mc.__file__).parents[1]),
         env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(script)], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return script, out.stdout


def _gone(pid):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_interpreter_exit_stops_the_workers(tmp_path):
    _, stdout = _run_script(tmp_path, {})
    assert "ERROR" not in stdout
    pids = [int(p) for p in stdout.split("PIDS")[1].split()]
    assert len(pids) == 2 and all(p > 0 for p in pids)
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids), "workers outlived the interpreter"


def test_a_worker_error_names_the_rank_the_op_and_the_user_line(tmp_path):
    script, stdout = _run_script(
        tmp_path, {"MONARCH_FAULT_INJECT": "raise:0:2"})
    line = next(l for l in stdout.splitlines() if l.startswith("ERROR"))
    assert line.startswith("ERROR ExecutionError True rank ")
    assert "launch @step.worker.mesh" in line
    # The failing kernel is located at a line of step's body (11: the
    # sharded x the kernel starts from, 12: the matmul, relu and sum).
    assert f"({script}:11:" in line or f"({script}:12:" in line
    assert "injected fault" in line


def test_scalar_arguments_and_result_dtypes():
    rng = np.random.default_rng(4)
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def f(x, lr, k):
            y = x * lr
            return y, k * 2, k.astype(mc.float32) + y.sum(axis=0)

        x = rand(rng, 4, 3)
        k = np.arange(3, dtype=np.int32)
        for lr in (np.float32(0.5), np.float32(-2.0)):
            y, k2, s = f(x, lr, k)
            np.testing.assert_allclose(y, x * lr, rtol=1e-6)
            assert k2.dtype == np.int32
            np.testing.assert_array_equal(k2, k * 2)
            np.testing.assert_allclose(s, k + (x * lr).sum(axis=0), rtol=1e-5,
                                       atol=1e-5)
            assert y.flags.writeable and y.flags.c_contiguous
        assert f.trace_count == 1


def test_boolean_results():
    # Booleans cross every boundary as one byte per element (numpy's bool);
    # kernels widen i1 arguments to i8 (docs/kernels.md, ABI).
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def positive(x):
            return x > 0.0

        x = np.array([[1, -1, 2], [-3, 4, 5], [6, -7, 8], [9, 10, -11]],
                     np.float32)
        r = positive(x)
        assert r.dtype == np.bool_
        np.testing.assert_array_equal(r, x > 0)


def test_a_missing_worker_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MONARCH_WORKER_BIN", str(tmp_path / "no-such-worker"))
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def inc(x):
            return x + 1.0

        start = time.monotonic()
        with pytest.raises(mc.ExecutionError, match="no-such-worker"):
            inc(np.zeros(4, np.float32))
        assert time.monotonic() - start < 10
    assert worker_children() == []


@pytest.mark.parametrize("policy", ["batch", "normal", "auto"])
def test_workers_run_under_the_scheduling_policy_asked_for(monkeypatch,
                                                           policy):
    # MONARCH_WORKER_SCHED (docs/executor.md): every thread of every worker
    # (they inherit it from the main thread); `auto` is batch when the two
    # workers and the controller outnumber the cores.
    monkeypatch.setenv("MONARCH_WORKER_SCHED", policy)
    cores = len(os.sched_getaffinity(0))
    batch = policy == "batch" or (policy == "auto" and 2 + 1 > cores)
    with mc.mesh(gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def inc(x):
            return x + 1.0

        np.testing.assert_array_equal(inc(np.zeros(4, np.float32)),
                                      np.ones(4, np.float32))
        pids = worker_children()
        assert len(pids) == 2
        for pid in pids:
            threads = os.listdir(f"/proc/{pid}/task")
            assert len(threads) > 1
            for tid in threads:
                assert os.sched_getscheduler(int(tid)) == (
                    os.SCHED_BATCH if batch else os.SCHED_OTHER), (pid, tid)


class Holder(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def total(self):
        return self.w.sum()


def test_a_parameter_above_the_message_limit_is_refused_and_the_mesh_lives(
        monkeypatch):
    # The workers' frames of a separate (TCP) connection take the limit;
    # the controller refuses the write before sending anything, instead of
    # the worker dropping the connection (which read as a lost rank).
    monkeypatch.setenv("MONARCH_MAX_MESSAGE_BYTES", "65536")
    monkeypatch.setenv("MONARCH_LOCAL_CONTROL", "0")
    with mc.mesh(gpus=2) as mesh:
        big = mesh.spawn("big", Holder, np.ones(32768, np.float32))
        small = mesh.spawn("small", Holder, np.ones(4, np.float32))

        @mc.compile
        def total_big():
            return big.total.call()

        @mc.compile
        def total_small():
            return small.total.call()

        with pytest.raises(mc.ExecutionError,
                           match="MONARCH_MAX_MESSAGE_BYTES"):
            total_big()
        assert float(total_small()) == 4.0
