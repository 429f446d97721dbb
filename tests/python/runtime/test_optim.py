"""mc.optim (SGD, AdamW, functional forms, clip_grad_norm) against a numpy
implementation of the torch.optim formulas, and the loss and layer helpers
(mc.log_softmax, cross_entropy, layer_norm, rms_norm, silu, causal_mask) with
their gradients, end to end on real workers."""

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402
from test_grad import check, finite_differences, r  # noqa: E402


# --- numpy references of torch.optim (float64) -----------------------------

class Linear(mc.Actor):
    def __init__(self, w, b, opt, hyper):
        self.p = [mc.param(w), mc.param(b)]
        self.opt = opt(self.p, **hyper)

    @mc.endpoint
    def step(self, g_w, g_b, lr):
        self.opt.step([g_w, g_b], lr=lr)
        return self.p[0], self.p[1]


@pytest.mark.parametrize("kind,hyper", [
    ("adamw", dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)),
    ("adamw", dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0)),
    ("sgd", dict(momentum=0.9, weight_decay=0.1)),
    ("sgd", dict(momentum=0.9, nesterov=True)),
    ("sgd", dict(momentum=0.5, dampening=0.3)),
    ("sgd", dict()),
])
def test_stateful_optimizer_steps_match_torch_formulas(meshes, kind, hyper):
    rng = np.random.default_rng(len(kind) + len(hyper))
    w, b = r(rng, 4, 3), r(rng, 3)
    steps = [(r(rng, 4, 3), r(rng, 3)) for _ in range(4)]
    lrs = [0.1, 0.05, 0.05, 0.01]  # a schedule: runtime scalars, no retrace
    opt = mc.optim.AdamW if kind == "adamw" else mc.optim.SGD
    mesh = meshes(gpus=2)
    actor = mesh.spawn("lin", Linear, w, b, opt, hyper)

    @mc.compile(mesh=mesh)
    def step(gw, gb, lr):
        return actor.step.call(gw, gb, lr)

    got = [step(gw, gb, np.float32(lr)) for (gw, gb), lr in zip(steps, lrs)]
    assert step.trace_count == 1
    for k, (ref_fn, args) in enumerate([(w, [s[0] for s in steps]),
                                        (b, [s[1] for s in steps])]):
        if kind == "adamw":
            ref = _adamw_schedule(ref_fn, args, lrs, hyper)
        else:
            ref = _sgd_schedule(ref_fn, args, lrs, hyper)
        for t in range(len(steps)):
            np.testing.assert_allclose(got[t][k], ref[t], rtol=2e-5,
                                       atol=2e-6, err_msg=f"step {t}")


