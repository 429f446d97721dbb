"""The public API (docs/frontend.md, "API"), traced (not run: no executor yet).

Shapes and dtypes of traced ops are checked against numpy on real arrays of
the same shapes (an independent reference for broadcasting, reductions,
matmul, reshape and transpose).
"""
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import monarch_compile as mc

ROOT = pathlib.Path(__file__).resolve().parents[3]


def f32(*shape):
    return np.zeros(shape, np.float32)


def test_mesh_dims_and_slices():
    mesh = mc.mesh(hosts=1, gpus=4)
    assert mesh.dims == {"hosts": 1, "gpus": 4}
    sub = mesh.slice(gpus=slice(0, 2))
    assert sub.dims == {"hosts": 1, "gpus": 2}
    assert sub.parent is mesh
    assert mesh.slice(gpus=3).dims == {"hosts": 1, "gpus": 1}
    last = mesh.slice(gpus=-1)  # from the end, as numpy indexes
    assert last.dims == {"hosts": 1, "gpus": 1}
    assert mesh.slice(gpus=slice(-2, None)).dims == {"hosts": 1, "gpus": 2}
    assert mesh.size == 4
    with mc.mesh(gpus=2) as m:
        assert m.dims == {"gpus": 2}
    mesh.stop()
    mesh.stop()  # idempotent


def test_design_step_every_stage():
    mesh = mc.mesh(hosts=1, gpus=4)

    @mc.compile(mesh=mesh)
    def step(x, w):
        x = mc.shard(x, gpus=0)
        y = mc.relu(x @ w)
        return mc.replicate(y.sum(axis=0))

    x, w = f32(8, 4), f32(4, 4)
    traced = step.ir("traced", x, w, debug_info=False)
    assert "func.func @step(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4xf32>" in traced
    assert "monarch.proc_mesh @mesh(hosts = 1, gpus = 4)" in traced
    assert "split_axes = [[1]]" in traced
    assert "linalg.matmul" in traced and "linalg.reduce" in traced
    assert "monarch.fetch" in traced
    partitioned = step.ir("partitioned")
    assert 'all_reduce %' in partitioned and 'over ["gpus"] sum : tensor<4xf32>' in partitioned
    assert "tensor<2x4xf32>" in partitioned  # each rank's rows
    assert "monarch.control_msg" in step.ir("split")
    planned = step.ir("planned")
    # Two classes: rank 0 (it returns the result) and ranks 1 to 3, rank 1's
    # program and the others as members with their own communicators and
    # offsets (docs/spmd-classes.md).
    assert planned.count("monarch.rank_program rank") == 2
    assert planned.count("monarch.rank_member rank") == 2
    with pytest.raises(ValueError, match="unknown stage 'plan'"):
        step.ir("plan")

    summary = step.plan_summary()
    assert [r["rank"] for r in summary.ranks] == [0, 1, 2, 3]
    assert all(0 < r["peak_bytes"] <= r["arena_bytes"] for r in summary.ranks)
    assert summary.collectives[0]["kind"] == "all_reduce"
    assert "all_reduce" in str(summary)
    assert set(summary.peak_memory.values()) and summary.bytes_moved == {}


def test_calling_traces_then_runs():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def double(x):
        return x * 2.0

    try:
        out = double(f32(4))
    except mc.ExecutionError as err:
        # Without a monarch-worker binary (or with an extension built before
        # the executor binding) the run fails with a clear message; running
        # is tested in tests/python/runtime.
        assert "monarch-worker" in str(err)
    else:
        np.testing.assert_array_equal(out, f32(4) * 2)
    finally:
        mesh.stop()
    # The call traced the function: ir() without arguments shows it.
    assert "func.func @double(%arg0: tensor<4xf32>)" in double.ir("traced", debug_info=False)


