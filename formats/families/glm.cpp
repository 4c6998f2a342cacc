// GLM (glm-4-9b-chat-hf): Llama with q/k/v biases (attention_bias, true by default; never on
// o_proj), gate and up as one matrix (gate_up_proj, the gate's rows first), RoPE on interleaved
// pairs of part of each head (partial_rotary_factor, 0.5 by default).
// Its GGUF (chatglm): gate and up in ffn_up, RoPE on interleaved pairs of rope.dimension_count channels.
#include "formats/families/glm.h"

#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

void read_glm_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  c.block.qkv_bias = k.boolean("attention_bias", true);
}

const FamilySpec& glm_family() {
  static const FamilySpec spec{
      .family = Family::glm,
      .hf = {.model_types = {"glm"},
             .read = read_glm_hf,
             .head_dim = 128,
             .rope_style = RopeStyle::interleaved,
             .partial_rotary_factor = 0.5,
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"chatglm"}, .gate_up_in_ffn_up = true, .partial_rotary = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
