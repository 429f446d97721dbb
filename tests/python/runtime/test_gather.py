"""Gathers (`emb[tok]`, `mc.take`, numpy's advanced indexing with one index
array) and negative slice steps, end to end on real workers against numpy."""

import numpy as np
import pytest

from _procs import rand, require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


def tokens(rng, shape, n, negative=False):
    low = -n if negative else 0
    return rng.integers(low, n, size=shape).astype(np.int32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_embedding_lookup(meshes, dtype):
    rng = np.random.default_rng(1)
    emb = (rand(rng, 11, 6) * 4).astype(dtype)
    tok = tokens(rng, (3, 5), 11, negative=True)

    @mc.compile(mesh=meshes(gpus=1))
    def f(emb, tok):
        return emb[tok], mc.take(emb, tok, axis=0)

    a, b = f(emb, tok)
    assert a.dtype == np.dtype(dtype) and a.shape == (3, 5, 6)
    np.testing.assert_array_equal(a, emb[tok])
    np.testing.assert_array_equal(b, np.take(emb, tok, axis=0))


def test_take_along_every_axis_and_flattened(meshes):
    rng = np.random.default_rng(2)
    x = rand(rng, 3, 4, 5)
    i = tokens(rng, (2, 3), 4)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x, i):
        return (mc.take(x, i, axis=1), mc.take(x, i % 3, axis=0),
                mc.take(x, i, axis=-1), mc.take(x, i * 7), mc.take(x, i[0, 0]))

    got = f(x, i)
    want = (np.take(x, i, axis=1), np.take(x, i % 3, axis=0),
            np.take(x, i, axis=-1), np.take(x, i * 7), np.take(x, i[0, 0]))
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_advanced_indexing_places_dimensions_as_numpy(meshes):
    rng = np.random.default_rng(3)
    x = rand(rng, 3, 5, 6)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return (x[:, [4, 0, -1]], x[0, :, [1, 2]], x[[2, 1], 1:4, 0],
                x[..., np.array([[5], [0]])], x[None, [1, 1], ::2],
                x[1, [0, 3]])

    got = f(x)
    want = (x[:, [4, 0, -1]], x[0, :, [1, 2]], x[[2, 1], 1:4, 0],
            x[..., np.array([[5], [0]])], x[None, [1, 1], ::2], x[1, [0, 3]])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_traced_indices_out_of_range_are_clamped(meshes):
    # As JAX's gather (documented in docs/frontend.md); numpy would raise.
    emb = np.arange(12, dtype=np.float32).reshape(4, 3)
    tok = np.array([-9, -4, -1, 0, 3, 4, 100], np.int32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(emb, tok):
        return emb[tok]

    np.testing.assert_array_equal(f(emb, tok), emb[np.clip(tok + 4 * (tok < 0),
                                                          0, 3)])


@pytest.mark.parametrize("gpus", [2, 4])
def test_gather_of_sharded_operands(meshes, gpus):
    rng = np.random.default_rng(gpus)
    emb, w = rand(rng, 16, 8), rand(rng, 8, 4)
    tok = tokens(rng, (8, 3), 16)

    @mc.compile(mesh=meshes(gpus=gpus))
    def f(emb, tok, w):
        h = mc.shard(emb, gpus=1)[mc.shard(tok, gpus=0)]
        return mc.replicate(h @ w), mc.replicate(h.sum(axis=1))

    y, s = f(emb, tok, w)
    np.testing.assert_allclose(y, emb[tok] @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, emb[tok].sum(axis=1), rtol=1e-5, atol=1e-5)


class Embed(mc.Actor):
    def __init__(self, table):
        self.table = mc.param(table)

    @mc.endpoint(out="sum")
    def lookup(self, tok):
        return self.table[tok].sum(axis=0)


def test_gather_in_an_endpoint_from_state(meshes):
    rng = np.random.default_rng(5)
    table = rand(rng, 10, 4)
    tok = tokens(rng, (6,), 10)
    mesh = meshes(gpus=2)
    actor = mesh.spawn("embed", Embed, table)

    @mc.compile(mesh=mesh)
    def f(tok):
        return actor.lookup.call(tok)

    got = f(tok)
    np.testing.assert_allclose(got, 2 * table[tok].sum(axis=0), rtol=1e-5)


def test_negative_slice_steps(meshes):
    rng = np.random.default_rng(6)
    x = rand(rng, 4, 7)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x):
        return (x[::-1], x[:, ::-2], x[2::-1, 5:1:-3], x[..., ::-1][1],
                mc.shard(x, gpus=0)[::-1] * 2)

    got = f(x)
    want = (x[::-1], x[:, ::-2], x[2::-1, 5:1:-3], x[..., ::-1][1],
            x[::-1] * 2)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_a_constant_used_on_a_mesh_slice(meshes):
    # A captured numpy constant meeting a value on a slice of the mesh was
    # transferred from the whole mesh (an invalid plan); it is copied there.
    class Stage(mc.Actor):
        def __init__(self):
            pass

        @mc.endpoint
        def ident(self, a):
            return a

    mesh = meshes(gpus=2)
    actor = mesh.slice(gpus=slice(1, 2)).spawn("stage", Stage)
    x = rand(np.random.default_rng(7), 8, 8)
    scale = np.arange(8, dtype=np.float32)

    @mc.compile(mesh=mesh)
    def f(x):
        v = actor.ident.call(x)
        return v * scale, v[[-7, 2, -7], 0]

    a, b = f(x)
    np.testing.assert_array_equal(a, x * scale)
    np.testing.assert_array_equal(b, x[[-7, 2, -7], 0])


