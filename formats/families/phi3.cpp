// Phi-3 and Phi-4: Llama's block without biases, rotate-half RoPE with LongRoPE's factors, q, k
// and v as one matrix and gate and up as one. transformers reads rope_type "yarn" as longrope;
// llama.cpp picks LongRoPE's long or short factors by the run's context (read_longrope) and
// disables the sliding window its converter writes (a warning), so every position is attended to.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& phi3_family() {
  static const FamilySpec spec{
      .family = Family::phi3,
      .hf = {.model_types = {"phi3"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   k.require_value("attention_bias", false, "Phi-3's projections without biases");
                   c.sliding_window = k.integer("sliding_window", 0);
                   if (c.rope_scaling.type == RopeType::yarn)  // Phi3Config turns "yarn" (and "su") into longrope
                     k.fail("rope_parameters",
                            "Phi-3's RoPE as default, linear or longrope (transformers reads 'yarn' as longrope)",
                            "rope_type yarn");
                 },
             .tokenizer_class = "TokenizersBackend",
             .tokenizer_overrides_folder = true},
      .gguf = {.architectures = {"phi3"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"rope.scaling.attn_factor"},
               .read = [](const GgufFile&, const std::string&, ModelConfig& c) { c.sliding_window = 0; },
               .gate_up_in_ffn_up = true,
               .longrope = true},
      .llama_cpp = {.scales_q_first = true, .fused_projections = true, .names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
