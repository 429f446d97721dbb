"""numpy functions on traced tensors, bfloat16 in and out, nested results
and the `out=` of endpoints, run on real workers and compared with numpy."""
import collections
import sys

import numpy as np
import pytest

from _procs import rand, require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402




TOL = dict(rtol=1e-5, atol=1e-5)


# numpy functions -----------------------------------------------------------------

def test_numpy_ufuncs_compute_what_numpy_does(meshes):
    rng = np.random.default_rng(11)
    x, y = rand(rng, 4, 6), np.abs(rand(rng, 4, 6)) + 0.5

    def body(x, y):
        return (np.exp(x), np.log(y), np.tanh(x), np.sqrt(y), np.abs(x),
                np.negative(x), np.add(x, y), np.subtract(x, 1.0),
                np.multiply(2.0, x), np.divide(x, y), np.floor_divide(x, y),
                np.remainder(x, y), np.power(y, 2.0), np.maximum(x, 0.0),
                np.minimum(x, y), np.matmul(x, y.T))

    compiled = mc.compile(body, mesh=meshes(gpus=1))
    for got, want in zip(compiled(x, y), body(x, y)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL)


def test_numpy_functions_compute_what_numpy_does(meshes):
    rng = np.random.default_rng(12)
    x, y = rand(rng, 4, 6), rand(rng, 4, 6)

    def body(x, y):
        return (np.sum(x), np.sum(x, axis=0), np.mean(x, axis=1, keepdims=True),
                np.max(x, axis=1), np.amin(y, 0), np.transpose(x),
                np.reshape(y, (4, 1, 6)), np.where(x > y, x, y),
                np.exp(x - np.max(x, axis=1, keepdims=True)))

    # Sharded rows: the reductions over dim 0 need their collectives.
    @mc.compile(mesh=meshes(gpus=2))
    def f(x, y):
        return [mc.replicate(r) for r in body(mc.shard(x, gpus=0), y)]

    for got, want in zip(f(x, y), body(x, y)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL)


def test_numpy_comparisons(meshes):
    x = np.array([-1, 0, 1, 2], np.int32)
    y = np.array([0, 0, 2, 1], np.int32)

    def body(x, y):
        return (np.less(x, y), np.less_equal(x, y), np.greater(x, y),
                np.greater_equal(x, y), np.equal(x, y), np.not_equal(x, y))

    # Selected back to int32: boolean results come back bit-packed (a known
    # kernel bug, test_boolean_results in test_run.py).
    @mc.compile(mesh=meshes(gpus=1))
    def f(x, y):
        return [np.where(c, 1, 0) for c in body(x, y)]

    for got, want in zip(f(x, y), body(x, y)):
        np.testing.assert_array_equal(got, want.astype(np.int32))


# bfloat16 -------------------------------------------------------------------------

def test_bfloat16_results_are_ml_dtypes_arrays(meshes):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return x.astype(mc.bfloat16), (x * 2.0).astype(mc.bfloat16)

    a, b = f(x)
    assert a.dtype == np.dtype(ml_dtypes.bfloat16) and a.shape == (3, 4)
    np.testing.assert_array_equal(a, x.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(b, (x * 2).astype(ml_dtypes.bfloat16))


def test_bfloat16_inputs(meshes):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(13)
    xb = rand(rng, 8).astype(ml_dtypes.bfloat16)
    wb = rand(rng, 8).astype(ml_dtypes.bfloat16)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x, w):
        doubled = mc.shard(x, gpus=0).astype(mc.float32) * 2.0
        return (mc.replicate(doubled),
                x.astype(mc.float32) + w.astype(mc.float32), x)

    doubled, summed, same = f(xb, wb)
    assert doubled.dtype == np.float32
    np.testing.assert_array_equal(doubled, xb.astype(np.float32) * 2)
    np.testing.assert_array_equal(
        summed, xb.astype(np.float32) + wb.astype(np.float32))
    assert same.dtype == xb.dtype
    np.testing.assert_array_equal(same.view(np.uint16), xb.view(np.uint16))


