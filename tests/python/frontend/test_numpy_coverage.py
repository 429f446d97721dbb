"""numpy as users write it (issue 33): numpy's functions and ndarray methods
on traced tensors, end to end on a 1-rank mesh, against numpy itself.

`CASES` is the coverage table (docs/frontend.md, "numpy coverage"): each
function runs inside `@mc.compile` exactly as it is written for numpy, its
value is compared with numpy's on the same float32 inputs, and where numpy's
function is differentiable its gradient (`mc.value_and_grad` of a weighted
sum) with float64 central finite differences of the numpy function.
Functions that cannot be expressed without data-dependent shapes must raise
at the user's line (`# ERR:` markers, as in test_numpy_interop.py).
"""
import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] /
                       "runtime"))
from _markers import marker_line  # noqa: E402
from _gradcheck import finite_differences  # noqa: E402
from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


@pytest.fixture(scope="module")
def mesh():
    m = mc.mesh(gpus=1)
    yield m
    m.stop()


def r(seed, *shape, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(
        np.float32)


def ints(seed, *shape, low=-5, high=6):
    return np.random.default_rng(seed).integers(low, high, shape).astype(
        np.int32)


A = r(1, 3, 4)
B = r(2, 3, 4)
V = r(3, 5)
POS = r(4, 3, 4, low=0.1, high=2.0)
UNIT = r(5, 3, 4, low=-0.9, high=0.9)
I = ints(6, 3, 4)
IDX = np.argsort(r(7, 3, 4), axis=1).astype(np.int32)
# Distinct values, away from the ties of round/floor and the kinks of
# sign/abs, so that finite differences are meaningful.
HALVES = np.array([[-2.5, -1.5, -0.5, 0.5], [1.5, 2.5, 3.5, -3.5],
                   [0.49, -0.51, 2.7, -0.2]], np.float32)

# name: (function, inputs, differentiable, note)
# `function` is called with numpy arrays (the reference) and with traced
# tensors (inside @mc.compile), unchanged.
CASES = {
    # ufuncs
    "np.log1p": (np.log1p, [POS], True, ""),
    "np.expm1": (np.expm1, [A], True, ""),
    "np.square": (np.square, [A], True, ""),
    "np.sign": (np.sign, [A], True, "gradient 0"),
    "np.sin": (np.sin, [A], True, ""),
    "np.cos": (np.cos, [A], True, ""),
    "np.tan": (np.tan, [UNIT], True, ""),
    "np.arctan": (lambda x: np.arctan(x * 3), [A], True, ""),
    "np.arcsin": (np.arcsin, [UNIT], True, ""),
    "np.arccos": (np.arccos, [UNIT], True, ""),
    "np.arctan2": (np.arctan2, [A, B], True, ""),
    "np.sinh/cosh": (lambda x: np.sinh(x) + np.cosh(x), [A], True, ""),
    "np.floor": (lambda x: np.floor(x * 3), [A], True, "gradient 0"),
    "np.ceil": (lambda x: np.ceil(x * 3), [A], True, "gradient 0"),
    "np.trunc/fix": (lambda x: np.trunc(x * 3) + np.fix(x * 2), [A], True,
                     "gradient 0"),
    "np.round": (lambda x: np.round(x * 3), [A], True,
                 "half to even; gradient 0"),
    "np.round(decimals)": (lambda x: np.round(x, 2), [A], False, ""),
    "np.rint/x.round": (lambda x: np.rint(x) + x.round(), [HALVES], False,
                        "half to even"),
    "np.reciprocal": (np.reciprocal, [POS], True, ""),
    "np.reciprocal(int)": (np.reciprocal, [np.array([1, -1, 2, 7], np.int32)],
                           False, ""),
    "np.logaddexp": (np.logaddexp, [A, B], True, ""),
    "np.logaddexp2": (np.logaddexp2, [A, B], True, ""),
    "np.log2/log10/exp2": (lambda x: np.log2(x) + np.log10(x) + np.exp2(x),
                           [POS], True, ""),
    "np.hypot": (np.hypot, [A, B], True, ""),
    "np.fmax/fmin": (lambda a, b: np.fmax(a, b) - np.fmin(a, 0.5), [A, B],
                     True, ""),
    "np.isnan/isinf/isfinite": (
        lambda x: np.stack([np.isnan(x), np.isinf(x), np.isfinite(x)]),
        [np.array([0.0, np.nan, np.inf, -np.inf, -1.0], np.float32)], False,
        ""),
    "np.logical_and/or/xor/not": (
        lambda a, b: np.stack([np.logical_and(a > 0, b > 0),
                               np.logical_or(a > 0, b),
                               np.logical_xor(a, b > 0),
                               np.logical_not(a > 0.5)]), [A, B], False, ""),
    "mask & | ^ ~": (lambda a, b: ((a > 0) & (b > 0)) | (~(a > 1) ^ (b < 0)),
                     [A, B], False, ""),
    "np.clip": (lambda x: np.clip(x, -0.5, 1.0), [A], True, ""),
    "x.clip": (lambda x: x.clip(min=0.0), [A], True, ""),
    # reductions
    "np.prod": (lambda x: np.prod(x, axis=1), [r(8, 3, 5)], True, ""),
    "np.prod(all)": (lambda x: np.prod(x), [r(9, 2, 3, low=0.97, high=1.03)],
                     True, ""),
    # Zeros in the product: the gradient is the product of the others.
    "np.prod(zeros)": (lambda x: np.prod(x * np.array([[1, 0, 1, 1], [1, 1, 1, 1],
                                                       [0, 1, 0, 1]],
                                                      np.float32), axis=1)
                       + np.prod(x[:2] * 0.5 + 1, axis=0).sum(), [A], True,
                       ""),
    "x.prod(int)": (lambda x: x.prod(axis=0, keepdims=True), [I], False, ""),
    "np.var": (lambda x: np.var(x, axis=0), [A], True, ""),
    "np.var(ddof)": (lambda x: np.var(x, axis=(0, 1), ddof=1,
                                      keepdims=True), [A], True, ""),
    "np.std": (lambda x: np.std(x, axis=-1, ddof=1), [A], True, ""),
    "x.var/x.std": (lambda x: x.var() + x.std(axis=0), [A], True, ""),
    "np.any/np.all": (lambda x: np.stack([np.any(x > 1.5, axis=1),
                                          np.all(x > -1.8, axis=1)]), [A],
                      False, ""),
    "x.any/x.all": (lambda x: np.stack([x.any(), x.all(), (x > 0).all()]),
                    [I], False, ""),
    "np.linalg.norm": (lambda x: np.linalg.norm(x), [A], True, "Frobenius"),
    "np.linalg.norm(axis)": (lambda x: np.linalg.norm(x, axis=1,
                                                      keepdims=True), [A],
                             True, "2-norm"),
    "np.linalg.norm(ord)": (lambda x: np.linalg.norm(x, ord=1, axis=0) +
                            np.linalg.norm(x, np.inf) +
                            np.linalg.norm(x[0], 3), [A], True, ""),
    "np.mean/np.average": (lambda x, w: np.average(x, axis=1, weights=w[0]),
                           [A, POS], True, ""),
    "np.nansum/nanmean/nanmax": (
        lambda x: np.nansum(x, 0) + np.nanmean(x, 0) + np.nanmax(x, 0),
        [np.array([[1.0, np.nan], [np.nan, 2.0], [3.0, -1.0]], np.float32)],
        False, ""),
    "np.ptp/count_nonzero": (lambda x: np.ptp(x, axis=1) + np.count_nonzero(
        x > 0, axis=1), [A], True, ""),
    "np.argmax/argmin": (lambda x: np.stack([np.argmax(x, axis=1),
                                             np.argmin(x, axis=1)]), [A],
                         False, "int32"),
    "x.argmax(all)": (lambda x: x.argmax() + x.argmin(), [I], False,
                      "first of ties"),
    "np.argmax(nan)": (lambda x: np.argmax(x), [np.array(
        [1.0, np.nan, 5.0, np.nan], np.float32)], False, "first NaN"),
    "np.cumsum": (lambda x: np.cumsum(x, axis=1), [r(10, 3, 7)], True, ""),
    "np.cumsum(int)": (lambda x: np.cumsum(x), [I], False, ""),
    "np.cumprod": (lambda x: np.cumprod(x, axis=0), [r(11, 5, 2)], True, ""),
    "np.sort": (lambda x: np.sort(x, axis=1), [r(12, 3, 6)], True,
                "gradient: the permutation"),
    "np.sort(axis0,nan)": (lambda x: np.sort(x, axis=0), [np.array(
        [[3.0, np.nan], [np.nan, -1.0], [-2.0, 0.5], [1.0, 0.5]],
        np.float32)], False, "NaN last"),
    "np.argsort": (lambda x: np.argsort(x, axis=0), [r(13, 5, 3)], False,
                   ""),
    "np.argsort(int,stable)": (lambda x: np.argsort(x, kind="stable"), [I],
                               False, "ties by index"),
    "np.median": (lambda x: np.median(x, axis=1), [r(14, 3, 4)], True, ""),
    # shape
    "np.expand_dims": (lambda x: np.expand_dims(x, (0, 2)), [A], True, ""),
    "np.squeeze": (lambda x: np.squeeze(x[:, None, :1]) + x[None].squeeze(0)[
        :, 0], [A], True, ""),
    "np.swapaxes/x.mT": (lambda x: np.swapaxes(x[None], 0, 2) + x.mT[
        :, :, None], [A], True, ""),
    "np.moveaxis": (lambda x: np.moveaxis(x.reshape(-1, 3, 2), 0, -1), [A],
                    True, ""),
    "np.broadcast_to": (lambda x: np.broadcast_to(x[0], (2, 3, 4)), [A], True,
                        ""),
    "np.tile": (lambda x: np.tile(x, (2, 1, 2)), [A], True, ""),
    # numpy's keyword names (the fuzzer found them refused).
    "keywords: axis1=, reps=, source=": (
        lambda x: np.swapaxes(np.tile(x, reps=(1, 2)), axis1=0, axis2=1) +
        np.moveaxis(np.tile(x, (1, 2)), source=0, destination=1), [A], True,
        ""),
    "np.repeat": (lambda x: np.repeat(x, 2, axis=1) + x.repeat(
        2, axis=1), [A], True, ""),
    "np.repeat(counts)": (lambda x: np.repeat(x, [1, 0, 2], axis=0), [A],
                          True, ""),
    "np.pad": (lambda x: np.pad(x, ((1, 0), (2, 1)), constant_values=3.0),
               [A], True, "constant mode"),
    "np.pad(reflect/edge/wrap)": (lambda x: np.pad(x, 1, mode="reflect") +
                                  np.pad(x, 1, mode="edge") +
                                  np.pad(x, 1, mode="wrap"), [A], True, ""),
    "np.flip": (lambda x: np.flip(x) + np.flip(x, axis=1), [A], True, ""),
    "np.roll": (lambda x: np.roll(x, 3) + np.roll(x, -1, axis=1), [A], True,
                ""),
    "x.ravel/x.flatten": (lambda x: x.ravel() * x.T.flatten(), [A], True, ""),
    "x.T/x.astype/x.round": (lambda x: x.T.astype(np.int32).astype(np.float32)
                             + x.T.round(1), [A], False, ""),
    "np.atleast_2d/hstack/vstack": (
        lambda x: np.vstack([np.atleast_2d(x[0]), x]) + np.hstack(
            [x[:, :2], x[:, 2:]]).sum(), [A], True, ""),
    # __array_function__ onto the mc. functions and contractions
    "np.concatenate": (lambda a, b: np.concatenate([a, b * 2], axis=1) +
                       np.concatenate([a, b], axis=None).sum(), [A, B], True,
                       ""),
    "np.stack": (lambda a, b: np.stack([a, b], -1), [A, B], True, ""),
    "np.split": (lambda x: np.split(x, 2, axis=1)[1] * np.array_split(
        x, 3, axis=1)[0][:, :1], [A], True, ""),
    "np.take": (lambda x: np.take(x, [2, 0, -1], axis=1) + x.take([1, 1, 0],
                                                              axis=1), [A],
                True, ""),
    "np.take_along_axis": (lambda x, i: np.take_along_axis(x, i, axis=1),
                           [A, IDX], True, ""),
    "np.tril/np.triu": (lambda x: np.tril(x) + np.triu(x, 1), [A], True, ""),
    "np.tril(vector)": (lambda x: np.tril(x[:, 0], 1) + np.triu(x[:, 1]), [A],
                        True, ""),
    "np.dot": (lambda a, b: np.dot(a, b.T) + np.dot(a[0], b[1]), [A, B], True,
               ""),
    "np.dot(3d)": (lambda a, b: np.dot(a.reshape(-1, 3, 2), b.reshape(
        3, 2, -1)), [A, B], True, ""),
    "np.tensordot": (lambda a, b: np.tensordot(a, b, axes=([0], [0])),
                     [A, B], True, ""),
    "np.inner": (lambda a, b: np.inner(a, b), [A, B], True, ""),
    "np.outer": (lambda a, b: np.outer(a[:, 0], b), [A, B], True, ""),
    "np.einsum(matmul)": (lambda a, b: np.einsum("ij,kj->ik", a, b), [A, B],
                          True, ""),
    "np.einsum(batch)": (lambda a, b: np.einsum(
        "bij,bjk->bki", a.reshape(-1, 3, 2), b.reshape(-1, 2, 3)), [A, B],
        True, ""),
    "np.einsum(implicit,...)": (lambda a, b: np.einsum("...i,...i", a, b) +
                                np.einsum("ij->", a), [A, B], True, ""),
    "np.einsum(trace,outer)": (lambda a, b: np.einsum(
        "ii", a[:, :a.shape[0]]) + np.einsum("i,j->ij", a[:, 0], b[1]).sum(),
        [A, B], True, ""),
    "np.einsum(attention)": (lambda a, b: np.einsum(
        "bhqd,bhkd->bhqk", a.reshape(-1, 2, 3, 2), b.reshape(-1, 2, 3, 2)),
        [A, B], True, ""),
    "np.einsum(three)": (lambda a, b: np.einsum("ij,jk,kl->li", a, b.T, a),
                         [A, B], True, ""),
    "np.einsum(broadcast)": (lambda a, b: np.einsum("ij,j->i", a[:, :1], b[0])
                             + np.einsum("ij,kj", a, b[:1]).sum(), [A, B],
                             True, ""),
    "np.trace/np.diagonal": (lambda x: np.trace(x) + np.diagonal(
        x, 1).sum(), [A], True, ""),
    "np.zeros_like/ones_like": (lambda x: np.zeros_like(x) + np.ones_like(
        x) * x, [A], True, ""),
    "np.full_like": (lambda x: np.full_like(x, 2.5) * x, [A], True, ""),
}


def _expected(fn, arrays):
    out = fn(*arrays)
    if isinstance(out, (list, tuple)):
        return [np.asarray(o) for o in out]
    return np.asarray(out)


def _dtype_of(a):
    """numpy's result dtype as the compiler has it (JAX's rule where numpy
    would widen: float64 -> float32, int64 -> int32)."""
    return {np.dtype(np.float64): np.dtype(np.float32),
            np.dtype(np.int64): np.dtype(np.int32)}.get(a.dtype, a.dtype)


def _close(got, want, name, tol=2e-6):
    got = np.asarray(got)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert got.dtype == _dtype_of(want), (name, got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=name)


@pytest.mark.parametrize("name", list(CASES))
def test_value_matches_numpy(mesh, name):
    fn, arrays, _grad, _note = CASES[name]

    @mc.compile(mesh=mesh)
    def f(*a):
        return fn(*a)

    got = f(*arrays)
    want = _expected(fn, arrays)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, name)
    else:
        _close(got, want, name)


