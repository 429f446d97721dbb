"""Specialisation: one trace per (shapes, dtypes, static arguments) key."""
import numpy as np

import monarch_compile as mc


def test_trace_once_per_key():
    mesh = mc.mesh(gpus=2)
    bodies = []

    @mc.compile(mesh=mesh)
    def f(x, scale):
        bodies.append(x.shape)  # runs only when tracing
        return x * scale

    a = np.zeros((4, 4), np.float32)
    f.ir("traced", a, 2.0)
    f.ir("traced", np.ones((4, 4), np.float32), 2.0)  # same key: cached
    assert f.trace_count == 1 and len(bodies) == 1
    f.ir("traced", np.zeros((8, 4), np.float32), 2.0)  # new shape: retrace
    assert f.trace_count == 2 and bodies[-1] == (8, 4)
    f.ir("traced", a.astype(np.float16), 2.0)  # new dtype: retrace
    assert f.trace_count == 3
    text = f.ir("traced", a, 3.0)  # new static argument: retrace
    assert f.trace_count == 4
    assert "3.000000e+00" in text
    f.ir("partitioned", a, 2.0)  # back to the first key: cached
    assert f.trace_count == 4 and len(bodies) == 4
    assert len(f.specializations) == 4
    # ir() without arguments is the last specialisation used.
    assert "tensor<4x4xf32>" in f.ir("traced") and "2.000000e+00" in f.ir("traced")


def test_calls_share_the_cache_with_ir():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def f(x):
        return mc.relu(x)

    x = np.zeros((2, 2), np.float32)
    try:
        f(x)
    except NotImplementedError:
        pass
    f.ir("planned", x)
    try:
        f(x)
    except NotImplementedError:
        pass
    assert f.trace_count == 1


def test_each_specialisation_is_its_own_module():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def f(x):
        return x + 1.0

    small = f.ir("traced", np.zeros((2,), np.float32))
    big = f.ir("traced", np.zeros((6,), np.float32))
    assert "tensor<2xf32>" in small and "tensor<6xf32>" not in small
    assert "tensor<6xf32>" in big and "tensor<2xf32>" not in big


def test_keyword_and_default_arguments_are_part_of_the_key():
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def f(x, scale=2.0):
        return x * scale

    a = np.zeros((2,), np.float32)
    f.trace(a)
    f.trace(a, scale=2.0)  # the default: same key
    f.trace(x=a)
    assert f.trace_count == 1
    f.trace(a, scale=4.0)
    assert f.trace_count == 2
    assert "4.000000e+00" in f.ir("traced")


def test_dump_dir_gets_every_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("MONARCH_DUMP_DIR", str(tmp_path))
    mesh = mc.mesh(gpus=2)

    @mc.compile(mesh=mesh)
    def g(x):
        return mc.relu(x)

    g.trace(np.zeros((4,), np.float32))
    # One folder per specialisation, in monarch-compile --dump-dir's layout:
    # the input, every pass numbered, every stage by name.
    assert [p.name for p in tmp_path.iterdir()] == ["g.0"]
    names = sorted(p.name for p in (tmp_path / "g.0").iterdir())
    assert names[0] == "00-input.mlir"
    assert "01-monarch-partition.mlir" in names
    assert any(n.endswith("-monarch-verify-plan.mlir") for n in names)
    for stage in mc.STAGES:
        assert f"{stage}.mlir" in names
    assert "test_cache.py" in (tmp_path / "g.0" / "traced.mlir").read_text()
    assert "monarch.plan" in (tmp_path / "g.0" / "planned.mlir").read_text()
    # A second specialisation gets its own folder.
    g.trace(np.zeros((8,), np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.0", "g.1"]


def test_stages_come_from_the_compiler():
    assert mc.STAGES == ("traced", "partitioned", "split", "planned")


def test_numpy_scalars_are_runtime_arguments():
    mesh = mc.mesh(gpus=2)

    class A(mc.Actor):
        def __init__(self):
            self.w = mc.param(np.zeros((4,), np.float32))

        @mc.endpoint
        def step(self, lr):
            self.w = self.w - lr

    a = mesh.spawn("a", A)

    @mc.compile
    def f(lr):
        a.step.broadcast(lr)

    f.trace(np.float32(0.1))
    f.trace(np.float32(0.2))  # same key: no retrace, no constant
    assert f.trace_count == 1
    text = f.ir("traced", debug_info=False)
    assert "func.func @f(%arg0: f32)" in text
    assert "monarch.broadcast @a::@step(%arg0) : f32" in text
    assert "args(%arg0 : f32)" in f.ir("split")  # rides on the control message
