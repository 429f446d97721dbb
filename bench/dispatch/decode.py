"""A decode step from Python (issue 35 item 6): a small transformer (one
block, width 64, vocabulary 128, 4 heads folded into one for brevity) whose
weights and KV cache are an actor's state on one local worker; each call
feeds one token and its position, writes the token's key and value into
the cache at that row, attends over the rows written so far and returns the
next token's logits. The same step in numpy (float32, one BLAS thread)
beside it, token for token; the logits must agree. Target (issue 35): a
token within 3x of numpy's.

    MONARCH_BUILD_DIR=build python3 bench/dispatch/decode.py [--tokens N]
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import monarch_compile as mc  # noqa: E402

V, D, T = 128, 64, 128


def weights(rng):
    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(
            np.float32)
    return dict(wte=w(V, D), wq=w(D, D), wk=w(D, D), wv=w(D, D), wo=w(D, D),
                w1=w(D, 4 * D), w2=w(4 * D, D))


class Decoder(mc.Actor):
    def __init__(self, p):
        self.wte = mc.param(p["wte"])
        self.wq, self.wk, self.wv = (mc.param(p["wq"]), mc.param(p["wk"]),
                                     mc.param(p["wv"]))
        self.wo, self.w1, self.w2 = (mc.param(p["wo"]), mc.param(p["w1"]),
                                     mc.param(p["w2"]))
        self.k = mc.param(np.zeros((T, D), np.float32))
        self.v = mc.param(np.zeros((T, D), np.float32))

    @mc.endpoint
    def decode(self, tok, pos):
        x = self.wte[tok]                                   # (1, D)
        q, k, v = x @ self.wq, x @ self.wk, x @ self.wv
        rows = mc.arange(T).reshape(T, 1)
        here = rows == pos
        self.k = mc.where(here, k, self.k)
        self.v = mc.where(here, v, self.v)
        s = (self.k @ q.T) * (1.0 / np.sqrt(D))             # (T, 1)
        s = mc.where(rows <= pos, s, -1e9)
        a = mc.softmax(s, axis=0)
        x = x + (a.T @ self.v) @ self.wo
        x = x + mc.gelu(x @ self.w1) @ self.w2
        return x @ self.wte.T                               # (1, V)


def numpy_decoder(p):
    k = np.zeros((T, D), np.float32)
    v = np.zeros((T, D), np.float32)

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(0.7978845608028654 *
                                      (x + 0.044715 * x ** 3)))

    def step(tok, pos):
        x = p["wte"][tok]
        q = x @ p["wq"]
        k[pos] = (x @ p["wk"])[0]
        v[pos] = (x @ p["wv"])[0]
        s = (k[:pos + 1] @ q.T) * np.float32(1.0 / np.sqrt(D))
        e = np.exp(s - s.max(axis=0))
        a = e / e.sum(axis=0)
        x = x + (a.T @ v[:pos + 1]) @ p["wo"]
        x = x + gelu(x @ p["w1"]) @ p["w2"]
        return x @ p["wte"].T

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=T)
    args = ap.parse_args()
    n = min(args.tokens, T)
    rng = np.random.default_rng(0)
    p = weights(rng)
    toks = rng.integers(0, V, n).astype(np.int32)
    ref = numpy_decoder(p)
    with mc.mesh(gpus=1) as mesh:
        dec = mesh.spawn("dec", Decoder, p)

        @mc.compile(mesh=mesh)
        def step(tok, pos):
            return dec.decode.call(tok, pos)

        ours, theirs = [], []
        for i in range(n):
            tok = toks[i:i + 1]
            start = time.perf_counter()
            got = step(tok, np.int32(i))
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            want = ref(tok, i)
            theirs.append(time.perf_counter() - start)
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4)
    # The first call compiles and starts the worker: medians of the rest.
    a = float(np.median(ours[1:])) * 1e6
    b = float(np.median(theirs[1:])) * 1e6
    print(f"decode (width {D}, cache {T}, one worker): {a:.1f} us a token; "
          f"numpy {b:.1f} us; ratio {a / b:.2f} (target <= 3x); "
          f"{n} tokens, logits equal to numpy's")


if __name__ == "__main__":
    main()
