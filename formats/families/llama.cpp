// Llama: the block every other family is written as a difference from (model/block.h's Block{}).
// Its GGUF (general.architecture "llama") also holds Mixtral: a mixture of experts in every layer
// where expert_count is given.
#include "formats/families/llama.h"

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

void read_llama_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  c.block.mlp_bias = k.boolean("mlp_bias", false);
  read_attention_bias(k, c.block);
}

const FamilySpec& llama_family() {
  static const FamilySpec spec{
      .family = Family::llama,
      .hf = {.model_types = {"llama"}, .read = read_llama_hf},
      .gguf = {.architectures = {"llama"},
               .rope_style = RopeStyle::interleaved,
               .keys = {"expert_count", "expert_used_count"},
               .read = [](const GgufFile& f, const std::string& prefix,
                          ModelConfig& c) { read_gguf_experts(f, prefix, c, {}); }},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block = [](ModelConfig&) {}},
  };
  return spec;
}

}  // namespace tapdiff::formats
