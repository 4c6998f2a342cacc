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
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"
#include "model/errors.h"

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

// What every Gemma 4 block has, in both formats.
void gemma4_block(ModelConfig& c) {
  c.block.post_norms = true;
  c.block.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.dim)));
  c.block.attention_scale = 1.0;
  c.block.qk_norm = QkNorm::per_head;
  c.block.v_norm = true;
}

void read_hf(KeyReader& k, ModelConfig& c) {
  if (k.find("num_key_value_heads") == nullptr) c.n_kv_heads = 4;  // Gemma4TextConfig's default
  read_attention_bias(k, c.block);
  const json* bidirectional = k.find("use_bidirectional_attention");
  if (bidirectional != nullptr && *bidirectional != "vision")
    k.unsupported("use_bidirectional_attention", *bidirectional,
                  "causal attention over text (null, or \"vision\": only image tokens attend both ways)");
  gemma4_block(c);
  c.block.activation = read_activation(k, "hidden_activation", "gelu_pytorch_tanh");
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

// The GGUF's metadata error: `key` expected `expected`, found `found`.
[[noreturn]] void refuse_key(const GgufFile& f, const std::string& key, std::string_view expected,
                             const std::string& found) {
  throw_format_error(fmt::format("{}: metadata '{}': expected {}, found {}", f.path().string(), key, expected, found));
}

// Each layer's heads as llama.cpp reads them: key_length (the full layers') and key_length_swa,
// the values as wide (its loader requires it), attention.head_count_kv per layer; RoPE on whole
// heads (rope.dimension_count_swa the sliding ones', the full ones' turned or not by rope_freqs).
void read_gguf_heads(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  const int full = c.head_dim;
  const int swa = int_key(f, prefix + "attention.key_length_swa", std::nullopt);
  if (const int v = int_key(f, prefix + "attention.value_length_swa", swa); v != swa)
    refuse_key(f, prefix + "attention.value_length_swa", fmt::format("the keys' width, {}", swa), std::to_string(v));
  if (const int rotated = int_key(f, prefix + "rope.dimension_count_swa", swa); rotated != swa)
    refuse_key(f, prefix + "rope.dimension_count_swa",
               fmt::format("the sliding heads' width, {} (tapdiff rotates whole heads there)", swa),
               std::to_string(rotated));
  const std::vector<int> kv = layer_int_key(f, prefix + "attention.head_count_kv", c.n_layers, c.n_heads);
  std::vector<AttentionShape> shapes(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l)
    shapes[static_cast<std::size_t>(l)] = {kv[static_cast<std::size_t>(l)], slides(c, l) ? swa : full};
  const auto first_sliding = std::find(c.sliding_layers.begin(), c.sliding_layers.end(), true);
  const AttentionShape base = shapes[static_cast<std::size_t>(
      first_sliding == c.sliding_layers.end() ? 0 : first_sliding - c.sliding_layers.begin())];
  c.n_kv_heads = base.n_kv_heads;
  c.head_dim = base.head_dim;
  if (std::any_of(shapes.begin(), shapes.end(), [&](const AttentionShape& s) { return s != base; }))
    c.layer_shapes = std::move(shapes);
}

// The last attention.shared_kv_layers layers attend over the cache of an earlier layer by
// llama.cpp's rule (its KV cache's reuse for gemma3n and gemma4): a sliding layer the second-last
// layer with a cache of its own, a full layer the last. Refused where that layer is of the other kind.
void read_gguf_kv_sharing(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  const std::string key = prefix + "attention.shared_kv_layers";
  const int shared = int_key(f, key, 0);
  if (shared == 0) return;
  const int first = c.n_layers - shared;
  c.kv_sources.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const int source = l < first ? l : first - (slides(c, l) ? 2 : 1);
    if (source < 0 || slides(c, source) != slides(c, l))
      refuse_key(
          f, key,
          "sharing layers whose cache by llama.cpp's rule (a sliding layer the second-last layer with its "
          "own, a full layer the last) is of their own kind",
          fmt::format("{} of {} layers: layer {} ({}) would read {}", shared, c.n_layers, l,
                      slides(c, l) ? "sliding" : "full", source < 0 ? "no layer" : fmt::format("layer {}'s", source)));
    c.kv_sources[static_cast<std::size_t>(l)] = source;
  }
}

