"""numpy functions on traced tensors, nested results and the exported API,
traced only (tests/python/runtime/test_results.py runs them).

A numpy ufunc or function we have an op for must trace to exactly the IR of
the `mc.` spelling; anything else must raise an UnsupportedError at the
user's line (`# ERR:<name>` markers, as in test_errors.py).
"""
import builtins
import collections
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import monarch_compile as mc

ROOT = pathlib.Path(__file__).resolve().parents[3]

from _markers import marker_line, source_lines  # noqa: E402

_LINES = source_lines(__file__)


def line_of(marker):
    return marker_line(__file__, marker)


def check(excinfo, marker, cls=mc.UnsupportedError):
    err = excinfo.value
    assert isinstance(err, cls), type(err)
    assert (err.file, err.line) == (__file__, line_of(marker)), str(err)
    return str(err)


def f32(*shape):
    return np.ones(shape, np.float32)


mesh = mc.mesh(gpus=2)


# The exported API ------------------------------------------------------------

def _documented_names():
    """Names of the API table of docs/frontend.md: every `mc.a b/c` span
    (a, b, c) and every backticked ...Error that is not a builtin."""
    text = (ROOT / "docs" / "frontend.md").read_text()
    table = text[text.index("### API"):text.index("`out=` of an endpoint")]
    names = set()
    for span in re.findall(r"`([^`]*)`", table):
        if span.startswith("mc."):
            head = span[3:].split("(")[0]
            names.update(n.strip(".") for n in re.split(r"[\s/]+", head)
                         if n.strip("."))
        elif (re.fullmatch(r"[A-Z]\w*Error", span) and
              not hasattr(builtins, span)):
            names.add(span)
    return names


def test_every_function_of_the_api_table_is_exported():
    names = _documented_names()
    assert {"reduce_scatter", "all_gather", "shard", "cast", "where",
            "ShapeError", "ExecutionError"} <= names
    def exported(name):
        obj = mc
        for part in name.split("."):  # mc.optim.AdamW
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True

    missing = sorted(n for n in names if not exported(n))
    assert not missing, f"documented but not exported: {missing}"
    assert "reduce_scatter" in mc.__all__


# numpy ufuncs and functions ----------------------------------------------------

def _ir(body, *args):
    """The traced IR of `def f(x, y): return body(x, y)` (one name and no
    locations, so two spellings of one program print the same)."""
    def f(x, y):
        return body(x, y)
    return mc.compile(f, mesh=mesh).ir("traced", *args, debug_info=False)


