#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test (ctest).
# The library, the CLI and the tests are also built, with warnings as errors, for the other of the
# two x86-64 levels whose code paths differ in Eigen's packet math: x86-64-v3 (AVX2) on a machine
# with AVX-512, x86-64-v4 (AVX-512) on one without. Every machine so checks both.
# Then the conformance suites (tests/conformance, pytest) hold the reference to transformers' own
# float64 forward, in the cached Python environment of scripts/python-env.sh (first run: ~4 GB).
# --sanitize: the C++ tests in a separate build with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo
  ./scripts/build.sh -DTAPDIFF_WERROR=ON -DTAPDIFF_SANITIZE=ON -DTAPDIFF_BENCH=OFF
else
  other_arch=x86-64-v4
  if grep -qw avx512f /proc/cpuinfo; then other_arch=x86-64-v3; fi
  echo "test.sh: building for -march=$other_arch (warnings as errors) besides this machine's own"
  BUILD_DIR=build-$other_arch ./scripts/build.sh -DTAPDIFF_WERROR=ON -DTAPDIFF_ARCH=$other_arch -DTAPDIFF_BENCH=OFF
  export BUILD_DIR=build
  ./scripts/build.sh -DTAPDIFF_WERROR=ON
fi
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)")
if [ "$BUILD_DIR" = build ]; then
  python_env=$(./scripts/python-env.sh)
  TAPDIFF_BINARY="$PWD/build/tapdiff" "$python_env/bin/python" -m pytest tests/conformance -q -p no:cacheprovider
fi
