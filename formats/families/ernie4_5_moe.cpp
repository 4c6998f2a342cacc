// ERNIE 4.5 MoE: ERNIE 4.5's attention (RoPE on interleaved pairs, the output tied by default) and
// a mixture of experts in layer l where (l + 1) is a multiple of moe_layer_interval and l lies in
// [moe_layer_start_index, moe_layer_end_index] (-1: the last layer): the router's softmax, the
// choice made on it plus moe_statics' e_score_correction_bias, the weights the unbiased softmax
// at the chosen ids renormalised (moe_norm_min, the floor of their sum, taken as none: a floor
// above the default 1e-12 is refused); moe_num_shared_experts experts' worth of ungated shared expert beside.
// use_bias is refused: transformers' experts would add none where its dense layers do.
// Its GGUF (ernie4_5-moe): the mixture from leading_dense_block_count on, interleave_moe_layer_step
// 1 only (llama.cpp's loader and graph disagree on the layers of a larger step), the shared expert
// expert_shared_feed_forward_length wide where the key is there.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void mixture_layers(ModelConfig& c, int first, int last, int step) {
  std::vector<bool> moe(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l)
    moe[static_cast<std::size_t>(l)] = (l + 1) % step == 0 && l >= first && l <= last;
  set_moe_layers(c, std::move(moe));
}

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  if (k.boolean("use_bias", false)) k.fail("use_bias", "false (ERNIE 4.5 MoE's experts add no biases)", "true");
  Experts& e = c.experts;
  e.count = k.integer("moe_num_experts");
  e.active = k.integer("moe_k");
  e.ffn_dim = k.integer("moe_intermediate_size");
  e.normalize = e.selection_bias = true;
  e.shared_ffn_dim = shared_experts_width(k, "moe_num_shared_experts", 0, e.ffn_dim);
  if (const double floor = k.number("moe_norm_min", 1e-12); floor > 1e-12)
    k.fail("moe_norm_min", "at most 1e-12 (a floor on the chosen weights' sum that tapdiff does not apply)",
           std::to_string(floor));
  const int step = k.integer("moe_layer_interval", 1);
  if (step < 1) k.fail("moe_layer_interval", "a step >= 1", std::to_string(step));
  const int last = k.integer("moe_layer_end_index", -1);
  mixture_layers(c, k.integer("moe_layer_start_index", 1), last < 0 ? c.n_layers - 1 : last, step);
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  if (const int step = int_key(f, prefix + "interleave_moe_layer_step", std::nullopt); step != 1)
    throw_format_error(
        fmt::format("{}: metadata '{}interleave_moe_layer_step' = {}: only 1 is implemented (llama.cpp "
                    "loads experts for layers its graph computes densely)",
                    f.path().string(), prefix, step));
  c.experts.shared_ffn_dim = int_key(f, prefix + "expert_shared_feed_forward_length", 0);
  const int dense = int_key(f, prefix + "leading_dense_block_count", 0);
  c.experts.selection_bias = f.find_tensor(fmt::format("blk.{}.exp_probs_b.bias", dense)) != nullptr;
  mixture_layers(c, dense, c.n_layers - 1, 1);
}

}  // namespace

const FamilySpec& ernie4_5_moe_family() {
  static const FamilySpec spec{
      .family = Family::ernie4_5_moe,
      .hf = {.model_types = {"ernie4_5_moe"},
             .read = read_hf,
             .head_dim = 128,
             .rope_style = RopeStyle::interleaved,
             .layer_names = {{"mlp.moe_statics.e_score_correction_bias", "mlp.gate.e_score_correction_bias"}},
             .tied_by_default = true,
             .rope_theta = 500000.0,
             .tokenizer_class = "TokenizersBackend",
             .tokenizer_overrides_folder = true},
      .gguf = {.architectures = {"ernie4_5-moe"},
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length",
                        "expert_shared_feed_forward_length", "interleave_moe_layer_step", "leading_dense_block_count"},
               .read = read_gguf},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
