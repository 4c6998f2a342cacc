#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (14) makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not installed: skipping the format check"; exit 0; }
files=$(git ls-files '*.h' '*.cpp')
bad=$(for f in $files; do clang-format --style=file "$f" | cmp -s - "$f" || echo "$f"; done)
if [ -n "$bad" ]; then
  echo "not clang-formatted (run: clang-format -i FILE):"; echo "$bad"; exit 1
fi
echo "format: $(echo "$files" | wc -w) files clean"
