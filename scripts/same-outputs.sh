#!/usr/bin/env bash
# Runs a fixed set of commands (synth, model-info, tokenize, run, inspect, validate, compare with and
# without --model, bisect with and without a planted fault, faults) with two tapdiff binaries on stories260K
# (../shared/models) and prints every difference in their terminal, JSON, JUnit and HTML output, apart from
# timings, dates and the binary's path. For a change meant to leave behaviour as it was:
#   scripts/same-outputs.sh OLD_BINARY NEW_BINARY      exit 0: the same outputs; 1: a difference
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/same-outputs.sh OLD_BINARY NEW_BINARY" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
models=$root/../shared/models/stories260K
work=$(mktemp -d /tmp/tapdiff-same-outputs.XXXXXX)
trap 'rm -rf "$work"' EXIT

outputs() {  # BINARY FOLDER
  local t=$1
  mkdir -p "$2" && cd "$2"
  "$t" synth --shape tiny -o tiny.gguf >synth.out 2>&1 || true
  "$t" model-info "$models/stories260K.gguf" >model_info_gguf.out 2>&1 || true
  "$t" model-info "$models/hf" >model_info_hf.out 2>&1 || true
  "$t" tokenize --model "$models/stories260K.gguf" --prompt "Once upon a time" >tokenize.out 2>&1 || true
  "$t" run --model "$models/stories260K.gguf" --dtype f64 --prompt "Once upon a time" --generate 8 --dump a.h5 \
    --json run_a.json >run_a.out 2>&1 || true
  "$t" run --model "$models/stories260K.gguf" --dtype f16 --prompt "Once upon a time" --generate 8 --dump b.h5 \
    --json run_b.json >run_b.out 2>&1 || true
  "$t" inspect a.h5 >inspect.out 2>&1 || true
  "$t" validate b.h5 >validate.out 2>&1 || true
  "$t" compare a.h5 b.h5 --json compare.json >compare.out 2>&1 || true
  "$t" compare a.h5 b.h5 --model "$models/stories260K.gguf" --json compare_model.json >compare_model.out 2>&1 || true
  "$t" run --model tiny.gguf --engine vulkan --tokens 1,5,9,13 --generate 4 --inject rope-off-by-one@1 \
    --dump faulty.h5 >run_faulty.out 2>&1 || true
  "$t" run --model tiny.gguf --dtype f64 --tokens 1,5,9,13 --generate 4 --dump tiny.h5 >run_tiny.out 2>&1 || true
  "$t" compare tiny.h5 faulty.h5 --json compare_diverged.json --junit compare_diverged.xml \
    --html compare_diverged.html >compare_diverged.out 2>&1 || true
  "$t" compare tiny.h5 faulty.h5 --model tiny.gguf --json compare_model_diverged.json \
    --html compare_model_diverged.html >compare_model_diverged.out 2>&1 || true
  "$t" bisect --model tiny.gguf --tokens 1,5,9,13 --inject rope-off-by-one@1 --json bisect.json --junit bisect.xml \
    --html bisect.html >bisect.out 2>&1 || true
  "$t" bisect --model tiny.gguf --tokens 1,5,9,13 --json bisect_match.json >bisect_match.out 2>&1 || true
  printf 'Once upon a time\ntokens: 1,403,407,9\n' >prompts.txt
  "$t" bisect --model "$models/stories260K.gguf" --batch-prompts prompts.txt --inject attn-scale@1 --generate 3 \
    --layers-first --json bisect_batch.json --html bisect_batch.html >bisect_batch.out 2>&1 || true
  "$t" faults >faults.out 2>&1 || true
}

# Timings, dates and the binary's path are not behaviour.
normalize() {
  sed -E -e 's/[0-9.]+ (s|ms\/token|tokens\/s)\b/T \1/g' -e 's/"[a-z_]*(seconds|per_second|per_token)": [0-9.e+-]+/"\1": T/g' \
    -e 's/"created": "[^"]*"/"created": T/g' -e 's/"command_line": "[^ "]*/"command_line": "TAPDIFF/g' \
    -e 's/(free run|forced scan) [0-9.]+ s/\1 T s/g' -e 's#<th>created</th><td>[^<]*</td><td>[^<]*</td>#<th>created</th>T#' \
    -e 's#<td>[^ <]+ (run|bisect) #<td>TAPDIFF \1 #g' "$1"
}

(outputs "$(realpath "$1")" "$work/old")
(outputs "$(realpath "$2")" "$work/new")
status=0
for old in "$work"/old/*.out "$work"/old/*.json "$work"/old/*.xml "$work"/old/*.html; do
  name=$(basename "$old")
  if ! diff <(normalize "$old") <(normalize "$work/new/$name") >"$work/diff"; then
    echo "== $name differs:"; head -40 "$work/diff"; status=1
  fi
done
[ $status -eq 0 ] && echo "same-outputs: the same terminal, JSON, JUnit and HTML output ($(ls "$work"/old/*.out "$work"/old/*.json "$work"/old/*.xml "$work"/old/*.html | wc -l) files)"
exit $status
