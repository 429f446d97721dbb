"""The headline example (`make run`): data-parallel training of a small MLP
on a local mesh of 4 worker processes, checked against numpy.

The step is examples/python/train_mlp.py's: every rank keeps a replica of
the weights as actor state, trains on its quarter of the batch, all-reduces
the gradients over "gpus" and applies SGD. The program is compiled once
(traced, partitioned, split, planned, then an ExecutionPlan with native
kernels), the workers start at the first call, and each step is one control
message per worker. The same computation in numpy runs beside it; the
losses must agree and fall.

    python examples/python/train_loop.py [steps]
"""
import sys
import time

import numpy as np

import monarch_compile as mc

LR = np.float32(0.01)


class MLP(mc.Actor):
    def __init__(self, w1, w2):
        self.w1 = mc.param(w1)
        self.w2 = mc.param(w2)

    @mc.endpoint
    def train_step(self, x, t, lr):
        h0 = x @ self.w1
        h = mc.relu(h0)
        y = h @ self.w2
        d = y - t
        loss = mc.all_reduce((d * d).mean(), "gpus", "avg")
        g2 = h.T @ d
        dh = mc.where(h0 > 0, d @ self.w2.T, 0.0)
        g1 = x.T @ dh
        self.w1 = self.w1 - lr * mc.all_reduce(g1, "gpus", "avg")
        self.w2 = self.w2 - lr * mc.all_reduce(g2, "gpus", "avg")
        return loss


def numpy_step(w1, w2, x, t, lr, ranks):
    """One step of the same data-parallel SGD, on one machine."""
    h0 = x @ w1
    h = np.maximum(h0, 0)
    d = h @ w2 - t
    loss = np.mean(d * d)
    # Each rank sums over its rows; the all-reduce averages over ranks.
    g2 = (h.T @ d) / ranks
    g1 = (x.T @ np.where(h0 > 0, d @ w2.T, 0)) / ranks
    return loss, w1 - lr * g1, w2 - lr * g2


def main(steps):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((16, 32), dtype=np.float32) * 0.3
    w2 = rng.standard_normal((32, 8), dtype=np.float32) * 0.3
    batch = rng.standard_normal((32, 16), dtype=np.float32)
    target = np.tanh(batch @ rng.standard_normal((16, 8), dtype=np.float32))

    with mc.mesh(hosts=1, gpus=4) as mesh:
        mlp = mesh.spawn("mlp", MLP, w1, w2)

        @mc.compile(mesh=mesh)
        def train(batch, target, lr):
            x = mc.shard(batch, gpus=0)  # 8 rows per rank
            t = mc.shard(target, gpus=0)
            return mlp.train_step.call(x, t, lr)

        print(train.ir("traced", batch, target, LR).count("\n"),
              "lines of traced IR; plan summary:")
        print(train.plan_summary())
        ref1, ref2 = w1.copy(), w2.copy()
        losses = []
        start = time.perf_counter()
        for step in range(steps):
            loss = float(np.asarray(train(batch, target, LR)))
            ref, ref1, ref2 = numpy_step(ref1, ref2, batch, target, LR, 4)
            losses.append(loss)
            print(f"step {step:2d}  loss {loss:.6f}  numpy {ref:.6f}")
            if not np.isclose(loss, ref, rtol=1e-3, atol=1e-5):
                sys.exit(f"step {step}: loss {loss} differs from numpy {ref}")
        elapsed = time.perf_counter() - start
    print(f"{steps} steps in {elapsed:.3f} s "
          f"({elapsed / steps * 1e3:.2f} ms per step, first step compiles "
          "and starts the workers)")
    if not losses[-1] < losses[0]:
        sys.exit("the loss did not fall")
    print(f"loss fell from {losses[0]:.6f} to {losses[-1]:.6f}; "
          "every step matched numpy")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
