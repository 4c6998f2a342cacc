#!/usr/bin/env bash
# The main job on the embedded default model (synth:tiny, written on first use; no download):
#   1. run the reference engine with a tap after every op into an HDF5 dump, and inspect it;
#   2. bisect the Vulkan engine against the f64 reference in one process: match;
#   3. plant a chunked-prefill RoPE bug in the Vulkan engine (rope-chunk-reset at layer 1) and
#      bisect again: tapdiff names the layer, the op and the chunk boundary (exit 1 = diverged).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
out=${DEMO_DIR:-build/demo}
mkdir -p "$out"
build/tapdiff run --model synth:tiny --prompt "Once upon a time" --chunk 3 --generate 16 --dump "$out/ref.h5" --json "$out/ref.json"
build/tapdiff inspect "$out/ref.h5" --top-k 5 --positions -1

prompt=(--model synth:tiny --prompt-file examples/prompts/story.txt --prompt-length 48 --chunk 16 --generate 4)
echo
build/tapdiff bisect "${prompt[@]}" --json "$out/bisect-clean.json"
echo
status=0
build/tapdiff bisect "${prompt[@]}" --inject rope-chunk-reset@1 --json "$out/bisect-fault.json" \
  --html "$out/bisect-fault.html" || status=$?
if [ "$status" -ne 1 ]; then
  echo "demo: expected the planted fault to be found (exit 1), got exit $status" >&2
  exit 1
fi
echo "HTML report of the planted fault: $out/bisect-fault.html (walk-through: examples/rope-chunk-reset/)"
