#!/usr/bin/env bash
# Walk-through: plant a chunked-prefill RoPE bug in the Vulkan engine, bisect it, read the verdict.
#   examples/rope-chunk-reset/run.sh [MODEL] [OUT_DIR]      (default: synth:small, build/rope-chunk-reset)
# Exit 0 when tapdiff names the planted layer and op with the chunk-start diagnosis.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-synth:small}
out=${2:-build/rope-chunk-reset}
mkdir -p "$out"
common=(--model "$model" --prompt-file examples/prompts/story.txt --prompt-length 96 --chunk 32 --generate 4)

echo "== 1. the engine as it is: no fault planted"
build/tapdiff bisect "${common[@]}" --json "$out/clean.json"

echo
echo "== 2. positions restart at 0 in every prefill chunk after the first, at layer 1 only"
status=0
build/tapdiff bisect "${common[@]}" --inject rope-chunk-reset@1 --json "$out/fault.json" --html "$out/fault.html" ||
  status=$?
[ "$status" -eq 1 ] || { echo "expected exit 1 (diverged), got $status" >&2; exit 1; }

echo
echo "== 3. what the JSON says (the contract fields)"
python3 - "$out/fault.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
first, culprit = r["first"], r["culprit"]
print(f"verdict   {r['verdict']}")
print(f"first     layer {first['layer']} {first['op']} ({first['class']}) at position {first['position']}, chunk {first['chunk']}")
print(f"culprit   layer {culprit['layer']} {culprit['op']} ({culprit['class']}), own nmse {culprit['metrics']['nmse']:.3g}")
print("diagnosis " + ", ".join(d["code"] for d in r["diagnosis"]))
ok = culprit["layer"] == 1 and culprit["op"] in ("rope_q", "rope_k") and any(d["code"] == "chunk-start" for d in r["diagnosis"])
print("found the planted fault" if ok else "did NOT find the planted fault")
sys.exit(0 if ok else 1)
PY
echo "HTML report: $out/fault.html"
