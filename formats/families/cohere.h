#pragma once
// Command R's config.json keys, which Cohere 2's read too.
#include "formats/gguf_reader.h"
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// The parallel block with its LayerNorm, hidden_act, attention_bias and logit_scale.
void read_cohere_hf(KeyReader& k, model::ModelConfig& c);

// Command R's block as llama.cpp builds it (command-r, cohere2): one LayerNorm without bias for
// attention and the gated FFN side by side, the logits scaled by logit_scale (none where 0 or
// absent; absent refused where `scale_required`, as cohere2's loader requires it), the output
// always token_embd.weight.
void read_gguf_command_r(const GgufFile& f, const std::string& prefix, model::ModelConfig& c, bool scale_required);

}  // namespace tapdiff::formats
