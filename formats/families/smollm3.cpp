// SmolLM3: Llama's block, and layers without RoPE. no_rope_layers: 1 where a layer rotates q and
// k, 0 where it does not; absent: every no_rope_layer_interval-th layer (counting from 1) has
// none, as SmolLM3Config makes it. Its 4.x rule slides the layers without RoPE where
// use_sliding_window. llama.cpp: every fourth layer without RoPE, its fixed step, which its
// converter writes no key for; no sliding window in its graph.
#include <string>
#include <utility>
#include <vector>

#include "formats/families/llama.h"
#include "formats/family_spec.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  read_llama_hf(k, c);
  std::vector<bool> rope = read_no_rope_layers(k, c);
  const bool use = k.boolean("use_sliding_window", false);
  read_layer_types(k, c, true, [&](int layer) { return use && !rope[static_cast<std::size_t>(layer)]; });
  set_rope_layers(c, std::move(rope));
}

}  // namespace

const FamilySpec& smollm3_family() {
  static const FamilySpec spec{
      .family = Family::smollm3,
      .hf = {.model_types = {"smollm3"}, .read = read_hf, .tied_by_default = true},
      .gguf = {.architectures = {"smollm3"},
               .rope_style = RopeStyle::interleaved,
               .read = [](const GgufFile&, const std::string&,
                          ModelConfig& c) { c.rope_layers = rope_but_every(c.n_layers, 4); },
               .unread = {"attention.sliding_window"}},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
