"""Makes `import monarch_compile` work from a built source checkout; the
tests skip themselves when the extension or monarch-worker is missing."""
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
if importlib.util.find_spec("monarch_compile") is None:
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture(scope="module")
def meshes():
    """`meshes(**dims)`: one mesh per shape for the test module, stopped at
    its end."""
    import monarch_compile as mc

    made = {}

    def get(**dims):
        key = tuple(sorted(dims.items()))
        if key not in made:
            made[key] = mc.mesh(**dims)
        return made[key]

    yield get
    for m in made.values():
        m.stop()