SAME = [
    (lambda x, y: np.add(x, y), lambda x, y: x + y),
    (lambda x, y: np.subtract(x, 2.0), lambda x, y: x - 2.0),
    (lambda x, y: np.multiply(3.0, y), lambda x, y: 3.0 * y),
    (lambda x, y: np.divide(x, y), lambda x, y: x / y),
    (lambda x, y: np.true_divide(x, y), lambda x, y: x / y),
    (lambda x, y: np.floor_divide(x, y), lambda x, y: x // y),
    (lambda x, y: np.remainder(x, y), lambda x, y: x % y),
    (lambda x, y: np.mod(x, y), lambda x, y: x % y),
    (lambda x, y: np.power(x, 2.0), lambda x, y: x ** 2.0),
    (lambda x, y: np.maximum(x, 0.0), lambda x, y: mc.maximum(x, 0.0)),
    (lambda x, y: np.minimum(x, y), lambda x, y: mc.minimum(x, y)),
    (lambda x, y: np.negative(x), lambda x, y: -x),
    (lambda x, y: np.positive(x) + y, lambda x, y: x + y),
    (lambda x, y: np.abs(x), lambda x, y: abs(x)),
    (lambda x, y: np.exp(x), lambda x, y: mc.exp(x)),
    (lambda x, y: np.log(x), lambda x, y: mc.log(x)),
    (lambda x, y: np.tanh(x), lambda x, y: mc.tanh(x)),
    (lambda x, y: np.sqrt(x), lambda x, y: mc.sqrt(x)),
    (lambda x, y: np.less(x, y), lambda x, y: x < y),
    (lambda x, y: np.less_equal(x, y), lambda x, y: x <= y),
    (lambda x, y: np.greater(x, 0.5), lambda x, y: x > 0.5),
    (lambda x, y: np.greater_equal(x, y), lambda x, y: x >= y),
    (lambda x, y: np.equal(x, y), lambda x, y: x == y),
    (lambda x, y: np.not_equal(x, y), lambda x, y: x != y),
    (lambda x, y: np.matmul(x, y.T), lambda x, y: x @ y.T),
    (lambda x, y: np.sum(x), lambda x, y: x.sum()),
    (lambda x, y: np.sum(x, axis=0, keepdims=True),
     lambda x, y: x.sum(axis=0, keepdims=True)),
    (lambda x, y: np.mean(x, 1), lambda x, y: mc.mean(x, axis=1)),
    (lambda x, y: np.max(x, axis=(0, 1)), lambda x, y: x.max(axis=(0, 1))),
    (lambda x, y: np.amax(x, 0), lambda x, y: x.max(axis=0)),
    (lambda x, y: np.min(y), lambda x, y: y.min()),
    (lambda x, y: np.amin(y, axis=1), lambda x, y: y.min(axis=1)),
    (lambda x, y: np.transpose(x), lambda x, y: x.T),
    (lambda x, y: np.transpose(x, (1, 0)), lambda x, y: x.transpose(1, 0)),
    (lambda x, y: np.reshape(x, (4, 1, 6)), lambda x, y: x.reshape(4, 1, 6)),
    (lambda x, y: np.where(x > y, x, 0.0), lambda x, y: mc.where(x > y, x, 0.0)),
    (lambda x, y: np.exp(x - np.max(x, axis=1, keepdims=True)),
     lambda x, y: mc.exp(x - x.max(axis=1, keepdims=True))),
]


@pytest.mark.parametrize("index", range(len(SAME)))
def test_numpy_spelling_traces_like_the_mc_one(index):
    numpy_form, mc_form = SAME[index]
    x, y = f32(4, 6), f32(4, 6)
    assert _ir(numpy_form, x, y) == _ir(mc_form, x, y)


def test_numpy_astype_and_results_shapes():
    @mc.compile(mesh=mesh)
    def f(x):
        out = np.sum(np.exp(x), axis=1), np.equal(x, x), np.matmul(x, x.T)
        got = [(t.shape, t.dtype) for t in out]
        assert got == [((4,), "float32"), ((4, 6), "bool"),
                       ((4, 4), "float32")]
        if hasattr(np, "astype"):
            assert np.astype(x, np.int32).dtype == "int32"
        return out

    f.ir("traced", f32(4, 6))


@pytest.mark.parametrize("which,marker,words", [
    ("cbrt", "cbrt", ["numpy ufunc np.cbrt"]),
    ("out", "out", ["np.add with out="]),
    ("dtype", "dtype", ["np.sum with dtype=", "astype"]),
    ("initial", "initial", ["np.max with initial="]),
    ("mask", "mask", ["np.exp with where="]),
    ("unique", "unique", ["np.unique", "depends on the data"]),
    ("inv", "inv", ["np.linalg.inv"]),
    ("nonzero", "nonzero", ["np.nonzero", "np.where(mask, x, 0)"]),
    ("where1", "where1", ["np.where(condition)", "mc.where"]),
    ("order", "order", ["order='F'"]),
    ("positional", "positional", ["np.sum()", "positional"]),
])
def test_unsupported_numpy_is_located(which, marker, words):
    @mc.compile(mesh=mesh)
    def f(x):
        if which == "cbrt":
            return np.cbrt(x)  # ERR:cbrt
        if which == "out":
            return np.add(x, 1.0, out=x)  # ERR:out
        if which == "dtype":
            return np.sum(x, dtype=np.float32)  # ERR:dtype
        if which == "initial":
            return np.max(x, initial=0.0)  # ERR:initial
        if which == "mask":
            return np.exp(x, where=x > 0)  # ERR:mask
        if which == "unique":
            return np.unique(x)  # ERR:unique
        if which == "inv":
            return np.linalg.inv(x)  # ERR:inv
        if which == "nonzero":
            return np.nonzero(x)  # ERR:nonzero
        if which == "where1":
            return np.where(x > 0)  # ERR:where1
        if which == "order":
            return np.reshape(x, (4, 1, 6), order="F")  # ERR:order
        return np.sum(x, 0, None, None, False, 0.0)  # ERR:positional

    with pytest.raises(mc.UnsupportedError) as e:
        f.ir("traced", f32(4, 6))
    message = check(e, marker)
    for w in words:
        assert w in message, message


UFUNC_METHODS = """
import numpy as np
import monarch_compile as mc

mesh = mc.mesh(gpus=1)

def reduce(x):
    return np.add.reduce(x)

def accumulate(x):
    return np.maximum.accumulate(x)

for fn in (reduce, accumulate):
    try:
        mc.compile(fn, mesh=mesh).ir("traced", np.ones(4, np.float32))
    except mc.UnsupportedError as err:
        print(err.line, err.message)
"""


def test_ufunc_methods_are_located(tmp_path):
    # In a subprocess: numpy < 2.5 leaks the operands of a reduction whose
    # __array_ufunc__ raises (numpy/numpy#31677), and with them the trace,
    # which nanobind reports at exit.
    script = tmp_path / "methods.py"
    script.write_text(UFUNC_METHODS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == [
        "8 unsupported: np.add.reduce on a traced tensor (use "
        "mc.sum(x, axis=0) or x.sum(axis=0))",
        "11 unsupported: np.maximum.accumulate on a traced tensor"], lines


def test_a_numpy_array_operand_is_an_embedded_constant():
    a = np.ones((4, 6), np.float32)

    @mc.compile(mesh=mesh)
    def f(x, which):
        if which == "left":
            return a + x
        if which == "ufunc":
            return np.maximum(x, a)
        if which == "matmul":
            return a.T @ x
        return np.where(x > 0, a, x)

    for which in ("left", "ufunc", "matmul", "where"):
        assert "arith.constant dense<1.000000e+00>" in f.ir(
            "traced", f32(4, 6), which)

    big = np.array([2**40], np.int64)

    @mc.compile(mesh=mesh)
    def g(x):
        return x + big  # ERR:big

    with pytest.raises(mc.UnsupportedError) as e:
        g.ir("traced", np.zeros(1, np.int32))
    assert "outside int32's range" in check(e, "big")


def test_numpy_scalars_still_work_on_both_sides():
    @mc.compile(mesh=mesh)
    def f(x):
        y = np.float32(2.0) * x + x * np.float32(3.0) - np.int32(1)
        assert y.dtype == "float32"
        return y

    f.ir("traced", f32(4))


# Nested results ------------------------------------------------------------------

Pair = collections.namedtuple("Pair", "a b")


def test_nested_results_keep_their_structure():
    @mc.compile(mesh=mesh)
    def f(x):
        return {"a": x, "b": [x * 2.0, (x + 1.0, None)], "c": Pair(x, -x)}

    spec = f.trace(f32(4))
    assert len(spec.result_dtypes) == 5
    from monarch_compile import _pytree
    leaves = list(range(5))
    assert _pytree.unflatten(spec.structure, leaves) == {
        "a": 0, "b": [1, (2, None)], "c": Pair(3, 4)}


def test_python_values_and_integer_keys_in_results_stay_as_they_are():
    # torch's optimizer state_dict numbers its parameters and holds its
    # hyperparameters as Python values (test_endpoint_trees.py).
    @mc.compile(mesh=mesh)
    def f(x):
        return {"a": x, "b": [x, 1.0], 3: {"name": "w", "betas": (0.9, 0.99)}}

    spec = f.trace(f32(4))
    assert len(spec.result_dtypes) == 2
    from monarch_compile import _pytree
    assert _pytree.unflatten(spec.structure, [0, 1]) == {
        "a": 0, "b": [1, 1.0], 3: {"name": "w", "betas": (0.9, 0.99)}}


def _object(x):
    return {"a": x, "b": [x, object()]}  # ERR:object


def _key(x):
    return {1.5: x}  # ERR:key


def _set(x):
    return ({x},)  # ERR:set


@pytest.mark.parametrize("fn,marker,words", [
    (_object, "object", ["got object at result['b'][1]"]),
    (_key, "key", ["got float at result", "keys must be strings or integers"]),
    (_set, "set", ["got set at result[0]"]),
])
def test_other_results_are_located_at_the_return(fn, marker, words):
    with pytest.raises(mc.UnsupportedError) as e:
        mc.compile(fn, mesh=mesh).ir("traced", f32(4))
    message = check(e, marker)
    for w in words:
        assert w in message, message


def test_endpoint_results_nest_and_out_counts_leaves():
    class A(mc.Actor):
        @mc.endpoint(out=({"gpus": 0}, "sum", None))
        def nested(self, x):
            return {"split": x, "rest": [x.sum(), (mc.all_reduce(x, "gpus"),)]}

        @mc.endpoint(out=("sum",))
        def too_few(self, x):
            return x, x  # ERR:too_few

    actor = mesh.spawn("nest", A)

    @mc.compile
    def f(x):
        r = actor.nested.call(mc.shard(x, mesh=mesh, gpus=0))
        assert isinstance(r, dict) and isinstance(r["rest"], list)
        assert r["split"].shape == (8,) and r["rest"][0].shape == ()
        assert r["rest"][1][0].shape == (4,)
        return r

    f.ir("traced", f32(8))

    @mc.compile
    def g(x):
        return actor.too_few.call(x)

    with pytest.raises(mc.TraceError) as e:
        g.ir("traced", f32(8))
    message = check(e, "too_few", mc.TraceError)
    assert "1 distributions for 2 results" in message
    assert "a single value applies to every result" in message


def test_endpoint_docstring_warns_about_out():
    doc = mc.endpoint.__doc__
    assert "applies to EVERY result" in doc
    assert "MONARCH_CHECK_REPLICATED" in doc
