#pragma once
// Reading a GGUF file's metadata for a family (formats/families/): the values its keys hold, and the
// readers of keys several families share.
#include <optional>
#include <string>
#include <string_view>

#include "formats/gguf_reader.h"
#include "model/config.h"

namespace tapdiff::formats {

// An int metadata value in [0, INT_MAX], `fallback` when absent (nullopt: required).
int int_key(const GgufFile& f, const std::string& key, std::optional<int> fallback);

// A float metadata value, `fallback` when absent.
double float_key(const GgufFile& f, const std::string& key, double fallback);

// The mixture of experts as llama.cpp builds it for the llama (Mixtral) and qwen3moe families:
// expert_count experts, expert_used_count per token, softmax over all, the chosen weights always
// renormalised (build_moe_ffn's norm_w; the converter writes no key for norm_topk_prob), each
// expert `ffn_key` wide (absent: feed_forward_length / expert_used_count, as llama.cpp).
void read_gguf_experts(const GgufFile& f, const std::string& prefix, model::ModelConfig& c, std::string_view ffn_key);

}  // namespace tapdiff::formats
