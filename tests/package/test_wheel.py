"""`pip install .` builds a self-contained wheel (issue 18 item 1).

The wheel is built from the configured build tree (scikit-build-core's
build-dir, so it costs an install step rather than a second build),
installed into a fresh virtual environment, and used from another directory
with no MONARCH_BUILD_DIR: a 2-rank program runs on workers from the
installed package, and the console scripts `monarch-compile` and
`monarch-run` compile and run a plan. The installed binaries and libraries
resolve the project's libraries inside the package, never in the build.

Its own ctest entry (`wheel`, RUN_SERIAL): building the wheel re-runs
CMake's configure step in the shared build folder.
"""
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", ROOT / "build"))


def run(cmd, **kw):
    kw.setdefault("timeout", 900)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    try:
        import scikit_build_core  # noqa: F401
    except ImportError as err:
        pytest.fail(f"scikit-build-core is needed (scripts/setup.sh installs "
                    f"it): {err}")
    if not (BUILD / "build.ninja").exists():
        pytest.fail(f"{BUILD} is not a configured build: run `make build`")
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-build-isolation",
         "--no-deps", "--disable-pip-version-check", "-w", dist,
         f"-Cbuild-dir={BUILD}"])
    wheels = list(dist.glob("monarch_compile-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh virtual environment with the wheel installed. It sees the
    system's site-packages for numpy (no network needed), but not the
    development checkout: the package must come from the wheel."""
    env_dir = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--system-site-packages", env_dir])
    run([env_dir / "bin" / "python", "-m", "pip", "install", "--no-index",
         "--disable-pip-version-check", wheel])
    return env_dir


def clean_env(venv):
    """The environment of a user who only installed the wheel."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MONARCH_") and k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return env


def test_the_wheel_holds_the_extension_the_worker_and_the_tools(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for want in ("monarch_compile/__init__.py", "monarch_compile/bin/monarch-worker",
                 "monarch_compile/bin/monarch-compile",
                 "monarch_compile/bin/monarch-run",
                 "monarch_compile/bin/monarch-opt",
                 "monarch_compile/lib/libMonarchExecutor.so"):
        assert want in names, (want, sorted(names)[:40])
    assert any(n.startswith("monarch_compile/_monarch_native") and
               n.endswith(".so") for n in names), names
    assert not any("/tests/" in n or "Testing" in n for n in names)


PROGRAM = """
import pathlib, sys
import numpy as np
import monarch_compile as mc
from monarch_compile import _runtime

with mc.mesh(hosts=1, gpus=2) as mesh:
    @mc.compile(mesh=mesh)
    def step(x, w):
        x = mc.shard(x, gpus=0)
        return mc.replicate(mc.relu(x @ w).sum(axis=0))

    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 7 - 1
    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    out = step(x, w)
    np.testing.assert_allclose(out, np.maximum(x @ w, 0).sum(axis=0),
                               rtol=1e-5, atol=1e-5)
print("package", pathlib.Path(mc.__file__).parent)
print("worker", _runtime._worker_binary())
print("result", out)
"""


def test_a_two_rank_program_runs_from_the_installed_package(venv, tmp_path):
    proc = run([venv / "bin" / "python", "-c", PROGRAM], cwd=tmp_path,
               env=clean_env(venv))
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    package = pathlib.Path(lines["package"])
    assert package.is_relative_to(venv), package
    assert pathlib.Path(lines["worker"]) == package / "bin" / "monarch-worker"


def test_the_console_scripts_compile_and_run_a_plan(venv, tmp_path):
    env = clean_env(venv)
    help_text = run(["monarch-compile", "--help"], env=env, cwd=tmp_path).stdout
    assert "--compile-to" in help_text
    run(["monarch-compile", ROOT / "examples/ir/pipeline.mlir", "-o",
         tmp_path / "p.mcplan"], env=env, cwd=tmp_path)
    rng = np.random.default_rng(3)
    arrays = {"x": (8, 4), "w0": (4, 4), "w1": (4, 4)}
    for name, shape in arrays.items():
        np.save(tmp_path / f"{name}.npy",
                rng.standard_normal(shape).astype(np.float32))
    run(["monarch-run", tmp_path / "p.mcplan", "--inputs", tmp_path / "x.npy",
         "--state", f"@s0::@w={tmp_path / 'w0.npy'}",
         "--state", f"@s1::@w={tmp_path / 'w1.npy'}",
         "--outputs", tmp_path / "out"], env=env, cwd=tmp_path)
    load = lambda n: np.load(tmp_path / n)  # noqa: E731
    np.testing.assert_allclose(load("out/output0.npy"),
                               load("x.npy") @ load("w0.npy") @ load("w1.npy"),
                               rtol=1e-5, atol=1e-5)


def test_installed_binaries_find_the_projects_libraries_in_the_package(venv):
    site = next((venv / "lib").glob("python*/site-packages/monarch_compile"))
    files = [site / "bin" / "monarch-worker", site / "bin" / "monarch-run",
             next(site.glob("_monarch_native*.so"))]
    for f in files:
        out = run(["ldd", f]).stdout
        assert "not found" not in out, out
        ours = [l for l in out.splitlines() if "libMonarch" in l]
        assert ours, out
        for line in ours:
            resolved = pathlib.Path(line.split("=>")[1].split("(")[0].strip())
            assert resolved.resolve().parent == site / "lib", line
        dynamic = run(["readelf", "-d", f]).stdout
        assert str(BUILD) not in dynamic, dynamic
