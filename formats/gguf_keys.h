#pragma once
// Reading a GGUF file's metadata for a family (formats/families/): the values its keys hold, and the
// readers of keys several families share.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf_reader.h"
#include "model/config.h"

namespace tapdiff::formats {

// An int metadata value in [0, INT_MAX], `fallback` when absent (nullopt: required).
int int_key(const GgufFile& f, const std::string& key, std::optional<int> fallback);

// A per-layer int metadata value as llama.cpp reads it (get_key_or_arr): one for every layer, or
// an array of n_layers values, each in [0, INT_MAX]; `fallback` for every layer when absent.
std::vector<int> layer_int_key(const GgufFile& f, const std::string& key, int n_layers, std::optional<int> fallback);

// A float metadata value, `fallback` when absent.
double float_key(const GgufFile& f, const std::string& key, double fallback);

// How a family's graph in llama.cpp builds its mixture of experts (build_moe_ffn).
struct GgufExperts {
  std::string_view ffn_key = {};  // each expert's width ("": feed_forward_length)
  bool renormalise = true;        // build_moe_ffn's norm_w: the converter writes no key for norm_topk_prob
  bool required = false;          // the graph is a mixture in every layer: a file without expert_count is refused
};
// The mixture of experts: expert_count experts, expert_used_count per token, softmax over all, the
// chosen weights renormalised where the graph does, each expert `ffn_key` wide (absent:
// feed_forward_length / expert_used_count, as llama.cpp). No experts where expert_count is absent.
void read_gguf_experts(const GgufFile& f, const std::string& prefix, model::ModelConfig& c, const GgufExperts& how);

// The width of a layer's shared experts: <prefix>expert_shared_count (absent: 0) experts, each
// expert_width wide, their sum refused where it does not fit an int.
int gguf_shared_experts_width(const GgufFile& f, const std::string& prefix, int expert_width);

// Whether the file holds layer 0's tensor `name` ("ffn_norm.weight" for blk.0.ffn_norm.weight): how
// llama.cpp's graph of several families tells their variants apart.
bool has_layer_tensor(const GgufFile& f, std::string_view name);

// LayerNorms with biases and a plain FFN of `activation` (llama.cpp's LLM_NORM and LLM_FFN_SEQ),
// biases on o and the FFN where the file holds them (GPT-2, StarCoder 2, GPT-NeoX, Phi-2, Nemotron).
void read_gguf_layer_norms_and_plain_ffn(const GgufFile& f, model::ModelConfig& c, model::Activation activation);

// Which layers slide as llama.cpp reads them (load_swa_pattern): <prefix>attention.sliding_window_pattern
// as a bool per layer, or as n, where layer l slides when l % n < n - 1 (n = 0: every layer);
// `pattern` where the file has neither.
void read_gguf_sliding_layers(const GgufFile& f, const std::string& prefix, model::ModelConfig& c, int pattern);

// rope.freq_base_swa where llama.cpp's graph of the family rotates the sliding layers with
// rope.freq_base all the same: refused unless the two are equal.
void refuse_sliding_rope_base(const GgufFile& f, const std::string& prefix, const model::ModelConfig& c);

}  // namespace tapdiff::formats
