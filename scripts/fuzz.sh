#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, with clang: BUILD_DIR default build-fuzz) and runs each
# on a copy of its committed corpus, one target at a time, printing one result line per target.
# Fails when a target finds a crash, a sanitizer report, a leak, an out-of-memory or a timeout;
# the input that caused it is kept in ARTIFACT_DIR (default build-fuzz/artifacts).
#   scripts/fuzz.sh --seconds 20 [TARGET...]     each target for 20 s (CI)
#   scripts/fuzz.sh --runs 1000000 [TARGET...]   each target for 1,000,000 executions
#   scripts/fuzz.sh --build-only
# Targets: gguf safetensors config_json toml_tolerances tokenizer tokenizer_json dump imported_dump name_map
# (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(gguf safetensors config_json toml_tolerances tokenizer tokenizer_json dump imported_dump name_map)
limit=() targets=() build_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --build-only) build_only=1; shift ;;
    -*) echo "fuzz.sh: unknown option $1 (expected --seconds N, --runs N or --build-only)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ $build_only -eq 0 ] && [ ${#limit[@]} -eq 0 ]; then
  echo "fuzz.sh: expected --seconds N, --runs N or --build-only" >&2; exit 2
fi
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

export BUILD_DIR=${BUILD_DIR:-build-fuzz}
CC=clang CXX=clang++ BUILD_TYPE=RelWithDebInfo BUILD_TARGET=tapdiff_fuzz ./scripts/build.sh \
  -DTAPDIFF_FUZZ=ON -DTAPDIFF_TESTS=OFF -DTAPDIFF_BENCH=OFF >/dev/null
[ $build_only -eq 0 ] || exit 0

# Inputs up to this many bytes: above the largest seed of each format.
declare -A max_len=([gguf]=65536 [safetensors]=65536 [config_json]=16384 [toml_tolerances]=16384
                    [tokenizer]=16384 [tokenizer_json]=32768 [dump]=16384 [imported_dump]=16384 [name_map]=16384)
artifacts=$(realpath -m "${ARTIFACT_DIR:-$BUILD_DIR/artifacts}")
mkdir -p "$artifacts"
scratch_root=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch_root=/dev/shm  # the targets write every input to a file
scratch=$(mktemp -d "$scratch_root/tapdiff-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

failed=0
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz.sh: unknown target $t (expected one of ${all_targets[*]})" >&2; exit 2; }
  corpus=$scratch/corpus-$t
  mkdir -p "$corpus" "$scratch/tmp-$t"
  cp -r tests/fuzz/corpus/"$t"/. "$corpus"/
  dict=()
  [ -f tests/fuzz/dict/"$t".dict ] && dict=(-dict=tests/fuzz/dict/"$t".dict)
  log=$artifacts/$t.log
  status=0
  TMPDIR=$scratch/tmp-$t "$BUILD_DIR"/fuzz/fuzz_"$t" "$corpus" "${limit[@]}" "${dict[@]}" -max_len="${max_len[$t]}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  seconds=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\) corp: \([^ ]*\).*/cov \1 ft \2 corpus \3/p')
  if [ $status -eq 0 ]; then
    printf 'fuzz %-16s ok    %9s runs %6s s %7s/s  %s\n' "$t" "${runs:-?}" "${seconds:-?}" \
      "$(( ${runs:-0} / (${seconds:-0} > 0 ? ${seconds:-1} : 1) ))" "$cov"
  else
    failed=1
    kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-z-]+|runtime error|ALARM: working on the last Unit|out-of-memory' "$log" || echo "exit $status")
    printf 'fuzz %-16s FAIL  %s after %s runs; input: %s; log: %s\n' "$t" "$kind" "${runs:-?}" \
      "$(grep -m1 -oE 'Test unit written to [^ ]+' "$log" | sed 's/Test unit written to //' || echo '?')" "$log"
  fi
done
exit $failed
