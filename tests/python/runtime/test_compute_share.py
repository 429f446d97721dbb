"""Each rank's share of a step's compute (`plan_summary().compute_share`),
and the constants the tracer emits (a gather's aranges, `mc.causal_mask`,
the one-hot classes of `mc.cross_entropy`) partitioning with the step
instead of sending it to whole values (issue 31), checked against numpy."""

import numpy as np

from _procs import rand, require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


def test_data_parallel_ranks_share_the_work(meshes):
    @mc.compile(mesh=meshes(gpus=4))
    def step(x, w):
        x = mc.shard(x, gpus=0)
        return mc.replicate(mc.relu(x @ w).sum(axis=0))

    x, w = np.zeros((8, 4), np.float32), np.zeros((4, 4), np.float32)
    summary = step.plan_summary(x, w)
    # On one machine: the matmul 8x4x4 and the fill of its 8x4 result, the
    # relu 8x4, the column sum 8x4 and the fill of its 4 results.
    assert summary.global_work == 8 * 4 * 4 + 8 * 4 + 8 * 4 + 8 * 4 + 4
    shares = summary.compute_share
    assert sorted(rank for _, rank in shares) == [0, 1, 2, 3]
    assert all(0.2 <= s <= 0.3 for s in shares.values()), shares
    assert "compute" in str(summary)


def np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_constants_of_gather_mask_and_cross_entropy_stay_split(meshes):
    B, T, V, D = 4, 4, 8, 4

    @mc.compile(mesh=meshes(gpus=2))
    def step(wte, tok, lab):
        tok, lab = mc.shard(tok, gpus=0), mc.shard(lab, gpus=0)
        x = wte[tok]
        s = x @ x.transpose((0, 2, 1))
        return mc.cross_entropy(mc.where(mc.causal_mask(T), s, -1e9), lab)

    rng = np.random.default_rng(3)
    wte = rand(rng, V, D)
    tok = rng.integers(0, V, (B, T)).astype(np.int32)
    lab = rng.integers(0, T, (B, T)).astype(np.int32)
    shares = step.plan_summary(wte, tok, lab).compute_share
    # Ideal 0.5; with the constants on whole values every rank did it all.
    assert all(s <= 0.55 for s in shares.values()), shares

    x = wte.astype(np.float64)[tok]
    s = np.where(np.tril(np.ones((T, T), bool)), x @ x.transpose(0, 2, 1),
                 -1e9)
    logp = np_log_softmax(s)
    want = -np.take_along_axis(logp, lab[..., None], -1).mean()
    np.testing.assert_allclose(step(wte, tok, lab), want, rtol=1e-5)
