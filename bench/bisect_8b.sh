#!/usr/bin/env bash
# The bisect of a planted fault on the Llama-3-8B shape (`tapdiff synth --shape llama3-8b --dtype
# f16`), 2048 pseudo-random token ids in chunks of 512, the truth on the GPU (`--engine-a vulkan`:
# Vulkan f32 against B, Vulkan f16, with the fault), uncalibrated: each FAULT given
# (default rope-chunk-reset@9, whose update is a small share of the residual stream) with
# `--layers-first` and without. Prints each bisect's verdict and wall time; results in
# docs/benchmarks.md. ORDERS="--layers-first" (or "all") runs one of the two.
# Usage: bench/bisect_8b.sh TAPDIFF WORKDIR [FAULT...]
set -euo pipefail
tapdiff=$1 work=$2
shift 2
faults=("${@:-rope-chunk-reset@9}")
model=$work/llama3-8b.f16.gguf
[ -f "$model" ] || "$tapdiff" synth --out "$model" --shape llama3-8b --dtype f16 >/dev/null
tokens=$(awk 'BEGIN {srand(8); for (i = 0; i < 2048; i++) printf "%s%d", (i ? "," : ""), int(rand() * 128000) + 256}')
for fault in "${faults[@]}"; do
  for order in ${ORDERS:---layers-first all}; do
    [ "$order" = all ] && order=""
    start=$(date +%s.%N)
    "$tapdiff" bisect --model "$model" --tokens "$tokens" --engine-a vulkan --dtype f16 --chunk 512 \
      --no-calibrate --inject "$fault" $order --json "$work/bisect.json" >"$work/bisect.txt" 2>&1 && rc=0 || rc=$?
    echo "== $fault ${order:-(every op)}: exit $rc, $(awk "BEGIN {print $(date +%s.%N) - $start}") s"
    grep -E -i "verdict|diverge|culprit|match" "$work/bisect.txt" | head -8
  done
done
