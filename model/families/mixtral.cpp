// Mixtral: Mistral's block with every FFN a mixture of experts, intermediate_size wide each, the
// chosen weights renormalised (MixtralTopKRouter). llama.cpp writes it as "llama" with experts
// (model/families/llama.cpp).
#include "model/families/mistral.h"
#include "model/family.h"

namespace tapdiff::model {

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
  };
  return spec;
}

}  // namespace tapdiff::model
