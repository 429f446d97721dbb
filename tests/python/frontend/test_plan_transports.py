"""plan_summary() says how each link and collective moves its bytes (issue
17): one host is shared memory, across hosts Gloo TCP, a collective with as
many members on every host (two or more) hierarchical ("shm+gloo"), as the
worker's data plane decides it (executor/lib/data/Factory.cpp). Where the
ranks run comes from the mesh: the local launcher runs them all here, the
others by the `hosts` dimension. Compiles only; no worker starts."""
import numpy as np
import pytest

import monarch_compile as mc


@pytest.fixture
def env_launcher(monkeypatch):
    # The env launcher needs these to make a mesh; nothing connects.
    monkeypatch.setenv("MONARCH_CONTROLLER", "127.0.0.1:1")
    monkeypatch.setenv("MONARCH_JOB_TOKEN", "t")
    monkeypatch.delenv("MONARCH_HIERARCHICAL", raising=False)
    monkeypatch.delenv("MONARCH_SHM", raising=False)


def data_parallel(mesh):
    @mc.compile(mesh=mesh)
    def step(x, w):
        x = mc.shard(x, hosts=0, gpus=0)
        return (x @ w).sum()
    return step


X = np.ones((8, 4), np.float32)
W = np.ones((4, 4), np.float32)


def collective_transports(summary):
    return {c["kind"]: c["transport"] for c in summary.collectives}


def test_local_launcher_runs_every_rank_on_one_host():
    summary = data_parallel(mc.mesh(hosts=2, gpus=2)).plan_summary(X, W)
    assert collective_transports(summary) == {"all_reduce": "shm"}
    assert "via shm" in str(summary)


def test_data_parallel_over_two_hosts_is_hierarchical(env_launcher,
                                                      monkeypatch):
    mesh = mc.mesh(hosts=2, gpus=2, launcher="env")
    summary = data_parallel(mesh).plan_summary(X, W)
    assert collective_transports(summary) == {"all_reduce": "shm+gloo"}
    assert list(summary.transports.values()) == ["shm+gloo"]
    assert "all_reduce on " in str(summary) and "via shm+gloo" in str(summary)
    monkeypatch.setenv("MONARCH_HIERARCHICAL", "0")
    summary = data_parallel(mesh).plan_summary(X, W)
    assert collective_transports(summary) == {"all_reduce": "gloo"}
    monkeypatch.setenv("MONARCH_SHM", "0")
    summary = data_parallel(mesh).plan_summary(X, W)
    assert collective_transports(summary) == {"all_reduce": "gloo"}


def test_one_member_per_host_is_gloo_and_one_host_is_shm(env_launcher):
    # Tensor parallel over gpus (each communicator inside a host), data
    # parallel over hosts (one member per host).
    mesh = mc.mesh(hosts=2, gpus=2, launcher="env")

    @mc.compile(mesh=mesh)
    def step(x, w):
        h = mc.shard(x, hosts=0) @ mc.shard(w, gpus=1)
        return h.sum(axis=0), h.sum(axis=1)

    summary = step.plan_summary(X, W)
    by_members = {tuple(c["members"]): c["transport"]
                  for c in summary.collectives}
    assert by_members, summary
    for members, transport in by_members.items():
        hosts = {m // 2 for m in members}
        want = "shm" if len(hosts) == 1 else "gloo"
        assert transport == want, (members, summary)


def test_pipeline_links_across_hosts_are_gloo(env_launcher):
    mesh = mc.mesh(hosts=2, gpus=2, launcher="env")

    class Doubler(mc.Actor):
        @mc.endpoint
        def twice(self, x):
            return x * 2.0

    first = mesh.slice(hosts=0).spawn("first", Doubler)
    second = mesh.slice(hosts=1).spawn("second", Doubler)

    @mc.compile
    def pipeline(x):
        return second.twice.call(first.twice.call(x))

    summary = pipeline.plan_summary(X)
    assert summary.links, summary
    for l in summary.links:
        same_host = l["from_root"] // 2 == l["to_root"] // 2
        assert l["transport"] == ("shm" if same_host else "gloo"), l
    assert any(l["transport"] == "gloo" for l in summary.links)
    assert "via gloo" in str(summary)


def test_without_a_hosts_dimension_the_run_decides(env_launcher):
    mesh = mc.mesh(gpus=4, launcher="env")

    @mc.compile(mesh=mesh)
    def step(x):
        return mc.shard(x, gpus=0).sum()

    summary = step.plan_summary(X)
    assert set(collective_transports(summary).values()) == {
        "shm or gloo (decided where the ranks run)"}


def test_nccl_plans_say_nccl():
    summary = data_parallel(mc.mesh(hosts=1, gpus=2)).plan_summary(
        X, W, backend="nccl")
    assert set(collective_transports(summary).values()) == {"nccl"}


def test_large_gathers_stay_on_gloo(env_launcher):
    # all_gather runs hierarchically up to 4 MB, reduce_scatter up to 16 MB
    # (HybridCommunicator.h); explicit collectives of an endpoint over both
    # dimensions of a 2 x 2 mesh.
    mesh = mc.mesh(hosts=2, gpus=2, launcher="env")

    class Shards(mc.Actor):
        def __init__(self):
            pass

        @mc.endpoint
        def gather(self, x):
            return mc.all_gather(x, ("hosts", "gpus"))

        @mc.endpoint
        def scatter(self, x):
            return mc.reduce_scatter(x, ("hosts", "gpus"))

    actors = mesh.spawn("shards", Shards)

    @mc.compile
    def both(x):
        return actors.gather.call(x), actors.scatter.call(x)

    def transports(rows):
        summary = both.plan_summary(np.ones((rows, 1024), np.float32))
        got = collective_transports(summary)
        assert {"all_gather", "reduce_scatter"} <= set(got), summary
        return got

    small = transports(8)      # 32 KB per rank: gathered 128 KB
    assert small["all_gather"] == small["reduce_scatter"] == "shm+gloo"
    mid = transports(2048)     # 8 MB per rank: gathered 32 MB, scattered 8 MB
    assert mid["all_gather"] == "gloo" and mid["reduce_scatter"] == "shm+gloo"
    big = transports(8192)     # 32 MB per rank
    assert big["all_gather"] == big["reduce_scatter"] == "gloo"
