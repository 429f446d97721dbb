"""A small GPT trained with `mc.value_and_grad` and AdamW on a 2x2 mesh:
data parallel over "hosts" (each pair of ranks gets half the batch),
Megatron tensor parallel over "gpus" (attention heads, the MLP's hidden
units and the vocabulary of the embedding and output layer split; the
weights and their gradients and moments stay split).

The model: token embedding and learned positions, 2 pre-LayerNorm blocks of
causal multi-head attention and a GELU MLP, a final LayerNorm, an output
projection and the cross-entropy of next-token labels, on a synthetic corpus
generated here (a noisy repeating pattern, so the loss can fall). It is
written once, as single-machine code with global semantics; the compiler
partitions the step, inserts the collectives of both forward and backward,
and runs it on 4 local worker processes. Beside it, the same model and
optimizer in float64 numpy, with the backward pass written by hand: every
step's loss must agree.

    python examples/python/gpt.py [steps]
"""
import sys
import time

import numpy as np

import monarch_compile as mc

VOCAB, CTX, DIM, HEADS, LAYERS, BATCH = 32, 8, 16, 2, 2, 8
LR, BETAS, EPS, WD = 3e-3, (0.9, 0.999), 1e-8, 0.01
HD = DIM // HEADS
SCALE = 1.0 / np.sqrt(HD)


def configure(vocab=VOCAB, ctx=CTX, dim=DIM, heads=HEADS, layers=LAYERS,
              batch=BATCH):
    """Resizes the model (bench/training's larger GPT); the functions
    below read these sizes when called."""
    global VOCAB, CTX, DIM, HEADS, LAYERS, BATCH, HD, SCALE
    VOCAB, CTX, DIM, HEADS, LAYERS, BATCH = vocab, ctx, dim, heads, layers, \
        batch
    HD = DIM // HEADS
    SCALE = 1.0 / np.sqrt(HD)


def init_params(rng):
    def w(*shape, std=0.2):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def ones(n):
        return np.ones(n, np.float32)

    def zeros(n):
        return np.zeros(n, np.float32)

    blocks = [{"ln1_w": ones(DIM), "ln1_b": zeros(DIM),
               "wq": w(DIM, DIM), "wk": w(DIM, DIM), "wv": w(DIM, DIM),
               "wo": w(DIM, DIM),
               "ln2_w": ones(DIM), "ln2_b": zeros(DIM),
               "w1": w(DIM, 4 * DIM), "b1": zeros(4 * DIM),
               "w2": w(4 * DIM, DIM), "b2": zeros(DIM)}
              for _ in range(LAYERS)]
    return {"wte": w(VOCAB, DIM), "wpe": w(CTX, DIM), "blocks": blocks,
            "lnf_w": ones(DIM), "lnf_b": zeros(DIM), "wout": w(DIM, VOCAB)}


def corpus(rng, n):
    """Token windows of a repeating pattern with 10% noise, and their
    next-token labels."""
    pattern = rng.integers(0, VOCAB, size=11)
    stream = np.resize(pattern, n * CTX + 1 + 64)
    noise = rng.random(stream.shape) < 0.1
    stream = np.where(noise, rng.integers(0, VOCAB, stream.shape), stream)
    starts = rng.integers(0, 64, size=n)
    tok = np.stack([stream[s:s + CTX] for s in starts]).astype(np.int32)
    lab = np.stack([stream[s + 1:s + CTX + 1] for s in starts]).astype(
        np.int32)
    return tok, lab


# --- the model, with mc ----------------------------------------------------

def shard_params(p):
    """Megatron layouts over "gpus": q, k, v and w1 by columns (heads and
    hidden units), wo and w2 by rows."""
    blocks = []
    for b in p["blocks"]:
        b = dict(b)
        for name in ("wq", "wk", "wv", "w1"):
            b[name] = mc.shard(b[name], gpus=1)
        b["b1"] = mc.shard(b["b1"], gpus=0)
        for name in ("wo", "w2"):
            b[name] = mc.shard(b[name], gpus=0)
        blocks.append(b)
    # The vocabulary split too (Megatron's vocabulary-parallel embedding and
    # output layer): each rank looks up and scores its half of the tokens.
    return dict(p, blocks=blocks, wte=mc.shard(p["wte"], gpus=0),
                wout=mc.shard(p["wout"], gpus=1))


def heads(x):
    """(B, T, D) -> (B, H, T, D/H)."""
    return x.reshape((BATCH, CTX, HEADS, HD)).transpose((0, 2, 1, 3))


