"""Tensor (Megatron-style) parallelism in a compiled function.

A two-layer MLP whose first weight is split by columns and second by rows
over the "gpus" dimension of a 1x4 mesh: each rank computes its slice of the
hidden layer without communication, and the compiler inserts the one
all_reduce that sums the partial products (visible at stage
`partitioned`). Prints the program at every stage and the plan summary.

    python examples/python/tensor_parallel.py
"""
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(hosts=1, gpus=4)


@mc.compile(mesh=mesh)
def mlp(x, w1, w2):
    w1 = mc.shard(w1, gpus=1)          # column-parallel
    w2 = mc.shard(w2, gpus=0)          # row-parallel
    h = mc.gelu(x @ w1)                # local: 16 hidden units per rank
    return mc.replicate(h @ w2)        # partial sums -> all_reduce


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    w1 = rng.standard_normal((16, 64), dtype=np.float32)
    w2 = rng.standard_normal((64, 8), dtype=np.float32)
    for stage in mc.STAGES:
        print(f"// ===== stage: {stage}")
        print(mlp.ir(stage, x, w1, w2))
    print(mlp.plan_summary())
    try:
        mlp(x, w1, w2)
    except mc.ExecutorUnavailableError as err:
        print(f"// not run: {err}")


if __name__ == "__main__":
    main()
