"""The data x tensor x pipeline training step of dtp_scaling.py.

Two pipeline stages, actors on the halves of the mesh's `stages` dimension;
each is a Megatron MLP (`tanh(x @ w1) @ w2`, w1 split by columns and w2 by
rows over `gpus`, its partial products all-reduced over `gpus`), data
parallel over `hosts` (each host's rows; weight gradients all-reduced over
`hosts`). Stage 1 computes a sum-of-squares loss and sends the gradient of
its input back to stage 0. SGD. `numpy_step` is the same step on one
machine (tests/python/bench/test_dtp_program.py runs both).
"""
import numpy as np
import monarch_compile as mc

DIN, HID, DMID, DOUT, ROWS = 16, 64, 16, 8, 4


class First(mc.Actor):
    def __init__(self, w1, w2):
        self.w1 = mc.param(w1, gpus=1)   # column-parallel
        self.w2 = mc.param(w2, gpus=0)   # row-parallel

    @mc.endpoint(out={"hosts": 0})
    def forward(self, x):
        return mc.all_reduce(mc.tanh(x @ self.w1) @ self.w2, "gpus")

    @mc.endpoint
    def backward(self, x, dy, lr):
        h = mc.tanh(x @ self.w1)
        g2 = h.T @ dy
        g1 = x.T @ ((dy @ self.w2.T) * (1.0 - h * h))
        self.w1 = self.w1 - lr * mc.all_reduce(g1, "hosts")
        self.w2 = self.w2 - lr * mc.all_reduce(g2, "hosts")


class Last(mc.Actor):
    def __init__(self, w3, w4):
        self.w3 = mc.param(w3, gpus=1)
        self.w4 = mc.param(w4, gpus=0)

    @mc.endpoint(out=(None, {"hosts": 0}))
    def step(self, y, t, lr):
        h = mc.tanh(y @ self.w3)
        d = mc.all_reduce(h @ self.w4, "gpus") - t
        loss = mc.all_reduce((d * d).sum(), "hosts")
        dz = d * 2.0
        g4 = h.T @ dz
        dh = (dz @ self.w4.T) * (1.0 - h * h)
        dy = mc.all_reduce(dh @ self.w3.T, "gpus")
        self.w3 = self.w3 - lr * mc.all_reduce(y.T @ dh, "hosts")
        self.w4 = self.w4 - lr * mc.all_reduce(g4, "hosts")
        return loss, dy


def weights(rng):
    return [(rng.standard_normal(s) * 0.3).astype(np.float32)
            for s in [(DIN, HID), (HID, DMID), (DMID, HID), (HID, DOUT)]]


def program(mesh, w):
    first = mesh.slice(stages=0).spawn("first", First, w[0], w[1])
    last = mesh.slice(stages=1).spawn("last", Last, w[2], w[3])

    @mc.compile(mesh=mesh)
    def train(x, t, lr):
        xs = mc.shard(x, hosts=0)
        y = first.forward.call(xs)
        loss, dy = last.step.call(y, mc.shard(t, hosts=0), lr)
        first.backward.call(xs, dy, lr)
        return loss

    return train


def batch(rng, hosts):
    """A batch of ROWS rows per host, and its targets."""
    x = rng.standard_normal((ROWS * hosts, DIN)).astype(np.float32)
    t = rng.standard_normal((ROWS * hosts, DOUT)).astype(np.float32)
    return x, t


def numpy_step(w, x, t, lr):
    """(loss, new weights) of the same step in float64 numpy."""
    w1, w2, w3, w4 = [a.astype(np.float64) for a in w]
    x = x.astype(np.float64)
    h1 = np.tanh(x @ w1)
    y = h1 @ w2
    h = np.tanh(y @ w3)
    d = h @ w4 - t
    dz = 2 * d
    dh = (dz @ w4.T) * (1 - h * h)
    dy = dh @ w3.T
    g1 = x.T @ ((dy @ w2.T) * (1 - h1 * h1))
    g2, g3, g4 = h1.T @ dy, y.T @ dh, h.T @ dz
    return (d * d).sum(), [w1 - lr * g1, w2 - lr * g2, w3 - lr * g3,
                           w4 - lr * g4]
