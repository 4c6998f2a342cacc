#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test (ctest).
# The code whose instructions differ between the two x86-64 levels of Eigen's packet math (every
# library with the CLI and the C API, and the test files that include Eigen) is also built, with
# warnings as errors, for the other level: x86-64-v3 (AVX2) on a machine with AVX-512, x86-64-v4
# (AVX-512) on one without. Every machine so checks both.
# Then the conformance suites (tests/conformance, pytest) hold the reference to transformers' own
# float64 forward, in the cached Python environment of scripts/python-env.sh (first run: ~4 GB), a
# worker per core (pytest-xdist).
# --sanitize: the C++ tests in a separate build with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR=build-asan BUILD_TYPE=RelWithDebInfo
  ./scripts/build.sh -DTAPDIFF_WERROR=ON -DTAPDIFF_SANITIZE=ON -DTAPDIFF_BENCH=OFF
else
  export BUILD_DIR=build
  ./scripts/build.sh -DTAPDIFF_WERROR=ON
  other_arch=x86-64-v4
  if grep -qw avx512f /proc/cpuinfo; then other_arch=x86-64-v3; fi
  # The test files that include Eigen, as the build's own dependency files list them.
  eigen_tests=$(grep -l '/Eigen/' build/tests/CMakeFiles/tapdiff_tests.dir/*.o.d | xargs -n1 basename | sed 's/\.cpp\.o\.d$/.o/')
  [ -n "$eigen_tests" ] || { echo "test.sh: no test file includes Eigen (build/tests/CMakeFiles/tapdiff_tests.dir/*.o.d)" >&2; exit 1; }
  echo "test.sh: building for -march=$other_arch (warnings as errors) besides this machine's own:" \
    "the CLI and the C API with every library, and" $eigen_tests
  BUILD_DIR=build-$other_arch BUILD_TARGET="tapdiff tapdiff_c" ./scripts/build.sh -DTAPDIFF_WERROR=ON \
    -DTAPDIFF_ARCH=$other_arch -DTAPDIFF_BENCH=OFF
  make -C build-$other_arch/tests -j"$(nproc)" $eigen_tests
fi
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)")
if [ "$BUILD_DIR" = build ]; then
  python_env=$(./scripts/python-env.sh)
  TAPDIFF_BINARY="$PWD/build/tapdiff" "$python_env/bin/python" -m pytest tests/conformance -q -p no:cacheprovider \
    -n "$(nproc)"
fi
