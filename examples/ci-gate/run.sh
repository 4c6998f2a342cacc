#!/usr/bin/env bash
# A CI gate in four steps: a golden dump, a candidate run, `tapdiff compare` with a tolerance file
# and JUnit output, the exit code as the job's verdict. Builds nothing: uses build/tapdiff (or
# $TAPDIFF). Writes into $OUT (default: a fresh temp folder).
#
#   examples/ci-gate/run.sh            # both variants; exits 0 when the gate behaved as expected
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tapdiff="${TAPDIFF:-$root/build/tapdiff}"
out="${OUT:-$(mktemp -d)}"
[ -x "$tapdiff" ] || { echo "no $tapdiff: build first (scripts/build.sh)"; exit 3; }
mkdir -p "$out"
prompt="The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog."
model="synth:tiny"

step() {
  printf '\n== %s\n$ ' "$1"
  printf '%q ' "${@:2}"
  printf '\n'
  "${@:2}"
}
# The same, with the command's own output in $out/<name>.log instead of on the terminal.
quiet() {
  local name=$1 title=$2
  shift 2
  printf '\n== %s\n$ ' "$title"
  printf '%q ' "$@"
  printf '> %s\n' "$out/$name.log"
  "$@" >"$out/$name.log"
}

# 1. Once, on the reference configuration: the golden dump, kept as a CI artifact or in LFS.
quiet golden "golden dump (f32, prefill in chunks of 64)" \
  "$tapdiff" run --model "$model" --prompt "$prompt" --chunk 64 --generate 8 --dump "$out/golden.h5" || exit 3

# 2. On every change: the candidate run. Here the change is the prefill chunking (16 instead of
#    64), which must not change the numbers beyond rounding.
quiet candidate "candidate dump (f32, chunks of 16)" \
  "$tapdiff" run --model "$model" --prompt "$prompt" --chunk 16 --generate 8 --dump "$out/candidate.h5" || exit 3

# 3. The gate: exit 0 passes the job, 1 fails it (a divergence), 2 means the inputs are wrong.
step "gate: candidate vs golden under gate.toml" \
  "$tapdiff" compare "$out/golden.h5" "$out/candidate.h5" --tolerances "$here/gate.toml" --junit "$out/gate.xml"
pass=$?
echo "exit code $pass (0 = within tolerance); JUnit: $out/gate.xml"

# 4. A candidate that differs on purpose: the reference in f64 against the f32 golden dump, under
#    a tolerance file that allows no rounding difference at all. The gate must fail, visibly.
quiet f64 "candidate dump (f64)" \
  "$tapdiff" run --model "$model" --prompt "$prompt" --chunk 64 --generate 8 --dtype f64 --dump "$out/f64.h5" || exit 3
step "gate: f64 candidate vs golden under strict.toml" \
  "$tapdiff" compare "$out/golden.h5" "$out/f64.h5" --tolerances "$here/strict.toml" --junit "$out/strict.xml" \
  --html "$out/strict.html" --json "$out/strict.json"
fail=$?
echo "exit code $fail (1 = divergence); JUnit: $out/strict.xml, HTML: $out/strict.html"
echo
grep -c '<testcase ' "$out/strict.xml" | xargs echo "testcases in strict.xml:"
grep -c '<failure ' "$out/strict.xml" | xargs echo "failures in strict.xml: "

[ "$pass" -eq 0 ] && [ "$fail" -eq 1 ] && echo "the gate passed the good candidate and failed the bad one" && exit 0
echo "unexpected exit codes: $pass and $fail"
exit 1
