// Seed-OSS: Llama with attention_bias on q, k and v only (true by default), the o_proj bias its own
// key (attention_out_bias), head_dim 128 where the config leaves it out.
// Its GGUF (seed_oss): the FFN's norm named post_attention_norm; no o or FFN biases.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& seed_oss_family() {
  static const FamilySpec spec{
      .family = Family::seed_oss,
      .hf = {.model_types = {"seed_oss"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   c.block.qkv_bias = k.boolean("attention_bias", true);
                   c.block.o_bias = k.boolean("attention_out_bias", false);
                   c.block.mlp_bias = k.boolean("mlp_bias", false);
                 },
             .head_dim = 128},
      .gguf = {.architectures = {"seed_oss"},
               .rope_style = RopeStyle::rotate_half,
               .layer_name = [](std::string_view name, const ModelConfig&) -> std::string_view {
                 return name == "post_attention_norm.weight" ? "ffn_norm.weight" : name;
               }},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
