#!/usr/bin/env python3
"""Differential fuzzer of monarch_compile: random programs against numpy.

    python3 tests/fuzz/fuzz.py --programs 500 --seed 1 [--jobs 1] [--out DIR]

Generates `--programs` random programs (gen.py) from seeds `--seed`,
`--seed + 1`, ..., runs each end to end on local workers (runner.py) and
checks it computes what numpy computes or refuses at the user's line.
Failures are shrunk (shrink.py) and their reproducers written to `--out`
(one `<class>-<seed>.py` each, runnable with python3). Prints a summary:
programs, passed, refused by reason, failed by class. Exits 1 if any
program failed. See README.md.
"""

import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen  # noqa: E402
import reference  # noqa: E402
import runner  # noqa: E402
import shrink  # noqa: E402
from program import render  # noqa: E402


def expected_values(program):
    """Per call, per result: (numpy value, tolerance) to embed in a reproducer."""
    try:
        calls = reference.evaluate(program)
    except reference.RefError:
        return None
    if sum(v.ref.size for call in calls for v in call) > 400:
        return None
    return [[(v.ref, reference.tolerance(v)) for v in call] for call in calls]


def write_reproducer(folder, name, program, outcome):
    path = os.path.join(folder, name + ".py")
    src = render(program, expected_values(program))
    note = "\n".join(
        "# " + line
        for line in outcome.message.splitlines()
        if "(program file" not in line
    )
    with open(path, "w") as f:
        f.write(f"# {outcome.cls}: found by tests/fuzz/fuzz.py\n{note}\n{src}")
    return path


def summary(outcomes, seconds):
    """The summary table of a run: {seed: Outcome}."""
    total = len(outcomes)
    passed = sum(o.status == "pass" for o in outcomes.values())
    refused = collections.Counter(
        o.reason for o in outcomes.values() if o.status == "refused"
    )
    failed = collections.defaultdict(list)
    for seed, o in sorted(outcomes.items()):
        if o.status == "fail":
            failed[o.cls].append(seed)
    lines = [
        f"programs: {total} in {seconds:.0f} s ({seconds / max(total, 1):.2f} s each)",
        f"passed:   {passed}",
        f"refused:  {sum(refused.values())}",
    ]
    for reason, n in refused.most_common():
        lines.append(f"  {n:5d}  {reason}")
    lines.append(f"failed:   {sum(len(v) for v in failed.values())}")
    for cls in runner.CLASSES:
        if failed.get(cls):
            lines.append(
                f"  {len(failed[cls]):5d}  {cls}  (seeds {_seeds(failed[cls])})"
            )
            kinds = collections.defaultdict(list)
            for seed in failed[cls]:
                kinds[outcomes[seed].signature[1:]].append(seed)
            if len(kinds) > 1 or cls != "wrong-number":
                for kind, seeds in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
                    text = kind[0] if kind else "-"
                    lines.append(
                        f"         {len(seeds):5d}  {text}  (seeds {_seeds(seeds)})"
                    )
    return "\n".join(lines)


def _seeds(seeds, most=10):
    return " ".join(str(s) for s in seeds[:most]) + (
        " ..." if len(seeds) > most else ""
    )


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--programs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", help="folder for the shrunk reproducers of failures")
    ap.add_argument("--timeout", type=float, default=90, help="seconds per program")
    ap.add_argument("--max-ops", type=int, default=9)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-budget", type=int, default=150, help="runs per failure")
    ap.add_argument(
        "--shrink-all",
        action="store_true",
        help="shrink every failure, not one per signature",
    )
    ap.add_argument(
        "--kernel-check",
        action="store_true",
        help="also check every kernel of each passing program's plan against "
        "the reference lowering (monarch-kernels --emit=check)",
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.kernel_check:
        os.environ["MONARCH_FUZZ_KERNEL_CHECK"] = "1"

    features = gen.default_features()
    work = tempfile.mkdtemp(prefix="mc-fuzz-")
    out = args.out
    if out:
        os.makedirs(out, exist_ok=True)
    print(f"features: {features}; programs run in {work}", flush=True)
    programs = {}
    for s in range(args.seed, args.seed + args.programs):
        programs[s] = gen.generate(s, features, max_ops=args.max_ops)
    by_tag = {p.tag: s for s, p in programs.items()}
    outcomes = {}
    start = time.monotonic()
    with runner.Pool(work, jobs=args.jobs, timeout=args.timeout) as pool:
        for done, (p, o) in enumerate(pool.map(programs.values()), 1):
            seed = by_tag[p.tag]
            outcomes[seed] = o
            if o.status == "fail" or args.verbose:
                first = o.message.splitlines()[0] if o.message else ""
                print(
                    f"[{done}/{args.programs}] seed {seed}: {o.status} {o.cls or o.reason or ''} {first[:200]}",
                    flush=True,
                )
        elapsed = time.monotonic() - start
        print()
        print(summary(outcomes, elapsed))
        failures = [(s, o) for s, o in sorted(outcomes.items()) if o.status == "fail"]
        if failures and not args.no_shrink:
            print(
                "\nshrinking failures" + (f" into {out}" if out else "") + ":",
                flush=True,
            )
            seen = set()
            for seed, o in failures:
                if o.signature in seen and not args.shrink_all:
                    continue
                seen.add(o.signature)
                small, runs = shrink.shrink(
                    programs[seed], pool.run, o.signature, budget=args.shrink_budget
                )
                final = pool.run(small)
                print(
                    f"\n--- seed {seed}: {o.cls}, shrunk in {runs} runs: {final.message.splitlines()[0][:300]}"
                )
                print(render(small))
                if out:
                    name = f"{o.cls.replace('/', '-')}-{seed}"
                    print("written to", write_reproducer(out, name, small, final))
    return 1 if any(o.status == "fail" for o in outcomes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
