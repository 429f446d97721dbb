"""The logic of bench/peers (make bench-peers) without network or peers:
ratios, aggregation, table cells and failure rows, the doc update, record
parsing, and that a hung driver and everything it started are killed."""
import os
import pathlib
import sys
import textwrap
import time

import numpy as np
import pytest

PEERS = pathlib.Path(__file__).resolve().parents[3] / "bench" / "peers"
sys.path.insert(0, str(PEERS))

import common as C  # noqa: E402
import harness as H  # noqa: E402
import report as R  # noqa: E402


def test_ratio_direction_per_unit():
    # Times: peer / ours (ours 100 us, peer 250 us -> 2.5x better).
    assert R.ratio(100.0, 250.0, "us") == pytest.approx(2.5)
    assert R.ratio(4.0, 2.0, "s") == pytest.approx(0.5)
    # Throughput: ours / peer.
    assert R.ratio(3.0, 1.5, "GB/s") == pytest.approx(2.0)
    assert R.ratio(1.0, 4.0, "GB/s") == pytest.approx(0.25)
    for ours, peer in ((None, 1.0), (1.0, None), (0.0, 1.0), (1.0, 0.0)):
        assert R.ratio(ours, peer, "us") is None


def test_stats_median_and_spread():
    assert R.stats([]) is None
    assert R.stats([5.0, 1.0, 3.0]) == (3.0, 1.0, 5.0)
    assert R.stats([4.0, 1.0, 2.0, 10.0]) == (3.0, 1.0, 10.0)


def _results():
    res = R.Results()
    res.add("ours", {"system": "ours", "version": "monarch_compile @ abc"})
    for v in (100.0, 120.0, 90.0):
        res.add("ray", {"workload": "echo", "value": v, "unit": "us"})
    for v in (50.0, 40.0, 60.0):
        res.add("ours", {"workload": "echo", "value": v, "unit": "us"})
    res.add("ours_cli", {"workload": "echo", "value": 25.0, "unit": "us"})
    for v in (1.0, 2.0):
        res.add("ray", {"workload": "xfer_1MB", "value": v, "unit": "GB/s"})
    res.add("ours", {"workload": "xfer_1MB", "value": 3.0, "unit": "GB/s"})
    res.add("ours", {"workload": "xfer_1MB",
                     "error": "ExecutorUnavailableError: cannot run xfer()"})
    res.add("ours", {"workload": "chain4",
                     "error": "ExecutorUnavailableError: cannot run chain(): no plan"})
    res.add("ray", {"workload": "chain4", "value": 1000.0, "unit": "us"})
    res.add_failure("monarch", ["echo", "chain4", "xfer_1MB"],
                    "not installed: pip install torchmonarch failed: no wheel")
    return res


def _row(table, title):
    rows = [ln for ln in table.splitlines() if ln.startswith(f"| {title} |")]
    assert len(rows) == 1, table
    return [c.strip() for c in rows[0].strip("|").split("|")]


def test_table_cells_ratios_and_failure_rows():
    res = _results()
    table = R.table(res, ["echo", "chain4", "xfer_1MB"])
    head = table.splitlines()[0]
    assert "ours vs Ray CG" in head and "ours vs Monarch" in head
    assert "ours CLI vs Ray CG" in head

    echo = _row(table, R.WORKLOAD_TITLES["echo"])
    # workload, unit, ours, ours CLI, Ray, Monarch, then ours/CLI x Ray/Monarch
    assert echo[1] == "us"
    assert echo[2] == "50.0 (40.0-60.0, n=3)"
    assert echo[3] == "25.0 (25.0-25.0, n=1)"
    assert echo[4] == "100 (90.0-120, n=3)"
    assert echo[5].startswith("not installed: pip install torchmonarch")
    assert echo[6] == "2.00x"          # 100 / 50
    assert echo[7] == "-"              # Monarch has no value
    assert echo[8] == "4.00x"          # 100 / 25

    chain = _row(table, R.WORKLOAD_TITLES["chain4"])
    assert chain[2].startswith("not runnable: ExecutorUnavailableError: cannot run chain()")
    assert chain[3] == "no result"
    assert chain[6] == "-"

    xfer = _row(table, R.WORKLOAD_TITLES["xfer_1MB"])
    assert xfer[1] == "GB/s"
    assert xfer[2] == "3.00 (3.00-3.00, n=1, 1 failed)"
    assert xfer[6] == "2.00x"          # 3.0 / median(1, 2) = 3 / 1.5


