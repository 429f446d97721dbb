"""Regression tests for wrong numbers and internal errors found by trying
ordinary programs (issue 13) and by the differential fuzzer (tests/fuzz):
each runs end to end on real workers and is compared with numpy."""

import numpy as np
import pytest

from _procs import rand, require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402




@pytest.mark.parametrize("m,k,n", [(8, 8, 8), (12, 12, 12), (33, 33, 33),
                                   (16, 16, 20), (64, 30, 20), (16, 16, 16)])
def test_two_matmul_results_of_one_kernel(meshes, m, k, n):
    # Both products share one CSE'd zero-filled init in one fused kernel;
    # the second used to come back as the first.
    rng = np.random.default_rng(m * 1000 + n)
    x, w1, w2 = rand(rng, m, k), rand(rng, k, n), rand(rng, k, n)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x, w1, w2):
        return x @ w1, x @ w2

    a, b = f(x, w1, w2)
    np.testing.assert_allclose(a, x @ w1, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, x @ w2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("gpus", [1, 4])
def test_matmul_and_its_input_as_results(meshes, gpus):
    rng = np.random.default_rng(gpus)
    x, w1, w2 = rand(rng, 8, 8), rand(rng, 8, 8), rand(rng, 8, 8)

    @mc.compile(mesh=meshes(gpus=gpus))
    def f(x, w1, w2):
        h0 = x @ w1
        return mc.replicate(mc.relu(h0) @ w2), mc.replicate(h0)

    y, h = f(x, w1, w2)
    np.testing.assert_allclose(h, x @ w1, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, np.maximum(x @ w1, 0) @ w2, rtol=1e-4,
                               atol=1e-4)


def test_python_scalars_promote_as_numpy_does(meshes):
    # NEP 50: a Python float meeting an int32 tensor computes in float.
    x = np.array([-7, 7, 3], np.int32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return x * 2.5, x + 0.5, x * 2.0, x * 2, 1.5 - x

    got = f(x)
    want = (x * 2.5, x + 0.5, x * 2.0, x * 2, 1.5 - x)
    for g, w in zip(got, want):
        assert g.dtype == (np.int32 if w.dtype == np.int64 or
                           w.dtype == np.int32 else np.float32)
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_integer_division_is_true_floor_and_remainder(meshes):
    a = np.array([-7, 7, -7, 7, 5, 0, -2147483648], np.int32)
    b = np.array([2, -2, -2, 2, 0, 3, -1], np.int32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(a, b):
        return a / b, a // b, a % b, a // 2, a % 3

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        want = (a / b, a // b, a % b, a // 2, a % 3)
    got = f(a, b)
    assert got[0].dtype == np.float32
    np.testing.assert_allclose(got[0], want[0].astype(np.float32), rtol=1e-6)
    for g, w in zip(got[1:], want[1:]):
        assert g.dtype == np.int32
        np.testing.assert_array_equal(g, w)


def test_float_floor_division_and_remainder(meshes):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(16) * 5).astype(np.float32)
    y = np.where(rng.random(16) < 0.5, -1.5, 2.25).astype(np.float32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x, y):
        return x // y, x % y

    q, r = f(x, y)
    np.testing.assert_allclose(q, x // y, rtol=1e-6)
    np.testing.assert_allclose(r, x % y, rtol=1e-5, atol=1e-5)


def test_data_parallel_loss_of_a_0d_value(meshes):
    # A 0-d sharding printed as `split_axes = []` did not parse again.
    rng = np.random.default_rng(5)
    x, w, t = rand(rng, 8, 4), rand(rng, 4, 3), rand(rng, 8, 3)

    @mc.compile(mesh=meshes(gpus=4))
    def loss(x, w, t):
        err = mc.shard(x, gpus=0) @ w - mc.shard(t, gpus=0)
        return mc.replicate((err**2).mean())

    np.testing.assert_allclose(loss(x, w, t), ((x @ w - t) ** 2).mean(),
                               rtol=1e-5)
    assert "split_axes = []" not in loss.ir("traced")


def test_two_dimensional_mesh_shardings(meshes):
    # Each used to end in "the IR at the end of stage 'planned' does not
    # verify": upstream resharding changes one grid axis per step.
    rng = np.random.default_rng(7)
    x, w, b = rand(rng, 8, 8), rand(rng, 8, 16), rand(rng, 16)
    x12 = rand(rng, 12, 8)
    mesh = meshes(hosts=2, gpus=2)

    @mc.compile(mesh=mesh)
    def mlp(x, w):
        return mc.replicate(mc.relu(mc.shard(x, hosts=0) @ mc.shard(w, gpus=1)))

    @mc.compile(mesh=mesh)
    def scale(x):
        return mc.replicate(mc.shard(x, hosts=0, gpus=1) * 2)

    @mc.compile(mesh=mesh)
    def bias(x, w, b):
        return mc.shard(x, hosts=0) @ mc.shard(w, gpus=1) + b

    @mc.compile(mesh=mesh)
    def transposed(x):
        return mc.shard(x, hosts=0, gpus=1).T

    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mlp(x, w), np.maximum(x @ w, 0), **tol)
    np.testing.assert_allclose(scale(x), x * 2, **tol)
    np.testing.assert_allclose(bias(x, w, b), x @ w + b, **tol)
    np.testing.assert_allclose(transposed(x12), x12.T, **tol)


@pytest.mark.parametrize("root", [0, 1])
def test_broadcast_over_one_dimension_of_a_2d_mesh(meshes, root):
    # Each "gpus" group of a 2x2 mesh has its own root; the worker took the
    # plan's root (a position in the communicator) for a mesh rank.
    mesh = meshes(hosts=2, gpus=2)

    class B(mc.Actor):
        @mc.endpoint(out={"hosts": 0, "gpus": 1})
        def bcast(self, x):
            return mc.broadcast(x, "gpus", root=root)

    actor = mesh.spawn(f"bcast{root}", B)

    @mc.compile
    def f(x):
        return actor.bcast.call(mc.shard(x, mesh=mesh, hosts=0, gpus=1))

    x = np.arange(2 * 2 * 3, dtype=np.float32).reshape(2, 2, 3)
    want = np.repeat(x[:, root:root + 1, :], 2, axis=1)
    np.testing.assert_array_equal(f(x), want)


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_reshape_in_compiled_functions(meshes, gpus):
    # Splitting and merging dimensions, of replicated and sharded values
    # (attention heads): upstream partitioning has no rule for it, so
    # monarch-partition runs it on whole values.
    rng = np.random.default_rng(gpus)
    b, t, h, dh = 2, 4, 2, 3
    x = rand(rng, b * t, h * dh)

    @mc.compile(mesh=meshes(gpus=gpus))
    def f(x):
        heads = mc.shard(x, gpus=0).reshape(b, t, h, dh).transpose(0, 2, 1, 3)
        merged = heads.transpose(0, 2, 1, 3).reshape(b * t, h * dh)
        return (mc.replicate(heads), mc.replicate(merged * 2),
                x.reshape(-1), (x + 1).reshape(h * dh, b * t).sum(axis=0))

    heads, merged, flat, sums = f(x)
    want = x.reshape(b, t, h, dh).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(heads, want, rtol=1e-6)
    np.testing.assert_allclose(merged, x * 2, rtol=1e-6)
    np.testing.assert_allclose(flat, x.reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(sums, (x + 1).reshape(h * dh, b * t).sum(axis=0),
                               rtol=1e-5)


def test_reductions_and_softmax_of_integers_and_booleans(meshes):
    # numpy's dtypes: mean and softmax of integers are float, a sum of
    # booleans counts, max of booleans is a boolean.
    x = np.arange(-4, 4, dtype=np.int32).reshape(2, 4)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x):
        xs = mc.shard(x, gpus=0)
        b = xs > 0
        return (mc.replicate(xs.mean(axis=1)), mc.replicate(b.sum(axis=0)),
                mc.replicate(b.max(axis=1)), mc.replicate(mc.softmax(xs, axis=1)),
                x.mean())

    mean, count, anyp, soft, total = f(x)
    b = x > 0
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert mean.dtype == np.float32 and count.dtype == np.int32
    assert anyp.dtype == np.bool_
    np.testing.assert_allclose(mean, x.mean(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(count, b.sum(axis=0))
    np.testing.assert_array_equal(anyp, b.max(axis=1))
    np.testing.assert_allclose(soft, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(total, x.mean(), rtol=1e-6)


@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (4, 5)), ((4,), (4, 5)),
                                   ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 1, 3, 4), (5, 4, 6)),
                                   ((2, 2, 3, 4), (2, 2, 4, 3))])
def test_matmul_of_every_rank(meshes, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a, b = rand(rng, *sa), rand(rng, *sb)

    @mc.compile(mesh=meshes(gpus=2))
    def f(a, b):
        return a @ b

    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_sharded_batched_matmul_and_promotion(meshes):
    rng = np.random.default_rng(11)
    a, b = rand(rng, 8, 4, 6), rand(rng, 6, 3)

    @mc.compile(mesh=meshes(gpus=2))
    def f(a, b):
        return (mc.replicate(mc.shard(a, gpus=0) @ b),
                mc.replicate(a @ mc.shard(b, gpus=0)),
                a.astype(mc.float16) @ b)

    batch, partial, mixed = f(a, b)
    np.testing.assert_allclose(batch, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(partial, a @ b, rtol=1e-5, atol=1e-5)
    assert mixed.dtype == np.float32
    np.testing.assert_allclose(mixed, a.astype(np.float16) @ b, rtol=1e-2,
                               atol=1e-2)


def test_layouts_upstream_partitioning_cannot_do_run_on_whole_values(meshes):
    # Shrunk fuzzer programs (tests/fuzz, seeds 178, 10707, 10955) on which
    # upstream shard-partition built ill-typed ops or unsliced results; the
    # segment now runs on whole values (annotations only say where data is).
    rng = np.random.default_rng(178)
    mesh = meshes(hosts=1, gpus=2)
    x0 = rng.uniform(-2, 2, (4, 3, 3)).astype(np.float16)
    x1 = rand(rng, 3)

    @mc.compile(mesh=mesh)
    def f(x0, x1):
        v1 = mc.gelu(x0)
        return mc.shard(v1, gpus=-3), v1.reshape((36,)), mc.maximum(x1, v1)

    g = x0.astype(np.float64)
    gelu = 0.5 * g * (1 + np.tanh(0.7978845608028654 * (g + 0.044715 * g**3)))
    a, b, c = f(x0, x1)
    np.testing.assert_allclose(a, gelu, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(b, gelu.reshape(36), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(c, np.maximum(x1, gelu), rtol=1e-2, atol=1e-2)

    y0, y1 = rand(rng, 2, 2), np.float32(rng.standard_normal()).reshape(())

    @mc.compile(mesh=mesh)
    def g1(x0, x1):
        v2 = mc.shard(x0, gpus=1)
        v4 = mc.shard(v2, hosts=0)
        v5 = mc.maximum(v4, x1)
        mc.shard(v5, hosts=1, gpus=0)
        return v5

    np.testing.assert_allclose(g1(y0, y1), np.maximum(y0, y1), rtol=1e-6)

    z = rand(rng, 2)

    @mc.compile(mesh=mesh)
    def g2(x0):
        v1 = mc.shard(x0, gpus=0)
        v2 = x0 * v1
        v7 = mc.shard(v2, gpus=0)
        v9 = mc.shard(v1, hosts=0)
        return v7 <= v9

    np.testing.assert_array_equal(g2(z), z * z <= z)


def test_abs_of_integers(meshes):
    # math.absi had no lowering in the CPU kernel pipeline (fuzzer seed
    # 20868: softmax(abs(int32))).
    x = np.array([[-3, 0, 5], [2147483647, -2147483648, -1]], np.int32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return mc.abs(x), mc.softmax(mc.abs(x), axis=-1)

    a, s = f(x)
    np.testing.assert_array_equal(a, np.abs(x))
    ax = np.abs(x).astype(np.float64)
    e = np.exp(ax - ax.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(axis=-1, keepdims=True), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("gpus", [1, 2])
def test_indexing_and_slicing(meshes, gpus):
    rng = np.random.default_rng(40 + gpus)
    x = rand(rng, 6, 8)

    @mc.compile(mesh=meshes(gpus=gpus))
    def f(x):
        xs = mc.shard(x, gpus=0)
        return (x[:, 2:5], x[1], x[-1, ::3], x[None, 1:3, ..., None],
                mc.replicate(xs[1:5, 1] * 2), (x * 2)[2:4].sum(axis=0),
                x[::2, 1:], x[::2, 0], x[None, 1, ::3])  # strided, then an index

    want = (x[:, 2:5], x[1], x[-1, ::3], x[None, 1:3, ..., None],
            x[1:5, 1] * 2, (x * 2)[2:4].sum(axis=0), x[::2, 1:], x[::2, 0],
            x[None, 1, ::3])
    for got, w in zip(f(x), want):
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w, rtol=1e-6)


def test_slicing_in_an_endpoint_is_per_rank(meshes):
    mesh = meshes(gpus=2)

    class Head(mc.Actor):
        @mc.endpoint(out={"gpus": 0})
        def first_two(self, x):
            return x[:, :2]

    actor = mesh.spawn("slicer", Head)

    @mc.compile
    def f(x):
        return actor.first_two.call(mc.shard(x, mesh=mesh, gpus=0))

    x = np.arange(4 * 5, dtype=np.float32).reshape(4, 5)
    np.testing.assert_array_equal(f(x), x[:, :2])


def test_an_input_used_raw_and_resharded_by_one_op(meshes):
    # x @ mc.shard(x, hosts=0) after a reshape: upstream shard-partition
    # crashed (SIGSEGV) on an op with one raw and one annotated use of an
    # input (fuzzer seed 31888).
    mesh = meshes(hosts=2, gpus=1)
    x = rand(np.random.default_rng(31888), 16)

    @mc.compile(mesh=mesh)
    def f(x):
        v = x.reshape((4, 4))
        return mc.shard(v @ mc.shard(v, hosts=0), hosts=1, gpus=0)

    v = x.reshape(4, 4)
    np.testing.assert_allclose(f(x), v @ v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gpus", [1, 2])
def test_constants_and_array_building(meshes, gpus):
    rng = np.random.default_rng(60 + gpus)
    x = rand(rng, 4, 6)
    mask = np.tril(np.ones((4, 6), bool))  # numpy constants the function captures
    bias = np.arange(6, dtype=np.float64)
    tok = np.array([1, 0, 3], np.int32)

    @mc.compile(mesh=meshes(gpus=gpus))
    def f(x, tok):
        xs = mc.shard(x, gpus=0)
        return (x + bias, mc.where(mask, x, -1e9),
                mc.zeros((2, 3)) + 1 + x[:2, :3],
                mc.ones((3,), mc.int32) * 2 + tok, mc.full((2,), 7.5) + x[0, :2],
                mc.arange(5) + tok[0], mc.tril(x), mc.triu(x, 1),
                mc.concatenate([x, x * 2], axis=1), mc.stack([x[0], x[1]]),
                mc.split(x, 2, axis=1)[1], mc.one_hot(tok, 4),
                mc.replicate(mc.concatenate([xs, xs], axis=0)))

    want = (x + bias, np.where(mask, x, -1e9), np.zeros((2, 3)) + 1 + x[:2, :3],
            np.ones(3, np.int32) * 2 + tok, np.full(2, 7.5) + x[0, :2],
            np.arange(5) + tok[0], np.tril(x), np.triu(x, 1),
            np.concatenate([x, x * 2], axis=1), np.stack([x[0], x[1]]),
            np.split(x, 2, axis=1)[1], np.eye(4)[tok], np.concatenate([x, x]))
    for got, w in zip(f(x, tok), want):
        assert got.shape == w.shape
        np.testing.assert_allclose(got.astype(np.float64), w, rtol=1e-6)


def test_mc_shard_does_not_change_the_value_it_was_given(meshes):
    # `v2 = mc.shard(v1, ...)` rewrote the layout of v1's own handle, so v1
    # then arrived in an endpoint sharded differently (fuzzer seed 60982).
    mesh = meshes(hosts=1, gpus=2)

    class Echo(mc.Actor):
        @mc.endpoint(out={"hosts": 1, "gpus": 0})
        def e(self, a):
            return a

    actor = mesh.spawn("echo60982", Echo)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)

    @mc.compile(mesh=mesh)
    def f(x):
        v1 = mc.shard(x, gpus=0)
        mc.shard(v1, hosts=0, gpus=-1)  # dead: must not matter
        return actor.e.call(v1)

    np.testing.assert_array_equal(f(x), x)


def test_a_state_result_is_not_changed_by_a_later_update(meshes):
    # An endpoint returning its state handed out the state's own buffer; a
    # later endpoint of the same step updated it before the fetch (fuzzer
    # seed 70506).
    mesh = meshes(gpus=1)

    class Holder(mc.Actor):
        def __init__(self, p):
            self.p = mc.param(p)

        @mc.endpoint
        def get(self):
            return self.p

        @mc.endpoint
        def update(self):
            self.p = mc.sigmoid(self.p)

    p = np.array([[-0.34]], np.float32)
    holder = mesh.spawn("holder70506", Holder, p)

    @mc.compile(mesh=mesh)
    def f():
        before = holder.get.call()
        holder.update.broadcast()
        return before, holder.get.call()

    before, after = f()
    np.testing.assert_allclose(before, p, rtol=1e-6)
    np.testing.assert_allclose(after, 1 / (1 + np.exp(-p)), rtol=1e-5)


def test_half_precision_unary_ops_round_once(meshes):
    # gelu of float16 rounded every step to 16 bits and lost most digits
    # where 1 + tanh(..) cancels (fuzzer seed 71478, 2.5% error).
    x = np.linspace(-4, 1, 64).astype(np.float16)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return mc.gelu(x), mc.sigmoid(x)

    g, s = f(x)
    x64 = x.astype(np.float64)
    gelu = 0.5 * x64 * (1 + np.tanh(0.7978845608028654 * (x64 + 0.044715 * x64**3)))
    assert g.dtype == np.float16
    np.testing.assert_allclose(g.astype(np.float64), gelu, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(s.astype(np.float64), 1 / (1 + np.exp(-x64)),
                               rtol=2e-3, atol=1e-4)


def test_collectives_and_reductions_of_per_rank_scalars(meshes):
    # A scalar argument of an endpoint is a per-rank value: all_reduce and
    # broadcast move it as a 0-d tensor, a reduction of it is itself.
    mesh = meshes(gpus=2)

    class Scalars(mc.Actor):
        @mc.endpoint(out="sum")
        def e(self, a):
            return (mc.all_reduce(a, "gpus") + mc.broadcast(a * 2, "gpus", root=1)
                    + a.sum() + a.mean())

    actor = mesh.spawn("scalars", Scalars)

    @mc.compile
    def f():
        return actor.e.call(1.5)

    np.testing.assert_allclose(f(), 2 * (3.0 + 3.0 + 1.5 + 1.5), rtol=1e-6)


def test_integer_powers_by_small_integers(meshes):
    x = np.array([-3, -1, 0, 2, 7, 1000], np.int32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return x**2, x**3, (x > 0) ** 2

    sq, cube, mask = f(x)
    np.testing.assert_array_equal(sq, x**2)
    np.testing.assert_array_equal(cube, x**3)
    np.testing.assert_array_equal(mask, (x > 0).astype(np.int32) ** 2)


class ScalarCompare(mc.Actor):
    def __init__(self):
        pass

    @mc.endpoint(out="max")
    def e(self, a):
        nan = a != a  # a per-rank scalar boolean, made before the collective
        mc.all_reduce(a, ["hosts", "gpus"], op="max")
        return mc.where(nan, 1.0, a)


def test_a_scalar_boolean_across_a_kernel_boundary(meshes):
    # Found by the fuzzer: the 0-d boolean passed between the kernels
    # before and after a collective was widened to a byte tensor but its
    # element was not ("tensor.from_elements op failed to verify").
    mesh = meshes(hosts=1, gpus=1)
    actor = mesh.spawn("scalar_compare", ScalarCompare)

    @mc.compile(mesh=mesh)
    def f(x):
        return actor.e.call(x)

    assert float(f(np.float32(0.5))) == 0.5
    assert float(f(np.float32(np.nan))) == 1.0


class ScalarReshape(mc.Actor):
    def __init__(self):
        pass

    @mc.endpoint
    def e(self, a, x):
        return a.reshape((1,)) * x, (x.sum() * 2).reshape((1, 1))


def test_a_per_rank_scalar_reshapes_as_its_0d_tensor(meshes):
    # numpy: np.float32(1.5).reshape((1,)); was "reshape needs a tensor".
    mesh = meshes(hosts=1, gpus=1)
    actor = mesh.spawn("scalar_reshape", ScalarReshape)

    @mc.compile(mesh=mesh)
    def f(x):
        return actor.e.call(1.5, x)

    x = np.arange(3, dtype=np.float32)
    a, b = f(x)
    np.testing.assert_array_equal(a, x * 1.5)
    np.testing.assert_array_equal(b, (x.sum() * 2).reshape(1, 1))


class _Holder(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def set(self, x):
        self.w = x              # state set straight from an argument

    @mc.endpoint
    def set_scaled(self, x, s):
        self.w = x * s

    @mc.endpoint
    def get(self):
        return self.w


@pytest.mark.parametrize("gpus", [1, 2])
def test_state_set_straight_from_an_argument(meshes, gpus):
    # `self.w = x` with no other use of x: the argument was never fed, so
    # the state took whatever its buffer held (zeros) and `get` returned
    # them. Found while splitting monarch-plan-transfers (session 9).
    mesh = meshes(gpus=gpus)
    h = mesh.spawn(f"holder{gpus}", _Holder, np.zeros((4,), np.float32))
    x = np.arange(4, dtype=np.float32) + 1

    @mc.compile
    def setw(x):
        h.set.broadcast(x)

    @mc.compile
    def setw_scaled(x):
        h.set_scaled.broadcast(x, 2.0)

    @mc.compile
    def getw():
        return h.get.call()

    setw(x)
    np.testing.assert_array_equal(getw(), x)
    setw_scaled(x)
    np.testing.assert_array_equal(getw(), 2 * x)
    setw(x + 10)
    np.testing.assert_array_equal(getw(), x + 10)


class _Masks(mc.Actor):
    def __init__(self):
        pass

    @mc.endpoint
    def any_positive(self, x):
        return mc.all_reduce(x > 0, "gpus")


def test_all_reduce_of_booleans_stays_boolean(meshes):
    # A sum of bools over the ranks is numpy's any; it used to be added as
    # bytes, so two trues came back as a byte of 2 (not a numpy bool).
    mesh = meshes(gpus=2)
    m = mesh.spawn("masks", _Masks)
    x = np.array([1.0, -1.0, 2.0, -3.0], np.float32)

    @mc.compile
    def f(x):
        return m.any_positive.call(x)

    r = f(x)
    assert r.dtype == np.bool_
    np.testing.assert_array_equal(r.view(np.uint8), (x > 0).astype(np.uint8))
