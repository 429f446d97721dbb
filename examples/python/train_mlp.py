"""A data-parallel MLP training step written with actors (the Python twin of
examples/ir/data_parallel.mlir).

Each rank of a 1x4 mesh keeps a replica of the weights as actor state;
`train_step` runs forward and backward on its rows of the batch (the batch
is split with mc.shard), all-reduces the gradients over "gpus" and applies
SGD. Prints the program at every stage and the plan summary.

    python examples/python/train_mlp.py
"""
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(hosts=1, gpus=4)


class MLP(mc.Actor):
    def __init__(self, w1, w2):
        self.w1 = mc.param(w1)
        self.w2 = mc.param(w2)

    @mc.endpoint
    def sync_weights(self):
        self.w1 = mc.broadcast(self.w1, "gpus", root=0)
        self.w2 = mc.broadcast(self.w2, "gpus", root=0)

    @mc.endpoint
    def train_step(self, x, t, lr):
        h0 = x @ self.w1
        h = mc.relu(h0)
        y = h @ self.w2
        d = y - t                                   # dL/dy of 0.5 * (y - t)^2
        loss = mc.all_reduce((d * d).mean(), "gpus", "avg")
        g2 = h.T @ d
        dh = mc.where(h0 > 0, d @ self.w2.T, 0.0)
        g1 = x.T @ dh
        self.w1 = self.w1 - lr * mc.all_reduce(g1, "gpus", "avg")
        self.w2 = self.w2 - lr * mc.all_reduce(g2, "gpus", "avg")
        return loss


rng = np.random.default_rng(0)
mlp = mesh.spawn("mlp", MLP, rng.standard_normal((16, 32), dtype=np.float32),
                 rng.standard_normal((32, 8), dtype=np.float32))


@mc.compile(mesh=mesh)
def train(batch, target, lr):
    mlp.sync_weights.broadcast()
    x = mc.shard(batch, gpus=0)                     # 8 rows per rank
    t = mc.shard(target, gpus=0)
    return mlp.train_step.call(x, t, lr)


def main():
    batch = rng.standard_normal((32, 16), dtype=np.float32)
    target = rng.standard_normal((32, 8), dtype=np.float32)
    for stage in mc.STAGES:
        print(f"// ===== stage: {stage}")
        print(train.ir(stage, batch, target, 0.05))
    print(train.plan_summary())
    try:
        print("loss:", train(batch, target, 0.05))
    except mc.ExecutorUnavailableError as err:
        print(f"// not run: {err}")


if __name__ == "__main__":
    main()
