#pragma once
// Granite's four scalars, which Granite-MoE's configs and GGUF files hold too.
#include <string>

#include "formats/gguf_reader.h"
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// embedding_multiplier, residual_multiplier, attention_multiplier and logits_scaling.
void read_granite_scales_hf(KeyReader& k, model::ModelConfig& c);

// embedding_scale, residual_scale, attention.scale (0 or absent: none, and 1/sqrt(head_dim)),
// logit_scale (required), rope.scaling.finetuned, and the o and FFN biases the file holds.
void read_granite_gguf(const GgufFile& f, const std::string& prefix, model::ModelConfig& c);

}  // namespace tapdiff::formats
