#pragma once
// Llama's config.json keys, which Granite's and SmolLM3's read too.
#include "model/config.h"
#include "model/hf_keys.h"

namespace tapdiff::model {

// hidden_act, mlp_bias and attention_bias.
void read_llama_hf(KeyReader& k, ModelConfig& c);

}  // namespace tapdiff::model
