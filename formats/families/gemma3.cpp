// Gemma 3's text model: Gemma 2's block with q/k norms per head, no final soft-cap by default,
// five sliding layers to one full by default (4.x: sliding_window_pattern), and the sliding
// layers' own RoPE (read with the RoPE parameters: base 10,000, unscaled, where the full layers'
// is 1,000,000). The layer types are kept even where nothing slides, since they choose each
// layer's RoPE. Gemma3Attention keeps attn_logit_softcapping but never passes it to the
// attention, so it caps nothing (llama.cpp's gemma3 graph neither). The multimodal checkpoint
// ("gemma3") holds it under a SigLIP image encoder. llama.cpp scales q by 1/sqrt(n_embd / n_head)
// at 62 layers (the 27B), applies its fixed pattern of sliding layers and requires the window.
#include <string>

#include "formats/families/gemma.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  read_gemma2_block_hf(k, c, 0.0);
  k.find("attn_logit_softcapping");
  c.block.qk_norm = QkNorm::per_head;
  const int pattern = k.integer("sliding_window_pattern", 6);
  k.find("_sliding_window_pattern");  // what 5.x saves of it beside layer_types; Gemma3TextConfig reads it not
  if (pattern < 1) k.fail("sliding_window_pattern", "a pattern >= 1", std::to_string(pattern));
  read_layer_types(k, c, true, [&](int layer) { return (layer + 1) % pattern != 0; });
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_gemma2_block_gguf(c, 62);
  c.block.qk_norm = QkNorm::per_head;
  c.sliding_window = int_key(f, prefix + "attention.sliding_window", std::nullopt);
  c.sliding_layers.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[static_cast<std::size_t>(l)] = l % 6 < 5;
  c.sliding_rope = SlidingRope{10000.0, {}};
}

}  // namespace

const FamilySpec& gemma3_family() {
  static const FamilySpec spec{
      .family = Family::gemma3,
      .hf = {.model_types = {"gemma3_text"},
             .read = read_hf,
             .tied_by_default = true,
             .embedding_module_scales = true,
             .rope_theta = 1'000'000.0,
             .sliding_rope_theta = 10'000.0,
             .sliding_rope_theta_key = "rope_local_base_freq",
             .composites = {{"gemma3",
                             {"vision_config", "mm_tokens_per_image", "boi_token_index", "eoi_token_index",
                              "image_token_index"}}},
             .tokenizer_class = "GemmaTokenizer"},
      .gguf = {.architectures = {"gemma3"}, .rope_style = RopeStyle::rotate_half, .read = read_gguf},
      .llama_cpp = kGemmaLlamaCppGraph,
  };
  return spec;
}

}  // namespace tapdiff::formats
