"""Every tracing error names the user's file and line and shows the line.

Each offending statement below carries a `# ERR:<name>` marker; `line_of`
finds its line number in this file, so the tests check the exact position
the error reports (not just that some position is there).
"""
import traceback

import numpy as np
import pytest

import monarch_compile as mc

from _markers import marker_line, source_lines  # noqa: E402

_LINES = source_lines(__file__)


def line_of(marker):
    return marker_line(__file__, marker)


def check(excinfo, marker, cls=mc.TraceError):
    err = excinfo.value
    assert isinstance(err, cls), type(err)
    line = line_of(marker)
    message = str(err)
    assert f"{__file__}:{line}:" in message, message
    source = _LINES[line - 1].split("# ERR:")[0].strip()
    assert source in message, message  # the offending line is shown
    assert (err.file, err.line) == (__file__, line)
    # No frames of the tracer's internals in the traceback: only the user's
    # and the public entry point that raised.
    frames = traceback.extract_tb(excinfo.tb)
    library = [f for f in frames if f.filename != __file__]
    assert len(library) <= 1, frames
    assert all(f.name in PUBLIC for f in library), frames
    return message


PUBLIC = {"__call__", "ir", "trace", "plan_summary", "call", "broadcast",
          "slice", "spawn", "param", "mesh"}


def f32(*shape):
    return np.zeros(shape, np.float32)


mesh = mc.mesh(hosts=1, gpus=4)


def test_data_dependent_control_flow():
    @mc.compile(mesh=mesh)
    def f(x):
        if x.sum() > 0:  # ERR:bool
            return x
        return -x

    with pytest.raises(mc.ConcretizationError) as e:
        f.ir("traced", f32(4))
    assert "data-dependent control flow" in check(e, "bool", TypeError)


@pytest.mark.parametrize("conv,marker", [(float, "float"), (int, "int"),
                                         (np.asarray, "numpy"), ("index", "index")])
def test_conversions_to_python_or_numpy(conv, marker):
    @mc.compile(mesh=mesh)
    def f(x):
        s = x.sum()
        if conv is float:
            float(s)  # ERR:float
        elif conv is int:
            int(s)  # ERR:int
        elif conv is np.asarray:
            np.asarray(s)  # ERR:numpy
        else:
            [1, 2, 3][s]  # ERR:index
        return x

    with pytest.raises(mc.ConcretizationError) as e:
        f.ir("traced", f32(4))
    check(e, marker, TypeError)


def test_matmul_shape_mismatch():
    @mc.compile(mesh=mesh)
    def f(x, w):
        return x @ w  # ERR:matmul

    with pytest.raises(mc.ShapeError) as e:
        f.ir("traced", f32(4, 8), f32(7, 3))
    msg = check(e, "matmul", ValueError)
    assert "matmul shape mismatch: (4,8) @ (7,3)" in msg


def test_broadcast_mismatch():
    @mc.compile(mesh=mesh)
    def f(x, y):
        return x + y  # ERR:broadcast

    with pytest.raises(mc.ShapeError) as e:
        f.ir("traced", f32(4, 8), f32(3))
    assert "cannot broadcast shapes (4,8) and (3,)" in check(e, "broadcast")


def test_non_divisible_sharding():
    @mc.compile(mesh=mesh)
    def f(x):
        return mc.shard(x, gpus=0)  # ERR:divisible

    with pytest.raises(mc.ShardingError) as e:
        f.ir("traced", f32(6, 4))
    msg = check(e, "divisible", ValueError)
    assert "6 is not divisible by 4" in msg


def test_non_divisible_sharding_found_at_feed_points_at_shard():
    class A(mc.Actor):
        @mc.endpoint
        def f(self, x):
            return x

    a = mesh.spawn("a", A)

    @mc.compile
    def f(x):
        x = mc.shard(x, gpus=0)  # ERR:pending
        return a.f.call(x)

    with pytest.raises(mc.ShardingError) as e:
        f.ir("traced", f32(6, 4))
    check(e, "pending")


def test_unknown_mesh_dimension():
    @mc.compile(mesh=mesh)
    def f(x):
        return mc.shard(x, gpu=0)  # ERR:dim

    with pytest.raises(mc.MeshError) as e:
        f.ir("traced", f32(8, 4))
    msg = check(e, "dim")
    assert "has no dimension 'gpu' (its dimensions: hosts, gpus)" in msg


def test_unknown_mesh_dimension_in_slice():
    with pytest.raises(mc.MeshError) as e:
        mesh.slice(gpu=slice(0, 2))  # ERR:slice
    check(e, "slice")


