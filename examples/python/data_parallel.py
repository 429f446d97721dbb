"""The first program of the Python API's tour: a data-parallel step.

The batch is split over "gpus"; every rank runs the matmul and relu on its
rows, and the compiler turns the column sum of the replicated result into
per-rank partial sums plus an all_reduce. Prints the program at every stage
(the traced one with source locations) and the plan summary.

    python examples/python/data_parallel.py
"""
import numpy as np

import monarch_compile as mc

mesh = mc.mesh(hosts=1, gpus=4)              # named dims; runs as local worker processes by default
sub = mesh.slice(gpus=slice(0, 2))           # sub-mesh; mesh.dims == {"hosts": 1, "gpus": 4}


@mc.compile(mesh=mesh)                       # traced on first call, specialised on shapes and dtypes
def step(x, w):
    x = mc.shard(x, gpus=0)                  # tensor dim 0 split over mesh dim "gpus"; default is replicated
    y = mc.relu(x @ w)
    return mc.replicate(y.sum(axis=0))       # the compiler inserts the all_reduce


def main():
    np_x = np.random.default_rng(0).standard_normal((8, 4), dtype=np.float32)
    np_w = np.random.default_rng(1).standard_normal((4, 4), dtype=np.float32)
    assert mesh.dims == {"hosts": 1, "gpus": 4} and sub.dims == {"hosts": 1, "gpus": 2}
    try:
        out = step(np_x, np_w)               # compiles, runs on the mesh, returns numpy arrays
        print(out)
    except mc.ExecutorUnavailableError as err:
        print(f"// not run: {err}")
    print("// ===== stage: traced (with locations)")
    print(step.ir("traced"))                 # MLIR text at any stage, last specialisation
    for stage in ("partitioned", "split", "planned"):
        print(f"// ===== stage: {stage} (without locations)")
        print(step.ir(stage, np_x, np_w, debug_info=False))  # ... or for these arguments
    print(step.plan_summary())               # ranks, ops, bytes moved per link, peak memory per rank


if __name__ == "__main__":
    main()
