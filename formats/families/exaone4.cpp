// EXAONE 4: norms after each sublayer only (OLMo 2's placement), q/k RMSNorms per head, sliding
// and full layers (layer_types; where absent, sliding_window_pattern: a number n, every n-th layer
// full, or as released configs write it a string of L (sliding) and G (full) repeated) and,
// where sliding_window is set, RoPE on the sliding layers only: the full layers attend without
// positions. transformers saves a pattern of 0 where sliding_window is null: no layer slides.
// Its GGUF (exaone4): llama.cpp slides only the 64-layer model, so attention.sliding_window is
// refused and every layer is full and rotated.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "formats/family_spec.h"
#include "formats/hf_keys.h"
#include "model/json_input.h"

namespace tapdiff::formats {

using namespace model;

namespace {

std::function<bool(int)> read_pattern(KeyReader& k) {
  const nlohmann::json* p = k.find("sliding_window_pattern");
  if (p != nullptr && p->is_string()) {
    const std::string letters = p->get<std::string>();
    if (letters.empty() || letters.find_first_not_of("LG") != std::string::npos)
      k.fail("sliding_window_pattern", "a number or a string of L (sliding) and G (full)", json_excerpt(*p));
    return [letters](int l) { return letters[static_cast<std::size_t>(l) % letters.size()] == 'L'; };
  }
  const int pattern = k.integer("sliding_window_pattern", 4);
  return [pattern](int l) { return pattern > 0 && (l + 1) % pattern != 0; };
}

}  // namespace

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
                   read_layer_types(k, c, true, read_pattern(k));
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
