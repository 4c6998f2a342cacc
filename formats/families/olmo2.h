#pragma once
// OLMo 2's config.json keys and block, which OLMo 3's read too.
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// hidden_act and attention_bias; norms after each sublayer only, q/k norms over the whole projection.
void read_olmo2_hf(KeyReader& k, model::ModelConfig& c);

}  // namespace tapdiff::formats
