// Qwen3: Qwen2 with attention_bias in place of the fixed q/k/v biases, q and k RMS-normed per head.
#include "formats/families/qwen2.h"
#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& qwen3_family() {
  static const FamilySpec spec{
      .family = Family::qwen3,
      .hf = {.model_types = {"qwen3"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   no_mlp_bias(k);
                   read_attention_bias(k, c.block);
                   c.block.qk_norm = QkNorm::per_head;
                   read_qwen2_windows(k, c);
                 },
             .tokenizer_class = "Qwen2Tokenizer"},
      .gguf = {.architectures = {"qwen3"},
               .rope_style = RopeStyle::rotate_half,
               .read = [](const GgufFile&, const std::string&, ModelConfig& c) { c.block.qk_norm = QkNorm::per_head; }},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
