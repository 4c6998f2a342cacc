#!/usr/bin/env bash
# Devstral-Small-2505's shape (Mistral: 40 layers, hidden 5120, 32/8 heads of 128, FFN 32768,
# vocabulary 131072, rope_theta 1e9, bf16 matrices: a 47 GB file) from `tapdiff synth`, run on the
# reference in f32 (its weights streamed a layer at a time) and on the Vulkan engine in f16: a
# 64-token prompt and 4 greedy tokens each. Prints each run's wall time and its peak resident
# memory, anonymous (what the process allocated) and file-backed (pages of the memory-mapped model
# file, which the kernel may drop), sampled every 0.2 s from /proc. The results are in
# docs/benchmarks.md.
# decode: the Vulkan engine's steady decode step, from runs of 4 and 36 greedy tokens side by side.
# Usage: bench/devstral_shape.sh TAPDIFF WORKDIR STEP...   (STEP: synth, ref, vulkan, decode, clean)
set -euo pipefail
tapdiff=$1 work=$2
shift 2
model=$work/devstral-small-shape.bf16.gguf
tokens=$(seq -s, 1 64)

# Runs the command, then prints its wall time and peak RssAnon / RssFile.
measured() {
  local start max_anon=0 max_file=0 anon file rc
  start=$(date +%s.%N)
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    read -r anon file < <(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {print a + 0, f + 0}' \
      "/proc/$pid/status" 2>/dev/null || echo "0 0")
    ((anon > max_anon)) && max_anon=$anon
    ((file > max_file)) && max_file=$file
    sleep 0.2
  done
  wait "$pid" && rc=0 || rc=$?
  echo "$(basename "$1") $2: exit $rc, $(awk "BEGIN {print $(date +%s.%N) - $start}") s, peak RssAnon" \
    "$((max_anon / 1024)) MiB, RssFile $((max_file / 1024)) MiB"
  return "$rc"
}

for step in "$@"; do
  case $step in
    synth)
      measured "$tapdiff" synth --out "$model" --layers 40 --dim 5120 --heads 32 --kv-heads 8 --head-dim 128 \
        --ffn 32768 --vocab 131072 --context 131072 --rope-base 1000000000 --dtype bf16
      ls -l "$model" ;;
    ref)
      measured "$tapdiff" run --model "$model" --engine ref --dtype f32 --tokens "$tokens" --generate 4 \
        --json "$work/ref.json"
      cat "$work/ref.json"; echo ;;
    vulkan)
      measured "$tapdiff" run --model "$model" --engine vulkan --dtype f16 --tokens "$tokens" --generate 4 \
        --json "$work/vulkan.json"
      cat "$work/vulkan.json"; echo ;;
    decode)  # 4 and 36 greedy tokens, twice each in turn: the steady step is the decode times' difference / 32
      for generate in 4 36 4 36; do
        "$tapdiff" run --model "$model" --engine vulkan --dtype f16 --tokens "$tokens" --generate "$generate" \
          --json "$work/decode-$generate.json" >/dev/null
        echo "generate $generate: $(sed -n '/"timings"/,/}/p' "$work/decode-$generate.json" | tr -d ' \n')"
      done ;;
    clean) rm -f "$model" ;;
    *) echo "devstral_shape.sh: unknown step '$step' (synth, ref, vulkan, decode, clean)" >&2; exit 2 ;;
  esac
done
