#!/usr/bin/env bash
#===- run-example.sh - `make run`: the best end-to-end thing that exists ---===#
#
# Today: the traced form of the example programs, parsed, verified and
# printed back by monarch-opt (the compiler passes, codegen and the executor
# replace this with the headline training example as they land).
#
#===------------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OPT="$BUILD_DIR/bin/monarch-opt"
EXAMPLE="${1:-$ROOT/examples/ir/data_parallel.mlir}"
[ -f "$EXAMPLE" ] || EXAMPLE="$ROOT/examples/ir/pipeline.mlir"

echo "== monarch-opt ${EXAMPLE#$ROOT/}: parse, verify, print (stage: traced) =="
"$OPT" "$EXAMPLE"
echo
echo "== round trip: printed form re-parsed and re-printed is identical =="
first=$("$OPT" "$EXAMPLE")
second=$(printf '%s\n' "$first" | "$OPT")
if [ "$first" = "$second" ]; then
  echo "round trip: identical ($(printf '%s\n' "$first" | wc -l) lines)"
else
  diff <(printf '%s\n' "$first") <(printf '%s\n' "$second") || true
  echo "round trip: MISMATCH" >&2
  exit 1
fi
echo
echo "== all example programs verify =="
for f in "$ROOT"/examples/ir/*.mlir; do
  "$OPT" "$f" >/dev/null && echo "ok  ${f#$ROOT/}"
done