def test_eager_endpoint_calls_are_not_supported_yet():
    class A(mc.Actor):
        @mc.endpoint
        def f(self, x):
            return x

    a = mc.mesh(gpus=2).spawn("a", A)
    with pytest.raises(mc.ExecutorUnavailableError, match="outside a compiled"):
        a.f.call(f32(4))


def test_ir_before_any_trace():
    @mc.compile
    def f(x):
        return x

    with pytest.raises(mc.MonarchError, match="has not been traced yet"):
        f.ir("traced")


def test_ir_of_a_function_without_arguments_needs_no_trace():
    mesh = mc.mesh(gpus=2)

    class Holder(mc.Actor):
        def __init__(self, w):
            self.w = mc.param(w)

        @mc.endpoint
        def get(self):
            return self.w * 2.0

    h = mesh.spawn("holder", Holder, np.ones(3, np.float32))

    @mc.compile
    def read():
        return h.get.call()

    assert "func.func @read()" in read.ir("traced")
    assert "monarch.plan" in read.ir("planned")
    assert read.trace_count == 1


def test_names_of_functions_and_actors_are_separate():
    # A compiled function may share its name with an actor mesh or a mesh
    # symbol: the actor keeps its name (its state is found by it), the
    # function gets a fresh symbol.
    mesh = mc.mesh(gpus=2)

    class Echo(mc.Actor):
        def __init__(self):
            pass

        @mc.endpoint
        def echo(self, x):
            return x

    e = mesh.spawn("echo", Echo)

    @mc.compile
    def echo(x):
        return e.echo.call(x)

    traced = echo.ir("traced", f32(4))
    assert "monarch.actor_mesh @echo" in traced
    assert "func.func @echo_fn(" in traced
    assert "monarch.plan" in echo.ir("planned")

    @mc.compile(mesh=mesh)
    def mesh_fn(x):
        return x + 1.0

    @mc.compile(mesh=mesh)
    def Echo_(x):
        return e.echo.call(x) * 2.0

    assert "func.func @mesh_fn(" in mesh_fn.ir("traced", f32(4))
    assert "func.func @Echo_(" in Echo_.ir("traced", f32(4))


def test_debug_info_locations_point_at_user_lines():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def f(x):
        return mc.exp(x)

    line = f.__wrapped__.__code__.co_firstlineno + 2
    text = f.ir("traced", f32(2, 2), debug_info=True)
    assert f'math.exp' in text
    assert f'loc("{__file__}":{line}:16)' in text  # the mc.exp(x) call
    assert "monarch_compile/" not in text  # never the library's own lines
    assert "loc(" not in f.ir("traced", debug_info=False)


def test_the_same_code_in_two_files_keeps_its_own_file():
    # Code objects compare equal across files; the location memo must not
    # give the second file the first one's name (it did, for a moment).
    source = ("import monarch_compile as mc\n"
              "def make(mesh):\n"
              "    @mc.compile(mesh=mesh)\n"
              "    def f(x):\n"
              "        return mc.exp(x)\n"
              "    return f\n")
    mesh = mc.mesh(gpus=1)
    for path in ("/models/first.py", "/models/second.py"):
        namespace = {}
        exec(compile(source, path, "exec"), namespace)
        text = namespace["make"](mesh).ir("traced", f32(2), debug_info=True)
        assert f'loc("{path}":5:16)' in text, text


def test_ir_shows_user_locations_by_default():
    # A user reading the dump of any stage finds their own file:line in it
    # without asking; debug_info=False drops every location.
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def f(x):
        y = mc.shard(x, gpus=0)
        return mc.replicate(mc.exp(y).sum(axis=0))

    first = f.__wrapped__.__code__.co_firstlineno
    name = pathlib.Path(__file__).name  # test_api.py
    for stage in mc.STAGES:
        text = f.ir(stage, f32(4, 2))
        lines = {int(n) for n in re.findall(rf'{re.escape(name)}":(\d+):\d+\)', text)}
        assert {first + 2, first + 3} <= lines, (stage, lines)  # shard, exp
        bare = f.ir(stage, debug_info=False)
        assert name not in bare and "loc(" not in bare, stage