def test_failure_labels_and_section():
    assert R.error_label("ray", "RayChannelTimeoutError: hang").startswith("failed: ")
    assert R.error_label("ours", "TraceError: bad").startswith("failed: ")
    assert R.error_label("ours", None) == "no result"
    assert R.error_label("ours_cli", H.CLI_COLD) == H.CLI_COLD
    long = "x" * 500
    assert len(R.error_label("ray", long)) < 100
    # Pipes would break the markdown table.
    assert "|" not in R.error_label("ray", "a | b")
    res = _results()
    res.add("ours_cli", {"workload": "cold", "error": H.CLI_COLD})
    text = R.failures(res)
    assert "n/a" not in text
    assert "ours (Python API), chain4 (1x): ExecutorUnavailableError" in text
    assert "Monarch, echo (1x): not installed" in text


def test_parse_records_ignores_noise():
    out = "\n".join([
        "Monarch internal logs are being written to /tmp/x",
        'RESULT {"workload": "echo", "value": 12.5, "unit": "us"}',
        "RESULT {not json",
        '*** SIGTERM received ***',
        'RESULT {"workload": "cold", "error": "boom"}'])
    assert H.parse_records(out) == [
        {"workload": "echo", "value": 12.5, "unit": "us"},
        {"workload": "cold", "error": "boom"}]


def test_collect_marks_missing_workloads():
    res = R.Results()
    recs = [{"system": "ray", "version": "ray 9"},
            {"workload": "echo", "value": 10.0, "unit": "us"}]
    assert H.collect(res, "ray", ["echo", "chain4"], recs, "timed out after 5 s") == ["chain4"]
    assert res.samples("ray", "echo") == [10.0]
    assert res.first_error("ray", "chain4") == "timed out after 5 s"
    assert res.versions["ray"] == "ray 9"
    H.collect(res, "ray", ["pipeline"], [], None)
    assert res.first_error("ray", "pipeline") == "the driver reported no result"


def test_summarize_units():
    rec = C.summarize("xfer_16MB", [0.02, 0.01, 0.04])
    assert rec["unit"] == "GB/s"
    assert rec["value"] == pytest.approx((16 << 20) / 0.02 / 1e9)
    rec = C.summarize("echo", [3e-4, 1e-4, 2e-4])
    assert rec["unit"] == "us" and rec["value"] == pytest.approx(200.0)


def test_references_and_check_close():
    x = C.echo_input()
    assert x.nbytes == 1024
    np.testing.assert_array_equal(C.ref_scatter(x), 4 * (x + 2))
    C.check_close("ok", x + 0, x)
    with pytest.raises(AssertionError):
        C.check_close("bad", x + 1, x)
    with pytest.raises(AssertionError):
        C.check_close("count", [x], [x, x])
    n = C.XFER_SIZES["xfer_1MB"]
    assert C.xfer_buffer(n).nbytes == n
    assert C.ref_xfer_sum(n) == pytest.approx(float(C.xfer_buffer(n).sum(dtype=np.float64)))


def test_run_warm_reports_failures_and_continues(capsys):
    closed = []

    def good():
        return (lambda: 1.0), (lambda r: None), (lambda: closed.append("good"))

    def bad():
        raise RuntimeError("peer refused\nsecond line")

    saved = dict(C.WARMUP), dict(C.MAX_STEPS)
    C.WARMUP["w_good"], C.MAX_STEPS["w_good"] = 0, 5
    try:
        C.run_warm(["w_bad", "w_good"], {"w_bad": bad, "w_good": good})
    finally:
        C.WARMUP.clear(), C.WARMUP.update(saved[0])
        C.MAX_STEPS.clear(), C.MAX_STEPS.update(saved[1])
    recs = H.parse_records(capsys.readouterr().out)
    assert recs[0] == {"workload": "w_bad", "error": "RuntimeError: peer refused second line"}
    assert recs[1]["workload"] == "w_good" and recs[1]["steps"] == 5
    assert closed == ["good"]


