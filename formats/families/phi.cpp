// Phi-2 (phi): attention and a plain FFN (fc1, fc2) side by side from one LayerNorm (GPT-J's
// block), biases on every projection and on the logits, rotate-half RoPE on part of each head
// (partial_rotary_factor, 0.5 by default). Its q/k LayerNorms (qk_layernorm) are not implemented.
// Its GGUF (phi2): q, k and v in attn_qkv or apart, output.bias; llama.cpp scales q first.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& phi_family() {
  static const FamilySpec spec{
      .family = Family::phi,
      .hf = {.model_types = {"phi"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   Block& b = c.block;
                   read_layer_norms_and_plain_ffn(k, b, "hidden_act", "gelu_new");
                   b.parallel = Parallel::shared_norm;
                   b.qkv_bias = b.o_bias = b.mlp_bias = b.output_bias = true;
                   k.require_value("qk_layernorm", false, "q/k LayerNorms are not implemented");
                 },
             .eps_key = "layer_norm_eps",
             .partial_rotary_factor = 0.5,
             .names = {{"model.final_layernorm.", "model.norm."}},
             .layer_names = {{"self_attn.dense.", "self_attn.o_proj."},
                             {"mlp.fc1.", "mlp.up_proj."},
                             {"mlp.fc2.", "mlp.down_proj."}},
             .tokenizer_class = "GPT2Tokenizer"},
      .gguf = {.architectures = {"phi2"},
               .rope_style = RopeStyle::rotate_half,
               .read =
                   [](const GgufFile& f, const std::string&, ModelConfig& c) {
                     read_gguf_layer_norms_and_plain_ffn(f, c, Activation::gelu_tanh);
                     c.block.parallel = Parallel::shared_norm;
                     c.block.output_bias = true;
                   },
               .partial_rotary = true,
               .output_required = true},
      .llama_cpp = {.scales_q_first = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
