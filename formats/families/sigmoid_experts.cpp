#include "formats/families/sigmoid_experts.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

void read_sigmoid_experts_hf(KeyReader& k, ModelConfig& c, const SigmoidExpertsHf& defaults) {
  const int ffn = k.integer("moe_intermediate_size");
  read_experts(k, c, "n_routed_experts", "", ffn, k.boolean("norm_topk_prob", defaults.normalize));
  Experts& e = c.experts;
  e.score = RouterScore::sigmoid;
  e.selection_bias = true;
  e.groups = k.integer("n_group", 1);
  e.top_groups = k.integer("topk_group", 1);
  e.scale = k.number("routed_scaling_factor", 1.0);
  e.shared_ffn_dim = shared_experts_width(k, "n_shared_experts", defaults.shared_experts, ffn);
  if (defaults.mlp_layer_types)
    set_moe_layers(c, read_mlp_layer_types(k, c.n_layers, k.integer("first_k_dense_replace", defaults.dense_layers)));
  else
    read_dense_layers_first(k, c, defaults.dense_layers);
}

void require_sigmoid_gating(const GgufFile& f, const std::string& prefix, std::optional<int> absent) {
  if (const int g = int_key(f, prefix + "expert_gating_func", absent); g != 2)
    throw_format_error(
        fmt::format("{}: metadata '{}expert_gating_func' = {}: expected 2 (sigmoid), the scores "
                    "this family's graph takes",
                    f.path().string(), prefix, g));
}

void read_sigmoid_experts_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c,
                               std::optional<int> gating) {
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  require_sigmoid_gating(f, prefix, gating);
  read_grouped_experts_gguf(f, prefix, c);
  c.experts.score = RouterScore::sigmoid;
}

void read_grouped_experts_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  Experts& e = c.experts;
  e.normalize = f.get_bool(prefix + "expert_weights_norm").value_or(false);
  const double scale = float_key(f, prefix + "expert_weights_scale", 0.0);  // 0: none, as build_moe_ffn reads it
  e.scale = scale == 0.0 ? 1.0 : scale;
  e.groups = int_key(f, prefix + "expert_group_count", 1);
  e.top_groups = int_key(f, prefix + "expert_group_used_count", 1);
  e.shared_ffn_dim = gguf_shared_experts_width(f, prefix, e.ffn_dim);
  const int dense = int_key(f, prefix + "leading_dense_block_count", 0);
  e.selection_bias = f.find_tensor(fmt::format("blk.{}.exp_probs_b.bias", std::max(dense, 0))) != nullptr;
  dense_layers_first(c, dense);
}

void synth_sigmoid_experts(ModelConfig& c) {
  Experts& e = c.experts;
  e.score = RouterScore::sigmoid;
  e.selection_bias = e.normalize = true;
  e.groups = 4, e.top_groups = 2, e.scale = 2.5;
  e.shared_ffn_dim = e.ffn_dim;
}

std::vector<std::string_view> sigmoid_experts_gguf_keys(std::initializer_list<std::string_view> more) {
  std::vector<std::string_view> keys = {
      "expert_count",        "expert_used_count",        "expert_feed_forward_length", "expert_gating_func",
      "expert_weights_norm", "expert_weights_scale",     "expert_group_count",         "expert_group_used_count",
      "expert_shared_count", "leading_dense_block_count"};
  keys.insert(keys.end(), more.begin(), more.end());
  return keys;
}

}  // namespace tapdiff::formats
