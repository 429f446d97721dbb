#!/usr/bin/env bash
#===- setup.sh - Idempotent set-up used by `make run` and `make test` ------===#
#
# Installs the Debian and Python packages that are missing (and only those),
# then configures (once) and builds. On a ready machine this costs the time
# of an incremental ninja build.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
PYTHON="${PYTHON:-python3}"

DEB_PACKAGES=(
  cmake ninja-build pkg-config g++
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-format-22
  libthrift-dev thrift-compiler libgloo-dev libboost-graph-dev
  libspdlog-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev
  libopenblas-dev clang-22 libclang-rt-22-dev lld-22
  iproute2 util-linux slurmd slurmctld slurm-client munge
)
# module[:PyPI name]. scikit-build-core builds the wheel (pyproject.toml);
# nbclient, nbformat and ipykernel run the quickstart notebook's test.
PY_MODULES=(numpy pytest lit nanobind ml_dtypes
  scikit_build_core:scikit-build-core nbclient nbformat ipykernel)

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed ||
    missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

py_missing=()
for entry in "${PY_MODULES[@]}"; do
  mod="${entry%%:*}"
  "$PYTHON" -c "import $mod" 2>/dev/null || py_missing+=("${entry#*:}")
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "setup: installing Python packages: ${py_missing[*]}"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${py_missing[@]}"
fi

# `import monarch_compile` from any directory: a .pth file that puts
# python/ on the path; the native extension and the tools are found in
# $BUILD_DIR. (`pip install .` builds the self-contained wheel instead, and
# `pip install -e . --no-build-isolation` an editable install that also puts
# the tools on PATH; both run CMake, which this script does below.)
if ! (cd / && "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('monarch_compile') is None)") 2>/dev/null; then
  echo "setup: making the monarch_compile Python package importable (.pth)"
  echo "$ROOT/python" >"$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/monarch_compile.pth"
fi

# Python3_EXECUTABLE is the interpreter itself (sys.executable, not a shim
# on PATH): `pip install .` configures this folder with that value too, so
# the wheel shares the build instead of recompiling what depends on it.
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DPython3_EXECUTABLE="$("$PYTHON" -c 'import sys; print(sys.executable)')"
fi
ninja -C "$BUILD_DIR"
