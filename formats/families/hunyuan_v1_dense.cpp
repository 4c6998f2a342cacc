// Hunyuan (dense): Llama with q and k RMS-normed per head after RoPE (query_layernorm,
// key_layernorm), attention_bias on q, k, v and o, no MLP bias. Its NTK-alpha RoPE (rope_type
// dynamic with an alpha) is not implemented: the key is refused.
// Its GGUF (hunyuan-dense): the converter bakes the alpha into rope.freq_base.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& hunyuan_v1_dense_family() {
  static const FamilySpec spec{
      .family = Family::hunyuan_v1_dense,
      .hf = {.model_types = {"hunyuan_v1_dense"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   read_attention_bias(k, c.block);
                   c.block.qk_norm = QkNorm::per_head;
                   c.block.qk_norm_after_rope = true;
                   k.token("eod_token_id");  // the end of a document: generation only
                 },
             .layer_names = {{"self_attn.query_layernorm.", "self_attn.q_norm."},
                             {"self_attn.key_layernorm.", "self_attn.k_norm."}},
             .ntk_alpha = true},
      .gguf = {.architectures = {"hunyuan-dense"},
               .rope_style = RopeStyle::rotate_half,
               .read =
                   [](const GgufFile&, const std::string&, ModelConfig& c) {
                     c.block.qk_norm = QkNorm::per_head;
                     c.block.qk_norm_after_rope = true;
                   }},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
