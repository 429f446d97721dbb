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
)
PY_MODULES=(numpy pytest lit nanobind ml_dtypes)

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
for mod in "${PY_MODULES[@]}"; do
  "$PYTHON" -c "import $mod" 2>/dev/null || py_missing+=("$mod")
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "setup: installing Python packages: ${py_missing[*]}"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${py_missing[@]}"
fi

# `import monarch_compile` from any directory: an editable install of the
# package in python/ (pyproject.toml), or a .pth file when pip cannot build
# one offline. The native extension is found in $BUILD_DIR/python.
if ! (cd / && "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('monarch_compile') is None)") 2>/dev/null; then
  echo "setup: installing the monarch_compile Python package (editable)"
  "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT" 2>/dev/null ||
    "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$ROOT" 2>/dev/null ||
    echo "$ROOT/python" >"$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/monarch_compile.pth"
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DPython3_EXECUTABLE="$(command -v "$PYTHON")"
fi
ninja -C "$BUILD_DIR"
