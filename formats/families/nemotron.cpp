// Nemotron: LayerNorms with biases that scale by (1 + w) ("layernorm1p"), a plain FFN with ReLU
// squared, rotate-half RoPE on part of each head (partial_rotary_factor, 0.5 by default).
// Its GGUF (nemotron): the converter stores 1 + w; o and FFN biases where present.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& nemotron_family() {
  static const FamilySpec spec{
      .family = Family::nemotron,
      .hf = {.model_types = {"nemotron"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_layer_norms_and_plain_ffn(k, c.block, "hidden_act", "relu2");
                   c.block.norm_offset = 1;
                   c.block.mlp_bias = k.boolean("mlp_bias", false);
                   read_attention_bias(k, c.block);
                 },
             .eps_key = "norm_eps",
             .partial_rotary_factor = 0.5,
             .tokenizer_class = "TokenizersBackend",
             .tokenizer_overrides_folder = true},
      .gguf = {.architectures = {"nemotron"},
               .rope_style = RopeStyle::rotate_half,
               .read = [](const GgufFile& f, const std::string&,
                          ModelConfig& c) { read_gguf_layer_norms_and_plain_ffn(f, c, Activation::relu2); },
               .partial_rotary = true,
               .output_required = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
