#!/usr/bin/env bash
# Configures and builds tapdiff into BUILD_DIR (default: build), through ccache where it is installed.
# Extra arguments go to CMake. BUILD_TARGET: build only these targets, space-separated (default: all);
# CONFIGURE_ONLY=1: configure, build nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
launcher=()
# Through ccache, paths inside the checkout hashed as relative ones, so that another clone (CI's)
# finds this one's objects in the cache.
if command -v ccache >/dev/null; then
  ccache_launcher="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_launcher" -DCMAKE_C_COMPILER_LAUNCHER="$ccache_launcher")
fi
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "${launcher[@]}" "$@" >/dev/null
[ "${CONFIGURE_ONLY:-0}" = 1 ] || cmake --build "$build_dir" -j"$(nproc)" ${BUILD_TARGET:+--target $BUILD_TARGET}