def test_write_doc_keeps_hand_written_text(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Title\n\nintro\n\n{H.BEGIN}\nold table\n{H.END}\n\n## Analysis\nkept\n")
    H.write_doc(doc, f"{H.BEGIN}\nnew table\n{H.END}")
    text = doc.read_text()
    assert "old table" not in text and "new table" in text
    assert text.startswith("# Title\n\nintro\n") and text.endswith("## Analysis\nkept\n")
    fresh = tmp_path / "fresh.md"
    H.write_doc(fresh, f"{H.BEGIN}\nt\n{H.END}")
    assert H.BEGIN in fresh.read_text()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = pathlib.Path(f"/proc/{pid}/stat")
    # A zombie whose parent has not reaped it yet is dead too.
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_hung_driver_and_its_children_are_killed(tmp_path, monkeypatch):
    pidfile = tmp_path / "child.pid"
    fake = tmp_path / "sys_fake.py"
    fake.write_text(textwrap.dedent(f"""
        import json, subprocess, sys, time
        print("RESULT " + json.dumps({{"workload": "echo", "value": 1.0, "unit": "us"}}), flush=True)
        # A grandchild in its own process group, like a peer's worker.
        child = subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgid(0, 0); time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """))
    monkeypatch.setattr(H, "HERE", tmp_path)
    monkeypatch.setitem(H.DRIVERS, "fake", ["sys_fake.py"])
    t = time.time()
    recs, failure, _ = H.run_driver(sys.executable, "fake", [], 3, dict(os.environ))
    assert time.time() - t < 30
    assert failure == "timed out after 3 s"
    assert recs == [{"workload": "echo", "value": 1.0, "unit": "us"}]
    child = int(pidfile.read_text())
    deadline = time.time() + 5
    while _alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def test_driver_crash_is_a_failure_not_an_exception(tmp_path, monkeypatch):
    (tmp_path / "sys_crash.py").write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    monkeypatch.setattr(H, "HERE", tmp_path)
    monkeypatch.setitem(H.DRIVERS, "crash", ["sys_crash.py"])
    recs, failure, _ = H.run_driver(sys.executable, "crash", [], 30, dict(os.environ))
    assert recs == [] and failure == "driver exited with 3: boom"
    recs, failure, _ = H.run_driver("/nonexistent/python", "crash", [], 30, dict(os.environ))
    assert recs == [] and failure.startswith("cannot start /nonexistent/python")


def test_generated_section_has_machine_versions_and_table():
    res = _results()
    info = {"cores": 2, "cpu": "Test CPU", "memory": "1.0 GiB", "kernel": "6", "python": "3.11"}
    meta = {"date": "d", "reps": 3, "elapsed_min": 1.0, "load_start": "1", "load_end": "2",
            "systems": list(R.SYSTEMS), "workloads": ["echo"]}
    text = H.generated_section(res, info, meta)
    assert text.startswith(H.BEGIN) and text.endswith(H.END)
    assert "2 cores, Test CPU, 1.0 GiB memory" in text
    assert "ours (Python API): monarch_compile @ abc" in text
    assert "Ray Compiled Graphs: unknown" in text
    assert "| 1. echo, 1 KB | us | 50.0 (40.0-60.0, n=3) |" in text


def test_find_build_skips_directories_without_a_working_extension(tmp_path):
    empty = tmp_path / "build-empty"
    (empty / "python").mkdir(parents=True)
    broken = tmp_path / "build-broken"
    (broken / "python").mkdir(parents=True)
    (broken / "python" / "_monarch_native.so").write_text("not an ELF file")
    env = dict(os.environ)
    # A python that cannot import anything stands for a half-rebuilt tree.
    found, why = H.find_build([str(empty), str(broken)], "/bin/false", env)
    assert found is None and why.startswith(str(broken))
    found, why = H.find_build([str(empty)], sys.executable, env)
    assert found is None and "no build directory" in why
    # The real interpreter fails on the corrupt extension the same way.
    found, why = H.find_build([str(broken)], sys.executable, env)
    assert found is None and why.startswith(str(broken)) and "Error" in why


def test_build_candidates_order_and_dedup():
    env = {"MONARCH_BUILD_DIR": "/x/b1"}
    c = H.build_candidates("/x/b1", env)
    assert c[0] == "/x/b1" and c.count("/x/b1") == 1
    assert str(H.ROOT / "build") in c
