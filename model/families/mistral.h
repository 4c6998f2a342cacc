#pragma once
// Mistral's config.json keys, which Mixtral's read too.
#include "model/config.h"
#include "model/hf_keys.h"

namespace tapdiff::model {

// Llama's block without MLP biases, every layer within `sliding_window` (absent or null: none).
void read_mistral_hf(KeyReader& k, ModelConfig& c);

}  // namespace tapdiff::model
