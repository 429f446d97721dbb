"""Split results are fetched as shards (issue 31, item 4): each rank returns
its piece and the controller assembles the value, so no rank gathers a
split result to be fetched (no all_gather in the step); split inputs are
fed as shards (issue 15): each rank receives only its piece. The numbers
are numpy's for every layout, dtype and mesh shape."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

from _procs import rand, require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


def _kinds(summary):
    return {c["kind"] for c in summary.collectives}


def test_split_results_come_back_whole_without_a_gather(meshes):
    rng = np.random.default_rng(7)
    x = rand(rng, 4, 6)
    y = rand(rng, 4, 6, 2)
    n = np.arange(12, dtype=np.int32).reshape(6, 2)
    m = rand(rng, 8)

    @mc.compile(mesh=meshes(hosts=2, gpus=2))
    def f(x, y, n, m):
        across = mc.shard(x, gpus=1) * 2.0  # columns; rows replicated
        both = mc.shard(y, hosts=0, gpus=1) + 1.0  # a block per rank
        ints = mc.shard(n, hosts=0) + 3  # int32, split over hosts only
        flags = mc.shard(m, gpus=0) > 0.0  # bool
        return across, both, ints, flags

    across, both, ints, flags = f(x, y, n, m)
    np.testing.assert_array_equal(across, x * 2.0)
    np.testing.assert_array_equal(both, y + 1.0)
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, n + 3)
    assert flags.dtype == np.bool_
    np.testing.assert_array_equal(flags, m > 0)
    assert "all_gather" not in _kinds(f.plan_summary(x, y, n, m))


def test_bfloat16_split_results(meshes):
    # Found by the differential fuzzer while this landed: the assembly
    # needs bfloat16's element size.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.linspace(-2, 2, 8, dtype=np.float32)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x):
        return mc.shard(x, gpus=0).astype(mc.bfloat16)

    got = f(x)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.bfloat16))


def test_a_split_result_that_is_also_used_stays_exact(meshes):
    # Returned split and reduced afterwards in the same step: the shard
    # goes out as it is and the reduction still sees every element.
    rng = np.random.default_rng(3)
    x = rand(rng, 8, 4)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x):
        h = mc.shard(x, gpus=0) * 3.0
        return h, mc.replicate(h.sum(axis=0))

    h, s = f(x)
    np.testing.assert_allclose(h, x * 3.0, rtol=1e-6)
    np.testing.assert_allclose(s, (x * 3.0).sum(axis=0), rtol=1e-5)
    summary = f.plan_summary(x)
    assert "all_gather" not in _kinds(summary)


def test_split_inputs_are_fed_as_shards(meshes):
    # Data parallel over "hosts", the columns over "gpus": each rank is fed
    # only its block of x (the controller cuts it out), w whole.
    rng = np.random.default_rng(11)
    x, w = rand(rng, 8, 4), rand(rng, 2, 3)

    @mc.compile(mesh=meshes(hosts=2, gpus=2))
    def f(x, w):
        xs = mc.shard(x, hosts=0, gpus=1)
        return mc.replicate((xs * 2.0).sum(axis=0)), w * 3.0

    total, scaled = f(x, w)
    np.testing.assert_allclose(total, (x * 2.0).sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(scaled, w * 3.0, rtol=1e-6)
    # One program per rank (monarch-expand-rank-members writes the members
    # of a class, docs/spmd-classes.md, as the programs they stand for).
    build = pathlib.Path(os.environ.get(
        "MONARCH_BUILD_DIR",
        pathlib.Path(__file__).resolve().parents[3] / "build"))
    planned = subprocess.run(
        [str(build / "bin" / "monarch-opt"), "--monarch-expand-rank-members"],
        input=f.ir("planned"), capture_output=True, text=True, check=True,
        timeout=120).stdout
    feeds = [line for line in planned.splitlines()
             if "monarch.feed_buffer 0 " in line]
    assert len(feeds) == 4, planned
    for at in ("[0, 0]", "[0, 2]", "[4, 0]", "[4, 2]"):
        assert any(f"tensor<4x2xf32>> at {at}" in line for line in feeds), feeds


def test_an_input_also_needed_whole_is_fed_whole(meshes):
    rng = np.random.default_rng(12)
    x = rand(rng, 8, 4)

    @mc.compile(mesh=meshes(gpus=2))
    def f(x):
        rows = mc.replicate((mc.shard(x, gpus=0) * 2.0).sum(axis=0))
        return rows, x.sum(axis=1)  # the whole x as well

    rows, sums = f(x)
    np.testing.assert_allclose(rows, (x * 2.0).sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(sums, x.sum(axis=1), rtol=1e-5)