def loss_fn(p, tok, lab):
    x = p["wte"][tok] + p["wpe"]
    mask = mc.causal_mask(CTX)
    for b in p["blocks"]:
        h = mc.layer_norm(x, b["ln1_w"], b["ln1_b"])
        q, k, v = heads(h @ b["wq"]), heads(h @ b["wk"]), heads(h @ b["wv"])
        att = mc.softmax(mc.where(mask, (q @ k.transpose((0, 1, 3, 2))) *
                                  SCALE, -1e9))
        o = (att @ v).transpose((0, 2, 1, 3)).reshape((BATCH, CTX, DIM))
        x = x + o @ b["wo"]
        h = mc.layer_norm(x, b["ln2_w"], b["ln2_b"])
        x = x + mc.gelu(h @ b["w1"] + b["b1"]) @ b["w2"] + b["b2"]
    x = mc.layer_norm(x, p["lnf_w"], p["lnf_b"])
    return mc.cross_entropy(x @ p["wout"], lab)


# --- the same model and optimizer in numpy (float64, backward by hand) -----

def np_layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    sigma = np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    xhat = (x - mu) / sigma
    return xhat * w + b, (xhat, sigma, w)


def np_layer_norm_back(dy, cache):
    xhat, sigma, w = cache
    dxhat = dy * w
    dx = (dxhat - dxhat.mean(-1, keepdims=True) -
          xhat * (dxhat * xhat).mean(-1, keepdims=True)) / sigma
    axes = tuple(range(dy.ndim - 1))
    return dx, (dy * xhat).sum(axes), dy.sum(axes)


C_GELU, A_GELU = 0.7978845608028654, 0.044715


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(C_GELU * (x + A_GELU * x ** 3)))


