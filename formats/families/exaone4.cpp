// EXAONE 4: norms after each sublayer only (OLMo 2's placement), q/k RMSNorms per head, sliding
// and full layers (layer_types; where absent every sliding_window_pattern-th layer is full) and,
// where sliding_window is set, RoPE on the sliding layers only: the full layers attend without
// positions. transformers saves a pattern of 0 where sliding_window is null: no layer slides.
// Its GGUF (exaone4): llama.cpp slides only the 64-layer model, so attention.sliding_window is
// refused and every layer is full and rotated.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& exaone4_family() {
  static const FamilySpec spec{
      .family = Family::exaone4,
      .hf = {.model_types = {"exaone4"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   c.block.pre_norms = false;
                   c.block.post_norms = true;
                   c.block.qk_norm = QkNorm::per_head;
                   const int pattern = k.integer("sliding_window_pattern", 4);
                   read_layer_types(k, c, true, [&](int l) { return pattern > 0 && (l + 1) % pattern != 0; });
                   if (c.sliding_window == 0) return;
                   c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
                   for (int l = 0; l < c.n_layers; ++l) c.rope_layers[static_cast<std::size_t>(l)] = slides(c, l);
                 }},
      .gguf = {.architectures = {"exaone4"},
               .rope_style = RopeStyle::rotate_half,
               .read =
                   [](const GgufFile&, const std::string&, ModelConfig& c) {
                     c.block.pre_norms = false;
                     c.block.post_norms = true;
                     c.block.qk_norm = QkNorm::per_head;
                   },
               // llama.cpp slides layers of the 64-layer model only, with a pattern of its own
               .unread = {"attention.sliding_window", "attention.sliding_window_pattern"}},
  };
  return spec;
}

}  // namespace tapdiff::formats
