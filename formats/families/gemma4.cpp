// Gemma 4's text model (gemma4_text): Gemma 3's block of norms after the
// attention and the FFN, with
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
// - the last num_kv_shared_layers layers attending over the cache of the last earlier layer of
//   their kind, with no k/v projections of their own, their MLP twice as wide where
//   use_double_wide_mlp;
// - each layer's output times its learned layer_scalar.
// - where enable_moe_block (26B-A4B), a mixture of experts beside each layer's MLP (model/config.h
//   Experts::beside_dense), routed by Gemma4TextRouter.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

// A key of per_layer_config: a layer number below n_layers, written in decimal.
int layer_index(KeyReader& k, const std::string& index, int n_layers) {
  std::size_t used = 0;
  try {
    const int l = std::stoi(index, &used);
    if (used == index.size() && l >= 0 && l < n_layers) return l;
  } catch (const std::exception&) {
  }
  return k.fail("per_layer_config", fmt::format("layer indices below num_hidden_layers, {}", n_layers), index);
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
    for (const auto& item : per_layer->items()) {
      const std::string& index = item.key();
      const json& overrides = item.value();
      const int layer = layer_index(k, index, c.n_layers);
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

// The last num_kv_shared_layers layers attend over the cache of the last earlier layer of their
// kind, with no k/v projections of their own (Gemma4TextConfig's kv_sharing_modes); where
// use_double_wide_mlp their MLP is twice intermediate_size wide (Gemma4TextMLP).
void read_kv_sharing(KeyReader& k, ModelConfig& c) {
  const int shared = k.integer("num_kv_shared_layers", 0);
  const bool double_wide = k.boolean("use_double_wide_mlp", false);  // widens the MLP of those layers only
  if (shared == 0) return;
  if (shared >= c.n_layers)
    k.fail("num_kv_shared_layers",
           fmt::format("fewer than num_hidden_layers, {} (a layer of each kind keeps its cache)", c.n_layers),
           std::to_string(shared));
  const int first = c.n_layers - shared;
  if (double_wide) {
    if (c.ffn_dim > std::numeric_limits<int>::max() / 2)
      k.fail("intermediate_size", "a width whose double fits an int", std::to_string(c.ffn_dim));
    c.ffn_dims.assign(static_cast<std::size_t>(c.n_layers), c.ffn_dim);
    std::fill(c.ffn_dims.begin() + first, c.ffn_dims.end(), 2 * c.ffn_dim);
  }
  c.kv_sources.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    int source = l;
    if (l >= first) {
      source = first - 1;
      while (source >= 0 && slides(c, source) != slides(c, l)) --source;
      if (source < 0)
        k.fail("num_kv_shared_layers", "a layer of each sharing layer's kind before them",
               fmt::format("layer {}, {}, without one", l, slides(c, l) ? "sliding" : "full"));
    }
    c.kv_sources[static_cast<std::size_t>(l)] = source;
  }
}

// Where enable_moe_block, every layer's mixture beside its MLP (Gemma4TextRouter): softmax over the
// router's logits, the top k renormalised, each times its expert's per_expert_scale.
void read_moe_block(KeyReader& k, ModelConfig& c) {
  const char* const keys[] = {"num_experts", "top_k_experts", "moe_intermediate_size"};
  if (!k.boolean("enable_moe_block", false)) {
    for (const char* key : keys) k.find(key);  // read by the MoE block only
    return;
  }
  Experts& e = c.experts;
  e.count = k.integer(keys[0]);
  e.active = k.integer(keys[1]);
  e.ffn_dim = k.integer(keys[2]);
  e.normalize = true;
  e.beside_dense = true;
  e.expert_scales = true;
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
  // Every layer's kind is kept (the sliding ones have their own RoPE); Gemma4TextConfig makes the last full.
  c.sliding_layers.back() = false;
  const bool k_eq_v = k.boolean("attention_k_eq_v", false);
  read_layer_shapes(k, c, k_eq_v);
  read_kv_sharing(k, c);
  if (k_eq_v) {
    c.values_from_keys.resize(static_cast<std::size_t>(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
      c.values_from_keys[static_cast<std::size_t>(l)] = !slides(c, l) && !shares_kv(c, l);
  }
  const std::string per_layer = "hidden_size_per_layer_input";
  c.layer_inputs.dim = k.has(per_layer) ? k.integer(per_layer, 0) : 256;  // null or 0: none
  const int table = k.integer("vocab_size_per_layer_input", 262'144);     // their table's rows, unused without them
  if (c.layer_inputs.dim > 0) c.layer_inputs.vocab = table;
  read_moe_block(k, c);
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
