// GPT-2: a learned position embedding added to the token's (wpe) and no RoPE; LayerNorms with
// biases; q, k and v as one matrix (c_attn) and every layer matrix stored [in, out] (Conv1D,
// transposed as it loads); a plain FFN (c_fc, activation_function, c_proj); biases on every
// projection; the output tied. Its config names the sizes n_embd, n_layer, n_head, n_inner (null:
// 4 n_embd) and n_positions. scale_attn_by_inverse_layer_idx is refused; a checkpoint saved
// without the "transformer." prefix (the base model) reads the same.
// Its GGUF (gpt2): position_embd, q, k and v in attn_qkv, GELU in its tanh form, biases everywhere.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& gpt2_family() {
  static const FamilySpec spec{
      .family = Family::gpt2,
      .hf = {.model_types = {"gpt2"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   Block& b = c.block;
                   read_layer_norms_and_plain_ffn(k, b, "activation_function", "gelu_new");
                   b.qkv_bias = b.o_bias = b.mlp_bias = true;
                   b.learned_positions = true;
                   c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
                   if (!k.boolean("scale_attn_weights", true)) b.attention_scale = 1;
                   k.require_value("scale_attn_by_inverse_layer_idx", false,
                                   "scores scaled by 1/sqrt(head_dim) or not at all, the same in every layer");
                   k.boolean("reorder_and_upcast_attn", false);  // the scores' dtype in half precision: f64 alike
                   k.integer("n_ctx", 0);  // older configs' copy of n_positions, which transformers ignores
                   for (const char* head : {"summary_type", "summary_use_proj", "summary_activation",
                                            "summary_proj_to_labels", "summary_first_dropout"})
                     k.find(head);  // GPT2DoubleHeadsModel's classification head, not the language model's
                 },
             .keys = {{"hidden_size", "n_embd"},
                      {"num_hidden_layers", "n_layer"},
                      {"num_attention_heads", "n_head"},
                      {"intermediate_size", "n_inner"},
                      {"max_position_embeddings", "n_positions"}},
             .eps_key = "layer_norm_epsilon",
             .ffn_multiple = 4,
             .conv1d = true,
             .names = {{"transformer.wte.", "model.embed_tokens."},
                       {"transformer.wpe.", "model.embed_positions."},
                       {"transformer.h.", "model.layers."},
                       {"transformer.ln_f.", "model.norm."},
                       {"wte.", "model.embed_tokens."},
                       {"wpe.", "model.embed_positions."},
                       {"h.", "model.layers."},
                       {"ln_f.", "model.norm."}},
             .layer_names = {{"ln_1.", "input_layernorm."},
                             {"ln_2.", "post_attention_layernorm."},
                             {"attn.c_attn.", "self_attn.qkv_proj."},
                             {"attn.c_proj.", "self_attn.o_proj."},
                             {"mlp.c_fc.", "mlp.up_proj."},
                             {"mlp.c_proj.", "mlp.down_proj."}},
             .tied_by_default = true,
             .tokenizer_class = "GPT2Tokenizer"},
      .gguf = {.architectures = {"gpt2"},
               .read =
                   [](const GgufFile& f, const std::string&, ModelConfig& c) {
                     read_gguf_layer_norms_and_plain_ffn(f, c, Activation::gelu_tanh);
                     c.block.learned_positions = true;
                     c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
                   }},
  };
  return spec;
}

}  // namespace tapdiff::formats
