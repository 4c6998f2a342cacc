// Ministral (8B): Mistral whose layers slide or attend fully by layer_types (every layer slides
// where it is absent and sliding_window is set).
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& ministral_family() {
  static const FamilySpec spec{
      .family = Family::ministral,
      .hf = {.model_types = {"ministral"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   read_layer_types(k, c, true, [](int) { return true; });
                 },
             .tokenizer_class = "TokenizersBackend"},
  };
  return spec;
}

}  // namespace tapdiff::formats
