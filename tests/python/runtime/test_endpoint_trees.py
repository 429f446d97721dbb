"""Endpoints that take and return nested tuples, lists and dicts of tensors
(issue 33 item 6), and the optimizer's state_dict / load_state_dict in
torch's layout, returned from one endpoint and accepted by another, end to
end on real workers against numpy."""

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402



def marker_line(path, marker):
    """The line of `path` ending with `# ERR:<marker>`."""
    with open(path) as f:
        hits = [i + 1 for i, text in enumerate(f)
                if text.rstrip().endswith(f"# ERR:{marker}")]
    assert len(hits) == 1, marker
    return hits[0]


class Trees(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)

    @mc.endpoint
    def apply(self, batch, scales, bias):
        # batch: {"x": x, "pair": (a, b)}; scales: [traced scalar, 2.0]
        y = batch["x"] @ self.w
        a, b = batch["pair"]
        return {"y": y * scales[0] + scales[1] + bias,
                "parts": [a + b, {"diff": a - b}],
                "scale": scales[1]}


def test_endpoints_take_and_return_trees(meshes):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    a = rng.standard_normal((3,)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    mesh = meshes(gpus=2)
    actor = mesh.spawn("trees", Trees, w)

    @mc.compile(mesh=mesh)
    def f(x, a, b, s):
        return actor.apply.call({"x": x, "pair": (a, b)}, [s, 2.0], 0.5)

    out = f(x, a, b, np.float32(3.0))
    np.testing.assert_allclose(out["y"], x @ w * 3.0 + 2.0 + 0.5, rtol=1e-5)
    np.testing.assert_allclose(out["parts"][0], a + b, rtol=1e-6)
    np.testing.assert_allclose(out["parts"][1]["diff"], a - b, rtol=1e-6)
    assert out["scale"] == 2.0  # a Python value in the structure stays one
    # Another scalar: no retrace (it is a runtime value).
    out = f(x, a, b, np.float32(-1.0))
    np.testing.assert_allclose(out["y"], x @ w * -1.0 + 2.5, rtol=1e-5)
    assert f.trace_count == 1


def test_an_unsupported_leaf_in_an_argument_is_refused_at_the_call(meshes):
    mesh = meshes(gpus=2)
    actor = mesh.spawn("trees_bad", Trees, np.ones((4, 3), np.float32))

    @mc.compile(mesh=mesh)
    def f(x):
        return actor.apply.call({"x": x, "pair": (x, object())}, [1.0, 2.0], 0.0)  # ERR:leaf

    with pytest.raises(mc.UnsupportedError) as e:
        f(np.ones((2, 4), np.float32))
    assert (e.value.file, e.value.line) == (__file__,
                                            marker_line(__file__, "leaf"))
    assert "argument 0['pair'][1]" in str(e.value), str(e.value)


class Model(mc.Actor):
    def __init__(self, w, b, hyper):
        self.p = [mc.param(w), mc.param(b)]
        self.opt = mc.optim.AdamW(self.p, **hyper)

    @mc.endpoint
    def step(self, gw, gb):
        self.opt.step([gw, gb])
        return self.p[0], self.p[1]

    @mc.endpoint
    def save(self):
        return self.opt.state_dict()

    @mc.endpoint
    def load(self, state):
        self.opt.load_state_dict(state)
        return self.opt.state_dict()["state"][0]["step"]


def _adamw(p, g, m, v, t, lr, betas, eps, wd):
    p = p * (1 - lr * wd)
    m = betas[0] * m + (1 - betas[0]) * g
    v = betas[1] * v + (1 - betas[1]) * g * g
    mhat = m / (1 - betas[0] ** t)
    vhat = v / (1 - betas[1] ** t)
    return p - lr * mhat / (np.sqrt(vhat) + eps), m, v


def test_optimizer_state_dict_round_trip_in_torch_layout(meshes):
    hyper = dict(lr=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    grads = [(rng.standard_normal((4, 3)).astype(np.float32),
              rng.standard_normal((3,)).astype(np.float32)) for _ in range(3)]
    mesh = meshes(gpus=2)
    first = mesh.spawn("sd_first", Model, w, b, hyper)
    second = mesh.spawn("sd_second", Model, w, b, hyper)

    @mc.compile(mesh=mesh)
    def step(actor_id, gw, gb):
        return (first if actor_id == 0 else second).step.call(gw, gb)

    @mc.compile(mesh=mesh)
    def save():
        return first.save.call()

    @mc.compile(mesh=mesh)
    def transfer():
        return second.load.call(first.save.call())

    for gw, gb in grads[:2]:
        step(0, gw, gb)
    sd = save()
    # torch's layout, parameters numbered in the optimizer's order.
    assert sorted(sd) == ["param_groups", "state"]
    assert sorted(sd["state"]) == [0, 1]
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    group = sd["param_groups"][0]
    assert group["params"] == [0, 1]
    assert group["lr"] == 0.1 and group["betas"] == [0.9, 0.99]
    # The moments against numpy's AdamW after two steps.
    ref = {0: (w.astype(np.float64), 0.0, 0.0), 1: (b.astype(np.float64), 0.0, 0.0)}
    for t, (gw, gb) in enumerate(grads[:2], start=1):
        for i, g in ((0, gw), (1, gb)):
            p, m, v = ref[i]
            ref[i] = _adamw(p, g.astype(np.float64), m, v, t, 0.1, (0.9, 0.99),
                            1e-8, 0.01)
    for i in (0, 1):
        assert float(sd["state"][i]["step"]) == 2.0
        np.testing.assert_allclose(sd["state"][i]["exp_avg"], ref[i][1],
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(sd["state"][i]["exp_avg_sq"], ref[i][2],
                                   rtol=1e-5, atol=1e-7)
    # Another actor loads it: its next step continues from step 2 (the
    # parameters are its own, still w and b).
    assert float(transfer()) == 2.0
    gw, gb = grads[2]
    new_w, new_b = step(1, gw, gb)
    for i, (p0, g, got) in enumerate(((w, gw, new_w), (b, gb, new_b))):
        want, _, _ = _adamw(p0.astype(np.float64), g.astype(np.float64),
                            ref[i][1], ref[i][2], 3, 0.1, (0.9, 0.99), 1e-8,
                            0.01)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class Other(mc.Actor):
    def __init__(self, w, b):
        self.p = [mc.param(w), mc.param(b)]
        self.opt = mc.optim.AdamW(self.p, lr=0.5)

    @mc.endpoint
    def load(self, state):
        self.opt.load_state_dict(state)  # ERR:hyper
        return self.p[0]


def test_loading_other_hyperparameters_is_refused_at_the_line(meshes):
    mesh = meshes(gpus=2)
    w, b = np.ones((4, 3), np.float32), np.ones((3,), np.float32)
    source = mesh.spawn("sd_source", Model, w, b, dict(lr=0.1))
    target = mesh.spawn("sd_target", Other, w, b)

    @mc.compile(mesh=mesh)
    def transfer():
        return target.load.call(source.save.call())

    with pytest.raises(mc.TraceError) as e:
        transfer()
    assert (e.value.file, e.value.line) == (__file__,
                                            marker_line(__file__, "hyper"))
    assert "'lr'" in str(e.value) and "create it with the loaded" in str(e.value)


class Regression(mc.Actor):
    """Data parallel: each rank's gradients of its rows of the batch, which
    the optimizer averages (`reduce=`), its state whole or ZeRO-1."""

    def __init__(self, w, b, opt, shard):
        self.p = [mc.param(w), mc.param(b)]
        kwargs = dict(shard_state="gpus") if shard else {}
        self.opt = (mc.optim.AdamW(self.p, lr=0.1, **kwargs) if opt == "adamw"
                    else mc.optim.SGD(self.p, lr=0.1, momentum=0.9, **kwargs))

    @mc.endpoint
    def step(self, x, t):
        def loss_fn(p, x, t):
            return (((x @ p[0] + p[1]) - t) ** 2).mean()

        _, g = mc.value_and_grad(loss_fn)(self.p, x, t)
        self.opt.step(g, reduce="gpus")
        return self.p[0], self.p[1]

    @mc.endpoint
    def save(self):
        return self.opt.state_dict()


@pytest.mark.parametrize("opt", ["adamw", "sgd"])
def test_zero1_sharded_state_matches_whole_state(meshes, opt):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 3)).astype(np.float32)  # rows divide: split
    b = rng.standard_normal((3,)).astype(np.float32)    # 3 rows: whole
    batches = [(rng.standard_normal((4, 8)).astype(np.float32),
                rng.standard_normal((4, 3)).astype(np.float32))
               for _ in range(3)]
    mesh = meshes(gpus=2)
    whole = mesh.spawn(f"whole_{opt}", Regression, w, b, opt, False)
    zero = mesh.spawn(f"zero_{opt}", Regression, w, b, opt, True)

    def compiled(actor):
        @mc.compile(mesh=mesh)
        def step(x, t):
            return actor.step.call(mc.shard(x, gpus=0), mc.shard(t, gpus=0))
        return step

    step_whole, step_zero = compiled(whole), compiled(zero)
    for x, t in batches:
        want, got = step_whole(x, t), step_zero(x, t)
        for a, g in zip(want, got):
            np.testing.assert_allclose(g, a, rtol=1e-5, atol=1e-6)
    # Each rank holds half of the split parameter's moments (and a master
    # copy of its rows): less optimizer state per rank than whole state.
    x, t = batches[0]
    whole_state = step_whole.plan_summary(x, t).state_memory
    zero_state = step_zero.plan_summary(x, t).state_memory
    slots = 2 if opt == "adamw" else 1
    w_bytes = w.nbytes
    for key, zb in zero_state.items():
        # whole: w, b, their slots and the step; ZeRO-1: w, b, b's slots,
        # the step, and per rank half of w's slots and of its master copy.
        assert whole_state[key] - zb == slots * w_bytes - (slots + 1) * w_bytes // 2
    # The state dict is whole (torch's layout) either way.

    @mc.compile(mesh=mesh)
    def save(which):
        return (zero if which else whole).save.call()

    sw, sz = save(0), save(1)
    for slot in sw["state"][0]:
        np.testing.assert_allclose(sz["state"][0][slot], sw["state"][0][slot],
                                   rtol=1e-5, atol=1e-6)


def test_zero1_needs_the_optimizer_to_reduce(meshes):
    class Bad(mc.Actor):
        def __init__(self, w):
            self.p = [mc.param(w)]
            self.opt = mc.optim.AdamW(self.p, shard_state="gpus")

        @mc.endpoint
        def step(self, g):
            self.opt.step([g])  # ERR:reduce
            return self.p[0]

    mesh = meshes(gpus=2)
    actor = mesh.spawn("zero_bad", Bad, np.ones((4, 3), np.float32))

    @mc.compile(mesh=mesh)
    def f(g):
        return actor.step.call(g)

    with pytest.raises(mc.TraceError) as e:
        f(np.ones((4, 3), np.float32))
    assert (e.value.file, e.value.line) == (__file__,
                                            marker_line(__file__, "reduce"))
    assert "reduce='gpus'" in str(e.value)
