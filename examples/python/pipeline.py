"""The actor programs of the Python API's tour: a two-stage pipeline.

`Stage` keeps a weight as actor state on the ranks of its mesh; two stages
are spawned on the two halves of a 1x4 mesh. `pipeline` feeds a batch to
stage 0 and moves its activation to stage 1 (a planned data transfer);
`update` broadcasts an SGD step whose gradient is all-reduced over each
stage's ranks. Prints both programs at every stage.

    python examples/python/pipeline.py
"""
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(hosts=1, gpus=4)


class Stage(mc.Actor):
    def __init__(self, w):
        self.w = mc.param(w)                 # actor state, lives on the actor's ranks

    @mc.endpoint                             # per-rank code: each rank of the actor mesh runs it
    def forward(self, x):
        return mc.relu(x @ self.w)

    @mc.endpoint
    def update(self, g, lr):
        g = mc.all_reduce(g, "gpus")         # explicit collective over the actor mesh's dims
        self.w = self.w - lr * g             # state update, kept on the ranks


rng = np.random.default_rng(0)
w0 = rng.standard_normal((4, 4), dtype=np.float32)
w1 = rng.standard_normal((4, 4), dtype=np.float32)
s0 = mesh.slice(gpus=slice(0, 2)).spawn("s0", Stage, w0)
s1 = mesh.slice(gpus=slice(2, 4)).spawn("s1", Stage, w1)


@mc.compile
def pipeline(x):
    return s1.forward.call(s0.forward.call(x))   # the s0 -> s1 edge is a planned data transfer


@mc.compile
def update(g0, g1):
    s0.update.broadcast(g0, 0.01)
    s1.update.broadcast(g1, 0.01)


def main():
    x = rng.standard_normal((8, 4), dtype=np.float32)
    g = np.ones((4, 4), np.float32)
    for fn, args in ((pipeline, (x,)), (update, (g, g))):
        for stage in mc.STAGES:
            print(f"// ===== {fn.__name__}: stage {stage}")
            print(fn.ir(stage, *args))
        print(fn.plan_summary())
    try:
        pipeline(x)
    except mc.ExecutorUnavailableError as err:
        print(f"// not run: {err}")


if __name__ == "__main__":
    main()
