#pragma once
// DeepSeek-V3's mixture of experts as GLM-4.5 and dots1 configure it: a sigmoid router with a
// selection bias, expert groups, a routed scale and shared experts, dense layers first.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf_reader.h"
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// The family's defaults where its config class leaves a key out.
struct SigmoidExpertsHf {
  bool normalize = true;   // norm_topk_prob
  int shared_experts = 1;  // n_shared_experts
  int dense_layers = 1;    // first_k_dense_replace
  // The config's mlp_layer_types, where stated, say which layers are mixtures.
  bool mlp_layer_types = false;
};
// n_routed_experts, num_experts_per_tok, moe_intermediate_size, n_group, topk_group,
// norm_topk_prob, routed_scaling_factor, n_shared_experts (of moe_intermediate_size each) and
// first_k_dense_replace (or mlp_layer_types); the selection bias is mlp.gate.e_score_correction_bias.
void read_sigmoid_experts_hf(KeyReader& k, model::ModelConfig& c, const SigmoidExpertsHf& defaults);

// expert_gating_func 2 (llama.cpp's sigmoid), `absent` where the file has none (nullopt: required).
void require_sigmoid_gating(const GgufFile& f, const std::string& prefix, std::optional<int> absent);

// expert_count, expert_used_count, expert_feed_forward_length, expert_gating_func (2, sigmoid;
// `gating` where absent, nullopt: required), expert_weights_norm, expert_weights_scale (0 or
// absent: none), expert_group_count and _used_count, expert_shared_count and
// leading_dense_block_count; the selection bias where the first mixture layer holds exp_probs_b.bias.
void read_sigmoid_experts_gguf(const GgufFile& f, const std::string& prefix, model::ModelConfig& c,
                               std::optional<int> gating);

// What read_sigmoid_experts_gguf reads after the experts' count, width and gating: their weights'
// norm and scale, the groups, the shared experts, the dense layers first and the selection bias.
void read_grouped_experts_gguf(const GgufFile& f, const std::string& prefix, model::ModelConfig& c);

// How `tapdiff synth` writes such a mixture: a sigmoid router with a selection bias, 4 expert
// groups of which 2 eligible, renormalised, routed scale 2.5, one shared expert.
void synth_sigmoid_experts(model::ModelConfig& c);

// The keys read_sigmoid_experts_gguf reads, then the family's `more`.
std::vector<std::string_view> sigmoid_experts_gguf_keys(std::initializer_list<std::string_view> more);

}  // namespace tapdiff::formats
