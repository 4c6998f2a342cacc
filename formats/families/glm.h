#pragma once
// GLM's config.json keys, which GLM-4's read too.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// hidden_act and attention_bias (q, k and v only).
void read_glm_hf(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
