"""Compile time of a real model (issue 32), beside compile_scaling's
synthetic programs: the GPT training step of examples/python/gpt.py
(value_and_grad + AdamW) at 1, 2, 4 and 8 blocks, on a 1x1 and a 2x2 mesh,
each compiled to a plan with its kernels.

Per row: the compile with an empty cache (seconds from the traced module to
the plan bytes, i.e. passes, plan building and native kernels), seconds per
block, the kernels (all, distinct, compiled), and the compile of the same
step after an edit above it in its file (every line moves, so the plan is
compiled again, but every kernel comes from the kernel cache). Targets
printed beside: gpt.py's model on 2x2 <= 3 s; the 4-block width-64 GPT on
2x2 <= 10 s; <= 1.5 s per block; after an edit <= 1 s.

    python bench/compile_scaling/gpt_compile.py [--quick] [--width=64]
        [--meshes=1x1,2x2]    # e.g. --blocks=2 --meshes=2x2,8x4,16x4

`--meshes` picks the meshes (hosts x gpus; the batch grows to the hosts
where it is smaller): on growing meshes the distinct kernels stay about
the same (kernels that differ only in a rank's integers compile once,
docs/kernels.md), while the passes still grow with the ranks.

Nothing runs on workers: the step is traced with example arguments and
compiled, never executed. A report, never an assertion.
"""
import argparse
import os
import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))

import numpy as np  # noqa: E402

import gpt  # noqa: E402
import monarch_compile as mc  # noqa: E402
from monarch_compile import _runtime  # noqa: E402
from monarch_compile._location import user_loc  # noqa: E402

STEP_SOURCE = '''
def make(mc, gpt, mesh, tp):
    @mc.compile(mesh=mesh)
    def train_step(params, state, tok, lab):
        p = gpt.shard_params(params) if tp else params
        if tp:
            tok, lab = mc.shard(tok, hosts=0), mc.shard(lab, hosts=0)
        loss, grads = mc.value_and_grad(gpt.loss_fn)(p, tok, lab)
        p, state = mc.optim.adamw_update(p, grads, state, lr=gpt.LR)
        return loss, p, state

    return train_step
'''


def make_step(path, prefix, mesh, tp):
    """The step defined in `path` after `prefix` (an edit above it)."""
    source = prefix + STEP_SOURCE
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["make"](mc, gpt, mesh, tp)


class CompileClock:
    """Times every plan compile and keeps its report (the kernels line)."""

    def __init__(self):
        self.seconds, self.report = 0.0, ""
        self.real = _runtime.native.compile_plan

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        plan, hit, timings = self.real(*args, **kwargs)
        self.seconds = time.perf_counter() - start
        self.report = timings
        return plan, hit, timings


def compile_once(step, args, clock):
    """Compiles `step` for `args` without running it; seconds and the
    kernels (all, distinct, compiled) of the report."""
    spec = step._spec_for(args, user_loc())
    _runtime._compile(step, spec, step.__name__)
    m = re.search(r"kernels: (\d+) \((\d+) distinct: (\d+) compiled",
                  clock.report)
    kernels = tuple(int(g) for g in m.groups()) if m else (0, 0, 0)
    return clock.seconds, kernels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 and 2 blocks")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--blocks", default=None,
                    help="comma-separated block counts (default 1,2,4,8)")
    ap.add_argument("--meshes", default="1x1,2x2",
                    help="comma-separated HOSTSxGPUS meshes")
    args = ap.parse_args()
    meshes = [tuple(int(n) for n in m.split("x"))
              for m in args.meshes.split(",")]
    blocks = ([int(b) for b in args.blocks.split(",")] if args.blocks
              else [1, 2] if args.quick else [1, 2, 4, 8])
    clock = CompileClock()
    _runtime.native.compile_plan = clock
    print(f"bench/compile_scaling/gpt_compile: the GPT step (AdamW), width "
          f"{args.width}; cold = empty cache; edit = the same step after an "
          f"edit above it ({os.cpu_count()} cores)")
    print(f"{'model':<22}{'mesh':>6}{'cold s':>9}{'s/block':>9}"
          f"{'kernels':>9}{'distinct':>10}{'edit s':>9}{'compiled':>10}")
    rows = [("gpt.py", 2, dict())] + [
        (f"{b}-block w{args.width}", b,
         dict(vocab=128, ctx=16, dim=args.width, heads=4, layers=b, batch=8))
        for b in blocks]
    gpt.configure()
    default_batch = gpt.BATCH
    for name, nblocks, size in rows:
        try:
            for hosts, gpus in meshes:
                # The batch is split over the hosts: at least one row each.
                batch = max(size.get("batch", default_batch), hosts)
                gpt.configure(**dict(size, batch=batch))
                rng = np.random.default_rng(0)
                params = gpt.init_params(rng)
                tok, lab = gpt.corpus(rng, gpt.BATCH)
                state = mc.optim.adamw_init(params)
                dims = dict(hosts=hosts, gpus=gpus)
                tp = dims["gpus"] > 1
                with tempfile.TemporaryDirectory() as tmp:
                    tmp = pathlib.Path(tmp)
                    os.environ["MONARCH_CACHE_DIR"] = str(tmp / "cache")
                    with mc.mesh(**dims) as mesh:
                        step = make_step(tmp / "model.py", "", mesh, tp)
                        cold, kernels = compile_once(
                            step, (params, state, tok, lab), clock)
                        edited = make_step(tmp / "model.py", "# edit\n\n",
                                           mesh, tp)
                        edit, edit_kernels = compile_once(
                            edited, (params, state, tok, lab), clock)
                mesh_name = f"{dims['hosts']}x{dims['gpus']}"
                print(f"{name:<22}{mesh_name:>6}{cold:>9.2f}"
                      f"{cold / nblocks:>9.2f}{kernels[0]:>9}{kernels[1]:>10}"
                      f"{edit:>9.2f}{edit_kernels[2]:>10}", flush=True)
        finally:
            gpt.configure()
            os.environ.pop("MONARCH_CACHE_DIR", None)
    print("targets: gpt.py 2x2 cold <= 3 s; 4-block w64 2x2 cold <= 10 s; "
          "<= 1.5 s per block; edit <= 1 s with 0 kernels compiled")


if __name__ == "__main__":
    main()
