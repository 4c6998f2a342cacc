// Arcee (AFM): Llama with a plain FFN, down(act(up(x))), its activation ReLU squared by default.
// Its GGUF (arcee): q and k permuted by the converter, RoPE on interleaved pairs.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& arcee_family() {
  static const FamilySpec spec{
      .family = Family::arcee,
      .hf = {.model_types = {"arcee"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.ffn = Ffn::plain;
                   c.block.activation = read_activation(k, "hidden_act", "relu2");
                   c.block.mlp_bias = k.boolean("mlp_bias", false);
                   read_attention_bias(k, c.block);
                 }},
      .gguf = {.architectures = {"arcee"},
               .read =
                   [](const GgufFile&, const std::string&, ModelConfig& c) {
                     c.block.ffn = Ffn::plain;
                     c.block.activation = Activation::relu2;
                   }},
  };
  return spec;
}

}  // namespace tapdiff::formats
