// Gemma 4's text model (gemma4_text), its dense form: Gemma 3's block of norms after the attention
// and the FFN, with
// - RMS norms scaled by w (not 1 + w), attention unscaled (scaling 1.0), q and k normed per head;
// - the values' heads RMS-normed without a weight (v_norm) before the cache;
// - full layers of their own heads (per_layer_config's head_dim and num_key_value_heads; where the
//   config has none, global_head_dim, default 512, and num_global_key_value_heads where
//   attention_k_eq_v, as Gemma4TextConfig builds it), whose values are k_proj's output where
//   attention_k_eq_v (they have no v_proj), and whose RoPE is "proportional" (rope_parameters per
//   layer type: the full layers turn the first partial_rotary_factor of their head's pairs);
// - five sliding layers to one full by default, the last layer full whatever layer_types says (as
//   Gemma4TextConfig forces it);
// - per-layer inputs where hidden_size_per_layer_input (default 256; 0 or null: none): each layer
//   ends by adding its output gated by its own input from embed_tokens_per_layer (of
//   vocab_size_per_layer_input rows) and from the embedding (model/config.h LayerInputs);
// - each layer's output times its learned layer_scalar.
// Layers sharing an earlier layer's KV (num_kv_shared_layers) and the MoE block
// (enable_moe_block) are refused by name: tapdiff does not compute them yet.
#include <cmath>
#include <set>
#include <string>

#include <fmt/format.h>

#include "formats/families/gemma.h"
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

// A key that must be absent, null, 0 or false: a part of Gemma 4 tapdiff does not compute.
void refuse_switched_on(KeyReader& k, const std::string& key, const json& fallback, std::string_view what) {
  const json* v = k.find(key);
  const json& value = v != nullptr ? *v : fallback;
  if (!value.is_null() && value != 0 && value != false)
    k.unsupported(key, value, fmt::format("Gemma 4 without {} (0, false or null)", what));
}

// Each layer's heads: per_layer_config's overrides by layer index (head_dim, num_key_value_heads);
// without it the full layers' global_head_dim and, where keys are values, num_global_key_value_heads.
// transformers requires one shape per layer type (its RoPE is computed per type).
void read_layer_shapes(KeyReader& k, ModelConfig& c, bool k_eq_v) {
  const int global_head_dim = k.integer("global_head_dim", 512);
  const json* global_kv = k.find("num_global_key_value_heads");
  std::vector<AttentionShape> shapes(static_cast<std::size_t>(c.n_layers), AttentionShape{c.n_kv_heads, c.head_dim});
  if (const json* per_layer = k.find("per_layer_config")) {
    if (!per_layer->is_object()) k.fail("per_layer_config", "an object of layer indices", json_excerpt(*per_layer));
    for (const auto& [index, overrides] : per_layer->items()) {
      std::size_t used = 0;
      const int layer = [&] {
        try {
          const int l = std::stoi(index, &used);
          if (used == index.size() && l >= 0 && l < c.n_layers) return l;
        } catch (const std::exception&) {
        }
        return k.fail("per_layer_config", fmt::format("layer indices below num_hidden_layers, {}", c.n_layers), index);
      }();
      if (!overrides.is_object())
        k.fail("per_layer_config", "objects of head_dim and num_key_value_heads", json_excerpt(overrides));
      KeyReader o(overrides, fmt::format("{}: per_layer_config[{}]", k.source(), index));
      AttentionShape& s = shapes[static_cast<std::size_t>(layer)];
      s.head_dim = o.integer("head_dim", s.head_dim);
      s.n_kv_heads = o.integer("num_key_value_heads", s.n_kv_heads);
      o.refuse_unread_keys({});
    }
  } else {
    for (int l = 0; l < c.n_layers; ++l) {
      if (slides(c, l)) continue;
      AttentionShape& s = shapes[static_cast<std::size_t>(l)];
      s.head_dim = global_head_dim;
      if (k_eq_v && global_kv != nullptr) s.n_kv_heads = k.integer("num_global_key_value_heads");
    }
  }
  for (int l = 0; l < c.n_layers; ++l)
    for (int m = 0; m < l; ++m)
      if (slides(c, l) == slides(c, m) && shapes[static_cast<std::size_t>(l)] != shapes[static_cast<std::size_t>(m)])
        k.fail("per_layer_config", "one head shape per layer type (transformers computes RoPE per type)",
               fmt::format("layers {} and {} of one type with other heads", m, l));
  const bool uniform = std::all_of(shapes.begin(), shapes.end(), [&](const AttentionShape& s) {
    return s == AttentionShape{c.n_kv_heads, c.head_dim};
  });
  if (!uniform) c.layer_shapes = std::move(shapes);
}

void read_hf(KeyReader& k, ModelConfig& c) {
  if (k.find("num_key_value_heads") == nullptr) c.n_kv_heads = 4;  // Gemma4TextConfig's default
  read_attention_bias(k, c.block);
  const json* bidirectional = k.find("use_bidirectional_attention");
  if (bidirectional != nullptr && *bidirectional != "vision")
    k.unsupported("use_bidirectional_attention", *bidirectional,
                  "causal attention over text (null, or \"vision\": only image tokens attend both ways)");
  c.block.activation = read_activation(k, "hidden_activation", "gelu_pytorch_tanh");
  c.block.post_norms = true;
  c.block.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.dim)));
  c.block.attention_scale = 1.0;
  c.block.qk_norm = QkNorm::per_head;
  c.block.v_norm = true;
  c.block.layer_scale = true;
  c.block.logit_softcap = k.number_or_off("final_logit_softcapping", 0.0);
  read_layer_types(k, c, true, [](int layer) { return (layer + 1) % 6 != 0; });
  c.sliding_layers.back() = false;  // kept (the sliding layers' own RoPE); Gemma4TextConfig forces the last layer full
  const bool k_eq_v = k.boolean("attention_k_eq_v", false);
  read_layer_shapes(k, c, k_eq_v);
  if (k_eq_v) {
    c.values_from_keys.resize(static_cast<std::size_t>(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l) c.values_from_keys[static_cast<std::size_t>(l)] = !slides(c, l);
  }
  const std::string per_layer = "hidden_size_per_layer_input";
  c.layer_inputs.dim = k.has(per_layer) ? k.integer(per_layer, 0) : 256;  // null or 0: none
  const int table = k.integer("vocab_size_per_layer_input", 262'144);     // their table's rows, unused without them
  if (c.layer_inputs.dim > 0) c.layer_inputs.vocab = table;
  refuse_switched_on(k, "num_kv_shared_layers", 0, "layers sharing an earlier layer's keys and values");
  k.boolean("use_double_wide_mlp", false);  // widens the MLP of KV-sharing layers only
  refuse_switched_on(k, "enable_moe_block", false, "its MoE block beside the MLP");
  for (const char* key : {"num_experts", "top_k_experts", "moe_intermediate_size"}) k.find(key);  // the MoE block's
}

}  // namespace

const FamilySpec& gemma4_family() {
  static const FamilySpec spec{
      .family = Family::gemma4,
      .hf = {.model_types = {"gemma4_text"},
             .read = read_hf,
             .head_dim = 256,
             .tied_by_default = true,
             .embedding_module_scales = true,
             .rope_theta = 1'000'000.0,
             .sliding_rope_theta = 10'000.0,
             .rope_required = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
