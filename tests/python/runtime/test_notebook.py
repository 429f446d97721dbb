"""Notebooks (issue 18 item 3): examples/notebooks/quickstart.ipynb runs in a
real Jupyter kernel (nbclient over ipykernel) and prints what the README's
tour promises; in one kernel the mesh and its workers live across cells, a
re-run cell that redefines a compiled function replaces it, mc.debug_print
lines appear in the cell that ran the step, prefixed by rank; interrupting a
cell (the Jupyter protocol's interrupt, as a front end's stop button sends)
aborts the step within a bound and the next mesh runs; shutting the kernel
down leaves no worker behind."""
import json
import os
import pathlib
import re
import sys
import time

import numpy as np
import pytest

from _procs import _unavailable, require_workers, worker_children

require_workers(why="the notebook runs real worker processes")

try:  # scripts/setup.sh installs them
    import jupyter_client
    import nbclient
    import nbformat
except ImportError as err:
    _unavailable(f"nbclient, nbformat and ipykernel are needed: {err}")

ROOT = pathlib.Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "examples" / "notebooks" / "quickstart.ipynb"


@pytest.fixture
def kernel_name(tmp_path, monkeypatch):
    """A kernel spec that runs this interpreter, so the kernel imports the
    package (and finds the build) exactly as the test does."""
    folder = tmp_path / "jupyter" / "kernels" / "monarch-test"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"],
        "display_name": "monarch test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT / "python")] + ([os.environ["PYTHONPATH"]]
                                  if os.environ.get("PYTHONPATH") else [])))
    return "monarch-test"


def text_of(cell):
    """Everything a code cell showed: streams, results and errors."""
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif out["output_type"] in ("execute_result", "display_data"):
            parts.append(out["data"].get("text/plain", ""))
        elif out["output_type"] == "error":
            parts.append(f"{out['ename']}: {out['evalue']}")
    return "".join(parts)


def code_cell(nb, needle):
    for cell in nb.cells:
        if cell.cell_type == "code" and needle in cell.source:
            return cell
    raise AssertionError(f"no code cell holds {needle!r}")


def kernel_pid(client):
    return client.km.provisioner.process.pid


def test_the_quickstart_notebook_runs_and_shows_what_the_tour_promises(
        kernel_name, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name=kernel_name, timeout=300,
        resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
            if "mesh.dims" in cell.source:
                pid = kernel_pid(client)
        # Workers started at the first run, in the kernel, and stopped by the
        # notebook's last cell.
        assert worker_children(pid) == []

        assert text_of(code_cell(nb, "mesh.dims")) == "{'hosts': 1, 'gpus': 2}"

        shown = text_of(code_cell(nb, "def step("))
        assert "matches numpy: True" in shown, shown

        ir = text_of(code_cell(nb, 'step.ir("traced"'))
        assert "monarch" in ir and "shard" in ir, ir

        summary = text_of(code_cell(nb, "step.plan_summary()"))
        assert "rank" in summary, summary

        # debug_print: one folded line per call, printed in the cell that ran
        # the step, with that call's values.
        prints = text_of(code_cell(nb, "mc.debug_print(\"call"))
        for k in range(2):
            x = np.arange(8, dtype=np.float32).reshape(4, 2) + k
            want = f"[ranks 0-1] call {k} row sums {x.sum(axis=1)}"
            assert want in prints, (want, prints)

        # Per-rank lines from an endpoint, then the all-reduced result.
        actor = text_of(code_cell(nb, "class Stage"))
        x = np.arange(8, dtype=np.float32).reshape(4, 2)
        for r in range(2):
            assert f"[rank {r}] my rows {x[2 * r:2 * r + 2]}" in actor, actor
        want = x[:2] @ np.ones((2, 2), np.float32) + x[2:] @ np.ones(
            (2, 2), np.float32)
        assert str(want) in actor, actor

        # The training cell: its printed losses are numpy's.
        train = text_of(code_cell(nb, "def train_step("))
        rng = np.random.default_rng(1)
        x = rng.standard_normal((16, 4)).astype(np.float32)
        t = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
        w = np.zeros((4, 1), np.float32)
        losses = []
        for _ in range(100):
            r = x @ w - t
            losses.append(float((r ** 2).mean()))
            w = w - np.float32(0.1) * (2 * x.T @ r / r.size)
        first, last = re.search(r"loss (\S+) -> (\S+)", train).groups()
        assert float(first) == pytest.approx(losses[0], rel=1e-3)
        assert float(last) == pytest.approx(losses[-1], rel=1e-2, abs=1e-5)
        shown_w = re.search(r"w \[([^\]]*)\]", train).group(1).split()
        np.testing.assert_allclose([float(v) for v in shown_w], w.ravel(),
                                   atol=0.006)

        # Later cells in the same kernel: a new mesh lives across cells, and
        # re-running a cell whose function changed replaces the function.
        cell = nbformat.v4.new_code_cell(
            "mesh = mc.mesh(gpus=2)\n"
            "@mc.compile(mesh=mesh)\n"
            "def f(x):\n"
            "    return mc.replicate(mc.shard(x, gpus=0) + 1.0)\n"
            "print(f(np.arange(4, dtype=np.float32)))")
        nb.cells.append(cell)
        client.execute_cell(cell, len(nb.cells) - 1)
        assert text_of(cell).strip() == "[1. 2. 3. 4.]", text_of(cell)
        workers = worker_children(pid)
        assert len(workers) == 2, workers

        cell.source = cell.source.replace("mesh = mc.mesh(gpus=2)\n", "")
        cell.source = cell.source.replace("+ 1.0", "* 3.0")
        client.execute_cell(cell, len(nb.cells) - 1)
        assert text_of(cell).strip() == "[0. 3. 6. 9.]", text_of(cell)
        assert worker_children(pid) == workers  # the same workers ran it
    # Shutting the kernel down stops the mesh it held.
    assert_gone(workers)


def assert_gone(workers, seconds=10):
    deadline = time.monotonic() + seconds
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], workers