@pytest.mark.parametrize("a,b", [((8, 4), (4,)), ((8, 1), (1, 4)), ((3, 1, 5), (4, 1)),
                                 ((2, 3), ()), ((5,), (5,))])
def test_broadcasting_matches_numpy(a, b):
    mesh = mc.mesh(gpus=1)
    expected = (np.zeros(a, np.float32) + np.zeros(b, np.float32)).shape
    seen = {}

    @mc.compile(mesh=mesh)
    def f(x, y):
        for op in (x + y, x - y, x * y, x / y, mc.maximum(x, y), y * x):
            seen.setdefault("shapes", []).append(op.shape)
        return (x + y) * 2.0

    f.ir("planned", f32(*a), f32(*b))
    assert set(seen["shapes"]) == {expected}


def test_tensor_ops_shapes_and_dtypes_match_numpy():
    mesh = mc.mesh(gpus=2)
    xs = np.zeros((4, 6), np.float32)
    ws = np.zeros((6, 8), np.float32)
    got = {}

    @mc.compile(mesh=mesh)
    def f(x, w):
        h = x @ w
        got["matmul"] = h.shape
        got["sum0"] = h.sum(axis=0).shape
        got["mean1k"] = h.mean(axis=1, keepdims=True).shape
        got["maxall"] = h.max().shape
        got["min01"] = mc.min(h, axis=(0, 1)).shape
        got["reshape"] = h.reshape(4, 1, 8).shape
        got["T"] = h.T.shape
        got["transpose"] = mc.transpose(h.reshape(4, 1, 8), (2, 0, 1)).shape
        got["softmax"] = mc.softmax(h, axis=-1).shape
        got["cmp"] = (h > 0.5).dtype
        got["where"] = mc.where(h > 0, h, 0.0).shape
        got["f16"] = h.astype(mc.float16).dtype
        got["bf16"] = mc.astype(h, "bfloat16").dtype
        got["i32"] = h.astype(np.int32).dtype
        u = mc.gelu(mc.tanh(mc.exp(mc.sigmoid(mc.log(mc.sqrt(mc.abs(-h)))))))
        got["unary"] = u.shape
        got["pow"] = (u ** 2.0).shape
        return u

    f.ir("planned", xs, ws)
    h = xs @ ws
    assert got["matmul"] == h.shape
    assert got["sum0"] == h.sum(axis=0).shape
    assert got["mean1k"] == h.mean(axis=1, keepdims=True).shape
    assert got["maxall"] == h.max(keepdims=False).shape == ()
    assert got["min01"] == h.min(axis=(0, 1)).shape
    assert got["reshape"] == h.reshape(4, 1, 8).shape
    assert got["T"] == h.T.shape
    assert got["transpose"] == np.transpose(h.reshape(4, 1, 8), (2, 0, 1)).shape
    assert got["softmax"] == h.shape
    assert got["cmp"] == "bool"
    assert got["where"] == h.shape
    assert (got["f16"], got["bf16"], got["i32"]) == ("float16", "bfloat16", "int32")
    assert got["unary"] == got["pow"] == h.shape
    text = f.ir("traced")
    for op in ("math.exp", "math.tanh", "math.log", "math.sqrt", "math.absf"):
        assert op in text, op


def test_inputs_array_like_and_dlpack():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def f(x):
        return x + 1.0

    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.zeros((2, 3), np.float32)

    class DLPackOnly:
        def __init__(self):
            self.a = np.zeros((5,), np.float16)

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    assert "tensor<2x3xf32>" in f.ir("traced", ArrayLike())
    assert "tensor<5xf16>" in f.ir("traced", DLPackOnly())


