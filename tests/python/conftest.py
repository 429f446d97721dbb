"""Shared fixtures: where the build put the tools."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", ROOT / "build"))


@pytest.fixture(scope="session")
def monarch_opt():
    tool = BUILD / "bin" / "monarch-opt"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: run `make build` first")
    return tool


@pytest.fixture(scope="session")
def examples():
    files = sorted((ROOT / "examples" / "ir").glob("*.mlir"))
    assert files, "no example programs under examples/ir"
    return files
