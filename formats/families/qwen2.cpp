// Qwen2: rotate-half RoPE, biases on q, k and v, sliding windows where the config turns them on.
#include "formats/families/qwen2.h"

#include <algorithm>

#include <fmt/format.h>

#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;
using nlohmann::json;

void read_qwen2_windows(KeyReader& k, ModelConfig& c) {
  const bool use = k.boolean("use_sliding_window", false);
  const int from = k.integer("max_window_layers", 28);  // Qwen2Config's default
  read_layer_types(k, c, use, [&](int layer) { return layer >= from; });
}

void read_qwen_moe_layers(KeyReader& k, ModelConfig& c) {
  const int step = k.integer("decoder_sparse_step", 1);
  if (step < 1) k.fail("decoder_sparse_step", "a step >= 1", std::to_string(step));
  std::vector<bool> moe(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) moe[static_cast<std::size_t>(l)] = (l + 1) % step == 0;
  if (const json* dense = k.find("mlp_only_layers")) {
    if (!dense->is_array()) k.fail("mlp_only_layers", "an array of layer indices", json_excerpt(*dense));
    for (const json& l : *dense) {
      if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() >= c.n_layers)
        k.fail("mlp_only_layers", fmt::format("layer indices below num_hidden_layers ({})", c.n_layers),
               json_excerpt(*dense));
      moe[l.get<std::size_t>()] = false;
    }
  }
  if (c.experts.count == 0) moe.assign(moe.size(), false);
  set_moe_layers(c, std::move(moe));  // every layer dense: Qwen3's block
}

const FamilySpec& qwen2_family() {
  static const FamilySpec spec{
      .family = Family::qwen2,
      .hf = {.model_types = {"qwen2"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   no_mlp_bias(k);
                   c.block.qkv_bias = true;
                   read_qwen2_windows(k, c);
                 },
             .tokenizer_class = "Qwen2Tokenizer",
             .tokenizer_overrides_folder = true},
      .gguf = {.architectures = {"qwen2"}, .rope_style = RopeStyle::rotate_half},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block = [](ModelConfig& c) { c.block.qkv_bias = true; }},
  };
  return spec;
}

}  // namespace tapdiff::formats
