#!/usr/bin/env bash
#===- run-example.sh - `make run`: the best end-to-end thing that exists ---===#
#
# 1. The two-stage actor pipeline of examples/ir/pipeline.mlir through every
#    compiler stage (traced -> partitioned -> split -> planned -> plan), with
#    what each stage produced and the per-rank ExecutionPlan.
# 2. The headline: examples/python/train_loop.py trains a data-parallel MLP
#    on a local mesh of 4 worker processes and checks every step's loss
#    against numpy (skipped, saying why, when execution is unavailable).
#
#===------------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OPT="$BUILD_DIR/bin/monarch-opt"
EXAMPLE="${1:-$ROOT/examples/ir/pipeline.mlir}"
name="${EXAMPLE#$ROOT/}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() { grep -c -E "$1" "$2" || true; }

echo "== $name: traced (parsed, verified, round-tripped) =="
"$OPT" "$EXAMPLE" > "$tmp/traced.mlir"
"$OPT" "$tmp/traced.mlir" | cmp -s - "$tmp/traced.mlir" ||
  { echo "round trip changed the IR" >&2; exit 1; }
echo "meshes: $(count 'monarch\.(proc_mesh|mesh_slice) ' "$tmp/traced.mlir")," \
     "actor meshes: $(count 'monarch\.actor_mesh ' "$tmp/traced.mlir")," \
     "calls: $(count 'monarch\.(call|broadcast) ' "$tmp/traced.mlir")," \
     "transfers: $(count 'monarch\.transfer ' "$tmp/traced.mlir")"

"$OPT" "$tmp/traced.mlir" --monarch-to-partitioned > "$tmp/partitioned.mlir"
echo
echo "== partitioned: tensor work outlined into per-rank endpoints =="
echo "endpoints: $(count 'monarch\.endpoint ' "$tmp/partitioned.mlir")," \
     "explicit collectives: $(count '(all_reduce|all_gather|reduce_scatter|broadcast_from) ' "$tmp/partitioned.mlir")"

"$OPT" "$tmp/partitioned.mlir" --monarch-to-split > "$tmp/split.mlir"
echo
echo "== split: control messages apart from data channels =="
grep -E 'monarch\.(control_msg|channel |feed_input|fetch_output|await)' "$tmp/split.mlir" | sed 's/^ */  /'

"$OPT" "$tmp/split.mlir" --monarch-to-planned > "$tmp/planned.mlir"
echo
echo "== planned (verified: no deadlock, every send matched) =="
echo "rank programs: $(count 'monarch\.rank_program ' "$tmp/planned.mlir")" \
     "(+ $(count 'monarch\.rank_member ' "$tmp/planned.mlir") ranks running" \
     "a class's program with their own peers)," \
     "kernel launches: $(count 'monarch\.launch ' "$tmp/planned.mlir")," \
     "sends: $(count 'monarch\.send ' "$tmp/planned.mlir")," \
     "collectives: $(count 'monarch\.collective ' "$tmp/planned.mlir")," \
     "communicators: $(count 'monarch\.communicator ' "$tmp/planned.mlir")"
COMPILE="$BUILD_DIR/bin/monarch-compile"
MONARCH_DISABLE_CACHE=1 "$COMPILE" "$EXAMPLE" -o "$tmp/pipeline.mcplan"
echo
echo "== plan: the ExecutionPlan a worker loads ($(stat -c %s "$tmp/pipeline.mcplan") bytes, native kernels inside) =="
"$COMPILE" --print-plan "$tmp/pipeline.mcplan" | sed -n '1,60p'
echo
echo "== every example program compiles to a verified plan =="
for f in "$ROOT"/examples/ir/*.mlir; do
  if "$OPT" "$f" --monarch-compile-to-planned > /dev/null 2> "$tmp/err"; then
    echo "ok    ${f#$ROOT/}"
  else
    echo "FAIL  ${f#$ROOT/}: $(head -1 "$tmp/err")"
    exit 1
  fi
done

echo
echo "== data-parallel training on 4 local worker processes (gradients by hand) =="
"${PYTHON:-python3}" "$ROOT/examples/python/train_loop.py"

echo
echo "== headline: a small GPT trained with mc.value_and_grad and AdamW on a 2x2 mesh =="
"${PYTHON:-python3}" "$ROOT/examples/python/gpt.py"
