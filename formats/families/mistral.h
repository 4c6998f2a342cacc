#pragma once
// Mistral's config.json keys, which Mixtral's read too.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// Llama's block without MLP biases, every layer within `sliding_window` (absent or null: none).
void read_mistral_hf(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
