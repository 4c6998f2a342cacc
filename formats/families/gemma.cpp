// Gemma: RMSNorm by (1 + w), the embedding scaled by sqrt(hidden_size), GeGLU in its tanh form,
// the output tied. The blocks Gemma 2 and 3 share are here too (formats/families/gemma.h).
#include "formats/families/gemma.h"

#include <cmath>

#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

void read_gemma_hf(KeyReader& k, ModelConfig& c) {
  no_mlp_bias(k);
  read_attention_bias(k, c.block);
  k.require_value("use_bidirectional_attention", false, "causal attention");
  c.block.norm_offset = 1.0;
  c.block.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.dim)));
}

void read_gemma_gguf(ModelConfig& c) {
  c.block.activation = Activation::gelu_tanh;
  c.block.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.dim)));
  c.tied_output = true;
}

void read_gemma2_block_hf(KeyReader& k, ModelConfig& c, double logit_cap) {
  read_gemma_hf(k, c);
  c.block.activation = read_activation(k, "hidden_activation", "gelu_pytorch_tanh");
  c.block.post_norms = true;
  c.block.attention_scale = 1.0 / std::sqrt(k.number("query_pre_attn_scalar", 256));
  c.block.logit_softcap = k.number_or_off("final_logit_softcapping", logit_cap);
}

void read_gemma2_block_gguf(ModelConfig& c, int big_layers) {
  read_gemma_gguf(c);
  c.block.post_norms = true;
  if (c.n_layers == big_layers) c.block.attention_scale = 1.0 / std::sqrt(static_cast<double>(c.dim / c.n_heads));
}

const FamilySpec& gemma_family() {
  static const FamilySpec spec{
      .family = Family::gemma,
      .hf = {.model_types = {"gemma"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_gemma_hf(k, c);
                   c.block.activation = read_activation(k, "hidden_act", "gelu_pytorch_tanh");
                 },
             .tied_by_default = true,
             .embedding_module_scales = true,
             .tokenizer_class = "GemmaTokenizer"},
      .gguf = {.architectures = {"gemma"},
               .rope_style = RopeStyle::rotate_half,
               .read = [](const GgufFile&, const std::string&, ModelConfig& c) { read_gemma_gguf(c); },
               .unread = {"attention.sliding_window"}},
      .llama_cpp = kGemmaLlamaCppGraph,
  };
  return spec;
}

}  // namespace tapdiff::formats
