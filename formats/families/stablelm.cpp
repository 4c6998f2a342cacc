// StableLM: LayerNorms with biases, q/k/v biases where use_qkv_bias, rotate-half RoPE on a quarter
// of each head by default (partial_rotary_factor), attention and MLP side by side from one norm
// where use_parallel_residual. Its per-head q/k LayerNorms (qk_layernorm: a weight per head) are
// not implemented.
// Its GGUF (stablelm): in parallel where the file has no ffn_norm (llama.cpp decides by the
// tensors, not by use_parallel_residual); output.weight required.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& stablelm_family() {
  static const FamilySpec spec{
      .family = Family::stablelm,
      .hf = {.model_types = {"stablelm"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.norm = NormKind::layer;
                   c.block.norm_bias = true;
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   c.block.qkv_bias = k.boolean("use_qkv_bias", false);
                   k.require_value("qk_layernorm", false, "q/k LayerNorms with a weight per head are not implemented");
                   if (k.boolean("use_parallel_residual", false)) c.block.parallel = Parallel::shared_norm;
                 },
             .eps_key = "layer_norm_eps",
             .partial_rotary_factor = 0.25,
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"stablelm"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"use_parallel_residual"},  // llama.cpp reads the block from the tensors instead
               .read =
                   [](const GgufFile& f, const std::string&, ModelConfig& c) {
                     c.block.norm = NormKind::layer;
                     c.block.norm_bias = true;
                     if (!has_layer_tensor(f, "ffn_norm.weight")) c.block.parallel = Parallel::shared_norm;
                   },
               .partial_rotary = true,
               .output_required = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
