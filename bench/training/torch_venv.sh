#!/usr/bin/env bash
# Makes the PyTorch used by bench/training's DDP rows (issue 35): a venv
# under the build folder with torch and numpy from PyPI, as
# bench/peers/run.sh does for its peers. Not part of `make test`.
#
#   bench/training/torch_venv.sh [BUILD_DIR]    # prints the venv's python
#
# bench/training/training.py finds it there by itself (or set
# MONARCH_BENCH_TORCH_PYTHON to another Python that has torch).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD_DIR="${1:-${MONARCH_BUILD_DIR:-$ROOT/build}}"
VENV="$BUILD_DIR/bench-torch-venv"
PYTHON="${PYTHON:-python3}"
if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  "$PYTHON" -m venv "$VENV"
  timeout "${PIP_TIMEOUT:-1800}" "$VENV/bin/python" -m pip install \
    --disable-pip-version-check -q torch numpy >"$VENV/pip-torch.log" 2>&1 || {
    echo "torch_venv: pip install torch failed:" >&2
    tail -n 3 "$VENV/pip-torch.log" >&2
    exit 1
  }
fi
echo "$VENV/bin/python"