def test_mesh_slice_past_its_dimension():
    # numpy would clamp gpus 2:6 of 4 to 2 ranks; a mesh refuses.
    with pytest.raises(mc.MeshError) as e:
        mesh.slice(gpus=slice(2, 6))  # ERR:past
    msg = check(e, "past")
    assert "slice 2:6 of dimension 'gpus' goes past it (size 4)" in msg
    with pytest.raises(mc.MeshError) as e:
        mesh.slice(gpus=4)  # ERR:mesh-index
    msg = check(e, "mesh-index")
    assert "index 4 of dimension 'gpus' is out of range (size 4)" in msg


def test_unknown_mesh_dimension_in_collective():
    class A(mc.Actor):
        @mc.endpoint
        def f(self, x):
            return mc.all_reduce(x, "gpu")  # ERR:collective

    a = mesh.spawn("a", A)

    @mc.compile
    def f(x):
        return a.f.call(x)

    with pytest.raises(mc.MeshError) as e:
        f.ir("traced", f32(4))
    check(e, "collective")


def test_endpoint_of_actor_not_on_a_mesh():
    class A(mc.Actor):
        @mc.endpoint
        def f(self, x):
            return x

    loose = A()

    @mc.compile(mesh=mesh)
    def f(x):
        return loose.f.call(x)  # ERR:nomesh

    with pytest.raises(mc.MeshError) as e:
        f.ir("traced", f32(4))
    msg = check(e, "nomesh")
    assert "not on a mesh" in msg and "mesh.spawn" in msg
    with pytest.raises(mc.MeshError) as e:
        loose.f.call(f32(4))  # ERR:nomesh-eager
    check(e, "nomesh-eager")


def test_unsupported_input_dtype():
    @mc.compile(mesh=mesh)
    def f(x):
        return x

    with pytest.raises(mc.UnsupportedError) as e:
        f(np.zeros(4))  # ERR:dtype
    msg = check(e, "dtype", NotImplementedError)
    assert "unsupported dtype float64" in msg and "np.float32" in msg


def test_unsupported_cast_and_ops():
    @mc.compile(mesh=mesh)
    def cast(x):
        return x.astype(np.float64)  # ERR:cast

    with pytest.raises(mc.UnsupportedError) as e:
        cast.ir("traced", f32(4))
    check(e, "cast")

    @mc.compile(mesh=mesh)
    def index(x):
        return x[x > 0]  # ERR:getitem

    with pytest.raises(mc.UnsupportedError) as e:
        index.ir("traced", f32(4))
    assert "boolean mask" in check(e, "getitem")

    @mc.compile(mesh=mesh)
    def two(x):
        return x[[0, 1], [1, 0]]  # ERR:twoarrays

    with pytest.raises(mc.UnsupportedError) as e:
        two.ir("traced", f32(2, 2))
    assert "more than one index" in check(e, "twoarrays")

    @mc.compile(mesh=mesh)
    def step(x):
        return x[::0]  # ERR:zerostep

    with pytest.raises(mc.ShapeError) as e:
        step.ir("traced", f32(4))
    assert "cannot be zero" in check(e, "zerostep")

    @mc.compile(mesh=mesh)
    def far(x):
        return x[[0, 4]]  # ERR:farlist

    with pytest.raises(mc.ShapeError) as e:
        far.ir("traced", f32(4))
    assert "index 4 is out of bounds" in check(e, "farlist")

    @mc.compile(mesh=mesh)
    def fidx(x):
        return mc.take(x, x)  # ERR:floatidx

    with pytest.raises(mc.TraceError) as e:
        fidx.ir("traced", f32(4))
    assert "integer tensor" in check(e, "floatidx")

    @mc.compile(mesh=mesh)
    def bounds(x):
        return x[4]  # ERR:bounds

    with pytest.raises(mc.ShapeError) as e:
        bounds.ir("traced", f32(4))
    assert "out of bounds" in check(e, "bounds")

    @mc.compile(mesh=mesh)
    def int_pow(x):
        return x**x  # ERR:intpow

    with pytest.raises(mc.UnsupportedError) as e:
        int_pow.ir("traced", np.zeros(4, np.int32))
    assert "unsupported op: power" in check(e, "intpow")

    @mc.compile(mesh=mesh)
    def const(x):
        return mc.arange(4) * 2  # ERR:constant

    with pytest.raises(mc.UnsupportedError) as e:
        const.ir("traced", f32(4))
    assert "computed from constants alone" in check(e, "constant")


def test_collective_outside_an_endpoint():
    @mc.compile(mesh=mesh)
    def f(x):
        return mc.all_reduce(x, "gpus")  # ERR:controller-collective

    with pytest.raises(mc.TraceError) as e:
        f.ir("traced", f32(4))
    assert "per-rank code" in check(e, "controller-collective")