def _alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _run(kc, code, timeout=120):
    """Runs `code` in the kernel; (status, text shown, error name)."""
    shown = []

    def hook(msg):
        content = msg["content"]
        if msg["msg_type"] == "stream":
            shown.append(content["text"])
        elif msg["msg_type"] in ("execute_result", "display_data"):
            shown.append(content["data"].get("text/plain", ""))
    # Right after an error (the interrupted cell's KeyboardInterrupt)
    # ipykernel aborts the requests that reach it within its
    # stop_on_error window: such a request was never run, so send it again.
    for _ in range(20):
        shown.clear()
        reply = kc.execute_interactive(code, timeout=timeout,
                                       output_hook=hook)
        content = reply["content"]
        if content["status"] != "aborted":
            break
        time.sleep(0.1)
    return content["status"], "".join(shown), content.get("ename")


def test_interrupting_a_cell_aborts_the_step(kernel_name):
    km = jupyter_client.KernelManager(kernel_name=kernel_name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        # Every rank sleeps 6 s at the first instruction of step 1.
        status, shown, _ = _run(kc, (
            "import os, time\n"
            "import numpy as np\n"
            "import monarch_compile as mc\n"
            "os.environ['MONARCH_FAULT_INJECT'] = 'sleep:1:0:6000'\n"
            "mesh = mc.mesh(gpus=2)\n"
            "@mc.compile(mesh=mesh)\n"
            "def inc(v):\n"
            "    return v + 1.0\n"
            "x = np.arange(4, dtype=np.float32)\n"
            "print(inc(x))"))
        assert status == "ok" and shown.strip() == "[1. 2. 3. 4.]", shown

        msg_id = kc.execute("started = time.monotonic()\ninc(x)")
        time.sleep(1.5)  # the step is under way
        sent = time.monotonic()
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=30)
        elapsed = time.monotonic() - sent
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        print(f"the cell ended {elapsed:.3f} s after the interrupt")
        assert elapsed < 3.0, f"the cell ended {elapsed:.2f} s after the interrupt"

        # The interrupted mesh says what to do; a new mesh in the next cell
        # runs, and the kernel is still the same.
        status, shown, ename = _run(kc, "inc(x)")
        assert status == "error" and ename == "ExecutionError", (status, ename)
        status, shown, _ = _run(kc, (
            "del os.environ['MONARCH_FAULT_INJECT']\n"
            "mesh = mc.mesh(gpus=2)\n"
            "@mc.compile(mesh=mesh)\n"
            "def inc(v):\n"
            "    return v + 2.0\n"
            "print(inc(x), time.monotonic() - started > 1.0)"))
        assert status == "ok" and shown.strip() == "[2. 3. 4. 5.] True", shown
        workers = worker_children(km.provisioner.process.pid)
        assert len(workers) == 2, workers
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    assert_gone(workers)
