"""monarch_compile: program a mesh of processes like one machine.

    import monarch_compile as mc
    mesh = mc.mesh(hosts=1, gpus=4)

    @mc.compile(mesh=mesh)
    def step(x, w):
        x = mc.shard(x, gpus=0)
        return mc.replicate(mc.relu(x @ w).sum(axis=0))

    print(step.ir("traced", x, w))  # MLIR, your file:line on every op
    step(x, w)                      # runs on 4 local monarch-worker processes

See docs/frontend.md.
"""
from ._actors import Actor, Param, endpoint, param
from ._autodiff import grad, value_and_grad, vjp
from ._nn import (causal_mask, cross_entropy, layer_norm, log_softmax, rms_norm,
                  silu)
from . import knobs, optim
from ._compile import Compiled, PlanSummary, Specialization, compile
from ._mesh import Mesh, mesh
from ._ops import (arange, concatenate, debug_print, full, one_hot, ones, split, stack, take,
                   tril, triu, zeros, abs, add, all_gather, all_reduce, argmax,
                   argmin, astype, bfloat16, broadcast, div, exp, float16,
                   float32, gelu, int32, log, matmul, max, maximum, mean, min,
                   minimum, mul, neg, reduce_scatter, relu, replicate, reshape,
                   rsqrt, shard, sigmoid, softmax, sqrt, sub, sum, tanh,
                   transpose, where)
from ._runtime import STAGES, RemoteArray, Restart, recovery_stats
from ._tensor import Tensor
from .errors import (ConcretizationError, ExecutionError,
                     ExecutorUnavailableError, MeshError, MonarchError, ShapeError, ShardingError,
                     TraceError, UnsupportedError)

cast = astype

__all__ = [n for n in dir() if not n.startswith("_")]
