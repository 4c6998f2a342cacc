#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test (ctest).
# The code whose instructions differ between the two x86-64 levels of Eigen's packet math (every
# source file that includes Eigen, libraries' and tests' alike, as the build's own dependency files
# list them) is also compiled, with warnings as errors, for the other level: x86-64-v3 (AVX2) on a
# machine with AVX-512, x86-64-v4 (AVX-512) on one without. Every machine so checks both.
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
  # FOLDER:OBJECT of each source that includes Eigen ("reference:cpu_engine.o"), from build/'s
  # dependency files (FOLDER/CMakeFiles/TARGET.dir/SOURCE.cpp.o.d).
  eigen_objects=$(cd build && grep -l '/Eigen/' $(find . -path '*/CMakeFiles/*.dir/*.o.d' -not -path './_deps/*') |
    sed -E 's|^\./(.*)/CMakeFiles/[^/]+\.dir/(.*)\.cpp\.o\.d$|\1:\2.o|' | sort)
  [ -n "$eigen_objects" ] || { echo "test.sh: no source includes Eigen (build/*/CMakeFiles/*.dir/*.o.d)" >&2; exit 1; }
  echo "test.sh: compiling for -march=$other_arch (warnings as errors) besides this machine's own:" $eigen_objects
  BUILD_DIR=build-$other_arch CONFIGURE_ONLY=1 ./scripts/build.sh -DTAPDIFF_WERROR=ON -DTAPDIFF_ARCH=$other_arch
  for folder in $(printf '%s\n' $eigen_objects | cut -d: -f1 | sort -u); do
    make -C "build-$other_arch/$folder" -j"$(nproc)" $(printf '%s\n' $eigen_objects | grep "^$folder:" | cut -d: -f2)
  done
fi
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)")
if [ "$BUILD_DIR" = build ]; then
  python_env=$(./scripts/python-env.sh)
  TAPDIFF_BINARY="$PWD/build/tapdiff" "$python_env/bin/python" -m pytest tests/conformance -q -p no:cacheprovider \
    -n "$(nproc)"
fi