def np_gelu_grad(x):
    t = np.tanh(C_GELU * (x + A_GELU * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C_GELU * (
        1 + 3 * A_GELU * x * x)


def np_heads(x):
    return x.reshape(x.shape[0], CTX, HEADS, HD).transpose(0, 2, 1, 3)


def np_unheads(x):
    return x.transpose(0, 2, 1, 3).reshape(x.shape[0], CTX, DIM)


def np_loss_and_grads(p, tok, lab):
    mask = np.tril(np.ones((CTX, CTX), bool))
    x = p["wte"][tok] + p["wpe"]
    caches = []
    for b in p["blocks"]:
        h, ln1 = np_layer_norm(x, b["ln1_w"], b["ln1_b"])
        q, k, v = (np_heads(h @ b[n]) for n in ("wq", "wk", "wv"))
        s = np.where(mask, q @ k.transpose(0, 1, 3, 2) * SCALE, -1e9)
        e = np.exp(s - s.max(-1, keepdims=True))
        att = e / e.sum(-1, keepdims=True)
        o = np_unheads(att @ v)
        x1 = x + o @ b["wo"]
        h2, ln2 = np_layer_norm(x1, b["ln2_w"], b["ln2_b"])
        u = h2 @ b["w1"] + b["b1"]
        x2 = x1 + np_gelu(u) @ b["w2"] + b["b2"]
        caches.append((h, ln1, q, k, v, att, o, h2, ln2, u))
        x = x2
    xf, lnf = np_layer_norm(x, p["lnf_w"], p["lnf_b"])
    z = xf @ p["wout"]
    e = np.exp(z - z.max(-1, keepdims=True))
    prob = e / e.sum(-1, keepdims=True)
    n = tok.size
    loss = -np.mean(np.log(np.take_along_axis(prob, lab[..., None], -1)))
    dz = prob.copy()
    np.put_along_axis(dz, lab[..., None], np.take_along_axis(
        dz, lab[..., None], -1) - 1, -1)
    dz /= n
    g = {"wout": np.einsum("btd,btv->dv", xf, dz)}
    dx, g["lnf_w"], g["lnf_b"] = np_layer_norm_back(dz @ p["wout"].T, lnf)
    gblocks = []
    for b, (h, ln1, q, k, v, att, o, h2, ln2, u) in zip(
            reversed(p["blocks"]), reversed(caches)):
        gb = {"b2": dx.sum((0, 1))}
        act = np_gelu(u)
        gb["w2"] = np.einsum("btf,btd->fd", act, dx)
        du = (dx @ b["w2"].T) * np_gelu_grad(u)
        gb["b1"] = du.sum((0, 1))
        gb["w1"] = np.einsum("btd,btf->df", h2, du)
        dh2 = du @ b["w1"].T
        dx1, gb["ln2_w"], gb["ln2_b"] = np_layer_norm_back(dh2, ln2)
        dx1 = dx1 + dx
        gb["wo"] = np.einsum("btd,bte->de", o, dx1)
        do = np_heads(dx1 @ b["wo"].T)
        datt = do @ v.transpose(0, 1, 3, 2)
        dv = att.transpose(0, 1, 3, 2) @ do
        ds = att * (datt - (datt * att).sum(-1, keepdims=True))
        ds = np.where(mask, ds, 0) * SCALE
        dq = ds @ k
        dk = ds.transpose(0, 1, 3, 2) @ q
        dh = 0
        for name, d in (("wq", dq), ("wk", dk), ("wv", dv)):
            d = np_unheads(d)
            gb[name] = np.einsum("btd,bte->de", h, d)
            dh = dh + d @ b[name].T
        dx0, gb["ln1_w"], gb["ln1_b"] = np_layer_norm_back(dh, ln1)
        dx = dx0 + dx1
        gblocks.append(gb)
    g["blocks"] = list(reversed(gblocks))
    g["wpe"] = dx.sum(0)
    wte = np.zeros_like(p["wte"])
    np.add.at(wte, tok, dx)
    g["wte"] = wte
    return loss, g


def np_adamw(p, g, m, v, t):
    if isinstance(p, dict):
        return {k: np_adamw(p[k], g[k], m[k], v[k], t) for k in p}
    if isinstance(p, list):
        return [np_adamw(*a, t) for a in zip(p, g, m, v)]
    p = p * (1 - LR * WD)
    m[...] = BETAS[0] * m + (1 - BETAS[0]) * g
    v[...] = BETAS[1] * v + (1 - BETAS[1]) * g * g
    return p - (LR / (1 - BETAS[0] ** t)) * m / (
        np.sqrt(v) / np.sqrt(1 - BETAS[1] ** t) + EPS)


def tree_map(f, *trees):
    if isinstance(trees[0], dict):
        return {k: tree_map(f, *(t[k] for t in trees)) for k in trees[0]}
    if isinstance(trees[0], list):
        return [tree_map(f, *a) for a in zip(*trees)]
    return f(*trees)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    rng = np.random.default_rng(0)
    params = init_params(rng)
    tok, lab = corpus(rng, BATCH)
    count = sum(a.size for a in tree_map(lambda a: a, params).values()
                if isinstance(a, np.ndarray)) + sum(
        a.size for b in params["blocks"] for a in b.values())

    with mc.mesh(hosts=2, gpus=2) as mesh:
        @mc.compile(mesh=mesh)
        def train_step(params, state, tok, lab):
            p = shard_params(params)
            loss, grads = mc.value_and_grad(loss_fn)(
                p, mc.shard(tok, hosts=0), mc.shard(lab, hosts=0))
            p, state = mc.optim.adamw_update(p, grads, state, lr=LR,
                                             betas=BETAS, eps=EPS,
                                             weight_decay=WD)
            return loss, p, state

        state = mc.optim.adamw_init(params)
        start = time.perf_counter()
        summary = train_step.plan_summary(params, state, tok, lab)
        print(f"GPT: {count} parameters, {LAYERS} blocks, {HEADS} heads, "
              f"batch {BATCH}x{CTX}; traced and planned in "
              f"{time.perf_counter() - start:.1f} s")
        print(summary)
        shares = list(summary.compute_share.values())
        print("each rank's share of the step's compute: " +
              " ".join(f"{s:.2f}" for s in shares) +
              f" (ideal {1 / len(shares):.2f}; max/min "
              f"{max(shares) / min(shares):.2f})")
        ref = tree_map(lambda a: a.astype(np.float64), params)
        m = tree_map(np.zeros_like, ref)
        v = tree_map(np.zeros_like, ref)
        losses, times = [], []
        for step in range(1, steps + 1):
            start = time.perf_counter()
            loss, params, state = train_step(params, state, tok, lab)
            times.append(time.perf_counter() - start)
            loss = float(loss)
            want, g = np_loss_and_grads(ref, tok, lab)
            ref = np_adamw(ref, g, m, v, step)
            losses.append(loss)
            print(f"step {step:2d}  loss {loss:.6f}  numpy {want:.6f}")
            if not np.isclose(loss, want, rtol=2e-4, atol=1e-5):
                sys.exit(f"step {step}: loss {loss} differs from numpy {want}")
    later = times[1:] or times
    print(f"first step {times[0]:.2f} s (it builds the native kernels and "
          f"starts the workers); then {np.median(later) * 1e3:.1f} ms per "
          "step (median)")
    if not losses[-1] < losses[0]:
        sys.exit("the loss did not fall")
    print(f"loss fell from {losses[0]:.4f} to {losses[-1]:.4f}; every step "
          "matched numpy")


if __name__ == "__main__":
    main()
