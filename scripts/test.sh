#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test.
# --sanitize: the same in a separate build with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo
  ./scripts/build.sh -DTAPDIFF_WERROR=ON -DTAPDIFF_SANITIZE=ON -DTAPDIFF_BENCH=OFF
else
  export BUILD_DIR=build
  ./scripts/build.sh -DTAPDIFF_WERROR=ON
fi
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)"
