"""fn.simulate(*args, topology=...) (docs/frontend.md, "API"; issue 19, first
slice): a step predicted from the plan alone. Checked against a measured
step within the loose bound the issue asks of a test (3x: these machines
are noisy), and for what the model must do: slower links, a longer step;
flops counted into kernels; a trace; refusals."""

import json
import time

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402


def make_step(mesh):
    @mc.compile(mesh=mesh)
    def step(w1, w2, x, t):
        def loss_fn(w1, w2):
            h = mc.relu(mc.shard(x, gpus=0) @ w1)
            return ((h @ w2 - mc.shard(t, gpus=0)) ** 2).mean()

        loss, (g1, g2) = mc.value_and_grad(loss_fn, argnums=(0, 1))(w1, w2)
        return loss, w1 - 0.01 * g1, w2 - 0.01 * g2
    return step


def data(width=384, batch=128):
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((width, width)) / width ** 0.5).astype(np.float32)
    w2 = (rng.standard_normal((width, width)) / width ** 0.5).astype(np.float32)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    t = rng.standard_normal((batch, width)).astype(np.float32)
    return w1, w2, x, t


def test_prediction_is_near_the_measured_step(meshes, tmp_path):
    mesh = meshes(hosts=1, gpus=2)
    step = make_step(mesh)
    w1, w2, x, t = data()
    times = []
    state = (w1, w2)
    for _ in range(12):
        start = time.perf_counter()
        _, a, b = step(*state, x, t)
        times.append(time.perf_counter() - start)
        state = (a, b)
    # The fastest step: the model has the machine to itself, a loaded CI
    # machine does not always.
    measured = float(np.min(times[2:])) * 1e6
    trace = tmp_path / "sim.json"
    sim = step.simulate(w1, w2, x, t, trace=str(trace))
    (plan,) = sim["steps"]
    predicted = plan["step_us"]
    assert measured / 3 < predicted < measured * 3, (measured, predicted)
    # The contractions' flops are in the plan: compute dominates.
    ranks = plan["ranks"]
    assert len(ranks) == 2
    assert all(r["compute_us"] > r["comm_us"] for r in ranks), ranks
    assert plan["link_bytes"]["same host"] >= 2 * w1.nbytes  # the gradients
    assert plan["critical_loc"].startswith(__file__)
    events = json.loads(trace.read_text())["traceEvents"]
    assert {e["pid"] for e in events} == {0, 1}
    assert "predicted step" in sim["report"]


def test_slower_links_predict_a_longer_step(meshes):
    mesh = meshes(hosts=1, gpus=2)
    step = make_step(mesh)
    args = data(128, 32)
    base = step.simulate(*args)["steps"][0]["step_us"]
    slow = step.simulate(*args, topology={"intra_bytes_per_us": 40,
                                          "intra_alpha_us": 500})
    assert slow["steps"][0]["step_us"] > base + 500
    h100 = step.simulate(*args, topology="dgx-h100")
    assert h100["topology"] == "dgx-h100"
    assert h100["steps"][0]["step_us"] < base


def test_bad_topologies_are_refused(meshes, tmp_path):
    mesh = meshes(hosts=1, gpus=2)
    step = make_step(mesh)
    args = data(64, 16)
    with pytest.raises(mc.MonarchError, match="unknown topology preset"):
        step.simulate(*args, topology="tpu-pod")
    with pytest.raises(mc.MonarchError, match="unknown topology field"):
        step.simulate(*args, topology={"warp_speed": 9})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"base": "cpu-cluster-25g",
                                "inter_alpha_us": 40}))
    assert step.simulate(*args, topology=str(path))["topology"] == \
        "cpu-cluster-25g"


def test_calibrate_writes_a_topology_that_simulate_reads(meshes, tmp_path):
    # monarch-calibrate measures the kernels' compute and memory rates on
    # one worker and writes them over a preset; the file predicts a step.
    from monarch_compile import calibrate
    path = tmp_path / "here.json"
    assert calibrate.main(["-o", str(path)]) == 0
    topology = json.loads(path.read_text())
    assert topology["base"] == "this-machine"
    assert topology["flops_per_us"] > 1e3 and topology["mem_bytes_per_us"] > 1e2
    assert topology["call_us"] > 0 and topology["array_us"] >= 0
    assert topology["rank_us"] >= 0
    step = make_step(meshes(hosts=1, gpus=2))
    sim = step.simulate(*data(64, 16), topology=str(path))
    assert sim["steps"][0]["step_us"] > 0
    # The controller's share: a call and each array of the step.
    ctl = sim["steps"][0]["controller_us"]
    assert ctl >= topology["call_us"]
    none = step.simulate(*data(64, 16), topology={
        **topology, "call_us": 0, "array_us": 0, "rank_us": 0,
        "controller_bytes_per_us": 0})
    assert none["steps"][0]["controller_us"] == 0
    assert none["steps"][0]["step_us"] < sim["steps"][0]["step_us"]
    # The arrays' bytes: copied once by the controller, whatever the ranks.
    only_bytes = {**topology, "call_us": 0, "array_us": 0, "rank_us": 0,
                  "controller_bytes_per_us": 1e3}
    small = step.simulate(*data(64, 16), topology=only_bytes)
    large = step.simulate(*data(256, 16), topology=only_bytes)
    assert 0 < small["steps"][0]["controller_us"] < large["steps"][0][
        "controller_us"]


def test_ranks_sharing_cores_compute_slower(meshes):
    # cores_per_host: two ranks on one core take twice as long in their
    # kernels as on two cores; 0 gives every rank a core of its own.
    step = make_step(meshes(hosts=1, gpus=2))
    args = data(256, 64)

    def predicted(cores):
        sim = step.simulate(*args, topology={"cores_per_host": cores})
        return sim["steps"][0]["ranks"][0]["compute_us"]

    assert predicted(1) == pytest.approx(2 * predicted(2), rel=1e-6)
    assert predicted(0) == pytest.approx(predicted(2), rel=1e-6)
    with pytest.raises(mc.MonarchError, match="non-negative integer"):
        step.simulate(*args, topology={"cores_per_host": 1.5})
