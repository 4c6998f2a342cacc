// Granite: Llama's block with four scalars: the embedding, the residual updates and the attention
// scores scaled, the logits divided. llama.cpp: embedding, residual and attention scales where
// given (0 or absent: none, and 1/sqrt(head_dim)), logits divided by logit_scale; RoPE unless
// rope.scaling.finetuned is false.
#include <fmt/format.h>

#include "formats/families/granite.h"
#include "formats/families/llama.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

void read_granite_scales_hf(KeyReader& k, ModelConfig& c) {
  c.block.embed_scale = k.number("embedding_multiplier", 1.0);
  c.block.residual_scale = k.number("residual_multiplier", 1.0);
  c.block.attention_scale = k.number("attention_multiplier", 1.0);
  c.block.logit_scale = 1.0 / k.number("logits_scaling", 1.0);
}

void read_granite_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  const auto nonzero = [](double v) { return v != 0.0 ? v : 1.0; };
  c.block.embed_scale = nonzero(float_key(f, prefix + "embedding_scale", 0.0));
  c.block.residual_scale = nonzero(float_key(f, prefix + "residual_scale", 0.0));
  c.block.attention_scale = float_key(f, prefix + "attention.scale", 0.0);
  const auto logit = f.get_float(prefix + "logit_scale");
  if (!logit)
    throw_format_error(fmt::format("{}: missing metadata key '{}logit_scale' (llama.cpp's granite needs it)",
                                   f.path().string(), prefix));
  c.block.logit_scale = 1.0 / *logit;
  if (!f.get_bool(prefix + "rope.scaling.finetuned").value_or(true))
    c.rope_layers.assign(static_cast<std::size_t>(c.n_layers), false);
  c.block.o_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.block.mlp_bias = f.find_tensor("blk.0.ffn_down.bias") != nullptr;
}

const FamilySpec& granite_family() {
  static const FamilySpec spec{
      .family = Family::granite,
      .hf = {.model_types = {"granite"},
             .read =
                 [](KeyReader& k, ModelConfig& c) {
                   read_llama_hf(k, c);
                   read_granite_scales_hf(k, c);
                 },
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"granite"},
               .rope_style = RopeStyle::interleaved,
               .keys = {"embedding_scale", "residual_scale", "attention.scale", "logit_scale"},
               .read = read_granite_gguf,
               .unread = {"attention.sliding_window"}},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
