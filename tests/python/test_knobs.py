"""The MONARCH_* registry: the README lists exactly it, Python reads it
typed, and every entry point refuses a bad value with its name."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import monarch_compile as mc

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", ROOT / "build"))

README = ROOT / "README.md"


def test_readme_table_is_the_registry():
    text = README.read_text()
    m = re.search(r"<!-- knobs:begin -->\n(.*?)\n<!-- knobs:end -->", text,
                  re.S)
    assert m, "README.md has no knobs table"
    assert m.group(1) == mc.knobs.markdown(), (
        "README's table differs from the registry: paste "
        "`python -m monarch_compile knobs` between the knobs markers")


def test_every_variable_the_sources_read_is_registered():
    registered = {k.name for k in mc.knobs.table()}
    read = set()
    for folder in ("executor", "codegen", "passes", "frontend", "tools",
                   "python", "support", "ir"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".cpp", ".h", ".py", ".c"):
                continue
            read |= set(re.findall(r"\"(MONARCH_[A-Z0-9_]+)\"",
                                   path.read_text(errors="replace")))
    # Build-system macros and the test harness's own variables are not
    # environment variables of the product.
    read -= {"MONARCH_VERSION"}
    assert read <= registered, sorted(read - registered)


def test_typed_values_defaults_and_set(monkeypatch):
    monkeypatch.delenv("MONARCH_COMM_TIMEOUT_MS", raising=False)
    assert mc.knobs.comm_timeout_ms == 30000
    assert not mc.knobs.is_set("MONARCH_COMM_TIMEOUT_MS")
    monkeypatch.setenv("MONARCH_COMM_TIMEOUT_MS", "1500")
    assert mc.knobs.comm_timeout_ms == 1500
    monkeypatch.setenv("MONARCH_SHM", "off")
    assert mc.knobs.shm is False
    monkeypatch.delenv("MONARCH_RANK", raising=False)
    assert mc.knobs.rank is None
    mc.knobs.log_level = "debug"
    try:
        assert os.environ["MONARCH_LOG_LEVEL"] == "debug"
        assert mc.knobs.get("MONARCH_LOG_LEVEL") == "debug"
    finally:
        del mc.knobs.log_level
    assert "MONARCH_LOG_LEVEL" not in os.environ
    mc.knobs.disable_cache = True
    try:
        assert os.environ["MONARCH_DISABLE_CACHE"] == "1"
    finally:
        del mc.knobs.disable_cache


@pytest.mark.parametrize("attr,value,expected", [
    ("heartbeat_ms", "abc", "expected a number of milliseconds"),
    ("heartbeat_ms", "0", "in 1..3600000"),
    ("backend", "mpi", "expected one of gloo,nccl"),
    ("shm", "maybe", "expected 1 or 0"),
    ("matmul_tiles", "8,32", "mr,nr,kc"),
])
def test_bad_values_are_refused_with_their_name(monkeypatch, attr, value,
                                                expected):
    name = "MONARCH_" + attr.upper()
    with pytest.raises(ValueError, match=re.escape(expected)):
        setattr(mc.knobs, attr, value)
    assert os.environ.get(name) != value
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(f"{name}={value}")):
        getattr(mc.knobs, attr)


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="not a monarch variable"):
        mc.knobs.get("MONARCH_NO_SUCH_THING")
    with pytest.raises(AttributeError):
        mc.knobs.no_such_thing


def test_cli_prints_the_table():
    out = subprocess.run([sys.executable, "-m", "monarch_compile", "knobs"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))
    assert out.stdout.strip() == mc.knobs.markdown()


def _compile(tmp_path, env, *flags, out="out.mcplan"):
    example = ROOT / "examples" / "ir" / "data_parallel.mlir"
    return subprocess.run(
        [str(BUILD / "bin" / "monarch-compile"), str(example), "-o",
         str(tmp_path / out), *flags],
        capture_output=True, text=True,
        env=dict(os.environ, MONARCH_CACHE_DIR=str(tmp_path / "cache"),
                 **env))


def test_monarch_compile_refuses_a_bad_value(tmp_path):
    out = _compile(tmp_path, {"MONARCH_MATMUL_TILES": "8,x,256"})
    assert out.returncode == 1
    assert "MONARCH_MATMUL_TILES=8,x,256: expected mr,nr,kc" in out.stderr


def test_monarch_backend_is_the_default_backend(tmp_path):
    out = _compile(tmp_path, {"MONARCH_BACKEND": "nccl"},
                   "--compile-to=planned", out="p.mlir")
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "p.mlir").read_text()
    assert "nccl" in text and "gloo" not in text
    out = _compile(tmp_path, {"MONARCH_BACKEND": "nccl"},
                   "--compile-to=planned", "--backend=gloo", out="p.mlir")
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "p.mlir").read_text()
    assert "gloo" in text and "nccl" not in text


def test_compile_inputs_are_part_of_the_cache_key(tmp_path):
    first = _compile(tmp_path, {}, "-v")
    assert first.returncode == 0, first.stderr
    again = _compile(tmp_path, {}, "-v")
    assert "hit" in again.stderr, again.stderr
    tiles = _compile(tmp_path, {"MONARCH_MATMUL_TILES": "4,16,128"}, "-v")
    assert tiles.returncode == 0, tiles.stderr
    assert "miss" in tiles.stderr, tiles.stderr


def test_the_controller_and_workers_refuse_a_bad_value(tmp_path):
    assert _compile(tmp_path, {}).returncode == 0
    run = [str(BUILD / "bin" / "monarch-run"), str(tmp_path / "out.mcplan")]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, MONARCH_HEARTBEAT_MS="abc"))
    assert out.returncode != 0
    assert "MONARCH_HEARTBEAT_MS=abc: expected a number of milliseconds" in \
        out.stderr, out.stderr
    # A variable only workers read: each worker refuses to start, and the
    # controller reports why instead of waiting for them.
    out = subprocess.run(run, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, MONARCH_WAIT_TIMEOUT_MS="-5"))
    assert out.returncode != 0
    assert "MONARCH_WAIT_TIMEOUT_MS=-5" in out.stderr, out.stderr


def test_a_mesh_larger_than_the_local_launcher_starts_is_refused_at_once(
        monkeypatch):
    import time

    import numpy as np

    # 2**20 ranks used to run for ~10 minutes without a word (issue 16).
    for ranks, limit in ((2**20, None), (9, "8")):
        if limit:
            monkeypatch.setenv("MONARCH_MAX_LOCAL_WORKERS", limit)
        m = mc.mesh(gpus=ranks)
        made = sys._getframe().f_lineno - 1  # the line that asked for it

        @mc.compile(mesh=m)
        def double(x):
            return x * 2

        start = time.monotonic()
        with pytest.raises(mc.ExecutionError,
                           match=f"the local launcher starts at most "
                                 f"{limit or 512} workers on this host, the "
                                 f"mesh has {ranks} ranks \\(made at "
                                 f"{re.escape(__file__)}:{made};"):
            double(np.ones(4, np.float32))
        assert time.monotonic() - start < 10
