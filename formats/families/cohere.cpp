// Command R (cohere): attention and a gated MLP side by side from one LayerNorm without bias,
// RoPE on interleaved pairs, logits scaled by logit_scale, the output tied by default. Cohere 2
// reads the same keys. Its q/k LayerNorms (use_qk_norm: a weight per head) are not implemented.
// Its GGUF (command-r): logit_scale; the output always token_embd.weight.
#include <fmt/format.h>

#include "formats/families/cohere.h"

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "model/errors.h"

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

void read_gguf_command_r(const GgufFile& f, const std::string& prefix, ModelConfig& c, bool scale_required) {
  c.block.norm = NormKind::layer;
  c.block.parallel = Parallel::shared_norm;
  const std::string key = prefix + "logit_scale";
  if (scale_required && f.find(key) == nullptr)
    throw_format_error(fmt::format("{}: missing metadata key '{}' (llama.cpp's {} requires it)", f.path().string(), key,
                                   prefix.substr(0, prefix.size() - 1)));
  const double scale = float_key(f, key, 0.0);
  c.block.logit_scale = scale != 0.0 ? scale : 1.0;  // llama.cpp's graph scales where it is not 0
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
                          ModelConfig& c) { read_gguf_command_r(f, prefix, c, false); }},
  };
  return spec;
}

}  // namespace tapdiff::formats
