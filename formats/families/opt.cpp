// OPT: a learned position embedding added to the token's, its rows offset by 2, and no RoPE;
// LayerNorms with biases (epsilon 1e-5, no key) before each sublayer; a plain FFN (fc1,
// activation_function, ReLU by default, fc2); biases on every projection where enable_bias (the
// default); the output tied. Norms after the sublayers (do_layer_norm_before false: OPT-350m),
// a projection around the decoder (word_embed_proj_dim apart from hidden_size) and norms without
// weights (layer_norm_elementwise_affine false) are refused.
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& opt_family() {
  static const FamilySpec spec{
      .family = Family::opt,
      .hf = {.model_types = {"opt"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   Block& b = c.block;
                   read_layer_norms_and_plain_ffn(k, b, "activation_function", "relu");
                   b.qkv_bias = b.o_bias = b.mlp_bias = k.boolean("enable_bias", true);
                   b.learned_positions = true;
                   b.position_offset = 2;
                   c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
                   k.require_value("do_layer_norm_before", true, "norms before the sublayers");
                   k.require_value("layer_norm_elementwise_affine", true, "LayerNorms with weights and biases");
                   k.require_value("_remove_final_layer_norm", false, "a final LayerNorm");
                   if (const int width = k.integer("word_embed_proj_dim", c.dim); width != c.dim)
                     k.fail("word_embed_proj_dim", fmt::format("hidden_size, {} (no project_in/out)", c.dim),
                            std::to_string(width));
                   for (const char* training : {"dropout", "activation_dropout", "layerdrop", "init_std"})
                     k.find(training);  // training only
                 },
             .keys = {{"intermediate_size", "ffn_dim"}},
             .eps_key = "",
             .eps = 1e-5,
             .names = {{"model.decoder.embed_tokens.", "model.embed_tokens."},
                       {"model.decoder.embed_positions.", "model.embed_positions."},
                       {"model.decoder.layers.", "model.layers."},
                       {"model.decoder.final_layer_norm.", "model.norm."}},
             .layer_names = {{"self_attn.out_proj.", "self_attn.o_proj."},
                             {"self_attn_layer_norm.", "input_layernorm."},
                             {"final_layer_norm.", "post_attention_layernorm."},
                             {"fc1.", "mlp.up_proj."},
                             {"fc2.", "mlp.down_proj."}},
             .tied_by_default = true,
             .tokenizer_class = "GPT2Tokenizer"},
  };
  return spec;
}

}  // namespace tapdiff::formats
