// Ministral 3 (the text model of Mistral 3's 2512 releases): Mistral's block without biases, YaRN,
// and q after RoPE times Llama 4's temperature, 1 + llama_4_scaling_beta ln(1 + floor(pos /
// original_max_position_embeddings)), both keys of rope_parameters; every layer within
// sliding_window where it is set. head_dim is 128 where the config leaves it out.
// Its GGUF (mistral3): YaRN as llama.cpp computes it, the temperature's beta as
// attention.temperature_scale over rope.scaling.original_context_length; o and FFN biases where
// present; no window (llama.cpp applies none: attention.sliding_window is refused).

#include "formats/families/mistral.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& ministral3_family() {
  static const FamilySpec spec{
      .family = Family::ministral3,
      .hf = {.model_types = {"ministral3"},
             .read = read_mistral_hf,
             .head_dim = 128,
             .llama_4_scaling = true,
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"mistral3"},
               .keys = {"attention.temperature_scale", "rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow",
                        "rope.scaling.yarn_log_multiplier", "rope.scaling.attn_factor"},
               .read =
                   [](const GgufFile& f, const std::string& prefix, ModelConfig& c) {
                     c.block.o_bias = has_layer_tensor(f, "attn_output.bias");
                     c.block.mlp_bias = has_layer_tensor(f, "ffn_up.bias");
                     // llama.cpp's n_ctx_orig_yarn, whatever the RoPE's type
                     if (const double beta = float_key(f, prefix + "attention.temperature_scale", 0.0); beta != 0.0)
                       c.query_temperature = {
                           .beta = beta,
                           .length = int_key(f, prefix + "rope.scaling.original_context_length", c.context_length)};
                   },
               .unread = {"attention.sliding_window"},
               .yarn = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