# How each function shards (issue 33, item 4): every case again on two
# ranks, its first input split over "gpus" along its first even dimension,
# against numpy; the plan says how the work spread. docs/frontend.md's
# table between the numpy-shards markers is this, generated:
#     python3 tests/python/frontend/test_numpy_coverage.py --write-docs
SHARDS = {}


def _even_dim(a):
    return next((d for d, n in enumerate(a.shape) if n % 2 == 0), None)


def _scaled(fn, arrays):
    """The inputs tiled 16 times along every dimension (a 3x4 input is
    48x64, floats nudged apart), where the case takes them (some reshape to fixed shapes): at a
    dozen elements the partitioner's cost model rightly prefers one small
    gather to splitting anything."""
    rng = np.random.default_rng(16)
    big = [np.tile(a, (16,) * a.ndim) for a in arrays]
    # Floats made distinct again (ties would reorder np.argsort).
    big = [b * (1 + 1e-2 * rng.permutation(b.size).reshape(b.shape) /
                b.size).astype(b.dtype)
           if b.dtype.kind == "f" else b for b in big]
    try:
        # (An overflow, a product of 1,536 factors, keeps the small ones.)
        with np.errstate(all="ignore", over="raise"):
            out = fn(*big)
    except Exception:
        return arrays
    # Integer products past int32 (numpy's int64, JAX's int32 wraps).
    for o in (out if isinstance(out, (list, tuple)) else [out]):
        o = np.asarray(o)
        if o.dtype.kind in "iu" and o.size and np.abs(o).max() >= 2**31:
            return arrays
    return big