def test_actor_pipeline_of_the_design():
    mesh = mc.mesh(hosts=1, gpus=4)

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

    s0 = mesh.slice(gpus=slice(0, 2)).spawn("s0", Stage, np.ones((4, 4), np.float32))
    s1 = mesh.slice(gpus=slice(2, 4)).spawn("s1", Stage, np.ones((4, 4), np.float32))
    assert isinstance(s0.w, mc.Param) and s0.w.shape == (4, 4)
    assert s0.mesh.dims == {"hosts": 1, "gpus": 2}

    @mc.compile
    def pipeline(x):
        return s1.forward.call(s0.forward.call(x))

    @mc.compile
    def train(x, g):
        s0.update.broadcast(g, 0.1)
        return s0.forward.call(x)

    traced = pipeline.ir("traced", f32(8, 4))
    assert traced.count("monarch.actor_class @Stage") == 1  # shared by both stages
    assert "monarch.actor_mesh @s0 = @Stage on" in traced
    assert "monarch.actor_mesh @s1 = @Stage on" in traced
    assert "monarch.transfer" in traced
    assert "monarch.send" in pipeline.ir("planned")
    spec = train.trace(f32(8, 4), f32(4, 4))
    values = spec.state_values()
    assert set(values) == {("s0", "w")}
    assert np.array_equal(values[("s0", "w")], np.ones((4, 4), np.float32))
    assert set(spec.meshes) == {"mesh", "mesh_gpus0_2"}
    t = train.ir("traced", f32(8, 4), f32(4, 4))
    assert 'all_reduce %arg0 over ["gpus"] sum' in t
    assert "state_set @w" in t
    assert "monarch.broadcast @s0::@update" in t
    train.ir("planned")
    with pytest.raises(NotImplementedError):
        s0.forward.call(f32(8, 4))  # eager call: needs the executor


def test_endpoint_out_and_sharded_arguments():
    mesh = mc.mesh(gpus=4)

    class Rows(mc.Actor):
        def __init__(self, w):
            self.w = mc.param(w, gpus=1)  # column shard per rank

        @mc.endpoint(out={"gpus": 1})
        def cols(self, x):
            return x @ self.w

        @mc.endpoint(out="sum")
        def partial(self, x):
            return x.sum(axis=0)

        @mc.endpoint(out=(None, {"gpus": 0}))
        def both(self, x):
            return mc.all_gather(x, "gpus", axis=0), x

    r = mesh.spawn("r", Rows, np.zeros((4, 8), np.float32))

    @mc.compile(mesh=mesh)
    def f(x):
        y = r.cols.call(x)
        xs = mc.shard(x, gpus=0)
        p = r.partial.call(xs)
        g, same = r.both.call(xs)
        assert (y.shape, p.shape, g.shape, same.shape) == ((8, 8), (4,), (8, 4), (8, 4))
        return y, p, g, same

    text = f.ir("traced", f32(8, 4), debug_info=False)
    assert "monarch.state @w : tensor<4x2xf32>" in text
    assert 'monarch.endpoint @cols(%arg0: tensor<8x4xf32>) -> (tensor<8x2xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>})' in text
    assert '-> (tensor<4xf32> {monarch.dist = #monarch.dist<[[]] partial sum>})' in text
    assert 'tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}' in text
    assert "all_gather %arg0 over [\"gpus\"] axis 0 : tensor<2x4xf32> -> tensor<8x4xf32>" in text


def test_same_endpoint_traced_per_argument_shape():
    mesh = mc.mesh(gpus=2)

    class A(mc.Actor):
        @mc.endpoint
        def neg(self, x):
            return -x

    a = mesh.spawn("a", A)

    @mc.compile
    def f(x, y):
        return a.neg.call(x), a.neg.call(y), a.neg.call(x)

    text = f.ir("traced", f32(4), f32(2, 2), debug_info=False)
    assert "monarch.endpoint @neg(%arg0: tensor<4xf32>)" in text
    assert "monarch.endpoint @neg_1(%arg0: tensor<2x2xf32>)" in text
    assert text.count("monarch.endpoint") == 2


