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


def test_rope_halves_of_head_split_values_stay_split(meshes):
    # RoPE as users write it: slices of the last axis of head-split q and
    # a concatenation along it run on each rank's heads (they ran on whole
    # values, every rank computing all heads).
    B, T, H, d = 2, 4, 2, 4

    @mc.compile(mesh=meshes(gpus=2))
    def rope(x, wq, cos, sin):
        wq = mc.shard(wq, gpus=1)
        q = (x @ wq).reshape(B, T, H, d).transpose((0, 2, 1, 3))
        q1, q2 = q[..., : d // 2], q[..., d // 2:]
        r = mc.concatenate([q1 * cos - q2 * sin, q1 * sin + q2 * cos], axis=-1)
        return mc.replicate(r)

    rng = np.random.default_rng(5)
    x, wq = rand(rng, B, T, H * d), rand(rng, H * d, H * d)
    cos, sin = rand(rng, T, d // 2), rand(rng, T, d // 2)
    shares = rope.plan_summary(x, wq, cos, sin).compute_share
    assert all(s <= 0.55 for s in shares.values()), shares

    q = (x.astype(np.float64) @ wq).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    q1, q2 = q[..., : d // 2], q[..., d // 2:]
    want = np.concatenate([q1 * cos - q2 * sin, q1 * sin + q2 * cos], -1)
    np.testing.assert_allclose(rope(x, wq, cos, sin), want, rtol=1e-5,
                               atol=1e-6)


def test_slices_of_batch_split_values(meshes):
    # A fused qkv projection cut into its three parts, a rank-reducing
    # column, and a slice along the split batch (not local: gathered).
    N, D = 8, 4

    @mc.compile(mesh=meshes(gpus=2))
    def f(x, w):
        x = mc.shard(x, gpus=0)
        qkv = x @ w
        q, k, v = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
        y = q * k + v
        return (mc.replicate(y.sum(axis=0)), mc.replicate(y[:, 0]),
                mc.replicate(y[1:3]))

    rng = np.random.default_rng(6)
    x, w = rand(rng, N, D), rand(rng, D, 3 * D)
    shares = f.plan_summary(x, w).compute_share
    assert all(s <= 0.6 for s in shares.values()), shares
    qkv = x.astype(np.float64) @ w
    y = qkv[:, :D] * qkv[:, D:2 * D] + qkv[:, 2 * D:]
    got = f(x, w)
    for g, want in zip(got, (y.sum(0), y[:, 0], y[1:3])):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
