#!/usr/bin/env bash
# Rewrites the committed seed corpus, tests/fuzz/corpus/<target>/, with the project's own writers:
# fuzz_write_seeds (synth GGUF models, tests/model_file_fixtures.h's safetensors, config.json,
# tokenizer inputs, dumps as text), `tapdiff run --dump` for the dumps, and examples/ for the
# tolerance files. Needs the normal build (BUILD_DIR, default build) and the fuzz build
# (FUZZ_BUILD_DIR, default build-fuzz; scripts/fuzz.sh --build-only makes it). Regression inputs
# (corpus/<target>/regress-*) are kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tapdiff_dir=$root/${BUILD_DIR:-build}
seeds=$root/${FUZZ_BUILD_DIR:-build-fuzz}/fuzz/fuzz_write_seeds
corpus=$root/tests/fuzz/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Dumps of two tiny models (vocab 16, so the logits taps stay small): f32 with a few taps, f16
# compressed with decode rows, f64 qwen2 in chunks of 2 tokens. Relative names, so the command
# lines recorded in them name no folder of this machine.
cd "$work"
export PATH=$tapdiff_dir:$PATH
tapdiff synth -o llama.gguf --layers 1 --dim 16 --heads 2 --head-dim 8 --ffn 32 --vocab 16 --tied >/dev/null
tapdiff synth -o qwen2.gguf --layers 1 --dim 16 --heads 2 --kv-heads 1 --head-dim 8 --ffn 32 --vocab 16 \
  --arch qwen2 >/dev/null
tapdiff run --model llama.gguf --tokens 1,5,9 --taps 'embed|attn_norm|q_proj|logits' --dump f32-some.h5 >/dev/null
tapdiff run --model llama.gguf --tokens 1,5 --generate 2 --dump-dtype f16 --compress 1 --dump f16-gzip-decode.h5 \
  >/dev/null
tapdiff run --model qwen2.gguf --tokens 1,5,9,11 --chunk 2 --dump-dtype f64 --compress 9 --dump qwen2-f64-chunks.h5 \
  >/dev/null

for target in gguf safetensors config_json toml_tolerances tokenizer tokenizer_json dump imported_dump name_map; do
  mkdir -p "$corpus/$target"
  find "$corpus/$target" -type f ! -name 'regress-*' -delete
done
"$seeds" "$corpus" f32-some.h5 f16-gzip-decode.h5 qwen2-f64-chunks.h5
cp "$root/examples/tolerances.toml" "$corpus/toml_tolerances/example.toml"
cp "$root/examples/ci-gate/gate.toml" "$corpus/toml_tolerances/ci-gate.toml"
cp "$root/examples/ci-gate/strict.toml" "$corpus/toml_tolerances/ci-strict.toml"
# Name maps (docs/import.md): a preset extended, a user's names with splits and sums, and the row arrays renamed.
printf 'base = "hf"\ntokens = "ids"\n[taps]\n"blk.{L}.q" = "q_proj"\n' >"$corpus/name_map/extend.toml"
printf 'layout = "interleaved"\n[taps]\n"x.{L}.qkv" = ["q_proj", "k_proj", "v_proj"]\n"x.{L}.y" = "ffn_down"\n[sums]\nffn_residual = ["x.{L}.a", "x.{L}.b"]\n' \
  >"$corpus/name_map/splits-sums.toml"
printf 'base = "vllm"\ntokens = ["input_ids", "tok"]\npositions = "pos"\ndecode = ["is_decode"]\nlayout = "model"\n' \
  >"$corpus/name_map/rows.toml"
du -sh "$corpus"/*
