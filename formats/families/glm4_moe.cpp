// GLM-4.5 (glm4_moe): GLM's attention (q, k and v biases where attention_bias, per-head q/k
// RMSNorm where use_qk_norm, RoPE rotate-half on the leading half of each head by default) and a
// mixture of experts from layer first_k_dense_replace on, with DeepSeek-V3's router: each expert's
// sigmoid, the choice made on it plus e_score_correction_bias within the topk_group best of n_group
// groups, the weights the unbiased sigmoids (renormalised where norm_topk_prob) times
// routed_scaling_factor; n_shared_experts experts' worth of shared expert (moe_intermediate_size
// times that), ungated, beside. The dense layers' FFN is intermediate_size wide.
// Its GGUF (glm4moe): the FFN's norm named post_attention_norm, leading_dense_block_count dense
// layers first, expert_gating_func sigmoid (absent: sigmoid), expert_weights_norm and _scale,
// expert_group_count and _used_count; a file with multi-token-prediction layers
// (nextn_predict_layers) is refused.
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

// Layers [0, dense) keep a dense FFN; the others are mixtures.
void dense_first(ModelConfig& c, int dense) {
  if (dense <= 0) return;
  if (dense >= c.n_layers) {
    c.experts = {};
    return;
  }
  c.experts.layers.assign(static_cast<std::size_t>(c.n_layers), true);
  std::fill_n(c.experts.layers.begin(), dense, false);
}

void sigmoid_routing(Experts& e, int groups, int top_groups, double scale, bool normalize) {
  e.score = RouterScore::sigmoid;
  e.selection_bias = true;
  e.groups = groups, e.top_groups = top_groups, e.scale = scale, e.normalize = normalize;
}

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  c.block.qkv_bias = k.boolean("attention_bias", false);
  if (k.boolean("use_qk_norm", false)) c.block.qk_norm = QkNorm::per_head;
  const int ffn = k.integer("moe_intermediate_size");
  read_experts(k, c, "n_routed_experts", "", ffn, true);
  sigmoid_routing(c.experts, k.integer("n_group", 1), k.integer("topk_group", 1),
                  k.number("routed_scaling_factor", 1.0), k.boolean("norm_topk_prob", true));
  const int shared = k.integer("n_shared_experts", 1);
  if (shared < 0) k.fail("n_shared_experts", "a count >= 0", std::to_string(shared));
  c.experts.shared_ffn_dim = shared * ffn;
  const int dense = k.integer("first_k_dense_replace", 1);
  if (dense < 0) k.fail("first_k_dense_replace", "a layer count >= 0", std::to_string(dense));
  dense_first(c, dense);
  // Multi-token-prediction layers after the decoder's: transformers' forward never runs them.
  if (const int mtp = k.integer("num_nextn_predict_layers", 0); mtp < 0)
    k.fail("num_nextn_predict_layers", "a layer count >= 0", std::to_string(mtp));
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  if (const int mtp = int_key(f, prefix + "nextn_predict_layers", 0); mtp > 0)
    throw_format_error(fmt::format("{}: metadata '{}nextn_predict_layers' = {}: multi-token-prediction layers are "
                                   "not implemented",
                                   f.path().string(), prefix, mtp));
  c.block.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  if (f.find_tensor("blk.0.attn_q_norm.weight") != nullptr) c.block.qk_norm = QkNorm::per_head;
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  if (const int gating = int_key(f, prefix + "expert_gating_func", 2); gating != 2)
    throw_format_error(fmt::format("{}: metadata '{}expert_gating_func' = {}: expected 2 (sigmoid), the scores "
                                   "glm4moe's graph takes",
                                   f.path().string(), prefix, gating));
  const double scale = float_key(f, prefix + "expert_weights_scale", 0.0);  // 0: none, as build_moe_ffn reads it
  sigmoid_routing(c.experts, int_key(f, prefix + "expert_group_count", 1),
                  int_key(f, prefix + "expert_group_used_count", 1), scale == 0.0 ? 1.0 : scale,
                  f.get_bool(prefix + "expert_weights_norm").value_or(false));
  c.experts.shared_ffn_dim = int_key(f, prefix + "expert_shared_count", std::nullopt) * c.experts.ffn_dim;
  dense_first(c, int_key(f, prefix + "leading_dense_block_count", 0));
}

}  // namespace

const FamilySpec& glm4_moe_family() {
  static const FamilySpec spec{
      .family = Family::glm4_moe,
      .hf = {.model_types = {"glm4_moe"},
             .read = read_hf,
             .partial_rotary_factor = 0.5,
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"glm4moe"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length", "expert_gating_func",
                        "expert_weights_norm", "expert_weights_scale", "expert_group_count",
                        "expert_group_used_count", "expert_shared_count", "leading_dense_block_count",
                        "nextn_predict_layers"},
               .read = read_gguf,
               .partial_rotary = true,
               .layer_name = [](std::string_view name, const ModelConfig&) -> std::string_view {
                 return name == "post_attention_norm.weight" ? "ffn_norm.weight" : name;
               }},
      .synth = {.block =
                    [](ModelConfig& c) {
                      c.block.qkv_bias = true;
                      sigmoid_routing(c.experts, 4, 2, 2.5, true);
                      c.experts.shared_ffn_dim = c.experts.ffn_dim;
                    },
                .experts = true,
                .ffn_norm = "post_attention_norm"},
  };
  return spec;
}

}  // namespace tapdiff::formats
