// ERNIE 4.5 (dense): Llama with RoPE on interleaved pairs, one use_bias for all seven projections,
// the output tied by default, head_dim 128 where the config leaves it out.
// Its GGUF (ernie4_5): an attn_output.bias, which llama.cpp loads and never adds, is refused.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& ernie4_5_family() {
  static const FamilySpec spec{
      .family = Family::ernie4_5,
      .hf = {.model_types = {"ernie4_5"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   c.block.qkv_bias = c.block.o_bias = c.block.mlp_bias = k.boolean("use_bias", false);
                 },
             .head_dim = 128,
             .rope_style = RopeStyle::interleaved,
             .tied_by_default = true,
             .rope_theta = 500000.0,
             .tokenizer_class = "TokenizersBackend",
             .tokenizer_overrides_folder = true},
      .gguf = {.architectures = {"ernie4_5"}},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
