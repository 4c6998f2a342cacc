// Cohere 2 MoE (Command A's mixture): Command R7B's parallel block whose MLP is, in the "sparse"
// layers of mlp_layer_types, a mixture: the top num_experts_per_tok of the router's logits, then
// a softmax over them (expert_selection_fn softmax: the softmax renormalised), or their sigmoids,
// renormalised where norm_topk_prob (sigmoid); each expert intermediate_size wide; beside it
// num_shared_experts experts' worth of shared MLP, the two summed or averaged
// (shared_expert_combination_strategy). The "dense" layers' MLP is prefix_dense_intermediate_size
// wide. The norms are RMSNorms where rms_norm_eps is set, else LayerNorms without bias. RoPE turns
// the sliding layers, and the dense layers where prefix_dense_sliding_window_pattern is 1. Without
// layer_types and mlp_layer_types (configs written with first_k_dense_replace), the first k layers
// are dense and slide by the prefix pattern, the rest by sliding_window_pattern.
// Its GGUF (cohere2moe): the same block as llama.cpp's graph computes it: dense layers before
// leading_dense_block_count (those always rotate), expert_gating_func softmax (1) or sigmoid (2, or
// absent), expert_weights_norm, expert_weights_scale, a shared expert always averaged; the sliding
// layers as a bool per layer only (llama.cpp's numeric pattern for it puts the full layer first).
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "formats/families/cohere.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  read_cohere_hf(k, c);
  if (k.find("rms_norm_eps") != nullptr) {
    c.block.norm = NormKind::rms;
    c.norm_eps = k.number("rms_norm_eps");
  }
  const int dense_lead = k.integer("first_k_dense_replace", 0);
  const int prefix_pattern = k.integer("prefix_dense_sliding_window_pattern", 1);
  const int pattern = k.integer("sliding_window_pattern", 4);
  if (prefix_pattern < 1 || pattern < 1)
    k.fail(prefix_pattern < 1 ? "prefix_dense_sliding_window_pattern" : "sliding_window_pattern", "a period >= 1",
           std::to_string(std::min(prefix_pattern, pattern)));
  read_layer_types(k, c, true, [&](int l) {
    return l < dense_lead ? (l + 1) % prefix_pattern != 0 : (l - dense_lead + 1) % pattern != 0;
  });
  const std::vector<bool> moe = read_mlp_layer_types(k, c.n_layers, dense_lead);
  c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    c.rope_layers[i] = (c.sliding_window > 0 && slides(c, l)) || (!moe[i] && prefix_pattern == 1);
  }
  Experts& e = c.experts;
  e.ffn_dim = c.ffn_dim;
  c.ffn_dim = k.integer("prefix_dense_intermediate_size", c.ffn_dim);
  e.count = k.integer("num_experts");
  e.active = k.integer("num_experts_per_tok");
  const nlohmann::json* selection = k.find("expert_selection_fn");
  const bool sigmoid = selection != nullptr && *selection == "sigmoid";
  if (selection != nullptr && !sigmoid && *selection != "softmax")
    k.unsupported("expert_selection_fn", *selection, "softmax and sigmoid");
  e.score = sigmoid ? RouterScore::sigmoid : RouterScore::softmax;
  const bool renormalise = k.boolean("norm_topk_prob", true);
  e.normalize = !sigmoid || renormalise;  // a softmax over the chosen logits sums to 1 by itself
  e.shared_ffn_dim = shared_experts_width(k, "num_shared_experts", 0, e.ffn_dim);
  const nlohmann::json* combination = k.find("shared_expert_combination_strategy");
  const bool average = combination == nullptr || *combination == "average";
  if (!average && *combination != "sum")
    k.unsupported("shared_expert_combination_strategy", *combination, "sum and average");
  e.shared_average = average && e.shared_ffn_dim > 0;
  set_moe_layers(c, moe);
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_gguf_command_r(f, prefix, c, true);
  if (f.find(prefix + "attention.layer_norm_rms_epsilon") != nullptr) c.block.norm = NormKind::rms;
  const std::string pattern_key = prefix + "attention.sliding_window_pattern";
  if (const GgufValue* v = f.find(pattern_key); v == nullptr || v->type != gguf::ValueType::array)
    throw_format_error(
        fmt::format("{}: metadata '{}': expected a bool per layer (as llama.cpp's converter writes it), "
                    "found {}",
                    f.path().string(), pattern_key, v == nullptr ? "no such key" : "a number"));
  c.sliding_window = int_key(f, prefix + "attention.sliding_window", std::nullopt);
  read_gguf_sliding_layers(f, prefix, c, 4);
  refuse_sliding_rope_base(f, prefix, c);
  if (const int mtp = int_key(f, prefix + "nextn_predict_layers", 0); mtp != 0)
    throw_format_error(
        fmt::format("{}: metadata '{}nextn_predict_layers' = {} is not supported: tapdiff computes no "
                    "multi-token prediction layers",
                    f.path().string(), prefix, mtp));
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  Experts& e = c.experts;
  if (e.ffn_dim == 0) e.ffn_dim = c.ffn_dim;
  const int gating = int_key(f, prefix + "expert_gating_func", 2);
  if (gating != 1 && gating != 2)
    throw_format_error(
        fmt::format("{}: metadata '{}expert_gating_func' = {} is not supported: tapdiff implements 1 "
                    "(softmax) and 2 (sigmoid)",
                    f.path().string(), prefix, gating));
  e.score = gating == 2 ? RouterScore::sigmoid : RouterScore::softmax;
  e.normalize = f.get_bool(prefix + "expert_weights_norm").value_or(false);
  if (const double scale = float_key(f, prefix + "expert_weights_scale", 0.0); scale != 0.0) e.scale = scale;
  if (const int shared = gguf_shared_experts_width(f, prefix, e.ffn_dim); shared > 0) {
    const int width = int_key(f, prefix + "expert_shared_feed_forward_length", 0);
    e.shared_ffn_dim = width > 0 ? width : shared;
    e.shared_average = true;
  }
  const int dense = int_key(f, prefix + "leading_dense_block_count", 0);
  std::vector<bool> moe(static_cast<std::size_t>(c.n_layers));
  c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    moe[i] = l >= dense;
    c.rope_layers[i] = slides(c, l) || l < dense;
  }
  set_moe_layers(c, std::move(moe));
}

}  // namespace

const FamilySpec& cohere2_moe_family() {
  static const FamilySpec spec{
      .family = Family::cohere2_moe,
      .hf = {.model_types = {"cohere2_moe"},
             .read = read_hf,
             .eps_key = "layer_norm_eps",
             .rope_style = RopeStyle::interleaved,
             .tied_by_default = true},
      .gguf = {.architectures = {"cohere2moe"},
               .keys = {"logit_scale", "attention.sliding_window_pattern", "rope.freq_base_swa",
                        "leading_dense_block_count", "expert_count", "expert_used_count", "expert_feed_forward_length",
                        "expert_shared_feed_forward_length", "expert_shared_count", "expert_weights_norm",
                        "expert_weights_scale", "expert_gating_func", "nextn_predict_layers"},
               .read = read_gguf},
  };
  return spec;
}

}  // namespace tapdiff::formats