def _adamw_schedule(p, grads, lrs, h):
    betas, eps, wd = h["betas"], h["eps"], h["weight_decay"]
    p = p.astype(np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    out = []
    for t, (g, lr) in enumerate(zip(grads, lrs), start=1):
        p = p * (1 - lr * wd)
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        p = p - (lr / (1 - betas[0] ** t)) * m / (
            np.sqrt(v) / np.sqrt(1 - betas[1] ** t) + eps)
        out.append(p)
    return out


def _sgd_schedule(p, grads, lrs, h):
    momentum, dampening = h.get("momentum", 0.0), h.get("dampening", 0.0)
    nesterov, wd = h.get("nesterov", False), h.get("weight_decay", 0.0)
    p = p.astype(np.float64)
    buf = None
    out = []
    for g, lr in zip(grads, lrs):
        d = g + wd * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + \
                (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
        out.append(p)
    return out


def test_functional_adamw_and_sgd_in_compiled_code(meshes):
    rng = np.random.default_rng(3)
    params = {"w": r(rng, 4, 2), "b": r(rng, 2)}
    x, t = r(rng, 8, 4), r(rng, 8, 2)
    mesh = meshes(gpus=2)

    def loss(p, x, t):
        return ((mc.shard(x, gpus=0) @ p["w"] + p["b"] - t) ** 2).mean()

    @mc.compile(mesh=mesh)
    def adam_step(params, state, x, t):
        value, g = mc.value_and_grad(loss)(params, x, t)
        params, state = mc.optim.adamw_update(params, g, state, lr=0.05)
        return value, params, state

    @mc.compile(mesh=mesh)
    def sgd_step(params, state, x, t, lr):
        value, g = mc.value_and_grad(loss)(params, x, t)
        g, norm = mc.optim.clip_grad_norm(g, 1.0)
        params, state = mc.optim.sgd_update(params, g, state, lr=lr,
                                            momentum=0.9)
        return value, params, state, norm

    def np_loss_grad(p):
        err = x @ p["w"] + p["b"] - t
        d = 2 * err / err.size
        return (err ** 2).mean(), {"w": x.T @ d, "b": d.sum(axis=0)}

    pa, sa = dict(params), mc.optim.adamw_init(params)
    ps, ss = dict(params), mc.optim.sgd_init(params)
    ref_a = {k: v.astype(np.float64) for k, v in params.items()}
    ref_s = dict(ref_a)
    m = {k: 0 * v for k, v in ref_a.items()}
    v2 = {k: 0 * v for k, v in ref_a.items()}
    buf = None
    for step in range(1, 4):
        value, pa, sa = adam_step(pa, sa, x, t)
        lv, g = np_loss_grad(ref_a)
        np.testing.assert_allclose(value, lv, rtol=1e-5)
        for k in ref_a:
            ref_a[k] = ref_a[k] * (1 - 0.05 * 0.01)
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v2[k] = 0.999 * v2[k] + 0.001 * g[k] ** 2
            ref_a[k] = ref_a[k] - (0.05 / (1 - 0.9 ** step)) * m[k] / (
                np.sqrt(v2[k]) / np.sqrt(1 - 0.999 ** step) + 1e-8)
            np.testing.assert_allclose(pa[k], ref_a[k], rtol=2e-5, atol=2e-6)
        assert float(sa["step"]) == step

        value, ps, ss, norm = sgd_step(ps, ss, x, t, np.float32(0.1))
        lv, g = np_loss_grad(ref_s)
        total = np.sqrt(sum((gi ** 2).sum() for gi in g.values()))
        np.testing.assert_allclose(norm, total, rtol=1e-5)
        scale = min(1.0, 1.0 / (total + 1e-6))
        g = {k: gi * scale for k, gi in g.items()}
        buf = dict(g) if buf is None else {k: 0.9 * buf[k] + g[k] for k in g}
        ref_s = {k: ref_s[k] - 0.1 * buf[k] for k in ref_s}
        for k in ref_s:
            np.testing.assert_allclose(ps[k], ref_s[k], rtol=2e-5, atol=2e-6)


def log_softmax_ref(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


rng1 = np.random.default_rng(5)
LABELS = np.array([[0, 4, 2], [3, 3, 1]], np.int32)

HELPERS = {
    "log_softmax": (lambda x: mc.log_softmax(x, axis=0) + mc.log_softmax(x),
                    lambda x: log_softmax_ref(x, 0) + log_softmax_ref(x),
                    [r(rng1, 3, 5)]),
    "cross_entropy": (lambda z: mc.cross_entropy(z, LABELS),
                      lambda z: -np.mean(np.take_along_axis(
                          log_softmax_ref(z), LABELS[..., None], -1)),
                      [r(rng1, 2, 3, 5, low=-3, high=3)]),
    "cross_entropy_sum": (lambda z, lab: mc.cross_entropy(z, lab, "sum"),
                          lambda z, lab: -np.sum(np.take_along_axis(
                              log_softmax_ref(z), lab[..., None], -1)),
                          [r(rng1, 4, 6), np.array([5, 0, 0, 2], np.int32)]),
    "layer_norm": (lambda x, w, b: mc.layer_norm(x, w, b),
                   lambda x, w, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(
                       x.var(-1, keepdims=True) + 1e-5) * w + b,
                   [r(rng1, 3, 6), r(rng1, 6), r(rng1, 6)]),
    "rms_norm": (lambda x, w: mc.rms_norm(x, w),
                 lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) +
                                          1e-6) * w,
                 [r(rng1, 2, 5), r(rng1, 5)]),
    "silu": (lambda x: mc.silu(x),
             lambda x: x / (1 + np.exp(-x)),
             [r(rng1, 3, 4, low=-4, high=4)]),
    "causal_attention": (lambda q, k: mc.softmax(mc.where(
        mc.causal_mask(4), q @ k.T, -1e9)) @ k,
        lambda q, k: _softmax(np.where(np.tril(np.ones((4, 4))) > 0, q @ k.T,
                                       -1e9)) @ k,
        [r(rng1, 4, 3), r(rng1, 4, 3)]),
}


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("name", sorted(HELPERS))
def test_helpers_and_their_gradients(meshes, name):
    mc_fn, np_fn, arrays = HELPERS[name]
    check(meshes(gpus=1), mc_fn, np_fn, arrays)


def test_optimizer_misuse_is_reported(meshes):
    class Bad(mc.Actor):
        def __init__(self, w):
            self.opt = mc.optim.AdamW([w])

    with pytest.raises(mc.TraceError, match="mc.param values"):
        meshes(gpus=1).spawn("bad", Bad, np.ones(2, np.float32))
    assert finite_differences  # shared helper imported from test_grad


def test_sharded_optimizer_state_under_global_semantics(meshes):
    """ZeRO-1 in compiled code (issue 35 item 3): the moments annotated
    with mc.shard keep each rank's rows, so the update runs split, and the
    results equal the replicated state's exactly."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    t = rng.standard_normal((6, 4)).astype(np.float32)
    mesh = meshes(gpus=2)

    def loss_fn(w, x, t):
        return ((x @ w - t) ** 2).mean()

    def make(shard):
        @mc.compile(mesh=mesh)
        def step(w, state, x, t):
            xs, ts = mc.shard(x, gpus=0), mc.shard(t, gpus=0)
            _, g = mc.value_and_grad(loss_fn)(w, xs, ts)
            if shard:
                state = {k: v if k == "step" else mc.shard(v, gpus=0)
                         for k, v in state.items()}
            return mc.optim.adamw_update(w, g, state, lr=0.1)
        return step

    results, shares, kinds = {}, {}, {}
    for shard in (False, True):
        step = make(shard)
        ww, st = w, mc.optim.adamw_init(w)
        for _ in range(3):
            ww, st = step(ww, st, x, t)
        results[shard] = (ww, st)
        summary = step.plan_summary(w, mc.optim.adamw_init(w), x, t)
        shares[shard] = max(summary.compute_share.values())
        kinds[shard] = {c["kind"] for c in summary.collectives}
    np.testing.assert_array_equal(results[True][0], results[False][0])
    for k in ("exp_avg", "exp_avg_sq", "step"):
        np.testing.assert_array_equal(results[True][1][k], results[False][1][k])
    # The update runs on each rank's rows: no rank does it all.
    assert shares[True] < shares[False], shares
    # The gradient is reduce-scattered into the moments' rows (half an
    # all_reduce's bytes), and nothing else is reduced: the discarded
    # loss is not all-reduced for value_and_grad's seed.
    assert kinds[True] == {"reduce_scatter"}, kinds
    assert kinds[False] == {"all_reduce"}, kinds
