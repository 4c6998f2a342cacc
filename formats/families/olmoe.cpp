// OLMoE: Llama's pre-norm block, q and k RMS-normed over the whole projection (as OLMo 2's), and a
// mixture of experts in every layer: softmax over the router's logits, the top k, their weights
// renormalised only where norm_topk_prob (default false); each expert intermediate_size wide.
// clip_qkv, which OlmoeAttention applies after the q/k norms, is refused where set.
// Its GGUF (olmoe): llama.cpp's graph never renormalises the chosen weights, and its experts are
// feed_forward_length wide.
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, c.block);
  c.block.qk_norm = QkNorm::whole;
  if (const double clip = k.number_or_off("clip_qkv", 0.0); clip != 0.0)
    k.fail("clip_qkv", "null (OLMoE clamps q, k and v after their norms, which tapdiff does not compute)",
           std::to_string(clip));
  read_experts(k, c, "num_experts", "", c.ffn_dim, k.boolean("norm_topk_prob", false));
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.qk_norm = QkNorm::whole;
  read_gguf_experts(f, prefix, c, {.renormalise = false, .required = true});
}

}  // namespace

const FamilySpec& olmoe_family() {
  static const FamilySpec spec{
      .family = Family::olmoe,
      .hf = {.model_types = {"olmoe"}, .read = read_hf, .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"olmoe"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count"},
               .read = read_gguf,
               .output_required = true},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block =
                    [](ModelConfig& c) {
                      c.block.qk_norm = QkNorm::whole;
                      c.experts.ffn_dim = c.ffn_dim;  // its GGUF's experts are feed_forward_length wide
                      c.experts.normalize = false;
                    },
                .experts = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
