"""Hand-written fuzz programs of known bugs.

test_fuzz.py runs `KNOWN` (bugs not fixed yet) as strict xfails: when one is
fixed its test passes, which fails as XPASS, and its entry should move to
`FIXED` (regression programs that must pass). Each entry: name -> (reason,
Program).
"""

import dataclasses

from program import Actor, Endpoint, Input, Op, Program

M1x1 = (("hosts", 1), ("gpus", 1))
M1x2 = (("hosts", 1), ("gpus", 2))
M1x4 = (("hosts", 1), ("gpus", 4))
M2x2 = (("hosts", 2), ("gpus", 2))


def _x(name, shape, dtype="float32", seed=1, positive=False):
    return Input(name, shape, dtype, seed, positive)


def _bin(out, op, a, b):
    return Op("binary", (out,), (a, b), {"op": op})


def _shard(out, x, **spec):
    return Op("shard", (out,), (x,), {"spec": spec})


def _actor(cls, body, args, results, out=None):
    """An actor `a` without state whose endpoint `e` is `body`."""
    return Actor(
        "a", cls, f"known_{cls.lower()}", [], [Endpoint("e", args, body, results, out)]
    )


def _call(outs, *args):
    return Op("call", tuple(outs), args, {"actor": "a", "endpoint": "e"})


KNOWN = {
}

