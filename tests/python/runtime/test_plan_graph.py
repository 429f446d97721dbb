"""fn.plan_graph(path) (docs/frontend.md, "API"; issue 19 item 5): SVG pictures of
the compiled plan, drawn without running it: well-formed, one lane per rank,
the collectives the program needs, and the user's lines in the tooltips."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from _procs import require_workers  # noqa: E402

require_workers()

import monarch_compile as mc  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def test_plan_graph_and_memory_plot(meshes, tmp_path):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh)
    def step(x, w):
        x = mc.shard(x, gpus=0)
        return mc.replicate(mc.relu(x @ w).sum(axis=0))  # LINE:step

    x = np.ones((8, 4), np.float32)
    w = np.ones((4, 4), np.float32)
    graph = tmp_path / "plan.svg"
    memory = tmp_path / "mem.svg"
    assert step.plan_graph(str(graph), x, w, memory_plot=str(memory)) == \
        str(graph)
    tree = ET.parse(graph)  # well-formed
    texts = [t.text for t in tree.iter(SVG + "text")]
    assert "controller" in texts and "rank 0" in texts and "rank 1" in texts
    assert "rank 2" not in texts
    assert any(t and t.startswith("all_reduce") for t in texts), texts
    titles = [t.text for t in tree.iter(SVG + "title")]
    with open(__file__) as f:
        line = next(i + 1 for i, text in enumerate(f)
                    if text.rstrip().endswith("# LINE:step"))
    assert any(f"{__file__}:{line}:" in t for t in titles), titles
    collectives = [p for p in tree.iter(SVG + "polyline")
                   if p.get("class") == "collective"]
    assert collectives
    mem = ET.parse(memory)
    panels = [t.text for t in mem.iter(SVG + "text")
              if t.text and ": arena " in t.text]
    assert len(panels) == 2, panels
    # Nothing ran: the pictures come from the plan alone.
    assert step.trace_count == 1


def test_plan_graph_needs_a_trace(meshes, tmp_path):
    mesh = meshes(hosts=1, gpus=2)

    @mc.compile(mesh=mesh)
    def f(x):
        return x + 1.0

    with pytest.raises(mc.MonarchError, match="has not been traced yet"):
        f.plan_graph(str(tmp_path / "p.svg"))
