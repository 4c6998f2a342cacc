#include "formats/families/latent_attention.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "formats/gguf_keys.h"
#include "model/errors.h"
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

void read_latent_attention_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  const std::string file = f.path().string();
  auto wrong = [&](std::string_view key, const std::string& expected, const std::string& found) {
    throw_format_error(fmt::format("{}: metadata '{}{}': expected {}, found {}", file, prefix, key, expected, found));
  };
  LatentAttention& a = c.mla;
  a.kv_rank = int_key(f, prefix + "attention.kv_lora_rank", std::nullopt);
  if (a.kv_rank < 1) wrong("attention.kv_lora_rank", "a rank >= 1", std::to_string(a.kv_rank));
  a.q_rank = int_key(f, prefix + "attention.q_lora_rank", 0);
  if (a.q_rank == 0 && has_layer_tensor(f, "attn_q_a.weight"))
    wrong("attention.q_lora_rank", "the rank of attn_q_a", "none");
  a.rope_dim = c.rotary_dim > 0 ? c.rotary_dim : c.head_dim;
  const bool absorbed = f.find(prefix + "attention.key_length_mla") != nullptr;
  int key = c.head_dim;
  a.v_dim = int_key(f, prefix + "attention.value_length", c.head_dim);
  if (absorbed) {
    if (c.head_dim != a.kv_rank + a.rope_dim)
      wrong("attention.key_length",
            fmt::format("the latent's kv_lora_rank + RoPE channels, {}", a.kv_rank + a.rope_dim),
            std::to_string(c.head_dim));
    if (a.v_dim != a.kv_rank)
      wrong("attention.value_length", fmt::format("kv_lora_rank, {}", a.kv_rank), std::to_string(a.v_dim));
    if (c.n_kv_heads != 1)
      wrong("attention.head_count_kv", "1 (the latent every head shares)", std::to_string(c.n_kv_heads));
    key = int_key(f, prefix + "attention.key_length_mla", std::nullopt);
    a.v_dim = int_key(f, prefix + "attention.value_length_mla", std::nullopt);
  } else if (c.n_kv_heads != c.n_heads) {
    wrong("attention.head_count_kv", fmt::format("head_count, {} (a key and a value per head)", c.n_heads),
          std::to_string(c.n_kv_heads));
  }
  a.nope_dim = key - a.rope_dim;
  if (a.nope_dim < 1)
    wrong(absorbed ? "attention.key_length_mla" : "attention.key_length",
          fmt::format("more than the {} RoPE channels", a.rope_dim), std::to_string(key));
  a.norm_eps = float_key(f, prefix + "attention.layer_norm_rms_epsilon", 1e-5);  // LLM_NORM_RMS: the file's
  c.n_kv_heads = c.n_heads;
  c.head_dim = key;
  c.rotary_dim = a.rope_dim;
  c.block.attention_scale = 1.0 / std::sqrt(static_cast<double>(key));
}

}  // namespace tapdiff::formats