def _shards(mesh2, name):
    """The case `name` on 2 ranks, checked against numpy; its docs row."""
    fn, arrays, _grad, _note = CASES[name]
    arrays = _scaled(fn, arrays)
    d = _even_dim(arrays[0])

    @mc.compile(mesh=mesh2)
    def f(*a):
        a = list(a)
        if d is not None:
            a[0] = mc.shard(a[0], gpus=d)
        return fn(*a)

    got, want = f(*arrays), _expected(fn, arrays)
    for g, w in (zip(got, want) if isinstance(want, list) else
                 [(got, want)]):
        # Sums of up to 64 terms, in another order than numpy's.
        _close(g, w, name, tol=2e-6 if arrays is CASES[name][1] else 2e-5)
    summary = f.plan_summary(*arrays)
    shares = "/".join(f"{v:.2f}" for v in summary.compute_share.values())
    kinds = sorted({c["kind"] for c in summary.collectives})
    shape = "x".join(map(str, arrays[0].shape)) or "scalar"
    split = (f"{shape}, dim {d}" if d is not None else
             f"{shape}, none (no even dimension)")
    share = summary.compute_share.values()
    how = ("split" if max(share) <= 0.75 else
           "one rank" if min(share) < 0.05 else "both ranks, whole")
    cell = name.replace("|", "\\|")
    SHARDS[name] = (f"| `{cell}` | {split} | {how} | {shares} | "
                    f"{', '.join(kinds) or 'none'} |")
    return SHARDS[name]


