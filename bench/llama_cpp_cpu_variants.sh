#!/usr/bin/env bash
# llama.cpp's greedy tokens on each of its x86 CPU builds: npm's node-llama-cpp ships one ggml-cpu
# library per instruction-set level (sse42, sandybridge, haswell, skylakex, icelake, zen4, ...) and
# loads the best one the CPU runs. For each weight type, a synth small model (the one
# tests/conformance/test_llama_cpp_taps.py uses) and its 200-token prompt, 16 greedy tokens per build
# (examples/llama-cpp-taps, the build alone in its backend folder). Prints, per type, the step at
# which each build's tokens part from those of the build this machine loads, "-" where they do not,
# "n/a" where this CPU cannot run the build.
# The results are in docs/llama-cpp.md.
# Usage: bench/llama_cpp_cpu_variants.sh TAPDIFF PYTHON WORKDIR   (PYTHON: scripts/python-env.sh's, with numpy)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tapdiff=$1 python=$2 work=$3
mkdir -p "$work"
peers=$("$here/../scripts/node-peers.sh")
bins=$peers/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
"$here/../examples/llama-cpp-taps/build.sh" "$work/llama_cpp_taps" >/dev/null
prompt=$(cd "$here/../tests/conformance" && "$python" -c 'from test_llama_cpp import PROMPT; print(",".join(map(str, PROMPT)))')
generated_from=$(($(tr ',' '\n' <<<"$prompt" | wc -l) + 1))  # the harness prints the prompt, then the tokens

# The build's 16 tokens: its library alone in a backend folder ("all": every build, as loaded).
tokens() {
  local model=$1 build=$2 backends=$work/backends-$2 out=$work/taps
  if [ "$build" != all ]; then
    mkdir -p "$backends"
    ln -sf "$bins/libggml-cpu-$build.so" "$backends/"
  else
    backends=$bins
  fi
  rm -rf "$out" && mkdir "$out"
  "$work/llama_cpp_taps" "$model" "$out" "$prompt" --chunk 64 --generate 16 --backends "$backends" 2>/dev/null |
    tail -1 | cut -d, -f"$generated_from"-
}

builds=$(cd "$bins" && ls libggml-cpu-*.so | sed 's/libggml-cpu-\(.*\)\.so/\1/' | sort)
printf '%-8s' type; for b in $builds; do printf ' %12s' "$b"; done; echo
for type in f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl q2_k q3_k q4_k q5_k q6_k iq4_xs q4_k_m q5_k_m; do
  model=$work/synth-$type.gguf
  [ -f "$model" ] || "$tapdiff" synth --shape small --ffn 768 --dtype "$type" -o "$model" >/dev/null
  loaded=$(tokens "$model" all)
  printf '%-8s' "$type"
  for b in $builds; do
    mine=$(tokens "$model" "$b" || true)
    [ -n "$mine" ] || { printf ' %12s' n/a; continue; }
    step=$("$python" -c "import sys; a, b = sys.argv[1].split(','), sys.argv[2].split(','); print(next((str(i) for i, (x, y) in enumerate(zip(a, b)) if x != y), '-'))" "$loaded" "$mine")
    printf ' %12s' "$step"
  done
  echo
done
