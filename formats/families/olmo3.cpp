// OLMo 3: OLMo 2's block with sliding and full layers (layer_types; where absent every 4th layer
// is full) and a RoPE per layer type: 5.x's rope_parameters per type, or 4.x's rope_theta and
// rope_scaling for the full layers with the sliding ones at the default base, 500,000, as
// transformers reads them.
#include "formats/families/olmo2.h"
#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& olmo3_family() {
  static const FamilySpec spec{
      .family = Family::olmo3,
      .hf = {.model_types = {"olmo3"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_olmo2_hf(k, c);
                   read_layer_types(k, c, true, [](int l) { return (l + 1) % 4 != 0; });
                 },
             .rope_theta = 500'000.0,
             .sliding_rope_theta = 500'000.0,
             .tokenizer_class = "TokenizersBackend"},
  };
  return spec;
}

}  // namespace tapdiff::formats