def shards_table(rows):
    return "\n".join(
        ["| case | input 0, split along | work | compute share per rank | "
         "collectives |", "|---|---|---|---|---|"] + rows)


@pytest.fixture(scope="module")
def mesh2():
    m = mc.mesh(gpus=2)
    yield m
    m.stop()


@pytest.mark.parametrize("name", list(CASES))
def test_sharded_value_matches_numpy(mesh2, name):
    _shards(mesh2, name)


def test_docs_say_how_each_function_shards(mesh2):
    rows = [SHARDS.get(n) or _shards(mesh2, n) for n in CASES]
    docs = (pathlib.Path(__file__).resolve().parents[3] / "docs" /
            "frontend.md").read_text()
    begin, end = "<!-- numpy-shards:begin -->", "<!-- numpy-shards:end -->"
    assert begin in docs and end in docs
    documented = docs.split(begin)[1].split(end)[0]

    def cells(table):
        # Every column but the shares (two decimals of the plan's counts:
        # shown, not compared).
        return [row.split(" | ")[:3] + row.split(" | ")[4:]
                for row in table.strip().splitlines()]

    assert cells(documented) == cells(shards_table(rows)), (
        "docs/frontend.md's table of how numpy functions shard is stale: "
        "python3 tests/python/frontend/test_numpy_coverage.py --write-docs")


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2]])
def test_gradient_matches_finite_differences(mesh, name):
    _check_gradient(mesh, name)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2]])
