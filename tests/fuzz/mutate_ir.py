#!/usr/bin/env python3
"""Mutation fuzzer over the compiler's textual inputs (issue 16, items 4-5).

Takes every `.mlir` input of the lit suite and the examples, cuts it at
`// -----`, and runs mutants of each piece through the tool its first RUN
line names (monarch-opt with that RUN line's passes, monarch-kernels, or
monarch-compile); the examples also go through the whole of
`monarch-compile`. A mutant deletes, duplicates or swaps lines and tokens,
or changes numbers (mesh sizes, shard axes, shapes, offsets) to other ones,
0, -1 and huge values, one to three edits at a time, from a fixed seed.

Every mutant must end either in success or in a clean refusal:
  - no crash (a signal, an abort, "LLVM ERROR", a stack dump),
  - no run past the time bound (--timeout, 20 s) or the memory bound
    (RLIMIT_DATA, --memory-mb),
  - every refusal names the input's file:line:col.
Failing mutants are written to --keep with the edits that made them.

  mutate_ir.py --bin build/bin --count 400 --seed 1      # the ctest run
  mutate_ir.py --bin build/bin --count 20000 --seed 7    # a long hunt
"""
import argparse
import concurrent.futures
import os
import pathlib
import random
import re
import resource
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS_DIRS = ["tests/ir", "tests/passes", "tests/tools", "tests/codegen",
               "examples/ir"]
TOOLS = ("monarch-opt", "monarch-compile", "monarch-kernels")
# Flags of the RUN line that are about checking, not about the pipeline.
DROP = {"--split-input-file", "-split-input-file", "--verify-diagnostics",
        "-verify-diagnostics", "--verify-roundtrip"}
CRASH_MARKS = ("LLVM ERROR", "Stack dump", "PLEASE submit a bug report",
               "terminate called", "Assertion", "AddressSanitizer")
TOKEN = re.compile(r"%[\w.$#-]+|@[\w.$-]+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|"
                   r"\w+|\"[^\"\n]*\"|[^\s\w]")
NUMBER = re.compile(r"(?<![\w.%#@])-?\d+(?![\w.])")


def run_line(text):
    """(tool, args) of the first RUN line that reads the file itself and is
    expected to succeed; else of the first expected to fail, keeping only
    its pipeline flags (the others test bad flags)."""
    lines = [l for l in text.splitlines() if "RUN:" in l]
    good = [l for l in lines
            if not re.search(r"RUN:\s*(env\s+\S+=\S+\s+)*not\s", l)]
    for line in good:
        found = parse_run(line)
        if found:
            return found
    for line in lines:
        found = parse_run(line)
        if found:
            tool, args = found
            return tool, [a for a in args if a.startswith(
                ("--monarch-", "--target", "--kernel", "--compile-to=p"))]
    return None


def parse_run(line):
    """(tool, args) of one RUN line that reads the file (`%s`), or None."""
    m = re.search(r"RUN:\s*(.*)", line)
    if not m:
        return None
    words = shlex.split(m.group(1).split("|")[0], posix=True)
    if words and words[0] == "env":
        words = [w for w in words[1:] if "=" not in w]
    if words and words[0] == "not":
        words = words[1:]
    if not words or words[0] not in TOOLS or "%s" not in words:
        return None
    args, skip = [], False
    for w in words[1:]:
        if skip:
            skip = False
        elif w == "-o":
            skip = True  # and its file
        elif not (w == "%s" or w in DROP or w.startswith("%") or
                  w.startswith("-o") or w.startswith("2>")):
            args.append(w)
    return words[0], args


def corpus():
    """(name, tool, args, text) for every piece of every input."""
    cases = []
    for d in CORPUS_DIRS:
        for path in sorted((ROOT / d).glob("*.mlir")):
            text = path.read_text()
            rel = str(path.relative_to(ROOT))
            run = run_line(text)
            if run is None:
                run = ("monarch-opt", [])
            pieces = re.split(r"^// -----\s*$", text, flags=re.M)
            for i, piece in enumerate(pieces):
                if "monarch." not in piece and "func" not in piece:
                    continue
                cases.append((f"{rel}#{i}", run[0], run[1], piece))
            if d == "examples/ir":
                cases.append((f"{rel}#compile", "monarch-compile", [], text))
    return cases


