#!/usr/bin/env bash
# `make bench`: runs every benchmark built under build/bench (each prints its
# own table of ratios against a floor or peer measured in the same run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
shopt -s nullglob
benches=("$BUILD_DIR"/bench/bin/*)
if [ ${#benches[@]} -eq 0 ]; then
  echo "no benchmarks built yet (bench/ fills in with the passes, codegen and executor issues)"
  exit 0
fi
for b in "${benches[@]}"; do
  echo "== ${b##*/} =="
  "$b"
done
echo "== training (python) =="
"${PYTHON:-python3}" "$ROOT/bench/training/training.py"
