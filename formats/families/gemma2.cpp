// Gemma 2: Gemma's block with norms after the attention and the FFN, attention scaled by
// query_pre_attn_scalar, soft-caps on the attention scores (50) and the logits (30), the even
// layers sliding (window 4096 unless given). llama.cpp scales q by 1/sqrt(head_dim), or by
// 1/sqrt(n_embd / n_head) for the 27B (46 layers), as it derives it.
#include "formats/families/gemma.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void even_layers_slide(ModelConfig& c) {
  c.sliding_layers.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[static_cast<std::size_t>(l)] = l % 2 == 0;
}

}  // namespace

const FamilySpec& gemma2_family() {
  static const FamilySpec spec{
      .family = Family::gemma2,
      .hf = {.model_types = {"gemma2"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_gemma2_block_hf(k, c, 30.0);
                   c.block.attention_softcap = k.number_or_off("attn_logit_softcapping", 50.0);
                   // Gemma2Config: layers 0, 2, 4, ... slide
                   read_layer_types(k, c, true, [](int layer) { return layer % 2 == 0; });
                 },
             .tied_by_default = true,
             .embedding_module_scales = true,
             .tokenizer_class = "GemmaTokenizer"},
      .gguf = {.architectures = {"gemma2"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"attn_logit_softcapping", "final_logit_softcapping"},
               .read =
                   [](const GgufFile& f, const std::string& prefix, ModelConfig& c) {
                     read_gemma2_block_gguf(c, 46);
                     c.block.attention_softcap = float_key(f, prefix + "attn_logit_softcapping", 50.0);
                     c.block.logit_softcap = float_key(f, prefix + "final_logit_softcapping", 30.0);
                     c.sliding_window = int_key(f, prefix + "attention.sliding_window", 4096);
                     even_layers_slide(c);
                   }},
      .llama_cpp = kGemmaLlamaCppGraph,
  };
  return spec;
}

}  // namespace tapdiff::formats
