"""Makes `import monarch_compile` work from a source checkout that was built
but not `pip install`ed (ctest sets MONARCH_BUILD_DIR to the build)."""
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
if importlib.util.find_spec("monarch_compile") is None:
    sys.path.insert(0, str(ROOT / "python"))
