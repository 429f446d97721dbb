"""Shared by the runtime tests: skipping a module when real workers cannot
run, and which monarch-worker processes this test process still has."""
import os
import pathlib

import pytest


def _unavailable(message):
    """Skips the calling test module, or fails it where a build is expected
    (MONARCH_BUILD_DIR set, as ctest and `make test` set it): a broken
    extension or worker must not turn the runtime tests into skips."""
    build = os.environ.get("MONARCH_BUILD_DIR")
    if build:
        pytest.fail(f"{message} (MONARCH_BUILD_DIR={build} names a build "
                    "that should have it)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def require_workers(*attributes, why="runtime tests need real worker processes"):
    """Skips the calling test module (fails it under a build, see
    _unavailable) unless the native extension has the Controller binding
    (and the Controller has `attributes`) and the monarch-worker it will
    start exists; returns that worker's path."""
    try:
        from monarch_compile._native import native
    except ImportError as err:
        _unavailable(f"the native extension is not built: {err}")
    if not hasattr(native, "Controller"):
        _unavailable("this build's extension has no Controller binding")
    for name in attributes:
        if not hasattr(native.Controller, name):
            _unavailable(f"this build's extension has no Controller.{name}")
    # The worker the runtime will start (_runtime._worker_binary).
    env = os.environ.get("MONARCH_WORKER_BIN")
    if env:
        worker = pathlib.Path(env)
    else:
        from monarch_compile import _tools
        try:
            worker = _tools.find_binary("monarch-worker")
        except FileNotFoundError as err:
            _unavailable(f"{err}: {why}")
    if not worker.exists():
        _unavailable(f"monarch-worker is not built ({worker}): {why}")
    return worker


def worker_children(parent=None):
    """Live (non-zombie) monarch-worker children of process `parent` (this
    process by default), from /proc."""
    me = os.getpid() if parent is None else parent
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if int(ppid) == me and state != "Z" and "monarch-worker" in name:
            out.append(int(entry))
    return out


def rand(rng, *shape):
    """A float32 standard-normal array of `shape` from `rng`."""
    import numpy as np

    return rng.standard_normal(shape).astype(np.float32)

