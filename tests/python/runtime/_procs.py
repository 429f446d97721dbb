"""Shared by the runtime tests: skipping a module when real workers cannot
run, and which monarch-worker processes this test process still has."""
import os
import pathlib

import pytest


def require_workers(*attributes, why="runtime tests need real worker processes"):
    """Skips the calling test module unless the native extension has the
    Controller binding (and the Controller has `attributes`) and the
    monarch-worker it will start exists; returns that worker's path."""
    try:
        from monarch_compile._native import native
    except ImportError as err:
        pytest.skip(f"the native extension is not built: {err}",
                    allow_module_level=True)
    if not hasattr(native, "Controller"):
        pytest.skip("this build's extension has no Controller binding",
                    allow_module_level=True)
    for name in attributes:
        if not hasattr(native.Controller, name):
            pytest.skip(f"this build's extension has no Controller.{name}",
                        allow_module_level=True)
    env = os.environ.get("MONARCH_WORKER_BIN")
    worker = pathlib.Path(env) if env else (
        pathlib.Path(native.__file__).resolve().parent.parent / "bin" /
        "monarch-worker")
    if not worker.exists():
        pytest.skip(f"monarch-worker is not built ({worker}): {why}",
                    allow_module_level=True)
    return worker


def worker_children():
    """Live (non-zombie) monarch-worker children of this process, from /proc."""
    me = os.getpid()
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