def test_one_value_as_both_operands_of_a_sharded_matmul(meshes):
    # Found by the fuzzer: x.T @ x.T with its result split over both axes of
    # a 2x2 mesh gave both uses one layout and a wrong product.
    x = rand(np.random.default_rng(8), 2, 2)

    @mc.compile(mesh=meshes(hosts=2, gpus=2))
    def f(x):
        t = x.T
        y = t @ t
        return mc.shard(y, hosts=-1, gpus=0)

    np.testing.assert_allclose(f(x), x.T @ x.T, rtol=1e-5, atol=1e-6)


def _scatter_reference(shape, tok, d, axis):
    """numpy's adjoint of `np.take(x, tok, axis)` with the tracer's wrap and
    clamp of the indices."""
    n = shape[axis]
    tok = np.clip(np.where(tok < 0, tok + n, tok), 0, n - 1)
    g = np.zeros(shape, np.float64)
    np.add.at(g, (slice(None),) * axis + (tok,), d)
    return g


@pytest.mark.parametrize("layout", ["one rank", "tokens split",
                                    "rows split"])
def test_embedding_gradient_is_a_scatter_add(meshes, layout):
    # The backward of `wte[tok]` adds each row of the cotangent at the row
    # its token names (np.add.at), repeated and negative tokens included,
    # with no (tokens x vocabulary) one-hot anywhere in the step: a table
    # of 3,000 rows and 240 tokens would need a 240 x 3000 one.
    V, D = 3000, 8
    rng = np.random.default_rng(11)
    wte = rand(rng, V, D)
    tok = tokens(rng, (4, 60), V, negative=True)
    tok[0, :5] = tok[1, 0]  # repeated rows sum
    t = rand(rng, 4, 60, D)
    gpus = 1 if layout == "one rank" else 2

    def loss(wte, tok, t):
        if layout == "tokens split":
            tok, t = mc.shard(tok, gpus=0), mc.shard(t, gpus=0)
        if layout == "rows split":
            wte = mc.shard(wte, gpus=0)
        return ((wte[tok] - t) ** 2).sum()

    @mc.compile(mesh=meshes(gpus=gpus))
    def step(wte, tok, t):
        return mc.value_and_grad(loss)(wte, tok, t)

    value, g = step(wte, tok, t)
    traced = step.ir("traced", wte, tok, t)
    assert "240x3000" not in traced and "3000x240" not in traced
    w64 = wte.astype(np.float64)
    d = 2 * (w64[np.clip(np.where(tok < 0, tok + V, tok), 0, V - 1)] - t)
    np.testing.assert_allclose(value, (d ** 2).sum() / 4, rtol=1e-5)
    np.testing.assert_allclose(g, _scatter_reference((V, D), tok, d, 0),
                               rtol=1e-5, atol=1e-5)


def test_take_gradients_along_inner_axes(meshes):
    # take on an inner axis with 2-D indices, and take_along_axis: both
    # adjoints are scatter-adds, checked against np.add.at.
    rng = np.random.default_rng(12)
    x = rand(rng, 3, 7, 4)
    i = tokens(rng, (2, 5), 7, negative=True)
    j = tokens(rng, (3, 9, 4), 7)
    c1, c2 = rand(rng, 3, 2, 5, 4), rand(rng, 3, 9, 4)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x, i, j, c1, c2):
        def loss(x):
            return ((mc.take(x, i, axis=1) * c1).sum() +
                    (np.take_along_axis(x, j, axis=1) * c2).sum())
        return mc.grad(loss)(x)

    want = _scatter_reference(x.shape, i, c1, 1)
    along = np.zeros(x.shape)
    for b in range(3):
        for q in range(4):
            np.add.at(along[b, :, q], j[b, :, q], c2[b, :, q])
    np.testing.assert_allclose(f(x, i, j, c1, c2), want + along, rtol=1e-5,
                               atol=1e-6)


def test_a_scatter_add_differentiates_to_a_gather(meshes):
    # Second order through an embedding: the gradient of
    # sum(grad(sum(w[tok] ** 3)) * c) differentiates the scatter-add of the
    # first gradient, whose adjoint gathers c back at the tokens' rows.
    rng = np.random.default_rng(13)
    w, c = rand(rng, 7, 3), rand(rng, 7, 3)
    tok = np.array([1, 5, 1, -1], np.int32)

    @mc.compile(mesh=meshes(gpus=1))
    def f(w, c):
        def inner(w):
            return (w[tok] ** 3).sum()

        return mc.grad(lambda w: (mc.grad(inner)(w) * c).sum())(w)

    rows = np.where(tok < 0, tok + 7, tok)
    want = np.zeros((7, 3))
    np.add.at(want, rows, 6 * w[rows].astype(np.float64) * c[rows])
    np.testing.assert_allclose(f(w, c), want, rtol=1e-5, atol=1e-5)