def test_sharded_gradient_matches_finite_differences(mesh2, name):
    # On two ranks, the first input split as in the table above.
    _check_gradient(mesh2, name, _even_dim(CASES[name][1][0]))


def _quad_dim(a):
    return next((d for d, n in enumerate(a.shape) if n % 4 == 0), None)


@pytest.fixture(scope="module")
def mesh22():
    m = mc.mesh(hosts=2, gpus=2)
    yield m
    m.stop()


@pytest.mark.parametrize("name", [n for n, c in CASES.items()
                                  if c[2] and _quad_dim(c[1][0]) is not None])
def test_gradient_on_a_2x2_mesh_matches_finite_differences(mesh22, name):
    # A 2-D mesh: the first input's first dimension of a multiple of 4 split
    # over hosts and gpus together.
    _check_gradient(mesh22, name, _quad_dim(CASES[name][1][0]),
                    over=("hosts", "gpus"))


def _check_gradient(mesh, name, split=None, over=("gpus",)):
    fn, arrays, _grad, _note = CASES[name]
    floats = tuple(i for i, a in enumerate(arrays) if a.dtype == np.float32)
    out = np.asarray(fn(*arrays))
    weight = np.random.default_rng(0).uniform(0.5, 1.5, out.shape).astype(
        np.float32)

    def loss(*a):
        return (fn(*a) * weight).sum()

    @mc.compile(mesh=mesh)
    def step(*a):
        if split is not None:
            a = (mc.shard(a[0], **{dim: split for dim in over}),) + a[1:]
        return mc.value_and_grad(loss, argnums=floats)(*a)

    value, grads = step(*arrays)
    np.testing.assert_allclose(value, loss(*arrays), rtol=1e-5, atol=1e-5)

    def ref(*fa):
        full = [fa[floats.index(i)] if i in floats else arrays[i]
                for i in range(len(arrays))]
        return np.sum(fn(*full) * weight.astype(np.float64))

    want = finite_differences(ref, [arrays[i] for i in floats])
    for i, g, w in zip(floats, grads, want):
        assert g.shape == arrays[i].shape and g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-4,
                                   err_msg=f"{name}: argument {i}")


