#!/usr/bin/env bash
# The one prepared script for a machine with a GPU (an H200): builds the GPU
# kernel check, compiles the kernels of the three example programs and a few
# larger kernels (1M-element chain, 512^3 matmul, 256x1000 softmax) for the
# CPU and for CUDA (PTX, sm_90), runs both, compares every output and prints
# a summary line. Exit status: 0 all match, 1 mismatch/error, 77 no device.
#   tests/gpu/run.sh            (BUILD_DIR defaults to build-gpu)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"

mkdir -p "$BUILD"
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "nvidia-smi not found"
cmake -G Ninja -S "$ROOT" -B "$BUILD" \
  -DPython3_EXECUTABLE="$(command -v python3)" >"$BUILD/cmake.log" 2>&1 ||
  { tail -20 "$BUILD/cmake.log"; exit 1; }
ninja -C "$BUILD" -j"$(nproc)" gpu-kernel-check >"$BUILD/ninja.log" 2>&1 ||
  { tail -30 "$BUILD/ninja.log"; exit 1; }
"$BUILD/bin/gpu-kernel-check" "$ROOT/examples"
