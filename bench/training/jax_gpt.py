"""The GPT training step of examples/python/gpt.py (the same model, sizes,
loss and AdamW) under `jax.jit`, on one core: the peer of bench/training's
4-block GPT row (issue 36). Run by training.py in a child process pinned to
one CPU with XLA's CPU thread pools at one thread; prints one line of JSON,
{"first": seconds of the first call (trace + XLA compile + run),
"step": median seconds of the later calls}, or {"error": why}.

    python bench/training/jax_gpt.py VOCAB CTX DIM HEADS LAYERS BATCH STEPS
"""
import json
import os
import sys
import time


def main():
    vocab, ctx, dim, heads, layers, batch, steps = map(int, sys.argv[1:8])
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
        "intra_op_parallelism_threads=1")
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001 - any import failure skips the row
        print(json.dumps({"error": f"jax does not import: {e}"}))
        return
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "examples", "python"))
    import gpt
    gpt.configure(vocab=vocab, ctx=ctx, dim=dim, heads=heads, layers=layers,
                  batch=batch)
    rng = np.random.default_rng(0)
    params = gpt.init_params(rng)
    tok, lab = gpt.corpus(rng, gpt.BATCH)
    hd = dim // heads
    scale = 1.0 / np.sqrt(hd)
    lr, (b1, b2), eps, wd = gpt.LR, gpt.BETAS, gpt.EPS, gpt.WD

    def layer_norm(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * w + b

    def gelu(x):
        return 0.5 * x * (1 + jnp.tanh(gpt.C_GELU * (x + gpt.A_GELU * x ** 3)))

    def split(x):
        return x.reshape((batch, ctx, heads, hd)).transpose((0, 2, 1, 3))

    mask = jnp.tril(jnp.ones((ctx, ctx), bool))

    def loss_fn(p, tok, lab):
        x = p["wte"][tok] + p["wpe"]
        for b in p["blocks"]:
            h = layer_norm(x, b["ln1_w"], b["ln1_b"])
            q, k, v = split(h @ b["wq"]), split(h @ b["wk"]), split(h @ b["wv"])
            att = jax.nn.softmax(jnp.where(
                mask, (q @ k.transpose((0, 1, 3, 2))) * scale, -1e9), axis=-1)
            o = (att @ v).transpose((0, 2, 1, 3)).reshape((batch, ctx, dim))
            x = x + o @ b["wo"]
            h = layer_norm(x, b["ln2_w"], b["ln2_b"])
            x = x + gelu(h @ b["w1"] + b["b1"]) @ b["w2"] + b["b2"]
        x = layer_norm(x, p["lnf_w"], p["lnf_b"])
        logits = x @ p["wout"]
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, lab[..., None], -1).mean()

    @jax.jit
    def step(p, m, v, t, tok, lab):
        loss, g = jax.value_and_grad(loss_fn)(p, tok, lab)

        def adamw(p, g, m, v):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            p = p * (1 - lr * wd) - (lr / (1 - b1 ** t)) * m / (
                jnp.sqrt(v) / jnp.sqrt(1 - b2 ** t) + eps)
            return p, m, v

        out = jax.tree_util.tree_map(adamw, p, g, m, v)
        is_leaf = (lambda x: isinstance(x, tuple))
        pick = (lambda i: jax.tree_util.tree_map(lambda o: o[i], out,
                                                 is_leaf=is_leaf))
        return loss, pick(0), pick(1), pick(2)

    p = jax.tree_util.tree_map(jnp.asarray, params)
    m = jax.tree_util.tree_map(jnp.zeros_like, p)
    v = jax.tree_util.tree_map(jnp.zeros_like, p)
    tok, lab = jnp.asarray(tok), jnp.asarray(lab)
    start = time.perf_counter()
    loss, p, m, v = step(p, m, v, 1.0, tok, lab)
    loss.block_until_ready()
    first = time.perf_counter() - start
    times = []
    for t in range(2, steps + 2):
        start = time.perf_counter()
        loss, p, m, v = step(p, m, v, float(t), tok, lab)
        loss.block_until_ready()
        times.append(time.perf_counter() - start)
    print(json.dumps({"first": first, "step": float(np.median(times)),
                      "loss": float(loss)}))


if __name__ == "__main__":
    main()
