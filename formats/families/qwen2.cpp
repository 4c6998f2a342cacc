// Qwen2: rotate-half RoPE, biases on q, k and v, sliding windows where the config turns them on.
#include "formats/families/qwen2.h"

#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

void read_qwen2_windows(KeyReader& k, ModelConfig& c) {
  const bool use = k.boolean("use_sliding_window", false);
  const int from = k.integer("max_window_layers", 28);  // Qwen2Config's default
  read_layer_types(k, c, use, [&](int layer) { return layer >= from; });
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