FIXED = {
    "reduce-scatter-exported": (
        "mc.reduce_scatter is not exported",
        Program(
            mesh=M1x4,
            inputs=[_x("x", (8, 4))],
            ops=[Op("call", ("y",), ("x",), {"actor": "a", "endpoint": "rs"})],
            results=["y"],
            actors=[
                Actor(
                    var="a",
                    cls="Scatter",
                    spawn_name="known_rs",
                    params=[],
                    endpoints=[
                        Endpoint(
                            "rs",
                            ["v"],
                            [
                                Op(
                                    "reduce_scatter",
                                    ("r",),
                                    ("v",),
                                    {"dims": ["gpus"], "axis": 0, "op": "sum"},
                                )
                            ],
                            ["r"],
                            out={"gpus": 0},
                        )
                    ],
                )
            ],
            tag="reduce_scatter",
        ),
    ),
    "unused-argument": (
        "an argument only dead work uses: 'feed indices are not 0..N-1' when the plan loads",
        Program(
            mesh=M1x1,
            inputs=[_x("x", (4,), seed=1), _x("y", (4,), seed=2)],
            ops=[_bin("dead", "add", "x", 1.0), _bin("z", "mul", "y", 2.0)],
            results=["z"],
            tag="unused_argument",
        ),
    ),
    "identity-function": (
        "a function returning its argument: 'module has no monarch.plan'",
        Program(
            mesh=M1x1, inputs=[_x("x", (4,))], ops=[], results=["x"], tag="identity"
        ),
    ),
    "zero-d-arguments": (
        "0-d array arguments: x / y of two 0-d float32 arrays kills the process (SIGSEGV in "
        "compile_plan); x * 2.0 of one: 'module has no monarch.plan'",
        Program(
            mesh=M1x1,
            inputs=[
                _x("x", (), seed=1, positive=True),
                _x("y", (), seed=2, positive=True),
            ],
            ops=[_bin("q", "div", "x", "y")],
            results=["q"],
            tag="zero_d_args",
        ),
    ),
    "segfault-reduce-then-shard": (
        "the controller process dies (SIGSEGV) on a 1x1 mesh: max over two axes, a dead "
        "use, then mc.shard of the reduced value also returned unsharded",
        Program(
            mesh=M1x1,
            inputs=[_x("x", (1, 1, 1))],
            ops=[
                Op(
                    "reduce",
                    ("m",),
                    ("x",),
                    {"op": "max", "axis": (-3, 1), "keepdims": False},
                ),
                _bin("dead", "mul", "m", "m"),
                _shard("s", "m", gpus=0),
            ],
            results=["s", "m"],
            tag="segv_reduce_shard",
        ),
    ),
    "endpoint-number-argument": (
        "an endpoint called with only a Python number, returning it: 'monarch.call op is "
        "still used after splitting'",
        Program(
            mesh=M1x1,
            inputs=[],
            ops=[_call(["y"], 3.0)],
            results=["y"],
            actors=[_actor("Echo", [], ["v"], ["v"])],
            tag="endpoint_number",
        ),
    ),
    "endpoint-number-result-used": (
        "the scalar result of an endpoint used by controller work: 'arith.negf op sharding "
        "interface is not implemented'",
        Program(
            mesh=M1x1,
            inputs=[_x("x", (4,))],
            ops=[_call(["y"], "x", 0.5), Op("unary", ("n",), ("y",), {"op": "neg"})],
            results=["n"],
            actors=[_actor("Pass", [], ["u", "v"], ["v"])],
            tag="endpoint_number_result",
        ),
    ),
    "bfloat16-result": (
        "a bfloat16 result does not convert to numpy (TypeError: data type 'bfloat16' not "
        "understood; results are ml_dtypes.bfloat16)",
        Program(
            mesh=M1x1,
            inputs=[_x("x", (4,))],
            ops=[Op("astype", ("b",), ("x",), {"dtype": "bfloat16"})],
            results=["b"],
            tag="bf16_result",
        ),
    ),
    "transposed-sharded-bool": (
        "a transposed, sharded boolean result comes back wrong",
        Program(
            mesh=M1x2,
            inputs=[_x("x", (2, 2))],
            ops=[
                Op("compare", ("b",), ("x", "x"), {"op": "eq"}),
                Op("transpose", ("t",), ("b",), {"axes": None}),
                _shard("s", "t", gpus=0),
            ],
            results=["s"],
            tag="bool_transpose_shard",
        ),
    ),
    "shard-over-two-dims-one-of-size-1": (
        "mc.shard(x.T, hosts=1, gpus=0) on a 1x2 mesh: 'linalg.transpose' does not verify",
        Program(
            mesh=M1x2,
            inputs=[_x("x", (2, 2))],
            ops=[
                Op("transpose", ("t",), ("x",), {"axes": None}),
                _shard("s", "t", hosts=1, gpus=0),
            ],
            results=["s"],
            tag="shard_two_dims",
        ),
    ),
    "reshard-matmul-result": (
        "resharding a matmul result (with a dead use) onto two mesh dims: 'partitioning "
        "made result #0 ... which no sharding annotation explains'",
        Program(
            mesh=M1x2,
            inputs=[_x("x", (2, 1), seed=1), _x("y", (1, 2), seed=2)],
            ops=[
                Op("matmul", ("m",), ("x", "y")),
                _bin("dead", "add", "m", "m"),
                _shard("s", "m", hosts=1),
                _shard("r", "s", hosts=0, gpus=1),
            ],
            results=["r"],
            tag="reshard_matmul",
        ),
    ),
    "endpoint-broadcast-2x2": (
        "mc.broadcast(x, 'gpus', root=0) in an endpoint on a 2x2 mesh fails at run time",
        Program(
            mesh=M2x2,
            inputs=[_x("x", (4, 4))],
            ops=[
                Op("shard", ("s",), ("x",), {"spec": {"gpus": 0}}),
                Op("call", ("y",), ("s",), {"actor": "a", "endpoint": "bcast"}),
            ],
            results=["y"],
            actors=[
                Actor(
                    var="a",
                    cls="Bcast",
                    spawn_name="known_bcast",
                    params=[],
                    endpoints=[
                        Endpoint(
                            "bcast",
                            ["v"],
                            [
                                Op(
                                    "broadcast",
                                    ("b",),
                                    ("v",),
                                    {"dims": ["gpus"], "root": 0},
                                )
                            ],
                            ["b"],
                        )
                    ],
                )
            ],
            tag="bcast_2x2",
        ),
    ),
    "broadcast-over-size-1-dim": (
        "mc.broadcast over a mesh dim of size 1 in an endpoint fails at run time: 'root -1 "
        "is not a rank of a 1-rank communicator'",
        Program(
            mesh=M1x2,
            inputs=[_x("x", (4,))],
            ops=[_call(["y"], "x")],
            results=["y"],
            actors=[
                _actor(
                    "Bcast1",
                    [Op("broadcast", ("b",), ("v",), {"dims": ["hosts"], "root": 0})],
                    ["v"],
                    ["b"],
                )
            ],
            tag="bcast_size1",
        ),
    ),
    "two-matmuls-one-kernel": (
        "two matmul results of the same shape from one kernel: the second is wrong",
        Program(
            mesh=M1x4,
            inputs=[
                _x("x", (8, 8), seed=1),
                _x("w1", (8, 8), seed=2),
                _x("w2", (8, 8), seed=3),
            ],
            ops=[Op("matmul", ("a",), ("x", "w1")), Op("matmul", ("b",), ("x", "w2"))],
            results=["a", "b"],
            tag="two_matmuls",
        ),
    ),
    "int32-times-float": (
        "int32 tensor * 2.5 computes * 2 (numpy: float result of * 2.5)",
        Program(
            mesh=M1x4,
            inputs=[_x("x", (8,), "int32")],
            ops=[_bin("y", "mul", "x", 2.5)],
            results=["y"],
            tag="int_times_float",
        ),
    ),
    "int32-true-division": (
        "int32 / int32 truncates (numpy true-divides into floats)",
        Program(
            mesh=M1x4,
            inputs=[
                _x("x", (8,), "int32", 1),
                _x("y", (8,), "int32", 2, positive=True),
            ],
            ops=[_bin("q", "div", "x", "y")],
            results=["q"],
            tag="int_div",
        ),
    ),
    "sharded-0d-mean": (
        "a 0-d value computed from sharded ones: 'cannot parse the traced module'",
        Program(
            mesh=M1x4,
            inputs=[
                _x("x", (8, 4), seed=1),
                _x("w", (4, 3), seed=2),
                _x("t", (8, 3), seed=3),
            ],
            ops=[
                Op("shard", ("xs",), ("x",), {"spec": {"gpus": 0}}),
                Op("shard", ("ts",), ("t",), {"spec": {"gpus": 0}}),
                Op("matmul", ("y",), ("xs", "w")),
                _bin("d", "sub", "y", "ts"),
                _bin("d2", "pow", "d", 2),
                Op(
                    "reduce",
                    ("m",),
                    ("d2",),
                    {"op": "mean", "axis": None, "keepdims": False},
                ),
                Op("replicate", ("r",), ("m",)),
            ],
            results=["r"],
            tag="sharded_0d",
        ),
    ),
    "shard-both-mesh-dims": (
        "sharding over both dims of a 2x2 mesh: 'does not verify'",
        Program(
            mesh=M2x2,
            inputs=[_x("x", (4, 4))],
            ops=[
                Op("shard", ("s",), ("x",), {"spec": {"hosts": 0, "gpus": 1}}),
                _bin("y", "mul", "s", 2.0),
            ],
            results=["y"],
            tag="shard_both",
        ),
    ),
    "gather-split-over-its-other-dims": (
        "a gather split over a dimension it does not index read local rows of "
        "the whole table (linalg.index is local after partitioning)",
        Program(
            mesh=M1x2,
            inputs=[_x("i", (), dtype="int32", seed=306287926),
                    _x("x", (4, 4), seed=622340824)],
            ops=[
                Op("take", ("t",), ("x", "i"), {"axis": 1, "n": 4, "style": "take"}),
                Op("shard", ("s",), ("t",), {"spec": {"gpus": -1}}),
                _bin("y", "mul", "s", 2.0),
            ],
            results=["y"],
            tag="gather_split",
        ),
    ),
    "transposed-operand-used-twice-on-2x2": (
        "x.T @ x.T with its result split over both axes of a 2x2 mesh gave "
        "both operand uses one layout",
        Program(
            mesh=M2x2,
            inputs=[_x("x", (2, 2), seed=281647522)],
            ops=[
                Op("transpose", ("t",), ("x",), {"axes": None}),
                Op("matmul", ("y",), ("t", "t"), {"style": "op"}),
                Op("shard", ("s",), ("y",), {"spec": {"hosts": -1, "gpus": 0}}),
            ],
            results=["s"],
            tag="tt_2x2",
        ),
    ),
    "gather-from-a-strided-slice": (
        "a gather reading a strided slice failed to compile (vector.gather of "
        "a strided buffer left an unrealized cast in LLVM translation)",
        Program(
            mesh=M1x1,
            inputs=[_x("i", (), dtype="int32", seed=427016480),
                    _x("x", (12, 12), seed=1007275860)],
            ops=[
                Op("reshape", ("r",), ("x",), {"shape": (144,)}),
                Op("index", ("s",), ("r",), {"key": (slice(-110, 92, 3),)}),
                Op("take", ("t",), ("s", "i"), {"axis": 0, "n": 20, "style": "index"}),
                _bin("y", "add", "t", "s"),
                Op("index", ("z",), ("y",), {"key": (Ellipsis, 5)}),
            ],
            results=["z"],
            tag="gather_strided",
        ),
    ),
    "matmul-of-a-broadcast-0d-mean": (
        "the compiler process died (SIGSEGV) folding a broadcast of a 0-d "
        "value into a BLAS-called matmul (v1 @ v1, v1 = mean over both axes "
        "with keepdims): the folded maps had no M, N or K role left",
        Program(
            mesh=M1x1,
            inputs=[_x("x", (1, 1), seed=339962060)],
            ops=[
                Op("reduce", ("v",), ("x",),
                   {"op": "mean", "axis": (1, -2), "keepdims": True}),
                Op("matmul", ("m",), ("v", "v")),
            ],
            results=["m"],
            tag="matmul_bcast_0d",
        ),
    ),
    "bf16-column-sum-loads": (
        "the kernel library failed to load (undefined symbol __truncsfbf2): "
        "the x86 back end rounded a bfloat16 reduction's loop-carried value "
        "with a libcall that libgcc before GCC 13 lacks (seed 485)",
        Program(
            mesh=M1x1,
            inputs=[_x("x", (3, 33), seed=976172591),
                    _x("y", (33,), seed=644063606)],
            ops=[
                Op("astype", ("b",), ("x",), {"dtype": "bfloat16"}),
                _bin("s", "mul", "b", "b"),
                Op("reduce", ("c",), ("s",),
                   {"op": "sum", "axis": -2, "keepdims": False,
                    "style": "method"}),
                Op("compare", ("m",), ("c", 1), {"op": "lt"}),
                Op("where", ("w",), ("m", 2.5, "y")),
            ],
            results=["w"],
            tag="bf16_column_sum",
        ),
    ),
    "sort-of-a-slice-actors-result": (
        "np.sort of an actor's result on a mesh slice: the sort network's "
        "index arithmetic (constants only) was traced on the function's mesh "
        "and transferred to the slice; partitioning left it to the "
        "controller and monarch-split-control-data refused the transfer "
        "('moves a value that does not live on @mesh', seed 50083)",
        Program(
            mesh=M1x2,
            inputs=[_x("x", (8, 12, 8), seed=954344731)],
            ops=[_call(("y",), "x"),
                 Op("npfn", ("s",), ("y",), {"fn": "median", "axis": 1})],
            results=["s"],
            actors=[dataclasses.replace(_actor(
                "Sorted",
                [Op("npfn", ("t",), ("a0",),
                    {"fn": "take", "axis": -2, "indices": [11, 2]})],
                ["a0"], ["t"], out={"hosts": 0}), slice={"gpus": (0, 2)})],
            tag="sort_of_slice",
        ),
    ),
    "einsum-one-sided-sum": (
        "np.einsum('ij,ipq->jp'): q, summed over the second operand alone, "
        "was no GEMM dimension, and the BLAS call read one q of it (seed "
        "60384; kernels-cpu-blas.mlir @onesided)",
        Program(
            mesh=M1x1,
            inputs=[_x("x1", (1, 1, 2), seed=239400290),
                    _x("x2", (1, 1), seed=70919368)],
            ops=[Op("npfn2", ("v",), ("x2", "x1"),
                    {"fn": "einsum", "spec": "ij,ipq->jp"})],
            results=["v"],
            tag="einsum_one_sided",
        ),
    ),
    "einsum-product-broadcast": (
        "np.triu of an einsum with nothing to sum ('i,iqp->i', q and p of "
        "size 1): the step's generic read its zero init (out = init + a * b) "
        "and, fused into the broadcasting triu, computed one element twice "
        "into one buffer (seed 90113; kernels-cpu-fusion-init.mlir)",
        Program(
            mesh=M1x1,
            inputs=[_x("x2", (3,), seed=916676703, positive=True),
                    _x("x3", (3, 1, 1), seed=1060481073)],
            ops=[Op("npfn2", ("v",), ("x2", "x3"),
                    {"fn": "einsum", "spec": "i,iqp->i"}),
                 Op("npfn", ("t",), ("v",), {"fn": "triu", "k": 1})],
            results=["t"],
            tag="einsum_product_broadcast",
        ),
    ),
    "sinh-float16-tiny": (
        "np.sinh of float16 near 0 lost 5% (-0.00464 for -0.00443): "
        "exp(x) - exp(-x) cancelled in float16; now from expm1 of |x|, in "
        "float32 for float16 operands (seed 90668)",
        Program(
            mesh=M1x1,
            inputs=[_x("x1", (6, 1, 6, 1), dtype="float16", seed=396275555)],
            ops=[Op("npfn", ("v",), ("x1",), {"fn": "sinh"})],
            results=["v"],
            tag="sinh_f16",
        ),
    ),
    "boolean-results": (
        "boolean results come back bit-packed (docs/frontend.md, test_boolean_results)",
        Program(
            mesh=(("hosts", 1), ("gpus", 2)),
            inputs=[_x("x", (4, 3))],
            ops=[Op("compare", ("b",), ("x", 0.0), {"op": "gt"})],
            results=["b"],
            tag="bool_results",
        ),
    ),
}
