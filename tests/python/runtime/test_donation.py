"""@mc.compile(donate_argnums=...) (issue 35 item 5): results paired with
donated arguments stay on the workers as mc.RemoteArray, the next call is
fed from where they are (no transfer), and the numbers are those of the
same program without donation (and of numpy)."""

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402
from monarch_compile import _runtime  # noqa: E402


def stats(mesh):
    mesh.start() if hasattr(mesh, "start") else _runtime.start_mesh(mesh)
    return _runtime.controller_of(mesh).resident_stats()


def sgd(mesh, donate, shard_w=False):
    @mc.compile(mesh=mesh, donate_argnums=donate)
    def step(w, b, x, t):
        x = mc.shard(x, gpus=0)
        if shard_w:
            w = mc.shard(w, gpus=0)

        def loss_fn(w, b):
            return ((mc.relu(x @ w) + b - t) ** 2).mean()

        loss, (gw, gb) = mc.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
        w2 = w - 0.1 * gw
        if shard_w:
            w2 = mc.shard(w2, gpus=0)
        return {"w": w2, "b": b - 0.1 * gb}, loss
    return step


def data():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    t = rng.standard_normal((6, 4)).astype(np.float32)
    return w, b, x, t


def numpy_sgd(w, b, x, t, steps):
    losses = []
    for _ in range(steps):
        h0 = x @ w
        y = np.maximum(h0, 0) + b
        d = (y - t) * (2.0 / t.size)
        losses.append(((y - t) ** 2).mean())
        gw = x.T @ (d * (h0 > 0))
        gb = d.sum(axis=0)
        w, b = w - 0.1 * gw, b - 0.1 * gb
    return w, b, losses


@pytest.mark.parametrize("shard_w", [False, True])
def test_donated_parameters_stay_on_the_workers(meshes, shard_w):
    mesh = meshes(hosts=1, gpus=2)
    w, b, x, t = data()
    plain, kept = sgd(mesh, (), shard_w), sgd(mesh, (0, 1), shard_w)
    before = stats(mesh)
    pw, pb = w, b
    kw, kb = w, b
    for _ in range(4):
        p, ploss = plain(pw, pb, x, t)
        pw, pb = p["w"], p["b"]
        k, kloss = kept(kw, kb, x, t)
        kw, kb = k["w"], k["b"]
        assert isinstance(kw, mc.RemoteArray) and isinstance(kb, mc.RemoteArray)
        assert isinstance(kloss, np.ndarray)  # not paired with a donation
        assert kw.shape == (8, 4) and kw.dtype == np.float32
        np.testing.assert_array_equal(kloss, ploss)
    # The same program, the same numbers: bit for bit.
    np.testing.assert_array_equal(np.asarray(kw), pw)
    np.testing.assert_array_equal(np.asarray(kb), pb)
    nw, nb, _ = numpy_sgd(w, b, x, t, 4)
    np.testing.assert_allclose(np.asarray(kw), nw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(kb), nb, rtol=1e-4, atol=1e-5)
    after = stats(mesh)
    # Two parameters kept by each of the 4 steps, fed in place by the 3
    # steps after the first.
    assert after["kept"] - before["kept"] == 8
    assert after["fed_in_place"] - before["fed_in_place"] == 6
    assert after["fetched_to_feed"] == before["fetched_to_feed"]
    assert "on the workers" in repr(kw)


def test_a_layout_the_feed_does_not_have_is_fetched_and_sent(meshes):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh, donate_argnums=0)
    def double(w):
        # In: read whole (by the sum); out: split by rows. The next call
        # reads the whole value on every rank, which no rank holds.
        return mc.shard(w * 2.0, gpus=0), w.sum()

    w = np.arange(8, dtype=np.float32).reshape(4, 2)
    before = stats(mesh)
    r, _ = double(w)
    r, total = double(r)
    assert isinstance(r, mc.RemoteArray)
    np.testing.assert_array_equal(np.asarray(r), w * 4)
    assert float(total) == float((w * 2).sum())
    after = stats(mesh)
    assert after["fetched_to_feed"] - before["fetched_to_feed"] == 1


