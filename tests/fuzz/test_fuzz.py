"""The differential fuzzer as a test (ctest `fuzz`).

`test_corpus` runs a fixed-seed corpus of random programs (gen.py) end to end
on local workers and asserts that every one computes what numpy computes or
refuses at the user's line; on failure it shrinks one program per failure
signature and reports their reproducers (also written to
$MONARCH_FUZZ_OUT, else pytest's tmp_path). `test_known_bug` runs the
hand-written programs of known bugs (known.py) as strict xfails and
`test_fixed_bug` the ones fixed since, which must pass.
`test_kernels_of_the_corpus` runs a second corpus (100 programs) whose plans'
kernels are also checked alone against the reference lowering
(`monarch-kernels --emit=check`); `test_corpus_with_the_own_partitioner` a
third (300 programs) partitioned by the upstream path
(`MONARCH_PARTITION_ENGINE=upstream`; the own partitioner is the default);
`test_the_corpus_partitions_without_whole_values` compiles the first
corpus to the partitioned stage and checks that no op ran on whole values
(tests/fuzz/partition_report.py).

MONARCH_FUZZ_PROGRAMS (default 600) and MONARCH_FUZZ_SEED (default 0) choose
the corpus.
"""

import collections
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fuzz  # noqa: E402
import known  # noqa: E402
import runner  # noqa: E402
import shrink  # noqa: E402
from program import render_summary  # noqa: E402

CORPUS_SEED = int(os.environ.get("MONARCH_FUZZ_SEED", "0"))
CORPUS_SIZE = int(os.environ.get("MONARCH_FUZZ_PROGRAMS", "600"))
SHRINK_BUDGET = 80


def _require_workers():
    try:
        from monarch_compile._native import native
    except ImportError as err:
        pytest.skip(
            f"the native extension is not built: {err}", allow_module_level=True
        )
    worker = os.environ.get("MONARCH_WORKER_BIN") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(native.__file__))),
        "bin",
        "monarch-worker",
    )
    if not hasattr(native, "Controller") or not os.path.exists(worker):
        pytest.skip(f"monarch-worker is not built ({worker})", allow_module_level=True)


_require_workers()

import gen  # noqa: E402  (imports monarch_compile)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    with runner.Pool(str(tmp_path_factory.mktemp("programs")), timeout=90) as p:
        yield p


def _out_dir(tmp_path):
    out = os.environ.get("MONARCH_FUZZ_OUT") or str(tmp_path)
    os.makedirs(out, exist_ok=True)
    return out


def test_corpus(pool, tmp_path):
    features = gen.default_features()
    seeds = range(CORPUS_SEED, CORPUS_SEED + CORPUS_SIZE)
    programs = {s: gen.generate(s, features) for s in seeds}
    by_tag = {p.tag: s for s, p in programs.items()}
    outcomes = {by_tag[p.tag]: o for p, o in pool.map(programs.values())}
    report = [fuzz.summary(outcomes, sum(o.seconds for o in outcomes.values()))]
    groups = collections.defaultdict(list)
    for seed, o in sorted(outcomes.items()):
        if o.status == "fail":
            groups[o.signature].append(seed)
    out = _out_dir(tmp_path)
    for signature, group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        seed = group[0]
        small, _ = shrink.shrink(
            programs[seed], pool.run, signature, budget=SHRINK_BUDGET
        )
        final = pool.run(small)
        name = f"{final.cls.replace('/', '-')}-{seed}"
        path = fuzz.write_reproducer(out, name, small, final)
        first = final.message.splitlines()[0] if final.message else ""
        report.append(
            f"\n=== {signature[0]} in {len(group)} program(s) (seeds {fuzz._seeds(group)}): "
            f"{first[:400]}\n{render_summary(small)}\n(reproducer: {path})"
        )
    assert not groups, "\n".join(report)


KERNEL_SEED = int(os.environ.get("MONARCH_FUZZ_KERNEL_SEED", "100000"))
KERNEL_SIZE = int(os.environ.get("MONARCH_FUZZ_KERNEL_PROGRAMS", "100"))


def _corpus_passes_with(tmp_path, seeds, variable, value):
    """Runs the programs of `seeds` with environment `variable` set to
    `value` (the pool's children start in map() and inherit it) and asserts
    that none fails."""
    features = gen.default_features()
    programs = [gen.generate(s, features) for s in seeds]
    os.environ[variable] = value
    try:
        with runner.Pool(str(tmp_path), timeout=90) as pool:
            outcomes = list(pool.map(programs))
    finally:
        del os.environ[variable]
    assert len(outcomes) == len(programs)
    bad = [(p.tag, o.message.splitlines()[0] if o.message else o.cls)
           for p, o in outcomes if o.status == "fail"]
    assert not bad, bad


def test_kernels_of_the_corpus(tmp_path):
    # Below the runtime: the kernels alone, through the kernel ABI, on random
    # inputs, against an independent lowering (a second corpus).
    _corpus_passes_with(tmp_path, range(KERNEL_SEED, KERNEL_SEED + KERNEL_SIZE),
                        "MONARCH_FUZZ_KERNEL_CHECK", "1")


UPSTREAM_SEED = int(os.environ.get("MONARCH_FUZZ_UPSTREAM_SEED", "200000"))
UPSTREAM_SIZE = int(os.environ.get("MONARCH_FUZZ_UPSTREAM_PROGRAMS", "300"))


def test_corpus_with_the_upstream_partitioner(tmp_path):
    # A third corpus partitioned by the upstream path
    # (MONARCH_PARTITION_ENGINE=upstream), which the own partitioner (the
    # default, issue 31) falls back to for segments it has no rule for:
    # numpy-exact too.
    _corpus_passes_with(
        tmp_path, range(UPSTREAM_SEED, UPSTREAM_SEED + UPSTREAM_SIZE),
        "MONARCH_PARTITION_ENGINE", "upstream")


def test_the_corpus_partitions_without_whole_values(capsys):
    # Issue 31's measure: no op of the corpus runs on whole values or is
    # retried with replicated inputs (the own partitioner splits every
    # segment); compiles to the partitioned stage only (seconds).
    import partition_report

    status = partition_report.main(
        ["--programs", str(CORPUS_SIZE), "--seed", str(CORPUS_SEED),
         "--max-whole", "0"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert " 0 retried with replicated inputs, 0 on whole values" in out, out


@pytest.mark.parametrize("name", sorted(known.KNOWN))
def test_known_bug(pool, name):
    reason, program = known.KNOWN[name]
    outcome = pool.run(program)
    if outcome.status == "fail":
        pytest.xfail(f"known bug: {reason}: {outcome.message.splitlines()[0]}")
    pytest.fail(
        f"XPASS: known bug '{name}' ({reason}) no longer fails ({outcome.status}): move it to "
        "FIXED in tests/fuzz/known.py",
        pytrace=False,
    )


@pytest.mark.parametrize("name", sorted(known.FIXED))
def test_fixed_bug(pool, name):
    reason, program = known.FIXED[name]
    outcome = pool.run(program)
    assert outcome.status != "fail", f"{name} ({reason}) fails again: {outcome.message}"
