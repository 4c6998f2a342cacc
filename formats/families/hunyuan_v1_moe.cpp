// Hunyuan-MoE (Hunyuan-A13B): Hunyuan's attention (q and k RMS-normed per head after RoPE) and in
// every layer a mixture beside one ungated shared MLP: softmax over the router's (gate.wg)
// logits, the top moe_topk, renormalised; the experts and the shared MLP each intermediate_size
// wide, as transformers builds them. The keys of the original checkpoints that transformers reads
// nothing from are taken only where they agree with it: moe_topk, moe_intermediate_size and
// num_shared_expert given per layer (all alike), use_qk_norm and use_mixed_mlp_moe true, use_cla
// and use_mla false.
// Its GGUF (hunyuan-moe): the experts feed_forward_length wide (the width llama.cpp's loader
// gives them; an expert_feed_forward_length apart from it is refused), the shared MLP
// expert_shared_feed_forward_length (absent: the same), expert_shared_count 1 only.
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

// A count the original checkpoints write once per layer: one integer, or one per layer all alike.
int uniform_integer(KeyReader& k, const std::string& key, int n_layers, std::optional<int> fallback) {
  const nlohmann::json* v = k.find(key);
  if (v == nullptr || !v->is_array()) return k.integer(key, fallback);
  per_layer_array(k, key, n_layers, "integers");
  for (const nlohmann::json& x : *v)
    if (x != v->front())
      k.unsupported(key, *v, "one value for every layer (transformers' Hunyuan-MoE builds its layers alike)");
  if (!v->front().is_number_integer() || v->front().get<std::int64_t>() < 0 ||
      v->front().get<std::int64_t>() > std::numeric_limits<int>::max())
    k.fail(key, "non-negative integers", model::json_excerpt(*v));
  return v->front().get<int>();
}

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, c.block);
  no_mlp_bias(k);
  c.block.qk_norm = QkNorm::per_head;
  c.block.qk_norm_after_rope = true;
  k.token("eod_token_id");  // the end of a document: generation only
  Experts& e = c.experts;
  e.count = k.integer("num_experts");
  e.active = uniform_integer(k, "moe_topk", c.n_layers, 1);
  e.ffn_dim = e.shared_ffn_dim = c.ffn_dim;
  e.normalize = true;
  if (const int width = uniform_integer(k, "moe_intermediate_size", c.n_layers, c.ffn_dim); width != c.ffn_dim)
    k.unsupported("moe_intermediate_size", width,
                  fmt::format("{} only (transformers' experts are intermediate_size wide)", c.ffn_dim));
  if (const int shared = uniform_integer(k, "num_shared_expert", c.n_layers, 1); shared != 1)
    k.unsupported("num_shared_expert", shared, "1 only (transformers' Hunyuan-MoE has one shared MLP)");
  k.require_value("use_qk_norm", true, "transformers norms q and k");
  k.require_value("use_mixed_mlp_moe", true, "transformers adds the shared MLP");
  k.require_value("use_cla", false, "no layer shares another's keys and values in transformers");
  k.require_value("use_mla", false, "transformers' Hunyuan-MoE attends with plain heads");
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.qk_norm = QkNorm::per_head;
  c.block.qk_norm_after_rope = true;
  read_gguf_experts(f, prefix, c, {.required = true});
  c.experts.shared_ffn_dim = int_key(f, prefix + "expert_shared_feed_forward_length", c.ffn_dim);
  const auto agree = [&](const std::string& key, int wanted, std::string_view why) {
    if (const int v = int_key(f, prefix + key, wanted); v != wanted)
      throw_format_error(fmt::format("{}: metadata '{}{}' = {} is not supported: {} only ({})", f.path().string(),
                                     prefix, key, v, wanted, why));
  };
  agree("expert_feed_forward_length", c.ffn_dim, "llama.cpp's loader makes the experts feed_forward_length wide");
  agree("expert_shared_count", 1, "llama.cpp's hunyuan-moe graph has one shared MLP");
}

}  // namespace

const FamilySpec& hunyuan_v1_moe_family() {
  static const FamilySpec spec{
      .family = Family::hunyuan_v1_moe,
      .hf = {.model_types = {"hunyuan_v1_moe"},
             .read = read_hf,
             .layer_names = {{"self_attn.query_layernorm.", "self_attn.q_norm."},
                             {"self_attn.key_layernorm.", "self_attn.k_norm."},
                             {"mlp.gate.wg.", "mlp.gate."},
                             {"mlp.shared_mlp.", "mlp.shared_experts."}},
             .ntk_alpha = true},
      .gguf = {.architectures = {"hunyuan-moe"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length",
                        "expert_shared_feed_forward_length", "expert_shared_count"},
               .read = read_gguf},
  };
  return spec;
}

}  // namespace tapdiff::formats