def test_remote_arrays_mix_with_numpy_and_other_functions(meshes):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh, donate_argnums=(0,))
    def scale(v, s):
        return v * s

    @mc.compile(mesh=mesh)
    def total(v):
        return v.sum()

    v = np.linspace(0, 1, 6, dtype=np.float32)
    r = scale(v, np.float32(3.0))
    assert isinstance(r, mc.RemoteArray)
    # Another function (not donating) takes it as an argument.
    np.testing.assert_allclose(total(r), (v * 3).sum(), rtol=1e-6)
    # numpy takes it as an array.
    np.testing.assert_allclose(np.asarray(r) + 1, v * 3 + 1, rtol=1e-6)
    # Released when dropped: sent with the next step.
    before = stats(mesh)["released"]
    del r
    scale(v, np.float32(1.0))
    assert stats(mesh)["released"] > before


def test_one_value_returned_twice_is_kept_twice(meshes):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh, donate_argnums=(0, 1))
    def twice(v, u):
        y = v * 2.0 + u
        return y, y

    v = np.arange(4, dtype=np.float32)
    a, b = twice(v, v)
    assert isinstance(a, mc.RemoteArray) and isinstance(b, mc.RemoteArray)
    assert a is not b
    del a  # releases its own copy only
    c, d = twice(b, b)
    np.testing.assert_array_equal(np.asarray(b), v * 3)
    np.testing.assert_array_equal(np.asarray(c), v * 9)
    np.testing.assert_array_equal(np.asarray(d), v * 9)


def test_a_stopped_mesh_loses_its_remote_arrays():
    mesh = mc.mesh(hosts=1, gpus=2)

    @mc.compile(mesh=mesh, donate_argnums=0)
    def inc(v):
        return v + 1.0

    r = inc(np.zeros(4, np.float32))
    np.testing.assert_array_equal(np.asarray(r), np.ones(4, np.float32))
    s = inc(r)
    mesh.stop()
    assert "lost" in repr(s)
    with pytest.raises(mc.ExecutionError, match="stopped or restarted"):
        np.asarray(s)


def test_a_donated_pytree_comes_back_and_goes_in_again(meshes):
    # The docs' form: params, loss = step(params, x), with params a dict of
    # (Megatron-split) weights; the RemoteArrays come back in the same tree
    # and the next call takes the tree as it is, fed in place.
    mesh = meshes(hosts=1, gpus=2)
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((8, 16)).astype(np.float32),
              "w2": rng.standard_normal((16, 8)).astype(np.float32),
              "b": np.zeros(8, np.float32)}
    x = rng.standard_normal((4, 8)).astype(np.float32)

    def make(donate):
        @mc.compile(mesh=mesh, donate_argnums=donate)
        def step(p, x):
            w1, w2 = mc.shard(p["w1"], gpus=1), mc.shard(p["w2"], gpus=0)

            def loss(w1, w2, b):
                return ((mc.relu(x @ w1) @ w2 + b) ** 2).mean()

            value, (g1, g2, gb) = mc.value_and_grad(loss, argnums=(0, 1, 2))(
                w1, w2, p["b"])
            return {"w1": w1 - 0.1 * g1, "w2": w2 - 0.1 * g2,
                    "b": p["b"] - 0.1 * gb}, value
        return step

    plain, kept = make(()), make((0,))
    before = stats(mesh)
    p, k = params, params
    for _ in range(3):
        p, ploss = plain(p, x)
        k, kloss = kept(k, x)
        assert all(isinstance(v, mc.RemoteArray) for v in k.values())
        np.testing.assert_array_equal(kloss, ploss)
    for name in params:
        np.testing.assert_array_equal(np.asarray(k[name]), p[name])
    after = stats(mesh)
    assert after["fed_in_place"] - before["fed_in_place"] == 6
    assert after["fetched_to_feed"] == before["fetched_to_feed"]


