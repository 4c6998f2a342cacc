#pragma once
// What the libFuzzer targets share (docs/fuzzing.md): a scratch folder for inputs that the
// readers take as files, the rule for which exceptions count as a handled bad input, and a
// check of the weights a loaded model hands to the engines.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "model/errors.h"
#include "model/weights.h"
#include "tests/model_file_fixtures.h"

namespace tapdiff::fuzz {

// A folder of this process's own under the temp directory ($TMPDIR), created on first use and
// removed at exit. Readers map files, as the CLI does, so inputs are written here.
const std::filesystem::path& scratch_dir();

// The Hugging Face model whose files the safetensors and config.json targets pair with their
// input: 1 layer, dim 16, 2 heads of 8, 1 kv head, ffn 32, vocab 16 (tests/model_file_fixtures.h).
inline constexpr testing::TinyHfShape kTinyHf{1, 16, 2, 1, 32, 16};
// The model of the dump targets' inputs (the imported_dump seeds of tests/fuzz/write_seeds.cpp,
// the name_map target's names): 1 layer, dim 16, 2 heads of 8, 1 kv head, ffn 32, vocab 16.
model::ModelConfig tiny_dump_config();
// A folder in scratch_dir() with config.json and model.safetensors of tiny_hf(kTinyHf), written
// on first use; a target overwrites the file it fuzzes.
const std::filesystem::path& tiny_hf_folder();

// Writes bytes to `path` (truncating it) and returns path.
std::filesystem::path write_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

// Runs f. FormatError, UsageError and EnvironmentError are the documented answers of the readers
// to a bad file: returns false after one. Any other exception escapes, and libFuzzer reports it as
// a crash, as it does a sanitizer report or an abort (TAPDIFF_ASSERT).
template <class F>
bool documented_errors_only(F&& f) {
  try {
    f();
    return true;
  } catch (const FormatError&) {
  } catch (const UsageError&) {
  } catch (const EnvironmentError&) {
  }
  return false;
}

// Reads every row of every weight of a model the loader accepted through dequantize_row, as the
// engines do, after checking that each weight's bytes hold rows x row_bytes(dtype, cols): a
// loader that accepts a tensor smaller than its shape aborts here.
void read_all_weights(const model::Model& model);

}  // namespace tapdiff::fuzz
