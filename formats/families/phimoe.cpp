// PhiMoE (Phi-3.5-MoE): LayerNorms with biases (eps from rms_norm_eps), q/k/v/o biases where
// attention_bias, the logits' bias where lm_head_bias, Mixtral's window and tensors, and every FFN
// a mixture routed by the sparsemixer as transformers computes it at inference: the two experts of
// the largest logits whatever num_experts_per_tok says (so another value is refused), each
// weighted by the softmax over the experts within 2 router_jitter_noise of it
// (model::Experts::sparsemixer). Its LongRoPE with short_mscale and long_mscale is refused by
// name (the RoPE object's keys).
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  Block& b = c.block;
  b.norm = NormKind::layer;
  b.norm_bias = true;
  b.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, b);
  b.output_bias = k.boolean("lm_head_bias", false);
  c.sliding_window = k.integer("sliding_window", 0);
  read_experts(k, c, "num_local_experts", "", c.ffn_dim, false);
  if (c.experts.active != 2)
    k.unsupported("num_experts_per_tok", c.experts.active,
                  "2 only (PhiMoE's sparsemixer routes every token to two experts whatever the key says)");
  c.experts.sparsemixer = true;
  c.experts.mixer_eps = k.number("router_jitter_noise", 0.01);
  k.number("input_jitter_noise", 0.0);  // noise on the input in training only
}

}  // namespace

const FamilySpec& phimoe_family() {
  static const FamilySpec spec{
      .family = Family::phimoe,
      .hf = {.model_types = {"phimoe"},
             .read = read_hf,
             .tokenizer_class = "TokenizersBackend",
             .tokenizer_overrides_folder = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
