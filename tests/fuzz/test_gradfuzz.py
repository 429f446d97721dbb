"""The gradient fuzzer's fixed-seed corpus (tests/fuzz/gradfuzz.py): random
differentiable programs, mc.value_and_grad on 1x1, 1x2 and 2x2 meshes
against float64 finite differences of the same program in numpy.
MONARCH_GRADFUZZ_PROGRAMS / MONARCH_GRADFUZZ_SEED change the corpus."""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))

import gradfuzz  # noqa: E402

PROGRAMS = int(os.environ.get("MONARCH_GRADFUZZ_PROGRAMS", "40"))
SEED = int(os.environ.get("MONARCH_GRADFUZZ_SEED", "0"))


@pytest.fixture(scope="module")
def mc_meshes():
    try:
        import monarch_compile as mc
        from monarch_compile import _native  # noqa: F401
    except Exception as err:  # pragma: no cover - no build
        pytest.skip(f"monarch_compile is not built: {err}")
    made = {}

    def get(**dims):
        key = tuple(sorted(dims.items()))
        if key not in made:
            made[key] = mc.mesh(**dims)
        return made[key]

    yield mc, get
    for m in made.values():
        m.stop()


@pytest.mark.parametrize("seed", range(SEED, SEED + PROGRAMS))
def test_gradient_matches_finite_differences(mc_meshes, seed):
    mc, meshes = mc_meshes
    prog = gradfuzz.generate(seed)
    message = gradfuzz.check(prog, mc, meshes)
    assert message is None or message.startswith("refused"), \
        gradfuzz.report(prog, message)