@pytest.mark.parametrize("n", [6, 10, 24, 48, 80, 100])
def test_sorting_along_the_split_axis_stays_split(mesh2, n):
    # The network pads the axis to a power of two between runs of the
    # shards' rows (not at the end, which would shift every shard): a
    # length that is no power of two sorts split too, NaNs last and ties in
    # index order as numpy's stable argsort.
    x = np.random.default_rng(n).standard_normal((n, 12)).astype(np.float32)
    x[np.random.default_rng(1).integers(0, n, 3), 1] = np.nan
    x[: n // 2, 2] = 1.0

    @mc.compile(mesh=mesh2)
    def f(x):
        x = mc.shard(x, gpus=0)
        return np.argsort(x, axis=0), np.sort(x, axis=0)

    order, values = f(x)
    np.testing.assert_array_equal(order, np.argsort(x, axis=0, kind="stable"))
    np.testing.assert_array_equal(values, np.sort(x, axis=0))
    share = f.plan_summary(x).compute_share.values()
    assert max(share) <= 0.6, share


def test_mc_argmax_argmin_rsqrt(mesh):
    # The API (docs/frontend.md) names them beside numpy's spellings.
    x = r(11, 3, 5)
    x[1, 2] = x[1, 4] = x[1].max() + 1  # a tie: the first wins

    @mc.compile(mesh=mesh)
    def f(x, p):
        return (mc.argmax(x, axis=-1), mc.argmin(x), mc.argmin(x, axis=0),
                mc.argmax(x, axis=1, keepdims=True), mc.rsqrt(p))

    a, b, c, d, e = f(x, POS)
    np.testing.assert_array_equal(a, np.argmax(x, axis=-1))
    assert int(b) == int(np.argmin(x))
    np.testing.assert_array_equal(c, np.argmin(x, axis=0))
    np.testing.assert_array_equal(d, np.argmax(x, axis=1, keepdims=True))
    assert a.dtype == np.int32
    np.testing.assert_allclose(e, 1 / np.sqrt(POS), rtol=2e-6)

    @mc.compile(mesh=mesh)
    def g(p):
        return mc.grad(lambda q: mc.rsqrt(q).sum())(p)

    want = finite_differences(lambda q: 1 / np.sqrt(q), [POS])[0]
    np.testing.assert_allclose(g(POS), want, rtol=2e-3, atol=2e-4)


# Numerics numpy users rely on ------------------------------------------------

TINY = np.array([1e-30, -1e-20, 1e-10, -3e-8, 1e-6, 0.0, -0.0, 5e-4],
                np.float32)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -1.0, 0.0, 1e30, -1e30, 88.0],
                   np.float32)


