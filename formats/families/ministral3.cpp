// Ministral 3 (the text model of Mistral 3's 2512 releases): Mistral's block without biases, YaRN,
// and q after RoPE times Llama 4's temperature, 1 + llama_4_scaling_beta ln(1 + floor(pos /
// original_max_position_embeddings)), both keys of rope_parameters; every layer within
// sliding_window where it is set. head_dim is 128 where the config leaves it out.
#include "formats/families/mistral.h"
#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& ministral3_family() {
  static const FamilySpec spec{
      .family = Family::ministral3,
      .hf = {.model_types = {"ministral3"},
             .read = read_mistral_hf,
             .head_dim = 128,
             .llama_4_scaling = true,
             .tokenizer_class = "TokenizersBackend"},
  };
  return spec;
}

}  // namespace tapdiff::formats
