// gpt-oss: Llama's RMSNorm block with biases on q, k, v and o where attention_bias (its default),
// a learned sink logit per head in every attention softmax (self_attn.sinks), layers sliding by
// layer_types (without them: the even layers, sliding_window wide), YaRN by default, and every FFN a
// mixture: the router's logits with their bias, the top num_experts_per_tok of them softmaxed (the
// softmax over all renormalised over the chosen), each expert's gate, up and down with biases and
// the clamped SwiGLU, min(gate, limit) * sigmoid(alpha min(gate, limit)) * (clamp(up, +-limit) + 1)
// of swiglu_alpha and swiglu_limit. transformers saves a layer's experts as mlp.experts.gate_up_proj
// [experts, dim, 2 ffn] with gate and up in alternate columns and down_proj [experts, ffn, dim]
// (model/weights.h's transposed), and the router as mlp.router. Its hidden_act is never used: the
// experts compute the clamped SwiGLU whatever it says, and so does tapdiff.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  Block& b = c.block;
  b.qkv_bias = b.o_bias = k.boolean("attention_bias", true);
  b.attention_sinks = true;
  b.activation = Activation::swiglu_oai;
  b.swiglu = {.alpha = k.number("swiglu_alpha", 1.702), .limit = k.number("swiglu_limit", 7.0)};
  k.find("hidden_act");  // not used by the model (above)
  read_experts(k, c, "num_local_experts", "", c.ffn_dim, true);
  c.experts.router_bias = c.experts.biases = true;
  k.number("sliding_window");  // required: the config class's default (128) is not tapdiff's to assume
  read_layer_types(k, c, true, [](int l) { return l % 2 == 0; });
}

}  // namespace

const FamilySpec& gpt_oss_family() {
  static const FamilySpec spec{
      .family = Family::gpt_oss,
      .hf = {.model_types = {"gpt_oss"},
             .read = read_hf,
             .layer_names = {{"mlp.router.", "mlp.gate."}},
             .rope_theta = 150000.0,
             .rope_required = true,
             .experts_transposed = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
