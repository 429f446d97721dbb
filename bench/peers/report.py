"""Aggregation and formatting of the peer benchmarks (pure functions, no I/O
besides what callers pass in; tested by tests/python/bench/).

A *record* is what a driver prints after `RESULT `: either
{"workload", "value", "unit", ...} or {"workload", "error"}. The harness
collects them per system over the repetitions into a `Results`.
"""
import statistics

SYSTEMS = ("ours", "ours_cli", "ray", "monarch")
SYSTEM_TITLES = {"ours": "ours (Python API)", "ours_cli": "ours (monarch-run CLI)",
                 "ray": "Ray Compiled Graphs", "monarch": "Monarch"}
SHORT_TITLES = {"ours": "ours", "ours_cli": "ours CLI", "ray": "Ray CG",
                "monarch": "Monarch"}
OURS = ("ours", "ours_cli")
PEERS = ("ray", "monarch")

WORKLOAD_TITLES = {
    "echo": "1. echo, 1 KB",
    "chain4": "2a. chain of 4 actors, 1 KB",
    "scatter4": "2b. scatter-gather 1->4->1, 1 KB",
    "pipeline": "3. pipeline 2 stages x 8 micro-batches, 256x256 matmul+relu",
    "xfer_1MB": "4a. transfer 1 MB",
    "xfer_16MB": "4b. transfer 16 MB",
    "xfer_64MB": "4c. transfer 64 MB",
    "cold": "5. cold start to first echo result",
}
# Units where more is better; for the others (us, s) less is better.
HIGHER_IS_BETTER = {"GB/s"}
UNREACHABLE_EXECUTOR = "ExecutorUnavailableError"


class Results:
    """values[system][workload] -> list of per-repetition values, plus units
    and the error messages of failed repetitions."""

    def __init__(self):
        self.values = {}
        self.units = {}
        self.errors = {}
        self.versions = {}

    def add(self, system, record):
        if "system" in record:
            self.versions[system] = record.get("version", "")
            return
        w = record["workload"]
        if "error" in record:
            self.errors.setdefault(system, {}).setdefault(w, []).append(record["error"])
            return
        self.values.setdefault(system, {}).setdefault(w, []).append(float(record["value"]))
        self.units[w] = record["unit"]

    def add_failure(self, system, workloads, message):
        """A whole driver failed (not installed, timeout, crash)."""
        for w in workloads:
            self.add(system, {"workload": w, "error": message})

    def samples(self, system, workload):
        return self.values.get(system, {}).get(workload, [])

    def first_error(self, system, workload):
        errs = self.errors.get(system, {}).get(workload, [])
        return errs[0] if errs else None


def stats(samples):
    """(median, min, max) of the per-repetition values, or None."""
    if not samples:
        return None
    return statistics.median(samples), min(samples), max(samples)


def ratio(ours, peer, unit):
    """How many times better we are than the peer (>1: we win): peer/ours for
    times, ours/peer for throughputs. None if either side is missing or 0."""
    if ours is None or peer is None or ours <= 0 or peer <= 0:
        return None
    return ours / peer if unit in HIGHER_IS_BETTER else peer / ours


def fmt_num(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}"


def error_label(system, message):
    """Short label of a failure for the table cell."""
    if message is None:
        return "no result"
    if system in OURS and UNREACHABLE_EXECUTOR in message:
        prefix = "not runnable"
    elif message.startswith(("not installed", "n/a")):
        return _clip(message, 70)
    else:
        prefix = "failed"
    return f"{prefix}: {_clip(message, 70)}"


def _clip(s, n):
    s = " ".join(str(s).split()).replace("|", "/")
    return s if len(s) <= n else s[: n - 3] + "..."


def cell(results, system, workload):
    st = stats(results.samples(system, workload))
    if st is None:
        return error_label(system, results.first_error(system, workload))
    med, lo, hi = st
    n = len(results.samples(system, workload))
    failed = len(results.errors.get(system, {}).get(workload, []))
    extra = f", {failed} failed" if failed else ""
    return f"{fmt_num(med)} ({fmt_num(lo)}-{fmt_num(hi)}, n={n}{extra})"


def ratio_cell(results, workload, peer, mine="ours"):
    unit = results.units.get(workload)
    ours = stats(results.samples(mine, workload))
    other = stats(results.samples(peer, workload))
    r = ratio(ours[0] if ours else None, other[0] if other else None, unit)
    return "-" if r is None else f"{r:.2f}x"


def table(results, workloads, systems=SYSTEMS):
    """Markdown table: workload x system (median (min-max, n)), then the
    ratio of each of our variants to each peer (>1: ours is better)."""
    peers = [p for p in systems if p not in OURS]
    pairs = [(m, p) for m in systems if m in OURS for p in peers]
    head = ["workload", "unit"] + [SYSTEM_TITLES[s] for s in systems]
    head += [f"{SHORT_TITLES[m]} vs {SHORT_TITLES[p]}" for m, p in pairs]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    for w in workloads:
        unit = results.units.get(w, _default_unit(w))
        row = [WORKLOAD_TITLES.get(w, w), unit]
        row += [cell(results, s, w) for s in systems]
        row += [ratio_cell(results, w, p, m) for m, p in pairs]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _default_unit(workload):
    if workload.startswith("xfer"):
        return "GB/s"
    return "s" if workload == "cold" else "us"


def failures(results, systems=SYSTEMS):
    """Full text of every distinct failure, for the section under the table."""
    out = []
    for s in systems:
        for w, errs in results.errors.get(s, {}).items():
            for e in dict.fromkeys(errs):
                if e.startswith("n/a"):
                    continue
                out.append(f"- {SYSTEM_TITLES[s]}, {w} ({errs.count(e)}x): {e}")
    return "\n".join(out)
