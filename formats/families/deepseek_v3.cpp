// DeepSeek-V3 (deepseek_v3; DeepSeek-R1, Kimi K2): Llama's RMSNorm block with multi-head latent
// attention (formats/families/latent_attention.h) and DeepSeek's mixture of experts.
// - RoPE on the trailing qk_rope_head_dim channels of each q head and on the key part every head
//   shares: on interleaved pairs where rope_interleave (its default), else rotate-half.
// - from layer first_k_dense_replace on, the sigmoid router with its selection bias in n_group
//   groups of which topk_group are eligible, routed_scaling_factor, n_shared_experts experts' worth
//   of shared expert (formats/families/sigmoid_experts.h); the dense layers intermediate_size wide.
// Its GGUF (deepseek2, DeepSeek-V2's too), as llama.cpp builds it: the latent attention of either
// layout its converter has written (formats/families/latent_attention.h), RoPE on interleaved pairs;
// expert_gating_func sigmoid or softmax (absent: softmax, DeepSeek-V2's files), expert_weights_norm
// and _scale, expert_group_count and _used_count (a group scored by its best two, llama.cpp's
// build_moe_ffn), expert_shared_count experts' worth of shared expert, leading_dense_block_count
// dense layers first; YaRN with the scores' scale of llama.cpp's deepseek2 graph (read_yarn_scale).
#include <fmt/format.h>

#include "formats/families/latent_attention.h"
#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"
#include "model/rope.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_latent_attention_hf(k, c);
  c.rope_style = k.boolean("rope_interleave", true) ? RopeStyle::interleaved : RopeStyle::rotate_half;
  read_sigmoid_experts_hf(k, c, {.normalize = true, .shared_experts = 1, .dense_layers = 3});
  // Multi-token-prediction layers after the decoder's: transformers' forward never runs them.
  (void)k.integer("num_nextn_predict_layers", 0);
}

// YaRN as llama.cpp's deepseek2 graph computes it: cos and sin times rope.scaling.attn_factor (1
// where absent), the scores' scale times (that factor x get_mscale(factor, m))^2, m the converter's
// rope.scaling.yarn_log_multiplier (0.1 x mscale_all_dim) over 0.1 (none where absent).
void read_yarn_scale(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  RopeScaling& s = c.rope_scaling;
  const double attn_factor = float_key(f, prefix + "rope.scaling.attn_factor", 1.0);
  const double mscale =
      attn_factor * yarn_mscale(s.factor, float_key(f, prefix + "rope.scaling.yarn_log_multiplier", 0.0) / 0.1);
  s.attention_factor = attn_factor;
  c.block.attention_scale *= mscale * mscale;
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_latent_attention_gguf(f, prefix, c);
  if (c.rope_scaling.type == RopeType::linear)  // the graph's scores' scale assumes YaRN's attention factor
    throw_format_error(
        fmt::format("{}: metadata '{}rope.scaling.type' linear is not supported: llama.cpp's deepseek2 "
                    "scales its scores for YaRN only (none or yarn)",
                    f.path().string(), prefix));
  if (c.rope_scaling.type == RopeType::yarn) read_yarn_scale(f, prefix, c);
  if (f.find(prefix + "expert_count") == nullptr) return;
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  const int gating = int_key(f, prefix + "expert_gating_func", 1);
  if (gating != 1 && gating != 2)
    throw_format_error(fmt::format("{}: metadata '{}expert_gating_func' = {}: expected 1 (softmax) or 2 (sigmoid)",
                                   f.path().string(), prefix, gating));
  read_grouped_experts_gguf(f, prefix, c);
  c.experts.score = gating == 2 ? RouterScore::sigmoid : RouterScore::softmax;
}

}  // namespace

const FamilySpec& deepseek_v3_family() {
  static const FamilySpec spec{
      .family = Family::deepseek_v3,
      .hf = {.model_types = {"deepseek_v3"}, .read = read_hf},
      .gguf = {.architectures = {"deepseek2"},
               .keys = sigmoid_experts_gguf_keys(
                   {"attention.q_lora_rank", "attention.kv_lora_rank", "attention.key_length_mla",
                    "attention.value_length_mla", "attention.value_length", "rope.scaling.yarn_beta_fast",
                    "rope.scaling.yarn_beta_slow", "rope.scaling.yarn_log_multiplier", "rope.scaling.attn_factor"}),
               .read = read_gguf,
               .partial_rotary = true,
               .yarn = true},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block = synth_sigmoid_experts, .experts = true, .latent = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
