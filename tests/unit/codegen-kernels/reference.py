#!/usr/bin/env python3
"""numpy references for the kernel tests (tests/unit/codegen-kernels).

Usage: reference.py CASE DIR SPEC...

The test writes its inputs as raw little-endian files DIR/in<i>.bin and
passes one SPEC per input and output, "in:f32:4x16" or "out:bf16:8" (shape
"" for a scalar). This script recomputes the outputs of CASE with numpy and
writes DIR/out<i>.bin in the output's dtype. bfloat16 has no numpy dtype: it
is read as the high half of a float32 and written rounded to nearest even.
"""
import sys

import numpy as np

NP_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
             "i32": np.int32, "i64": np.int64, "i8": np.int8, "i1": np.bool_}


def parse_spec(spec):
    kind, dtype, shape = spec.split(":")
    dims = tuple(int(d) for d in shape.split("x")) if shape else ()
    return kind, dtype, dims


def load(path, dtype, dims):
    if dtype == "bf16":
        bits = np.fromfile(path, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(dims)
    return np.fromfile(path, dtype=NP_DTYPES[dtype]).reshape(dims)


def store(path, value, dtype, dims):
    value = np.asarray(value)
    if value.shape != dims:
        raise SystemExit(f"reference produced shape {value.shape}, "
                         f"expected {dims}")
    if dtype == "bf16":
        bits = np.ascontiguousarray(value, dtype=np.float32).view(np.uint32)
        rounded = bits + 0x7FFF + ((bits >> 16) & 1)
        (rounded >> 16).astype(np.uint16).tofile(path)
        return
    np.ascontiguousarray(value, dtype=NP_DTYPES[dtype]).tofile(path)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def f64(*xs):
    return [np.asarray(x, dtype=np.float64) for x in xs]


# Each case maps the inputs to the list of outputs. Floating-point cases
# compute in float64 so the reference is more exact than the kernel.
CASES = {
    "relu_chain": lambda a, b, c: [np.maximum(a * b + c, 0) * 0.5],
    "chain2d": lambda a, b: [np.tanh(a) * np.exp(-b * b) + 1.0],
    "add_i32": lambda a, b: [(a.astype(np.int64) * 3 + b).astype(np.int32)],
    "row_sum": lambda a: [a.sum(axis=1)],
    "full_sum_scaled": lambda a: [np.asarray((a * a).sum() / a.size)],
    "col_max": lambda a: [a.max(axis=0)],
    "softmax": lambda a: [softmax(a, axis=1)],
    "matmul": lambda a, b: [a @ b],
    "matmul_bias_relu": lambda a, b, c: [np.maximum(a @ b + c, 0)],
    "two_matmuls": lambda a, b, c: [a @ b, a @ c],
    "sum_and_its_init": lambda a: [a.sum(axis=0), np.zeros(a.shape[1], np.int32)],
    "slice_transpose_bool": lambda a: [(a > 0)[:, 5:25].T],
    "mixed_f16": lambda a, b: [a.astype(np.float64) * 2 + b],
    "mixed_bf16": lambda a, b: [a * b - 1.0, (a * b).sum(axis=1)],
    "transpose_add": lambda a, b: [a.T + b],
    "mlp_forward": lambda x, w1, w2: [np.maximum(x @ w1, 0) @ w2],
    "concat_slice": lambda a, b: [np.concatenate([a, b], axis=1)[:, 2:10]],
    "compare_select": lambda a, m: [a > 0, np.where(m, a, -a),
                                    (a > 0) & m],
    "reshape_scale": lambda a: [a.reshape(4, 2, 8).sum(axis=1) * 2],
}


def main():
    case, directory, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    inputs, outputs = [], []
    for spec in specs:
        kind, dtype, dims = parse_spec(spec)
        if kind == "in":
            value = load(f"{directory}/in{len(inputs)}.bin", dtype, dims)
            if dtype in ("f32", "f16", "bf16"):
                value = value.astype(np.float64)
            inputs.append(value)
        else:
            outputs.append((dtype, dims))
    if case not in CASES:
        raise SystemExit(f"unknown reference case {case!r}")
    results = CASES[case](*inputs)
    if len(results) != len(outputs):
        raise SystemExit(f"{case}: {len(results)} results for "
                         f"{len(outputs)} outputs")
    for i, (value, (dtype, dims)) in enumerate(zip(results, outputs)):
        store(f"{directory}/out{i}.bin", value, dtype, dims)


if __name__ == "__main__":
    main()