def test_state_update_of_the_wrong_shape():
    class A(mc.Actor):
        def __init__(self):
            self.w = mc.param(np.zeros((4, 4), np.float32))

        @mc.endpoint
        def bad(self, x):
            self.w = x  # ERR:state

    a = mesh.spawn("a", A)

    @mc.compile
    def f(x):
        a.bad.broadcast(x)

    with pytest.raises(mc.TraceError) as e:
        f.ir("traced", f32(4))
    assert "state 'w' has type tensor<4x4xf32>" in check(e, "state")
    # The failed endpoint left nothing behind: a good trace still works.
    good = f.ir("planned", f32(4, 4))
    assert good.count("monarch.endpoint @bad(") == 1


def test_error_in_endpoint_leaves_module_clean():
    calls = []

    class A(mc.Actor):
        @mc.endpoint
        def g(self, x):
            calls.append(x.shape)
            return x @ x

    a = mesh.spawn("a", A)

    @mc.compile
    def f(x):
        return a.g.call(x)

    with pytest.raises(mc.ShapeError):
        f.ir("traced", f32(2, 3))
    text = f.ir("planned", f32(3, 3))
    assert "monarch.plan" in text and f.trace_count == 2


def test_general_reshape_in_a_compiled_function():
    # Supported now (run on whole values); a bad size is still an error at
    # the user's line.
    @mc.compile(mesh=mesh)
    def f(x):
        return x.reshape(4, 16)

    assert "tensor.expand_shape" in f.ir("traced", f32(8, 8))

    @mc.compile(mesh=mesh)
    def g(x):
        return x.reshape(5, 16)  # ERR:reshape

    with pytest.raises(mc.ShapeError) as e:
        g.ir("traced", f32(8, 8))
    assert "cannot reshape" in check(e, "reshape")


def test_a_gradient_through_a_primitive_without_a_rule_is_refused_at_its_line(
        monkeypatch):
    # Every builder operation is a primitive of one table
    # (_primitives.PRIMITIVES); one without a VJP rule that a gradient has
    # to cross raises at the user's line, naming it (never a silent zero).
    from monarch_compile._primitives import PRIMITIVES

    monkeypatch.setattr(PRIMITIVES["unary"], "vjp", None)

    @mc.compile(mesh=mesh)
    def f(w):
        def loss(w):
            return mc.exp(w).sum()  # ERR:norule
        return mc.grad(loss)(w)

    with pytest.raises(mc.UnsupportedError) as e:
        f.ir("traced", f32(4))
    assert "mc.grad: no gradient for unary" in check(e, "norule",
                                                     mc.UnsupportedError)


def test_every_builder_call_is_a_primitive():
    from monarch_compile import _trace
    from monarch_compile._primitives import PRIMITIVES

    # Each primitive names a method of the native builder, and the table
    # knows which make tensors and which carry gradients.
    for name, prim in PRIMITIVES.items():
        assert hasattr(_trace.TraceBuilder, name), name
        if prim.makes_tensors and prim._operands is not None:
            assert prim.vjp is not None or name in ("broadcast_from",
                                                    "call"), name
    with _trace.Trace("t") as t:
        with pytest.raises(mc.MonarchError, match="'made_up' has no primitive"):
            t.call("made_up")


def test_native_errors_carry_their_status():
    # The extension hands a Status over whole: its code, its kind, where the
    # user caused it and the message, with the diagnostic as its text.
    from monarch_compile._native import NativeError, TraceBuilder

    t = TraceBuilder()
    with pytest.raises(NativeError) as e:
        t.declare_mesh("m", [("gpus", 0)], ("user.py", 7, 9))
    err = e.value
    assert (err.code, err.kind) == ("InvalidArgument", "mesh")
    assert (err.file, err.line, err.col) == ("user.py", 7, 9)
    assert err.message == "mesh dimension 'gpus' has size 0; sizes must be >= 1"
    assert str(err) == f"user.py:7:9: error: {err.message}"
    # The binding's own refusals carry no location.
    with pytest.raises(NativeError) as e:
        t.unary("nope", 0, ("user.py", 1, 1))
    assert (e.value.kind, e.value.file) == ("unsupported", None)
    assert str(e.value) == "error: unsupported op 'nope'"


def test_errors_are_classed_by_kind_not_by_their_words():
    # Each kind is one class, whatever the message says: an axis out of
    # range is a ShapeError though its words name no shape.
    @mc.compile(mesh=mesh)
    def f(x, i):
        return mc.take(x, i, axis=5)  # ERR:take-axis

    with pytest.raises(mc.ShapeError) as e:
        f.ir("traced", f32(4, 4), np.zeros(2, np.int32))
    msg = check(e, "take-axis")
    assert "axis 5 is out of range for a tensor of rank 2" in msg
    from monarch_compile import errors

    assert errors.for_kind("sharding") is mc.ShardingError
    assert errors.for_kind("program") is mc.TraceError
    assert not hasattr(errors, "classify")