@pytest.mark.parametrize("hosts", [1, 2])
def test_donated_optimizer_state_is_fed_where_it_lies(meshes, hosts):
    # AdamW on Megatron-split weights, parameters and moments donated: the
    # moments are read split (the partitioner feeds an argument nothing laid
    # out in the one split layout all its reads take), so the kept ones go
    # back in place, with the numbers of the step without donation. On 2x2
    # (data parallel over hosts) both hosts' replicas keep their copies of
    # each shard, and one of them returns it.
    mesh = meshes(hosts=hosts, gpus=2)
    rng = np.random.default_rng(1)
    params = {"w1": rng.standard_normal((8, 16)).astype(np.float32),
              "w2": rng.standard_normal((16, 8)).astype(np.float32)}
    x = rng.standard_normal((4, 8)).astype(np.float32)

    def make(donate):
        @mc.compile(mesh=mesh, donate_argnums=donate)
        def step(p, state, x):
            p = {"w1": mc.shard(p["w1"], gpus=1),
                 "w2": mc.shard(p["w2"], gpus=0)}
            if hosts > 1:
                x = mc.shard(x, hosts=0)

            def loss(p):
                return ((mc.relu(x @ p["w1"]) @ p["w2"]) ** 2).mean()

            value, g = mc.value_and_grad(loss)(p)
            p, state = mc.optim.adamw_update(p, g, state, lr=0.01)
            return value, p, state
        return step

    plain, kept = make(()), make((0, 1))
    ir = kept.ir("partitioned", params, mc.optim.adamw_init(params), x)
    endpoint = next(line for line in ir.splitlines() if "endpoint @" in line)
    assert endpoint.count("tensor<8x8xf32> {monarch.dist") == 12, endpoint
    before = stats(mesh)
    p = k = params
    ps = ks = mc.optim.adamw_init(params)
    for _ in range(3):
        ploss, p, ps = plain(p, ps, x)
        kloss, k, ks = kept(k, ks, x)
        np.testing.assert_array_equal(np.asarray(kloss), ploss)
    for name in params:
        np.testing.assert_array_equal(np.asarray(k[name]), p[name])
        np.testing.assert_array_equal(np.asarray(ks["exp_avg"][name]),
                                      ps["exp_avg"][name])
    after = stats(mesh)
    assert after["fetched_to_feed"] == before["fetched_to_feed"]
    assert after["fed_in_place"] - before["fed_in_place"] >= 12


def test_the_gpt_step_donated_matches_it_returned(meshes):
    # examples/python/gpt.py's step on 2x2 (data x Megatron tensor parallel,
    # AdamW): its kernels include rank variants compiled once with their
    # integers as parameters (docs/kernels.md), and its donated parameters
    # and moments are bound in place on the workers (docs/executor.md). Three
    # steps give the numbers of the same step without donation.
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] /
                           "examples" / "python"))
    import gpt

    mesh = meshes(hosts=2, gpus=2)

    def make(donate):
        @mc.compile(mesh=mesh, donate_argnums=donate)
        def train_step(params, state, tok, lab):
            p = gpt.shard_params(params)
            loss, grads = mc.value_and_grad(gpt.loss_fn)(
                p, mc.shard(tok, hosts=0), mc.shard(lab, hosts=0))
            p, state = mc.optim.adamw_update(p, grads, state, lr=gpt.LR)
            return loss, p, state
        return train_step

    rng = np.random.default_rng(0)
    params = gpt.init_params(rng)
    tok, lab = gpt.corpus(rng, gpt.BATCH)
    plain, kept = make(()), make((0, 1))
    p0, s0 = params, mc.optim.adamw_init(params)
    p1, s1 = params, mc.optim.adamw_init(params)
    for _ in range(3):
        l0, p0, s0 = plain(p0, s0, tok, lab)
        l1, p1, s1 = kept(p1, s1, tok, lab)
        # The loss pairs with AdamW's donated step count (its shape and
        # dtype, as JAX pairs): a RemoteArray that float() reads.
        assert isinstance(l1, mc.RemoteArray)
        assert float(l1) == pytest.approx(float(l0), rel=1e-6, abs=1e-7)
    w0 = np.asarray(p0["blocks"][0]["w1"])
    w1 = np.asarray(p1["blocks"][0]["w1"])
    assert isinstance(p1["blocks"][0]["w1"], mc.RemoteArray)
    np.testing.assert_allclose(w1, w0, rtol=1e-5, atol=1e-6)
    assert stats(mesh)["fed_in_place"] > 0
