"""Runtime tests start real monarch-worker processes: skip them cleanly when
the extension or the worker binary of this build is missing."""
import importlib.util
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
if importlib.util.find_spec("monarch_compile") is None:
    sys.path.insert(0, str(ROOT / "python"))


def _worker():
    env = os.environ.get("MONARCH_WORKER_BIN")
    if env:
        return pathlib.Path(env)
    try:
        from monarch_compile._native import native
    except ImportError as err:
        pytest.skip(f"the native extension is not built: {err}",
                    allow_module_level=True)
    if not hasattr(native, "Controller"):
        pytest.skip("this build's extension has no Controller binding",
                    allow_module_level=True)
    return pathlib.Path(native.__file__).resolve().parent.parent / "bin" / "monarch-worker"


WORKER = _worker()
if not WORKER.exists():
    pytest.skip(f"monarch-worker is not built ({WORKER}): runtime tests need "
                "real worker processes", allow_module_level=True)
