"""Finds and loads the native extension (`_monarch_native`, built by CMake).

Search order: `$MONARCH_BUILD_DIR/python`, then the package's own folder
(where an installed wheel puts it, with `bin/` and `lib/` beside it), then
`<repo>/build/python`, then any other `<repo>/build*/python`. The extension
links the C++ TraceBuilder (frontend/) and the compiler passes (passes/) from
the same build.
"""
import importlib.machinery
import importlib.util
import os
import pathlib
import sys

_PACKAGE = pathlib.Path(__file__).resolve().parent
_ROOT = _PACKAGE.parents[1]
_NAME = "_monarch_native"


def _candidates():
    env = os.environ.get("MONARCH_BUILD_DIR")
    if env:
        yield pathlib.Path(env) / "python"
    yield _PACKAGE
    yield _ROOT / "build" / "python"
    for d in sorted(_ROOT.glob("build*")):
        if d.name != "build":
            yield d / "python"


def _load():
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    searched = []
    for folder in _candidates():
        searched.append(str(folder))
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / (_NAME + suffix)
            if path.exists():
                spec = importlib.util.spec_from_file_location(_NAME, path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[_NAME] = module
                return module
    raise ImportError(
        "monarch_compile: the native extension _monarch_native is not built; "
        "run `make build` (or set MONARCH_BUILD_DIR to your build directory), "
        "or install the package with `pip install .`. "
        "Searched: " + ", ".join(searched))


native = _load()
TraceBuilder = native.TraceBuilder
NativeError = native.NativeError
