"""monarch's own partitioner (the default, `MONARCH_PARTITION_ENGINE=own`;
issue 31): the programs users write compute numpy's numbers and split as the
upstream path (`MONARCH_PARTITION_ENGINE=upstream`) does or better; a tensor
dimension split over two mesh dimensions, which upstream cannot partition,
works with it."""

import numpy as np
import pytest

from _procs import rand, require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


@pytest.fixture
def own(monkeypatch):
    monkeypatch.setenv("MONARCH_PARTITION_ENGINE", "own")


def test_one_dimension_over_both_mesh_dimensions(meshes, own):
    @mc.compile(mesh=meshes(hosts=2, gpus=2))
    def f(x, w):
        x = mc.shard(x, hosts=0, gpus=0)
        y = mc.relu(x @ w)
        # The other order too: gpus major.
        return (mc.replicate(y.sum(axis=0)), y * 2.0,
                mc.shard(y, gpus=0, hosts=0) + 1.0)

    rng = np.random.default_rng(1)
    x, w = rand(rng, 8, 3), rand(rng, 3, 4)
    assert "#monarch.dist<[[\"hosts\", \"gpus\"], []]>" in f.ir(
        "partitioned", x, w)
    shares = f.plan_summary(x, w).compute_share
    assert all(s <= 0.3 for s in shares.values()), shares
    y = np.maximum(x.astype(np.float64) @ w, 0)
    got = f(x, w)
    for g, want in zip(got, (y.sum(0), 2 * y, y + 1)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_upstream_refuses_two_mesh_dimensions_and_names_the_engine(
        meshes, monkeypatch):
    monkeypatch.setenv("MONARCH_PARTITION_ENGINE", "upstream")

    @mc.compile(mesh=meshes(hosts=2, gpus=2))
    def f(x):
        return mc.replicate(mc.shard(x, hosts=0, gpus=0) + 1.0)

    with pytest.raises(mc.UnsupportedError,
                       match="MONARCH_PARTITION_ENGINE=own"):
        f.ir("traced", np.zeros((8, 4), np.float32))


def test_megatron_mlp_and_its_gradients(meshes, own, monkeypatch, capfd):
    # Column- then row-parallel, trained one SGD step: forward one
    # all_reduce, gradients of both weights stay split.
    @mc.compile(mesh=meshes(gpus=2))
    def step(x, w1, w2, y):
        def loss(w1, w2):
            w1, w2 = mc.shard(w1, gpus=1), mc.shard(w2, gpus=0)
            h = mc.gelu(x @ w1)
            d = h @ w2 - y
            return mc.replicate((d * d).mean())

        value, (g1, g2) = mc.value_and_grad(loss, argnums=(0, 1))(w1, w2)
        return value, w1 - 0.1 * g1, w2 - 0.1 * g2

    rng = np.random.default_rng(2)
    x, w1, w2, y = rand(rng, 4, 6), rand(rng, 6, 8), rand(rng, 8, 3), \
        rand(rng, 4, 3)
    monkeypatch.setenv("MONARCH_PARTITION_REMARKS", "1")
    step.ir("partitioned", x, w1, w2, y)
    remarks = capfd.readouterr().err
    monkeypatch.delenv("MONARCH_PARTITION_REMARKS")
    # Every segment, forward and backward, by the own engine.
    assert "partitioned by the own engine" in remarks, remarks
    assert "own engine cannot" not in remarks, remarks
    got = step(x, w1, w2, y)

    # The same step on one rank with the upstream path.
    @mc.compile(mesh=meshes(gpus=1))
    def one(x, w1, w2, y):
        def loss(w1, w2):
            d = mc.gelu(x @ w1) @ w2 - y
            return (d * d).mean()

        value, (g1, g2) = mc.value_and_grad(loss, argnums=(0, 1))(w1, w2)
        return value, w1 - 0.1 * g1, w2 - 0.1 * g2

    want = one(x, w1, w2, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_llama_block_splits_with_both_engines(meshes, monkeypatch):
    # RMSNorm, RoPE (slices and a concatenation of head-split values),
    # causal attention and SwiGLU, tensor parallel on 2 ranks.
    B, T, D, H, F = 2, 4, 8, 2, 16
    hd = D // H

    def block(x, wq, wk, wv, wo, w1, w3, w2, g, cos, sin):
        wq, wk, wv = (mc.shard(w, gpus=1) for w in (wq, wk, wv))
        wo, w2 = mc.shard(wo, gpus=0), mc.shard(w2, gpus=0)
        w1, w3 = mc.shard(w1, gpus=1), mc.shard(w3, gpus=1)
        h = mc.rms_norm(x, g)

        def heads(t):
            return t.reshape(B, T, H, hd).transpose((0, 2, 1, 3))

        def rope(t):
            t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
            return mc.concatenate([t1 * cos - t2 * sin, t1 * sin + t2 * cos],
                                  axis=-1)

        q, k, v = rope(heads(h @ wq)), rope(heads(h @ wk)), heads(h @ wv)
        s = mc.where(mc.causal_mask(T), q @ k.transpose((0, 1, 3, 2)), -1e9)
        a = (mc.softmax(s, axis=-1) @ v).transpose((0, 2, 1, 3)).reshape(
            B, T, D)
        x = x + a @ wo
        h = mc.rms_norm(x, g)
        u = h @ w1
        return mc.replicate(x + (u * mc.sigmoid(u) * (h @ w3)) @ w2)

    rng = np.random.default_rng(4)
    args = (rand(rng, B, T, D), rand(rng, D, D), rand(rng, D, D),
            rand(rng, D, D), rand(rng, D, D), rand(rng, D, F),
            rand(rng, D, F), rand(rng, F, D), rand(rng, D),
            rand(rng, T, hd // 2), rand(rng, T, hd // 2))
    results = {}
    for engine in ("upstream", "own"):
        monkeypatch.setenv("MONARCH_PARTITION_ENGINE", engine)
        f = mc.compile(mesh=meshes(gpus=2))(block)
        shares = f.plan_summary(*args).compute_share
        assert all(s <= 0.6 for s in shares.values()), (engine, shares)
        results[engine] = f(*args)
    np.testing.assert_allclose(results["own"], results["upstream"],
                               rtol=1e-5, atol=1e-6)


def test_vocabulary_parallel_embedding_and_head(meshes):
    # Megatron's vocabulary-parallel embedding: the table split by rows,
    # each rank looks up the tokens in its rows (zero elsewhere) and one
    # all_reduce sums them; no all_gather of the table. Tied to the LM
    # head and the cross-entropy, trained one step.
    V, D, B, T = 16, 4, 2, 3

    def step(wte, tok, lab):
        def loss(wte):
            w = mc.shard(wte, gpus=0)
            x = mc.tanh(w[tok])
            return mc.cross_entropy(x @ w.T, lab)

        value, g = mc.value_and_grad(loss)(wte)
        return value, wte - 0.5 * g

    rng = np.random.default_rng(7)
    wte = rand(rng, V, D)
    tok = rng.integers(-V, V, (B, T)).astype(np.int32)
    lab = rng.integers(0, V, (B, T)).astype(np.int32)
    split = mc.compile(mesh=meshes(gpus=2))(step)
    planned = split.ir("partitioned", wte, tok, lab)
    assert "all_gather" not in planned, planned
    got = split(wte, tok, lab)
    want = mc.compile(mesh=meshes(gpus=1))(step)(wte, tok, lab)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_reshapes_keep_splits_whose_shards_stay_contiguous(meshes, own):
    # Shardy's reshape rule: (2, 16) split over (hosts, gpus) merges into 32
    # rows split over both (each rank holds one row of the first dimension),
    # and 32 rows split over both expand back into (2, 16), with nothing
    # gathered; a split whose shards would interleave is gathered first.
    mesh = meshes(hosts=2, gpus=2)

    @mc.compile(mesh=mesh)
    def f(x, v):
        x = mc.shard(x, hosts=0, gpus=1)
        v = mc.shard(v, hosts=0, gpus=0)
        return mc.exp(x.reshape(32, 4)), (v * 2.0).reshape(2, 16, 4) + 1.0

    @mc.compile(mesh=mesh)
    def g(v):
        w = mc.shard(v.reshape(4, 8, 4), gpus=1) * 2.0
        return w.reshape(32, 4) - 1.0

    rng = np.random.default_rng(3)
    x, v = rand(rng, 2, 16, 4), rand(rng, 32, 4)
    assert "all_gather" not in f.ir("partitioned", x, v)
    shares = f.plan_summary(x, v).compute_share
    assert all(s <= 0.3 for s in shares.values()), shares
    want = (np.exp(x.astype(np.float64)).reshape(32, 4),
            (2.0 * v).reshape(2, 16, 4) + 1.0)
    for got, w in zip(f(x, v), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert "all_gather" in g.ir("partitioned", v)
    np.testing.assert_allclose(g(v), 2.0 * v - 1.0, rtol=1e-6)


def test_a_gather_along_an_unsplit_axis_stays_on_each_ranks_rows(meshes, own):
    # Cross-entropy written by hand: each row's target log-probability,
    # np.take_along_axis(logp, labels[:, None], axis=1), with the batch split
    # over gpus: each rank gathers from its own rows (no collective in the
    # forward), and the gradient is numpy's.
    @mc.compile(mesh=meshes(gpus=2))
    def nll(logits, labels):
        logits = mc.shard(logits, gpus=0)

        def loss(z):
            logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            picked = np.take_along_axis(logp, labels[:, None], axis=1)
            return -picked.mean(), picked

        (value, picked), g = mc.value_and_grad(loss, has_aux=True)(logits)
        return value, picked, g

    @mc.compile(mesh=meshes(gpus=2))
    def gather_only(logits, labels):
        logits = mc.shard(logits, gpus=0)
        return np.take_along_axis(logits, labels[:, None], axis=1) * 2.0

    rng = np.random.default_rng(4)
    logits = rand(rng, 8, 6)
    labels = rng.integers(0, 6, 8).astype(np.int32)
    summary = gather_only.plan_summary(logits, labels)
    assert not summary.collectives, summary
    assert max(summary.compute_share.values()) < 0.7, summary
    np.testing.assert_allclose(gather_only(logits, labels),
                               2.0 * logits[np.arange(8), labels][:, None],
                               rtol=1e-6)
    z = logits.astype(np.float64)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    p = np.exp(logp)
    onehot = np.eye(6)[labels]
    value, picked, g = nll(logits, labels)
    np.testing.assert_allclose(value, -logp[np.arange(8), labels].mean(),
                               rtol=1e-5)
    np.testing.assert_allclose(picked[:, 0], logp[np.arange(8), labels],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, (p - onehot) / 8, rtol=1e-4, atol=1e-6)
