// Apertus: Llama's block with its norms renamed (attention_layernorm, feedforward_layernorm),
// q/k RMSNorms per head, and a plain FFN whose activation is xIELU with four learned scalars per
// layer (mlp.act_fn: alpha_p, alpha_n, beta, eps; model/xielu.h); RoPE llama3 with base 12,000,000
// by default. Released configs state the block's shape as qk_norm true, post_norm false and
// mlp_bias false, which transformers' Apertus builds whatever they say: those values are read, others
// refused.
// Its GGUF (apertus): xIELU's scalars as the xielu.* arrays, llama3 RoPE as rope_freqs.weight.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& apertus_family() {
  static const FamilySpec spec{
      .family = Family::apertus,
      .hf = {.model_types = {"apertus"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.ffn = Ffn::plain;
                   c.block.activation = read_activation(k, "hidden_act", "xielu");
                   c.block.qk_norm = QkNorm::per_head;
                   read_attention_bias(k, c.block);
                   k.require_value("qk_norm", true, "q and k RMS-normed per head, as transformers' Apertus always is");
                   k.require_value("post_norm", false, "norms before attention and MLP");
                   no_mlp_bias(k);
                 },
             .layer_names = {{"attention_layernorm.", "input_layernorm."},
                             {"feedforward_layernorm.", "post_attention_layernorm."}},
             .rope_theta = 12'000'000.0},
      .gguf = {.architectures = {"apertus"},
               .rope_style = RopeStyle::rotate_half,
               .read =
                   [](const GgufFile& f, const std::string&, ModelConfig& c) {
                     c.block.ffn = Ffn::plain;
                     c.block.activation = Activation::xielu;
                     c.block.qk_norm = QkNorm::per_head;
                     c.block.o_bias = has_layer_tensor(f, "attn_output.bias");
                   },
               .output_required = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
