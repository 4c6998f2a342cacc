// Falcon: LayerNorms with biases; a plain FFN (dense_h_to_4h, activation: exact GELU by default,
// dense_4h_to_h); biases on every projection where `bias`; q, k and v as one matrix
// (query_key_value) laid out per KV head: its query heads' rows, then its k's and v's. Three
// layouts of the layer:
//   new_decoder_architecture (40B, 180B): attention and FFN in parallel, each from its own norm
//     (ln_attn, ln_mlp) where num_ln_in_parallel_attn is 2 (or null), from one where it is 1;
//     num_kv_heads KV heads;
//   else parallel_attn (7B): in parallel from one norm (input_layernorm);
//   else (falcon-rw): in sequence (input_layernorm, post_attention_layernorm);
// the old layouts with one KV head where multi_query, else a KV head per query head. ALiBi in
// place of RoPE is refused.
// Its GGUF (falcon): in parallel from attn_norm, or from attn_norm_2 (the attention's) and attn_norm
// (the FFN's) in the new layout; no biases (llama.cpp creates none); GELU in its tanh form.
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  Block& b = c.block;
  read_layer_norms_and_plain_ffn(k, b, "activation", "gelu");
  b.qkv_bias = b.o_bias = b.mlp_bias = k.boolean("bias", false);
  k.require_value("alibi", false, "RoPE (ALiBi is not implemented)");
  const bool new_layout = k.boolean("new_decoder_architecture", false);
  const bool multi_query = k.boolean("multi_query", true), parallel = k.boolean("parallel_attn", true);
  const int norms = k.integer("num_ln_in_parallel_attn", new_layout ? 2 : 1);
  if (new_layout) {
    if (!parallel) k.fail("parallel_attn", "true with new_decoder_architecture", "false");
    if (norms != 1 && norms != 2) k.fail("num_ln_in_parallel_attn", "1 or 2", std::to_string(norms));
    b.parallel = norms == 2 ? Parallel::own_norm : Parallel::shared_norm;
    return;
  }
  b.parallel = parallel ? Parallel::shared_norm : Parallel::none;
  if (multi_query) {
    c.n_kv_heads = 1;
  } else if (c.n_kv_heads != c.n_heads) {
    k.fail("num_kv_heads",
           fmt::format("num_attention_heads, {}, without multi_query or new_decoder_architecture", c.n_heads),
           std::to_string(c.n_kv_heads));
  }
}

}  // namespace

const FamilySpec& falcon_family() {
  static const FamilySpec spec{
      .family = Family::falcon,
      .hf = {.model_types = {"falcon"},
             .read = read_hf,
             .keys = {{"num_key_value_heads", "num_kv_heads"}, {"intermediate_size", "ffn_hidden_size"}},
             .eps_key = "layer_norm_epsilon",
             .ffn_multiple = 4,
             .names = {{"transformer.word_embeddings.", "model.embed_tokens."},
                       {"transformer.h.", "model.layers."},
                       {"transformer.ln_f.", "model.norm."}},
             .layer_names = {{"self_attention.query_key_value.", "self_attn.query_key_value."},
                             {"self_attention.dense.", "self_attn.o_proj."},
                             {"mlp.dense_h_to_4h.", "mlp.up_proj."},
                             {"mlp.dense_4h_to_h.", "mlp.down_proj."},
                             {"ln_attn.", "input_layernorm."},
                             {"ln_mlp.", "post_attention_layernorm."}},
             .tied_by_default = true},
      .gguf = {.architectures = {"falcon"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"tensor_data_layout"},  // the converter's note of its layout, which llama.cpp does not read
               .read =
                   [](const GgufFile& f, const std::string&, ModelConfig& c) {
                     read_gguf_layer_norms_and_plain_ffn(f, c, Activation::gelu_tanh);
                     c.block.qkv_bias = false;
                     c.block.parallel =
                         has_layer_tensor(f, "attn_norm_2.weight") ? Parallel::own_norm : Parallel::shared_norm;
                   },
               // Falcon 40B's ln_attn is attn_norm_2 and its ln_mlp attn_norm
               .layer_name = [](std::string_view name, const ModelConfig& c) -> std::string_view {
                 if (c.block.parallel != Parallel::own_norm) return name;
                 if (name.starts_with("attn_norm_2."))
                   return name == "attn_norm_2.weight" ? "attn_norm.weight" : "attn_norm.bias";
                 if (name.starts_with("attn_norm."))
                   return name == "attn_norm.weight" ? "ffn_norm.weight" : "ffn_norm.bias";
                 return name;
               }},
  };
  return spec;
}

}  // namespace tapdiff::formats
