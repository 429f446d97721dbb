#!/usr/bin/env bash
# The one prepared script for a machine with a GPU (an H200). Builds the GPU
# kernel check and the CUDA runtime tests, then:
#  1. compiles every kernel of the three example programs and a few larger
#     kernels (1M-element chain, 512^3 matmul, 256x1000 softmax) for the CPU
#     and for CUDA (sm_90) and prints how many matmuls became cuBLAS calls
#     and how many PTX launches remain (no device needed);
#  2. runs each example's CUDA library (PTX launches + cuBLAS calls, through
#     MonarchCudaRuntime) against the CPU library and prints one line per
#     program and a summary;
#  3. runs monarch-cuda-runtime-tests (cuBLAS table, manifests, device run
#     against a host reference);
#  4. runs plans whose communicators use NCCL through a real controller and
#     monarch-worker (device arena, NCCL all_reduce and send to self on one
#     rank) against the values fed (NcclPlans.* in
#     monarch-executor-control-tests; it must run, not skip).
# Without a device, steps 2-3 print "no device, skipped" and the script
# exits 0; a mismatch or error exits 1.
#   tests/gpu/run.sh            (BUILD_DIR defaults to build-gpu)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"

mkdir -p "$BUILD"
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "nvidia-smi not found"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DPython3_EXECUTABLE="$(command -v python3)" >"$BUILD/cmake.log" 2>&1 ||
    { tail -20 "$BUILD/cmake.log"; exit 1; }
fi
ninja -C "$BUILD" -j"${JOBS:-$(nproc)}" gpu-kernel-check \
  monarch-cuda-runtime-tests monarch-worker monarch-executor-control-tests \
  >"$BUILD/ninja.log" 2>&1 ||
  { tail -30 "$BUILD/ninja.log"; exit 1; }

echo "== 1. compile for CPU and CUDA (cuBLAS calls / PTX launches)"
"$BUILD/bin/gpu-kernel-check" --compile-only "$ROOT/examples"

echo "== 2. CUDA libraries against the CPU"
status=0
"$BUILD/bin/gpu-kernel-check" "$ROOT/examples" || status=$?
if [ "$status" -eq 77 ]; then
  echo "no device, skipped: the CUDA kernels were compiled but not run"
  exit 0
fi
[ "$status" -eq 0 ] || { echo "FAILED: GPU results differ from the CPU"; exit 1; }

echo "== 3. CUDA runtime tests"
"$BUILD/bin/monarch-cuda-runtime-tests" --gtest_brief=1
echo "== 4. NCCL plans on a worker's device arena"
out="$("$BUILD/bin/monarch-executor-control-tests" --gtest_filter='NcclPlans.*' 2>&1)" ||
  { echo "$out" | tail -30; echo "FAILED: NCCL plans"; exit 1; }
echo "$out" | tail -3
if echo "$out" | grep -q SKIPPED; then
  echo "$out" | grep -m1 "no CUDA device"
  echo "FAILED: a device is visible but the worker could not use it"
  exit 1
fi
echo "all GPU checks passed"
