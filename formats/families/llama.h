#pragma once
// Llama's config.json keys, which Granite's and SmolLM3's read too.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// hidden_act, mlp_bias and attention_bias.
void read_llama_hf(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
