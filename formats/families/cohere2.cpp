// Command R7B (cohere2): Command R whose layers slide or attend fully by layer_types (4.x:
// sliding_window_pattern, every 4th layer full), RoPE on the sliding layers only: the full layers
// attend without positions, and no layer rotates where sliding_window is null.
// Its GGUF (cohere2): llama.cpp's layers 0-2 of every 4 slide (or its sliding_window_pattern) and
// rotate by rope.freq_base; a rope.freq_base_swa apart from it is refused.
#include "formats/families/cohere.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& cohere2_family() {
  static const FamilySpec spec{
      .family = Family::cohere2,
      .hf = {.model_types = {"cohere2"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_cohere_hf(k, c);
                   const int pattern = k.integer("sliding_window_pattern", 4);
                   read_layer_types(k, c, true, [&](int l) { return pattern == 0 || (l + 1) % pattern != 0; });
                   c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
                   for (int l = 0; l < c.n_layers; ++l)
                     c.rope_layers[static_cast<std::size_t>(l)] = c.sliding_window > 0 && slides(c, l);
                 },
             .eps_key = "layer_norm_eps",
             .rope_style = RopeStyle::interleaved,
             .tied_by_default = true,
             .tokenizer_class = "CohereTokenizer"},
      .gguf = {.architectures = {"cohere2"},
               .keys = {"logit_scale", "attention.sliding_window_pattern", "rope.freq_base_swa"},
               .read =
                   [](const GgufFile& f, const std::string& prefix, ModelConfig& c) {
                     read_gguf_command_r(f, prefix, c, true);
                     c.sliding_window = int_key(f, prefix + "attention.sliding_window", std::nullopt);
                     read_gguf_sliding_layers(f, prefix, c, 4);
                     c.rope_layers = c.sliding_layers;
                     refuse_sliding_rope_base(f, prefix, c);
                   }},
  };
  return spec;
}

}  // namespace tapdiff::formats
