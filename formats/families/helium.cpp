// Helium: Llama with RoPE on interleaved pairs, attention_bias on q, k and v only, head_dim 128
// where the config leaves it out. Its o_proj maps hidden_size to hidden_size: heads * head_dim must
// be hidden_size.
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& helium_family() {
  static const FamilySpec spec{
      .family = Family::helium,
      .hf = {.model_types = {"helium"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   c.block.qkv_bias = k.boolean("attention_bias", false);
                   c.block.mlp_bias = k.boolean("mlp_bias", false);
                   if (c.q_dim() != c.dim)
                     k.fail("head_dim", fmt::format("num_attention_heads x head_dim = hidden_size, {}", c.dim),
                            fmt::format("{} x {}", c.n_heads, c.head_dim));
                 },
             .head_dim = 128,
             .rope_style = RopeStyle::interleaved,
             .rope_theta = 100000.0},
  };
  return spec;
}

}  // namespace tapdiff::formats
