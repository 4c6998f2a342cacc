// Mistral: Llama's block without MLP biases, every layer within a sliding window. Mistral 3
// (Mistral-Small-3.1, Devstral's multimodal parent) is Mistral under a Pixtral image encoder.
#include "formats/families/mistral.h"

#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

void read_mistral_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  c.sliding_window = k.integer("sliding_window", 0);
}

const FamilySpec& mistral_family() {
  static const FamilySpec spec{
      .family = Family::mistral,
      .hf = {.model_types = {"mistral"},
             .read = read_mistral_hf,
             .composites = {{"mistral3",
                             {"vision_config", "image_token_index", "projector_hidden_act", "vision_feature_layer",
                              "multimodal_projector_bias", "spatial_merge_size"}}},
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"mistral"}, .rope_style = RopeStyle::interleaved},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
