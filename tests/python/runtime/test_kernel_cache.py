"""Kernels are cached by what they compute (issue 32; docs/kernels.md,
"Kernel cache and threads"): after an edit that moves every line of the
file, the plan is compiled again but no kernel is, and
MONARCH_LOG_LEVEL=info shows where the compile time went."""
import re

import numpy as np

from _procs import require_workers  # noqa: E402

WORKER = require_workers()

import monarch_compile as mc  # noqa: E402

SOURCE = '''
import monarch_compile as mc


def make(mesh):
    @mc.compile(mesh=mesh)
    def step(x, w):
        x = mc.shard(x, gpus=0)
        h = mc.relu(x @ w)
        return mc.replicate((h * h).sum(axis=0))

    return step
'''


def _load(path, source):
    """`make` from `source` written to `path`: its functions carry that
    file's lines, as a user's module would."""
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["make"]


def _case(seed):
    """Random arguments of SOURCE's step and numpy's result."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    w = rng.standard_normal((16, 4), dtype=np.float32)
    h = np.maximum(x @ w, 0)
    return x, w, (h * h).sum(axis=0)


def test_an_edit_above_the_model_compiles_no_kernel(tmp_path, monkeypatch,
                                                    capfd):
    monkeypatch.setenv("MONARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MONARCH_LOG_LEVEL", "info")
    x, w, expected = _case(1)
    model = tmp_path / "model.py"
    with mc.mesh(hosts=1, gpus=2) as mesh:
        first = _load(model, SOURCE)(mesh)
        np.testing.assert_allclose(first(x, w), expected, rtol=1e-5,
                                   atol=1e-4)
        err = capfd.readouterr().err
        assert "monarch: compiling step: passes:" in err, err
        stats = re.search(r"kernels: \d+ \(\d+ distinct: (\d+) compiled on "
                          r"\d+ threads? in [\d.]+ s, (\d+) from the kernel "
                          r"cache\)", err)
        assert stats, err
        assert int(stats.group(1)) > 0 and int(stats.group(2)) == 0, err

        # The same model after an edit above it: every line moved.
        edited = _load(model, "# a comment\n\n\n" + SOURCE)(mesh)
        np.testing.assert_allclose(edited(x, w), expected, rtol=1e-5,
                                   atol=1e-4)
        err = capfd.readouterr().err
        assert "passes:" in err, err  # The plan itself was not cached.
        stats = re.search(r"distinct: (\d+) compiled on \d+ threads? in "
                          r"[\d.]+ s, (\d+) from the kernel cache\)", err)
        assert stats, err
        assert int(stats.group(1)) == 0 and int(stats.group(2)) > 0, err


def test_timings_stay_quiet_by_default(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("MONARCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MONARCH_LOG_LEVEL", raising=False)
    with mc.mesh(hosts=1, gpus=1) as mesh:
        step = _load(tmp_path / "quiet.py", SOURCE)(mesh)
        step(np.ones((8, 16), np.float32), np.ones((16, 4), np.float32))
    assert "kernels:" not in capfd.readouterr().err
