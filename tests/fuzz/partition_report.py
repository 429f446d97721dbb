"""How the differential fuzzer's programs partition (issue 31's measure).

    python3 tests/fuzz/partition_report.py --programs 600 --seed 0 [--jobs 2]

Generates the same programs as `fuzz.py` for the same seeds, compiles each
to the partitioned stage with `MONARCH_PARTITION_REMARKS=1` (nothing runs
on the workers) and adds up the per-function remark of `monarch-partition`:
ops split, retried with replicated inputs, and on whole values, with the
op kinds and reasons of the segments that were not split. A program whose
compile is refused is counted apart (the fuzzer checks refusals).

The count of ops on whole values or retried is what issue 31 drives to 0;
`--max-whole N` exits 1 when more than N ops ran on whole values or were
retried with replicated inputs.
`--compare` compiles every program with both partitioners
(`MONARCH_PARTITION_ENGINE=upstream` and `own`) and compares the bytes
each plan moves per step (collectives and point-to-point, all ranks).
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen  # noqa: E402
from program import render  # noqa: E402

TOTAL = re.compile(
    r"monarch-partition: @\S+: (\d+) ops split, (\d+) retried with replicated "
    r"inputs, (\d+) on whole values"
)
SEGMENT = re.compile(
    r"monarch-partition: ('[\w.]+' on @\S+ runs on whole values.*|"
    r"\d+ ops on @\S+ (?:retried|partitioned) with replicated inputs.*|"
    r"\d+ ops on @\S+ run on whole values.*|"
    r"the own engine cannot partition .*)"
)
OWN = re.compile(r"monarch-partition: \d+ ops on @\S+ partitioned by the own engine")

# Compiles each file named on the command line to the partitioned stage,
# printing a marker before each so that its remarks can be told apart.
DRIVER = r"""
import importlib.util, sys
import monarch_compile as mc
for path in sys.argv[1:]:
    print("### " + path, file=sys.stderr, flush=True)
    spec = importlib.util.spec_from_file_location("prog", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
        with mc.mesh(**mod.MESH) as mesh:
            f = mod.program(mesh)
            f.ir("partitioned", *mod.inputs())
            s = f.plan_summary(*mod.inputs())
            moved = sum(c["bytes"] for c in s.collectives) + sum(
                l["bytes"] for l in s.links)
            print("### bytes %d" % moved, file=sys.stderr, flush=True)
    except Exception as err:
        print("### refused " + type(err).__name__, file=sys.stderr, flush=True)
    sys.stderr.flush()
"""


def run_batch(paths, env):
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, *paths],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60 * len(paths) + 60,
    )
    return proc.stderr


def bytes_by_program(paths, args, engine):
    """{program: bytes moved per step} with `engine`."""
    env = dict(os.environ, MONARCH_PARTITION_ENGINE=engine)
    env.pop("MONARCH_PARTITION_REMARKS", None)
    out = {}
    for i in range(0, len(paths), args.batch):
        current = None
        for line in run_batch(paths[i:i + args.batch], env).splitlines():
            if line.startswith("### bytes "):
                out[current] = int(line.split()[2])
            elif line.startswith("### ") and not line.startswith("### refused"):
                current = os.path.basename(line[4:])[:-3]
    return out


def compare(paths, args):
    """Bytes moved with the upstream and the own partitioner, per program."""
    up = bytes_by_program(paths, args, "upstream")
    own = bytes_by_program(paths, args, "own")
    both = sorted(set(up) & set(own), key=lambda p: int(p[1:]))
    more = [p for p in both if own[p] > up[p]]
    less = [p for p in both if own[p] < up[p]]
    print(f"programs compiled by both: {len(both)}; bytes moved per step, "
          f"upstream {sum(up[p] for p in both)}, own "
          f"{sum(own[p] for p in both)}")
    print(f"own moves less in {len(less)}, more in {len(more)}:")
    for p in more:
        print(f"  {p}: upstream {up[p]}, own {own[p]}")
    return 1 if more else 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=50, help="programs per process")
    ap.add_argument("--max-ops", type=int, default=9)
    ap.add_argument("--max-whole", type=int, default=None)
    ap.add_argument("--compare", action="store_true",
                    help="bytes moved per step with each partitioner, per "
                    "program (exit 1 when the own engine moves more)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="mc-partition-report-")
    features = gen.default_features()
    paths = []
    for s in range(args.seed, args.seed + args.programs):
        path = os.path.join(work, f"s{s}.py")
        with open(path, "w") as f:
            f.write(render(gen.generate(s, features, max_ops=args.max_ops)))
        paths.append(path)
    if args.compare:
        return compare(paths, args)
    env = dict(os.environ, MONARCH_PARTITION_REMARKS="1")
    split = retried = whole = refused = programs_whole = own = moved = 0
    reasons = collections.Counter()
    seeds_of = collections.defaultdict(list)
    for i in range(0, len(paths), args.batch):
        current, mine = None, 0
        for line in run_batch(paths[i:i + args.batch], env).splitlines():
            if line.startswith("### refused"):
                refused += 1
                continue
            if line.startswith("### bytes "):
                moved += int(line.split()[2])
                continue
            if line.startswith("### "):
                if mine:
                    programs_whole += 1
                current, mine = os.path.basename(line[4:])[:-3], 0
                continue
            if OWN.search(line):
                own += 1
                continue
            m = TOTAL.search(line)
            if m:
                split += int(m[1])
                retried += int(m[2])
                whole += int(m[3])
                mine += int(m[2]) + int(m[3])
                continue
            m = SEGMENT.search(line)
            if m:
                why = re.sub(r"@\S+", "@mesh", m[1])
                why = re.sub(r"\d+ ops", "N ops", why)
                why = re.sub(r"\(at [^)]*\)", "", why)[:160]
                reasons[why] += 1
                seeds_of[why].append(current)
        if mine:
            programs_whole += 1
    total = split + retried + whole
    print(f"programs: {args.programs} (seeds {args.seed}..."
          f"{args.seed + args.programs - 1}), {refused} refused at compile")
    print(f"ops: {total}: {split} split, {retried} retried with replicated "
          f"inputs, {whole} on whole values; programs with any: "
          f"{programs_whole}")
    print(f"bytes moved per step (collectives and point-to-point, summed "
          f"over programs and ranks): {moved}")
    if own:
        print(f"segments partitioned by the own engine "
              f"(MONARCH_PARTITION_ENGINE=own): {own}")
    for why, n in reasons.most_common():
        seeds = " ".join(seeds_of[why][:6])
        print(f"  {n:5d}  {why}  ({seeds})")
    if args.max_whole is not None and whole + retried > args.max_whole:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
