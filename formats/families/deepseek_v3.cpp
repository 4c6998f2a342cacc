// DeepSeek-V3 (deepseek_v3; DeepSeek-R1, Kimi K2): Llama's RMSNorm block with multi-head latent
// attention (model/config.h LatentAttention) and DeepSeek's mixture of experts.
// - q through q_a_proj, q_a_layernorm and q_b_proj where q_lora_rank is set (null: q_proj);
//   kv_a_proj_with_mqa gives kv_lora_rank latent channels, then qk_rope_head_dim channels of the key
//   part every head shares; kv_a_layernorm of the latent; kv_b_proj, per head qk_nope_head_dim key
//   rows then v_head_dim value rows. RoPE on the trailing qk_rope_head_dim channels of each q head
//   and on the shared part: on interleaved pairs where rope_interleave (its default), else
//   rotate-half. attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj carry biases.
// - scores times qk_head_dim^-1/2, and times get_mscale(factor, mscale_all_dim)^2 where the RoPE
//   is scaled and mscale_all_dim is set (transformers' yarn_apply_mscale).
// - from layer first_k_dense_replace on, the sigmoid router with its selection bias in n_group
//   groups of which topk_group are eligible, routed_scaling_factor, n_shared_experts experts' worth
//   of shared expert (formats/families/sigmoid_experts.h); the dense layers intermediate_size wide.
// transformers recomputes head_dim (qk_rope_head_dim, its RoPE's width) and qk_head_dim; a
// num_key_value_heads other than num_attention_heads breaks its attention, and is refused.
#include <cmath>

#include <fmt/format.h>

#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

// q_lora_rank: absent, DeepseekV3Config's 1536; null, no low-rank q.
int read_q_rank(KeyReader& k) {
  const double rank = k.number_or_off("q_lora_rank", 1536);
  if (rank != std::floor(rank) || rank < 0 || rank > 1 << 30)
    k.fail("q_lora_rank", "null or a rank >= 1", json_excerpt(rank));
  if (k.find("q_lora_rank") != nullptr && rank == 0) k.fail("q_lora_rank", "null or a rank >= 1", "0");
  return static_cast<int>(rank);
}

// The scores' scale: qk_head_dim^-1/2, times mscale^2 where a scaled RoPE states mscale_all_dim.
double attention_scale(KeyReader& k, const ModelConfig& c) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const json* params = k.find("rope_parameters");
  if (params == nullptr) params = k.find("rope_scaling");
  if (params == nullptr || params->value("rope_type", params->value("type", "default")) == "default") return scale;
  const double m_all = params->value("mscale_all_dim", 0.0), factor = params->value("factor", 1.0);
  if (m_all == 0.0) return scale;
  const double mscale = factor <= 1.0 ? 1.0 : 0.1 * m_all * std::log(factor) + 1.0;
  return scale * mscale * mscale;
}

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  if (c.n_kv_heads != c.n_heads)
    k.fail("num_key_value_heads", fmt::format("num_attention_heads, {} (a key and a value per head)", c.n_heads),
           std::to_string(c.n_kv_heads));
  const int rope_width = c.head_dim;  // the generic reader's: config.json's head_dim, which transformers resets
  const int rotated = c.rotary_dim > 0 ? c.rotary_dim : c.head_dim;
  if (rotated != rope_width)
    k.fail("partial_rotary_factor", "1 (RoPE on the whole qk_rope_head_dim)",
           fmt::format("{} / {}", rotated, rope_width));
  LatentAttention& a = c.mla;
  a.q_rank = read_q_rank(k);
  a.kv_rank = k.integer("kv_lora_rank", 512);
  a.rope_dim = k.integer("qk_rope_head_dim", 64);
  a.nope_dim = k.integer("qk_nope_head_dim", 128);
  a.v_dim = k.integer("v_head_dim", 128);
  if (a.kv_rank < 1) k.fail("kv_lora_rank", "a rank >= 1", std::to_string(a.kv_rank));
  (void)k.find("qk_head_dim");  // recomputed as qk_nope_head_dim + qk_rope_head_dim
  c.head_dim = a.nope_dim + a.rope_dim;
  c.rotary_dim = a.rope_dim;
  a.biases = c.block.o_bias = k.boolean("attention_bias", false);
  c.rope_style = k.boolean("rope_interleave", true) ? RopeStyle::interleaved : RopeStyle::rotate_half;
  c.block.attention_scale = attention_scale(k, c);
  read_sigmoid_experts_hf(k, c, {.normalize = true, .shared_experts = 1, .dense_layers = 3});
  // Multi-token-prediction layers after the decoder's: transformers' forward never runs them.
  if (const int mtp = k.integer("num_nextn_predict_layers", 0); mtp < 0)
    k.fail("num_nextn_predict_layers", "a layer count >= 0", std::to_string(mtp));
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
