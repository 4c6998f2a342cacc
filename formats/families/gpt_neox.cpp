// GPT-NeoX (Pythia): LayerNorms with biases; attention and a plain FFN (dense_h_to_4h,
// dense_4h_to_h, GELU in its erf form by default) side by side, each from its own norm of the
// layer's input where use_parallel_residual (the default); q, k and v as one matrix with each
// head's q, k and v rows in turn (query_key_value); rotate-half RoPE on a quarter of each head by
// default (4.x: rotary_pct and rotary_emb_base, which rope_parameters' values override; a
// top-level rope_theta or partial_rotary_factor, which transformers ignores for it, is refused); biases on q, k, v and
// o where attention_bias (the default) and always on the FFN.
// Its GGUF (gptneox): use_parallel_residual required, q, k and v in attn_qkv as [Q; K; V], GELU
// in its tanh form (llama.cpp's graph computes that whatever the config said), output.weight required.
#include <fmt/format.h>
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"
#include "model/errors.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& gpt_neox_family() {
  static const FamilySpec spec{
      .family = Family::gpt_neox,
      .hf = {.model_types = {"gpt_neox"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   Block& b = c.block;
                   read_layer_norms_and_plain_ffn(k, b, "hidden_act", "gelu");
                   b.parallel = k.boolean("use_parallel_residual", true) ? Parallel::own_norm : Parallel::none;
                   read_attention_bias(k, b);
                   b.mlp_bias = true;
                 },
             .eps_key = "layer_norm_eps",
             .partial_rotary_factor = 0.25,
             .rope_theta_key = "rotary_emb_base",
             .partial_rotary_key = "rotary_pct",
             .names = {{"gpt_neox.embed_in.", "model.embed_tokens."},
                       {"gpt_neox.layers.", "model.layers."},
                       {"gpt_neox.final_layer_norm.", "model.norm."},
                       {"embed_out.", "lm_head."}},
             .layer_names = {{"attention.query_key_value.", "self_attn.query_key_value."},
                             {"attention.dense.", "self_attn.o_proj."},
                             {"mlp.dense_h_to_4h.", "mlp.up_proj."},
                             {"mlp.dense_4h_to_h.", "mlp.down_proj."}},
             .tokenizer_class = "GPTNeoXTokenizer"},
      .gguf = {.architectures = {"gptneox"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"use_parallel_residual"},
               .read =
                   [](const GgufFile& f, const std::string& prefix, ModelConfig& c) {
                     read_gguf_layer_norms_and_plain_ffn(f, c, Activation::gelu_tanh);
                     const auto parallel = f.get_bool(prefix + "use_parallel_residual");
                     if (!parallel)
                       throw_format_error(
                           fmt::format("{}: missing metadata key '{}use_parallel_residual' (expected "
                                       "a bool)",
                                       f.path().string(), prefix));
                     c.block.parallel = *parallel ? Parallel::own_norm : Parallel::none;
                   },
               .partial_rotary = true,
               .output_required = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
