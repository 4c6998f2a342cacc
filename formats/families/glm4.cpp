// GLM-4 (GLM-4-9B-0414): GLM with sandwich norms: each sublayer's output normed before its
// residual add (post_self_attn_layernorm, post_mlp_layernorm) beside the norms before them, its
// post_attention_layernorm the norm before the MLP.
// Its GGUF (glm4): gate and up in ffn_up, RoPE on interleaved pairs of rope.dimension_count channels.
#include "formats/families/glm.h"
#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& glm4_family() {
  static const FamilySpec spec{
      .family = Family::glm4,
      .hf = {.model_types = {"glm4"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_glm_hf(k, c);
                   c.block.post_norms = true;
                 },
             .head_dim = 128,
             .rope_style = RopeStyle::interleaved,
             .partial_rotary_factor = 0.5,
             .layer_names = {{"post_attention_layernorm.", "pre_feedforward_layernorm."},
                             {"post_self_attn_layernorm.", "post_attention_layernorm."},
                             {"post_mlp_layernorm.", "post_feedforward_layernorm."}},
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"glm4"},
               .read = [](const GgufFile&, const std::string&, ModelConfig& c) { c.block.post_norms = true; },
               .gate_up_in_ffn_up = true,
               .partial_rotary = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