@pytest.mark.parametrize("script", ["data_parallel.py", "tensor_parallel.py", "pipeline.py",
                                    "train_mlp.py"])
def test_design_programs_print_every_stage(script):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / script)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for stage in mc.STAGES:
        assert f"stage {stage}" in out.stdout or f"stage: {stage}" in out.stdout
    assert "monarch.plan @" in out.stdout
    assert "not run:" not in out.stdout  # the programs ran on local workers


def test_two_dimensional_mesh_and_slice_as_default_mesh(monkeypatch):
    mesh = mc.mesh(hosts=2, gpus=2)

    @mc.compile(mesh=mesh)
    def f(x, w):
        x = mc.shard(x, hosts=0, gpus=1)
        return mc.replicate(mc.relu(x @ w).sum(axis=0))

    @mc.compile(mesh=mesh)
    def both(x):
        # One dimension over two mesh dimensions: the own partitioner (the
        # default) splits it; with the upstream one, which crashes on it,
        # it is refused with a clear error instead.
        return mc.replicate(mc.shard(x, hosts=0, gpus=0) + 1.0)

    @mc.compile(mesh=mesh.slice(hosts=1))
    def g(x):
        return mc.replicate(mc.shard(x, gpus=0) * 2.0)

    assert "split_axes = [[0], [1]]" in f.ir("traced", f32(8, 4), f32(4, 4))
    assert "split_axes = [[0, 1]]" in both.ir("traced", f32(8, 4))
    monkeypatch.setenv("MONARCH_PARTITION_ENGINE", "upstream")
    with pytest.raises(mc.UnsupportedError, match="several mesh dimensions"):
        both.ir("traced", f32(8, 5))
    monkeypatch.delenv("MONARCH_PARTITION_ENGINE")
    text = g.ir("traced", f32(8, 4))
    assert "monarch.mesh_slice @mesh_hosts1_2 of @mesh(hosts = 1 to 2, gpus = 0 to 2)" in text
    assert "monarch.feed %arg0 to @mesh_hosts1_2" in text
    for fn in (f, g):
        assert fn.ir("planned").count("monarch.rank_program") in (2, 4)


def test_general_reshape_inside_endpoints():
    mesh = mc.mesh(gpus=2)
    shapes = []

    class R(mc.Actor):
        @mc.endpoint
        def flip(self, x):
            y = x.reshape(2, -1)
            shapes.append(y.shape)
            return y.reshape(-1)

    r = mesh.spawn("r", R)

    @mc.compile
    def f(x):
        return r.flip.call(x)

    text = f.ir("traced", f32(4, 3))
    assert shapes == [np.zeros((4, 3)).reshape(2, -1).shape]
    assert "tensor.collapse_shape" in text and "tensor.expand_shape" in text
    assert "func.func @f(%arg0: tensor<4x3xf32>" in text and "-> tensor<12xf32>" in text
    assert "monarch.plan" in f.ir("planned")


def test_planned_for_the_nccl_backend_and_inline_sibling_endpoints():
    mesh = mc.mesh(gpus=2)

    class A(mc.Actor):
        @mc.endpoint
        def double(self, x):
            return x * 2.0

        @mc.endpoint
        def quad(self, x):
            y = self.double(self.double(x))  # per-rank code, inlined
            return mc.all_reduce(y, "gpus", "avg")

    a = mesh.spawn("a", A)

    @mc.compile
    def f(x):
        return a.quad.call(x)

    traced = f.ir("traced", f32(4))
    assert "monarch.endpoint @quad" in traced and "@double" not in traced
    assert traced.count("arith.mulf") == 2
    assert "backend nccl" in f.ir("planned", backend="nccl")
    assert "backend gloo" in f.ir("planned")
    with pytest.raises(mc.TraceError, match="unknown backend 'mpi'"):
        f.ir("planned", backend="mpi")
