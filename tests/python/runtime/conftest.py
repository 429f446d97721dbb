"""Makes `import monarch_compile` work from a built source checkout; the
tests skip themselves when the extension or monarch-worker is missing."""
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
if importlib.util.find_spec("monarch_compile") is None:
    sys.path.insert(0, str(ROOT / "python"))