def test_bfloat16_without_ml_dtypes_is_a_clear_error(meshes, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import fails

    @mc.compile(mesh=meshes(gpus=1))
    def f(x):
        return x.astype(mc.bfloat16)

    with pytest.raises(mc.ExecutionError,
                       match="pip install ml_dtypes.*float32"):
        f(np.ones(4, np.float32))


# Nested results ------------------------------------------------------------------

Pair = collections.namedtuple("Pair", "a b")


def test_nested_results(meshes):
    rng = np.random.default_rng(14)
    x, w = rand(rng, 8, 4), rand(rng, 4, 3)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x, w):
        h = mc.shard(x, gpus=0) @ w
        return {"h": mc.replicate(h),
                "stats": [mc.replicate(h.sum()), (mc.replicate(h.max(axis=0)),
                                                  None)],
                "pair": Pair(x * 2.0, w)}

    got = f(x, w)
    assert set(got) == {"h", "stats", "pair"}
    assert isinstance(got["stats"], list) and got["stats"][1][1] is None
    assert isinstance(got["pair"], Pair)
    np.testing.assert_allclose(got["h"], x @ w, **TOL)
    np.testing.assert_allclose(got["stats"][0], (x @ w).sum(), rtol=1e-4)
    np.testing.assert_allclose(got["stats"][1][0], (x @ w).max(axis=0), **TOL)
    np.testing.assert_allclose(got["pair"].a, x * 2, **TOL)
    np.testing.assert_array_equal(got["pair"].b, w)
    assert isinstance(f(x, w)["stats"], list)  # cached specialisation too


def test_nested_endpoint_results(meshes):
    mesh = meshes(gpus=2)

    class A(mc.Actor):
        @mc.endpoint(out=({"gpus": 0}, "sum", None))
        def f(self, x):
            return {"double": x * 2.0,
                    "parts": [x.sum(), (mc.all_reduce(x, "gpus", "max"),)]}

    actor = mesh.spawn("nested_results", A)

    @mc.compile
    def g(x):
        r = actor.f.call(mc.shard(x, mesh=mesh, gpus=0))
        return r["double"], r["parts"]

    x = np.arange(8, dtype=np.float32)
    double, (total, (biggest,)) = g(x)
    np.testing.assert_array_equal(double, x * 2)
    np.testing.assert_allclose(total, x.sum())
    np.testing.assert_array_equal(biggest, np.maximum(x[:4], x[4:]))


# out= of endpoints -----------------------------------------------------------------

class Halves(mc.Actor):
    @mc.endpoint
    def shard_as_replicated(self, x):
        return x * 1.0           # each rank's half: not replicated

    @mc.endpoint
    def agreed(self, x):
        return mc.all_reduce(x, "gpus"), mc.all_reduce(x, "gpus").sum()

    @mc.endpoint(out="sum")
    def both_summed(self, x):
        return x, x * 10.0


def _calls(mesh, name):
    actor = mesh.spawn(name, Halves)

    @mc.compile
    def wrong(x):
        return actor.shard_as_replicated.call(mc.shard(x, mesh=mesh, gpus=0))

    @mc.compile
    def agreed(x):
        return actor.agreed.call(mc.shard(x, mesh=mesh, gpus=0))

    @mc.compile
    def summed(x):
        return actor.both_summed.call(mc.shard(x, mesh=mesh, gpus=0))

    return wrong, agreed, summed


def test_replicated_is_a_promise_not_a_check(meshes, monkeypatch):
    monkeypatch.delenv("MONARCH_CHECK_REPLICATED", raising=False)
    wrong, agreed, summed = _calls(meshes(gpus=2), "halves_unchecked")
    x = np.arange(8, dtype=np.float32)
    # Documented: ranks disagreeing under out=None give one rank's value.
    got = wrong(x)
    assert got.shape == (4,)
    assert any(np.array_equal(got, h) for h in (x[:4], x[4:]))
    # A single out= applies to every result.
    a, b = summed(x)
    np.testing.assert_array_equal(a, x[:4] + x[4:])
    np.testing.assert_array_equal(b, (x[:4] + x[4:]) * 10)


def test_check_replicated_finds_disagreeing_ranks(meshes, monkeypatch):
    monkeypatch.setenv("MONARCH_CHECK_REPLICATED", "1")
    wrong, agreed, summed = _calls(meshes(gpus=2), "halves_checked")
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(mc.ExecutionError) as e:
        wrong(x)
    message = str(e.value)
    assert "result #0 of Halves.shard_as_replicated" in message
    assert "declared replicated" in message and "out=" in message
    assert f"{__file__}:" in message  # the .call line
    s, total = agreed(x)
    np.testing.assert_array_equal(s, x[:4] + x[4:])
    np.testing.assert_allclose(total, x.sum())
    a, b = summed(x)                # reductions are not checked
    np.testing.assert_array_equal(b, (x[:4] + x[4:]) * 10)
