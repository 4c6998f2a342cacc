// Mixtral: Mistral's block with every FFN a mixture of experts, intermediate_size wide each, the
// chosen weights renormalised (MixtralTopKRouter). llama.cpp writes it as "llama" with experts
// (formats/families/llama.cpp).
#include "formats/families/mistral.h"
#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& mixtral_family() {
  static const FamilySpec spec{
      .family = Family::mixtral,
      .hf = {.model_types = {"mixtral"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_mistral_hf(k, c);
                   read_experts(k, c, "num_local_experts", "", c.ffn_dim, true);
                 },
             .tokenizer_class = "TokenizersBackend"},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
