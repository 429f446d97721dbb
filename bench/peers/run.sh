#!/usr/bin/env bash
#===- run.sh - `make bench-peers`: us vs Ray Compiled Graphs and Monarch ---===#
#
# Creates (once) a virtual environment under the build directory, installs
# the peers there from PyPI (ray; torch, the CPU build when its index is
# reachable; torchmonarch), then runs bench/peers/harness.py with the
# project's python3 (our side imports monarch_compile from the project, the
# peers run from the venv). A peer that cannot be installed gets failure
# rows saying why; the other rows still run. Arguments go to the harness
# (e.g. --reps 3). Needs the network the first time; not part of `make test`.
#
#===------------------------------------------------------------------------===#
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
VENV="${BENCH_PEERS_VENV:-$BUILD_DIR/bench-peers-venv}"
PYTHON="${PYTHON:-python3}"
STATUS="$VENV/peer-status.json"
PIP_TIMEOUT="${BENCH_PEERS_PIP_TIMEOUT:-1200}"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

mkdir -p "$BUILD_DIR"
if [ ! -x "$VENV/bin/python" ]; then
  echo "bench-peers: creating $VENV"
  "$PYTHON" -m venv "$VENV" || { echo "bench-peers: cannot create a venv with $PYTHON -m venv"; exit 1; }
fi
VPY="$VENV/bin/python"
pip_install() {  # pip_install LOGNAME ARGS...: 0 on success, the log tail otherwise
  local log="$VENV/pip-$1.log"; shift
  timeout "$PIP_TIMEOUT" "$VPY" -m pip install --disable-pip-version-check -q "$@" >"$log" 2>&1
}
has() { "$VPY" -c "import $1" >/dev/null 2>&1; }
why() { tail -n 3 "$VENV/pip-$1.log" 2>/dev/null | tr '\n' ' ' | tr -d '"\\' | cut -c1-300; }

ray_status=null
monarch_status=null
has numpy || pip_install numpy numpy || true
if ! has ray; then
  echo "bench-peers: installing ray"
  pip_install ray ray || ray_status="\"not installed: pip install ray failed: $(why ray)\""
fi
if ! has torch; then
  if timeout 15 "$VPY" -c "import urllib.request as u; u.urlopen('$TORCH_CPU_INDEX/torch/', timeout=10)" >/dev/null 2>&1; then
    echo "bench-peers: installing torch (CPU build from $TORCH_CPU_INDEX)"
    pip_install torch torch --index-url "$TORCH_CPU_INDEX" || true
  fi
  if ! has torch; then
    echo "bench-peers: installing torch from PyPI (the CPU index is unreachable)"
    pip_install torch torch || echo "bench-peers: torch not installed: $(why torch) (Monarch runs without it)"
  fi
fi
if ! has monarch.actor; then
  echo "bench-peers: installing torchmonarch"
  pip_install torchmonarch torchmonarch ||
    monarch_status="\"not installed: pip install torchmonarch failed: $(why torchmonarch)\""
fi
if [ "$ray_status" = null ] && ! has ray.dag; then
  ray_status="\"not installed: import ray.dag fails in $VENV\""
fi
if [ "$monarch_status" = null ] && ! has monarch.actor; then
  monarch_status="\"not installed: import monarch.actor fails in $VENV\""
fi
printf '{"ray": %s, "monarch": %s}\n' "$ray_status" "$monarch_status" >"$STATUS"

BUILD_DIR="$BUILD_DIR" exec "$PYTHON" "$ROOT/bench/peers/harness.py" \
  --peer-python "$VPY" --peer-status "$STATUS" --build-dir "$BUILD_DIR" "$@"
