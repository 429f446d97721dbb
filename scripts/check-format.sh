#!/usr/bin/env bash
# Fails (listing the files) when a tracked C++ source drifts from .clang-format.
set -uo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cpp' '*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.h' \) -print)
bad=()
for f in $files; do
  clang-format-22 --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "clang-format-22 would change: ${bad[*]}"
  echo "run 'make format' to fix"
  exit 1
fi
echo "format: $(echo "$files" | wc -w) files clean"
