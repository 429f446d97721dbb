"""The command-line tools of an installed package, and where binaries are.

`pip install .` puts monarch-worker and the tools in the package's `bin/`
folder (cmake/MonarchInstall.cmake) and declares console scripts for them
(pyproject.toml): `monarch-compile`, `monarch-run`, `monarch-opt`,
`monarch-kernels` and `monarch-worker` on PATH run these entry points, which
replace the Python process with the binary (same arguments, same exit code,
signals go straight to it).
"""
import os
import pathlib
import sys

from . import knobs
from ._native import native

_PACKAGE = pathlib.Path(__file__).resolve().parent


def binary_folders():
    """Where binaries are looked for, first match wins: $MONARCH_BUILD_DIR/bin,
    the package's bin/ (an installed wheel), then the build that holds the
    loaded extension (<build>/python/../bin)."""
    folders = []
    if knobs.build_dir:
        folders.append(pathlib.Path(knobs.build_dir) / "bin")
    folders.append(_PACKAGE / "bin")
    ext = getattr(native, "__file__", None)
    if ext:
        folders.append(pathlib.Path(ext).resolve().parent.parent / "bin")
    return folders


def find_binary(name):
    """The path of binary `name`; FileNotFoundError naming every folder tried."""
    folders = binary_folders()
    for folder in folders:
        candidate = folder / name
        if os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        f"cannot find the {name} binary (looked in: "
        f"{', '.join(str(f) for f in folders)}); build it (`make build`) or "
        "install the package (`pip install .`)")


def _exec(name):
    try:
        path = find_binary(name)
    except FileNotFoundError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 127
    os.execv(path, [name] + sys.argv[1:])


def monarch_compile():
    return _exec("monarch-compile")


def monarch_run():
    return _exec("monarch-run")


def monarch_opt():
    return _exec("monarch-opt")


def monarch_kernels():
    return _exec("monarch-kernels")


def monarch_worker():
    return _exec("monarch-worker")
