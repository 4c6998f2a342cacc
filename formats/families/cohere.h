#pragma once
// Command R's config.json keys, which Cohere 2's read too.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// The parallel block with its LayerNorm, hidden_act, attention_bias and logit_scale.
void read_cohere_hf(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
