"""DLPack in and out (issue 18, item 2): inputs may be any object with
`__dlpack__` or `__array__`; results are numpy arrays, or of the one other
DLPack type every array input had, made by its library's `from_dlpack`."""
import sys
import types

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


# A stand-in for a third-party array library (torch, cupy, ...): a module
# with an array type that speaks DLPack and a module-level `from_dlpack`.
fake = types.ModuleType("fakearrays")


class FakeArray:
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


FakeArray.__module__ = "fakearrays"
fake.FakeArray = FakeArray
fake.from_dlpack = lambda x: FakeArray(np.from_dlpack(x))
sys.modules["fakearrays"] = fake


@pytest.fixture(scope="module")
def mesh():
    m = mc.mesh(gpus=2)
    yield m
    m.stop()


def test_results_take_the_type_of_dlpack_inputs(mesh):
    @mc.compile(mesh=mesh)
    def f(x, y):
        return x * y + 1.0, {"sum": (x + y).sum()}

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 2.0, np.float32)
    out, aux = f(FakeArray(x), FakeArray(y))
    assert isinstance(out, FakeArray) and isinstance(aux["sum"], FakeArray)
    np.testing.assert_allclose(np.from_dlpack(out), x * y + 1.0)
    np.testing.assert_allclose(np.from_dlpack(aux["sum"]), (x + y).sum())


def test_numpy_round_trip_and_mixed_inputs_give_numpy(mesh):
    @mc.compile(mesh=mesh)
    def f(x, y):
        return x - y

    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, np.float32)
    r = f(x, y)
    assert type(r) is np.ndarray
    # numpy's own DLPack: a capsule round trip through np.from_dlpack.
    np.testing.assert_array_equal(np.from_dlpack(r), x - y)
    # Inputs of two kinds: numpy, the default.
    mixed = f(FakeArray(x), y)
    assert type(mixed) is np.ndarray
    np.testing.assert_array_equal(mixed, x - y)
    # A type without a library-level from_dlpack: numpy too.
    class Bare(FakeArray):
        pass
    Bare.__module__ = __name__
    assert type(f(Bare(x), Bare(y))) is np.ndarray


def test_dlpack_inputs_are_read_without_a_copy(mesh):
    # np.from_dlpack of a numpy-backed producer shares its memory.
    x = np.arange(8, dtype=np.float32)
    view = np.from_dlpack(FakeArray(x))
    assert np.shares_memory(view, x)

    @mc.compile(mesh=mesh)
    def f(x):
        return x * 2.0

    np.testing.assert_array_equal(np.from_dlpack(f(FakeArray(x))), x * 2)


def test_torch_tensors_in_and_out(mesh):
    torch = pytest.importorskip("torch")

    @mc.compile(mesh=mesh)
    def f(x):
        return x + 1.0

    t = torch.arange(4, dtype=torch.float32)
    r = f(t)
    assert isinstance(r, torch.Tensor)
    assert torch.equal(r, t + 1)
