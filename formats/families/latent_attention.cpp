#include "formats/families/latent_attention.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "model/rope.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

// q_lora_rank: absent, the config classes' 1536; null, no low-rank q.
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
  const double mscale = yarn_mscale(factor, m_all);
  return scale * mscale * mscale;
}

}  // namespace

void read_latent_attention_hf(KeyReader& k, ModelConfig& c) {
  if (c.n_kv_heads != c.n_heads)
    k.fail("num_key_value_heads", fmt::format("num_attention_heads, {} (a key and a value per head)", c.n_heads),
           std::to_string(c.n_kv_heads));
  const int rope_width = c.head_dim;  // the generic reader's: config.json's head_dim, which transformers resets
  if (const int rotated = c.rotary_dim > 0 ? c.rotary_dim : c.head_dim; rotated != rope_width)
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
  c.block.attention_scale = attention_scale(k, c);
}

}  // namespace tapdiff::formats
