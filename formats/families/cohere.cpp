// Command R (cohere): attention and a gated MLP side by side from one LayerNorm without bias,
// RoPE on interleaved pairs, logits scaled by logit_scale, the output tied by default. Cohere 2
// reads the same keys. Its q/k LayerNorms (use_qk_norm: a weight per head) are not implemented.
// Its GGUF (command-r): logit_scale; the output always token_embd.weight.
#include "formats/families/cohere.h"

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

void read_cohere_hf(KeyReader& k, ModelConfig& c) {
  Block& b = c.block;
  b.norm = NormKind::layer;
  b.parallel = Parallel::shared_norm;
  b.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, b);
  b.logit_scale = k.number("logit_scale", 0.0625);
}

void read_gguf_command_r(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.norm = NormKind::layer;
  c.block.parallel = Parallel::shared_norm;
  c.block.logit_scale = float_key(f, prefix + "logit_scale", 1.0);
  c.tied_output = true;
}

const FamilySpec& cohere_family() {
  static const FamilySpec spec{
      .family = Family::cohere,
      .hf = {.model_types = {"cohere"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_cohere_hf(k, c);
                   k.require_value("use_qk_norm", false, "q/k LayerNorms with a weight per head are not implemented");
                 },
             .eps_key = "layer_norm_eps",
             .rope_style = RopeStyle::interleaved,
             .tied_by_default = true,
             .rope_theta = 500000.0,
             .tokenizer_class = "CohereTokenizer"},
      .gguf = {.architectures = {"command-r"},
               .keys = {"logit_scale"},
               .read = [](const GgufFile& f, const std::string& prefix,
                          ModelConfig& c) { read_gguf_command_r(f, prefix, c); }},
  };
  return spec;
}

}  // namespace tapdiff::formats