def test_accuracy_at_the_edges(mesh):
    """log1p/expm1 keep their precision for tiny x (log(1 + x) would give
    0); round is half to even; sign(0) is 0; NaN and inf as numpy."""
    halves = np.arange(-8.5, 9.0, 0.5, dtype=np.float32)
    big = np.array([0.49999997, -0.49999997, 8388607.5, 8388609.0, 1e10,
                    np.nan, np.inf, -np.inf], np.float32)
    trig = np.linspace(-3000, 3000, 4001, dtype=np.float32)

    @mc.compile(mesh=mesh)
    def f(tiny, special, halves, big, trig):
        return (np.log1p(tiny), np.expm1(tiny), np.log1p(special),
                np.expm1(special), np.round(halves), np.round(big),
                np.sign(special), np.sign(tiny), np.floor(special),
                np.ceil(special), np.sin(trig), np.cos(trig),
                np.arctan(special), np.logaddexp(special, special[::-1]))

    got = f(TINY, SPECIAL, halves, big, trig)
    with np.errstate(all="ignore"):
        want = (np.log1p(TINY), np.expm1(TINY), np.log1p(SPECIAL),
                np.expm1(SPECIAL), np.round(halves), np.round(big),
                np.sign(SPECIAL), np.sign(TINY), np.floor(SPECIAL),
                np.ceil(SPECIAL), np.sin(trig), np.cos(trig),
                np.arctan(SPECIAL), np.logaddexp(SPECIAL, SPECIAL[::-1]))
    for k, (g, w) in enumerate(zip(got, want)):
        if k in (10, 11):  # sin/cos: absolute error on |x| <= 3000
            np.testing.assert_allclose(g, w, rtol=0, atol=2e-6,
                                       err_msg=f"result {k}")
        else:
            np.testing.assert_allclose(g, w, rtol=2e-7, atol=0,
                                       equal_nan=True, err_msg=f"result {k}")


def test_subgradient_conventions(mesh):
    """JAX's conventions where numpy's function has a kink: clip at a bound
    splits like maximum/minimum ties (1/2), sort routes each cotangent to
    its element, round/floor/sign have gradient 0."""
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0], np.float32)

    @mc.compile(mesh=mesh)
    def f(x):
        g_clip = mc.grad(lambda x: np.clip(x, 0.0, 1.0).sum())(x)
        g_sort = mc.grad(lambda x: (np.sort(x[::-1]) * np.arange(
            5, dtype=np.float32)).sum())(x)
        g_round = mc.grad(lambda x: (np.round(x) + np.floor(x) +
                                     np.sign(x)).sum())(x)
        return g_clip, g_sort, g_round

    g_clip, g_sort, g_round = f(x)
    np.testing.assert_array_equal(g_clip, [0, 0.5, 1, 0.5, 0])
    np.testing.assert_array_equal(g_sort, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(g_round, [0, 0, 0, 0, 0])


# Refusals --------------------------------------------------------------------

@pytest.mark.parametrize("which,words", [
    ("nonzero", ["np.nonzero", "depends on the data", "np.where"]),
    ("unique", ["np.unique", "depends on the data"]),
    ("method_sort", ["x.sort()", "np.sort(x"]),
    ("svd", ["np.linalg.svd"]),
    ("norm_nuc", ["np.linalg.norm ord='nuc'", "singular value"]),
    ("pad_mean", ["np.pad with mode='mean'"]),
    ("bitwise_int", ["bitwise and of a int32 tensor"]),
])
def test_refused_at_the_users_line(mesh, which, words):
    @mc.compile(mesh=mesh)
    def f(x):
        if which == "nonzero":
            return np.nonzero(x)  # ERR:nonzero
        if which == "unique":
            return np.unique(x)  # ERR:unique
        if which == "method_sort":
            return x.sort()  # ERR:method_sort
        if which == "svd":
            return np.linalg.svd(x)  # ERR:svd
        if which == "norm_nuc":
            return np.linalg.norm(x, "nuc")  # ERR:norm_nuc
        if which == "pad_mean":
            return np.pad(x, 1, mode="mean")  # ERR:pad_mean
        return x.astype(np.int32) & 1  # ERR:bitwise_int

    with pytest.raises(mc.UnsupportedError) as e:
        f.ir("traced", A)
    err = e.value
    assert (err.file, err.line) == (__file__, marker_line(__file__, which)), \
        str(err)
    for w in words:
        assert w in str(err), str(err)


if __name__ == "__main__":
    # --write-docs: regenerates docs/frontend.md's table of how each case
    # shards (between the numpy-shards markers).
    assert sys.argv[1:] == ["--write-docs"], "usage: --write-docs"
    path = pathlib.Path(__file__).resolve().parents[3] / "docs" / "frontend.md"
    docs = path.read_text()
    begin, end = "<!-- numpy-shards:begin -->", "<!-- numpy-shards:end -->"
    with mc.mesh(gpus=2) as m:
        table = shards_table([_shards(m, n) for n in CASES])
    head, rest = docs.split(begin)
    path.write_text(head + begin + "\n" + table + "\n" + end +
                    rest.split(end)[1])
    print(f"wrote {len(CASES)} rows to {path}")
