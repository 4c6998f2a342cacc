// DeepSeek-V3 (deepseek_v3; DeepSeek-R1, Kimi K2): Llama's RMSNorm block with multi-head latent
// attention (formats/families/latent_attention.h) and DeepSeek's mixture of experts.
// - RoPE on the trailing qk_rope_head_dim channels of each q head and on the key part every head
//   shares: on interleaved pairs where rope_interleave (its default), else rotate-half.
// - from layer first_k_dense_replace on, the sigmoid router with its selection bias in n_group
//   groups of which topk_group are eligible, routed_scaling_factor, n_shared_experts experts' worth
//   of shared expert (formats/families/sigmoid_experts.h); the dense layers intermediate_size wide.
#include "formats/families/latent_attention.h"
#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

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

}  // namespace

const FamilySpec& deepseek_v3_family() {
  static const FamilySpec spec{
      .family = Family::deepseek_v3,
      .hf = {.model_types = {"deepseek_v3"}, .read = read_hf},
  };
  return spec;
}

}  // namespace tapdiff::formats
