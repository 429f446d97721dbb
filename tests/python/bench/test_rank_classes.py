"""Compiling classes of ranks (monarch-specialize-ranks classes=1,
monarch-plan-transfers rank-classes, and a class's members kept as
monarch.rank_member up to the plan builder, class-programs;
docs/spmd-classes.md) builds the plan that specialising and lowering every
rank builds, byte for byte: the data x
tensor x pipeline step of bench/compile_scaling on meshes where the classes
differ (the replicas that return outputs, shards of the batch, the pipeline
peers) and a GPT step on 2x2, with the knobs off and on."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve()
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT / "bench" / "compile_scaling"))

import monarch_compile as mc  # noqa: E402
import dtp_program as P  # noqa: E402

BUILD = pathlib.Path(os.environ.get("MONARCH_BUILD_DIR", ROOT / "build"))


def compile_plan(ir_path, out, **knobs):
    env = dict(os.environ, MONARCH_DISABLE_CACHE="1", **knobs)
    subprocess.run([str(BUILD / "bin" / "monarch-compile"), str(ir_path),
                    "-o", str(out)], check=True, env=env, timeout=300,
                   capture_output=True)
    return out.read_bytes()


def assert_same_plans(src, tmp_path):
    members = compile_plan(src, tmp_path / "members.mcplan",
                           MONARCH_CLASS_PROGRAMS="1")
    copies = compile_plan(src, tmp_path / "copies.mcplan",
                          MONARCH_CLASS_PROGRAMS="0")
    each = compile_plan(src, tmp_path / "each.mcplan",
                        MONARCH_SPECIALIZE_CLASSES="0",
                        MONARCH_RANK_CLASSES="0")
    assert members == each
    assert copies == each


@pytest.mark.parametrize("hosts,gpus", [(2, 2), (4, 4), (16, 8)])
def test_dtp_plans_are_the_same_with_and_without_classes(tmp_path, hosts,
                                                         gpus):
    rng = np.random.default_rng(0)
    w = P.weights(rng)
    x, t = P.batch(rng, hosts)
    mesh = mc.mesh(hosts=hosts, stages=2, gpus=gpus)
    ir = P.program(mesh, w).ir("traced", x, t, np.float32(0.01))
    src = tmp_path / "dtp.mlir"
    src.write_text(ir)
    assert_same_plans(src, tmp_path)


def test_gpt_plans_are_the_same_with_and_without_classes(tmp_path):
    sys.path.insert(0, str(ROOT / "examples" / "python"))
    import gpt

    gpt.configure(vocab=64, ctx=8, dim=32, heads=4, layers=1, batch=4)
    try:
        rng = np.random.default_rng(0)
        params = gpt.init_params(rng)
        tok, lab = gpt.corpus(rng, gpt.BATCH)
        state = mc.optim.adamw_init(params)
        mesh = mc.mesh(hosts=2, gpus=2)

        @mc.compile(mesh=mesh)
        def train_step(params, state, tok, lab):
            p = gpt.shard_params(params)
            tok, lab = mc.shard(tok, hosts=0), mc.shard(lab, hosts=0)
            loss, grads = mc.value_and_grad(gpt.loss_fn)(p, tok, lab)
            p, state = mc.optim.adamw_update(p, grads, state, lr=gpt.LR)
            return loss, p, state

        src = tmp_path / "gpt.mlir"
        src.write_text(train_step.ir("traced", params, state, tok, lab))
    finally:
        gpt.configure()
    assert_same_plans(src, tmp_path)
