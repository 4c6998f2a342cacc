#!/usr/bin/env bash
# The main job on the embedded default model (synth:tiny, written on first use; no download):
# run the reference engine with a tap after every op into an HDF5 dump, then inspect the dump.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
out=${DEMO_DIR:-build/demo}
mkdir -p "$out"
build/tapdiff run --model synth:tiny --prompt "Once upon a time" --chunk 3 --generate 16 --dump "$out/ref.h5" --json "$out/ref.json"
build/tapdiff inspect "$out/ref.h5" --top-k 5 --positions -1
