// OLMo (the first, "-hf" checkpoints): Llama's block with LayerNorms that have neither weight nor
// bias (epsilon 1e-5, no key: weights of ones stand in), q, k and v clamped to [-clip_qkv,
// clip_qkv] after their biases where clip_qkv is set, attention_bias on q, k, v and o.
// Its GGUF (olmo): no norm tensors, attention.clamp_kqv, q and k permuted by the converter.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

const FamilySpec& olmo_family() {
  static const FamilySpec spec{
      .family = Family::olmo,
      .hf = {.model_types = {"olmo"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   c.block.norm = NormKind::layer;
                   c.block.activation = read_activation(k, "hidden_act", "silu");
                   read_attention_bias(k, c.block);
                   c.block.clip_qkv = k.number("clip_qkv", 0.0);
                 },
             .eps_key = "",
             .eps = 1e-5,
             .weightless_norms = true,
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"olmo"},
               .keys = {"attention.clamp_kqv"},
               .read =
                   [](const GgufFile& f, const std::string& prefix, ModelConfig& c) {
                     c.block.norm = NormKind::layer;
                     c.block.clip_qkv = float_key(f, prefix + "attention.clamp_kqv", 0);
                   },
               .weightless_norms = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