def mutate(text, rng):
    """One edit of `text`; returns (new text, what it did)."""
    lines = text.split("\n")
    kind = rng.choice(["delete-line", "duplicate-line", "swap-lines",
                       "delete-token", "duplicate-token", "swap-tokens",
                       "number", "number", "number"])
    code = [i for i, l in enumerate(lines) if l.strip() and
            not l.lstrip().startswith("//")]
    if not code:
        return text, "nothing to mutate"
    if kind == "delete-line":
        i = rng.choice(code)
        return "\n".join(lines[:i] + lines[i + 1:]), f"deleted line {i + 1}"
    if kind == "duplicate-line":
        i = rng.choice(code)
        return ("\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]),
                f"duplicated line {i + 1}")
    if kind == "swap-lines":
        i = rng.choice(code)
        j = min(len(lines) - 1, i + 1)
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), f"swapped lines {i + 1} and {j + 1}"
    if kind == "number":
        spots = [(i, m) for i in code for m in NUMBER.finditer(lines[i])]
        if not spots:
            return text, "no number"
        i, m = rng.choice(spots)
        old = int(m.group(0))
        new = rng.choice([0, 1, -1, 2, 3, old + 1, old - 1, old * 2,
                          old * 7 + 3, 2**31 - 1, 2**31, 2**62, 2**63 - 1,
                          10**20, 1 << 24])
        lines[i] = lines[i][:m.start()] + str(new) + lines[i][m.end():]
        return "\n".join(lines), f"line {i + 1}: {old} -> {new}"
    # Token edits on one line.
    i = rng.choice(code)
    toks = list(TOKEN.finditer(lines[i]))
    if not toks:
        return text, "no token"
    k = rng.randrange(len(toks))
    t = toks[k]
    line = lines[i]
    if kind == "delete-token":
        lines[i] = line[:t.start()] + line[t.end():]
        what = f"line {i + 1}: deleted '{t.group(0)}'"
    elif kind == "duplicate-token":
        lines[i] = line[:t.end()] + " " + t.group(0) + line[t.end():]
        what = f"line {i + 1}: duplicated '{t.group(0)}'"
    else:
        if k + 1 >= len(toks):
            return text, "no token pair"
        u = toks[k + 1]
        lines[i] = (line[:t.start()] + u.group(0) + line[t.end():u.start()] +
                    t.group(0) + line[u.end():])
        what = f"line {i + 1}: swapped '{t.group(0)}' and '{u.group(0)}'"
    return "\n".join(lines), what


def limit_memory(mb):
    def apply():
        resource.setrlimit(resource.RLIMIT_DATA, (mb << 20, mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def check(case, text, edits, args, workdir, index):
    """Runs one mutant; returns None or a description of what went wrong."""
    name, tool, tool_args, _ = case
    path = pathlib.Path(workdir) / f"mutant{index}.mlir"
    path.write_text(text)
    cmd = [str(pathlib.Path(args.bin) / tool), str(path)] + tool_args
    if tool == "monarch-compile":
        cmd += ["-o", os.devnull]
    env = dict(os.environ, MONARCH_DISABLE_CACHE="1",
               MONARCH_DUMP_DIR=str(workdir))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=args.timeout, env=env,
                              stdin=subprocess.DEVNULL,
                              preexec_fn=limit_memory(args.memory_mb))
    except subprocess.TimeoutExpired:
        return f"ran past {args.timeout} s"
    err = proc.stderr
    problem = None
    if proc.returncode < 0:
        problem = f"killed by signal {-proc.returncode}"
    elif proc.returncode not in (0, 1):
        problem = f"exit code {proc.returncode}"
    elif any(l.startswith(CRASH_MARKS) for l in err.splitlines()):
        problem = "crash report on stderr"
    elif proc.returncode == 1:
        located = re.search(re.escape(str(path)) + r":\d+:\d+: error", err)
        if not located:
            problem = "refused without file:line:col"
    if problem is None:
        path.unlink(missing_ok=True)
        return None
    report = (f"{name} with {'; '.join(edits)}: {problem}\n"
              f"  $ {' '.join(shlex.quote(c) for c in cmd)}\n" +
              "".join(f"  | {l}\n" for l in err.strip().splitlines()[-6:]))
    if args.keep:
        keep = pathlib.Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^\w]+", "_", name) + f"_{index}"
        (keep / f"{stem}.mlir").write_text(
            f"// {name}: {'; '.join(edits)}\n// {problem}\n"
            f"// $ {tool} {' '.join(tool_args)}\n" + text)
    path.unlink(missing_ok=True)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="the tools' directory")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--memory-mb", type=int, default=4096)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", help="where failing mutants are written")
    args = parser.parse_args()

    cases = corpus()
    rng = random.Random(args.seed)
    mutants = []
    for index in range(args.count):
        case = cases[index % len(cases)] if index < len(cases) else \
            rng.choice(cases)
        text, edits = case[3], []
        for _ in range(rng.choice([1, 1, 2, 3])):
            text, what = mutate(text, rng)
            edits.append(what)
        mutants.append((case, text, edits, index))
    print(f"{len(cases)} inputs, {len(mutants)} mutants, seed {args.seed}")
    failures = []
    with tempfile.TemporaryDirectory(prefix="monarch-mutants-") as workdir:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(check, c, t, e, args, workdir, i)
                       for c, t, e, i in mutants]
            for f in futures:
                r = f.result()
                if r:
                    failures.append(r)
                    print(r, flush=True)
    print(f"{len(mutants) - len(failures)} of {len(mutants)} mutants ended "
          "in a result or a located refusal")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