// The mixture beside every layer's MLP where the file has expert_count, as llama.cpp's gemma4
// graph routes it (softmax, the top expert_used_count renormalised, each times its
// ffn_down_exps.scale where the file has them).
void read_gguf_moe_block(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length"});
  Experts& e = c.experts;
  if (e.count == 0) return;
  e.beside_dense = true;
  e.expert_scales = has_layer_tensor(f, "ffn_down_exps.scale");
  for (int l = 0; l < c.n_layers; ++l)
    if (f.find_tensor(fmt::format("blk.{}.ffn_gate_inp.weight", l)) == nullptr)
      throw_format_error(fmt::format(
          "{}: missing tensor: expected blk.{}.ffn_gate_inp.weight (tapdiff computes Gemma 4's mixture in every "
          "layer or none), found none",
          f.path().string(), l));
}

// Gemma 4 as llama.cpp's gemma4 graph computes it (src/models/gemma4.cpp) from what its converter
// writes: GELU in its tanh form whatever the checkpoint's activation; the layers' kinds from
// attention.sliding_window_pattern (as written: llama.cpp does not force the last full), the
// sliding ones rotating at rope.freq_base_swa (rope.freq_base where absent) without the full
// layers' rope_freqs; where a layer has no attn_v, its values are its keys' projection; per-layer
// inputs of embedding_length_per_layer_input channels, their table one row per token; each
// layer's output times its layer_output_scale where the file has them. No biases: llama.cpp's
// graph adds none.
void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  gemma4_block(c);
  c.block.activation = Activation::gelu_tanh;
  c.block.layer_scale = has_layer_tensor(f, "layer_output_scale.weight");
  c.block.logit_softcap = float_key(f, prefix + "final_logit_softcapping", 0.0);
  for (const char* bias : {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias"})
    if (has_layer_tensor(f, bias))
      throw_format_error(
          fmt::format("{}: tensor 'blk.0.{}' is not supported: llama.cpp's gemma4 adds no biases (it refuses the file)",
                      f.path().string(), bias));
  c.block.qkv_bias = false;
  const std::string pattern = prefix + "attention.sliding_window_pattern";
  if (f.find(pattern) == nullptr)
    throw_format_error(
        fmt::format("{}: missing metadata key '{}' (llama.cpp's gemma4 needs it)", f.path().string(), pattern));
  read_gguf_sliding_layers(f, prefix, c, 0);
  c.sliding_window = int_key(f, prefix + "attention.sliding_window", std::nullopt);
  c.sliding_rope = SlidingRope{float_key(f, prefix + "rope.freq_base_swa", c.rope_base), {}};
  read_gguf_heads(f, prefix, c);
  read_gguf_kv_sharing(f, prefix, c);
  c.values_from_keys.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l)
    c.values_from_keys[static_cast<std::size_t>(l)] =
        !shares_kv(c, l) && f.find_tensor(fmt::format("blk.{}.attn_v.weight", l)) == nullptr;
  if (std::none_of(c.values_from_keys.begin(), c.values_from_keys.end(), [](bool b) { return b; }))
    c.values_from_keys.clear();
  c.layer_inputs.dim = int_key(f, prefix + "embedding_length_per_layer_input", std::nullopt);
  if (c.layer_inputs.dim > 0) c.layer_inputs.vocab = c.vocab;  // llama.cpp's table: a row per token
  read_gguf_moe_block(f, prefix, c);
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
      .gguf = {.architectures = {"gemma4"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"attention.sliding_window_pattern", "attention.shared_kv_layers", "rope.freq_base_swa",
                        "attention.key_length_swa", "attention.value_length_swa", "rope.dimension_count_swa",
                        "final_logit_softcapping", "embedding_length_per_layer_input", "expert_count",
                        "expert_used_count", "expert_feed_forward_length"},
               .read = read_gguf,
               .layer_arrays = true},
      .llama_cpp = {.gemma = true, .names_mapped = true, .qk_named_before_rope = true, .attn_out_after_residual = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
