// DeepSeek-V2 (deepseek_v2; V2-Lite, V2.5, DeepSeek-Coder-V2): Llama's RMSNorm block with
// multi-head latent attention (formats/families/latent_attention.h), RoPE on interleaved pairs
// (transformers' complex rotation), and from layer first_k_dense_replace on a mixture of
// n_routed_experts: the softmax of the router's logits over every expert, the top
// num_experts_per_tok (topk_method greedy; group_limited_greedy: among the experts of the
// topk_group of n_group groups whose best expert scores highest), their scores times
// routed_scaling_factor, never renormalised (transformers' router does not read norm_topk_prob:
// true is refused), beside n_shared_experts experts' worth of ungated shared expert; experts
// moe_intermediate_size wide, the dense layers intermediate_size.
#include "formats/families/latent_attention.h"
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  read_latent_attention_hf(k, c);
  const int ffn = k.integer("moe_intermediate_size", 1407);
  read_experts(k, c, "n_routed_experts", "", ffn, false);
  k.require_value("norm_topk_prob", false, "DeepSeek-V2's weights as transformers' router gives them, unnormalised");
  const json* method = k.find("topk_method");
  const std::string topk = method != nullptr && method->is_string() ? method->get<std::string>() : "greedy";
  if (topk == "group_limited_greedy") {  // within the topk_group of n_group groups of the best experts
    c.experts.groups = k.integer("n_group");
    c.experts.top_groups = k.integer("topk_group");
    c.experts.group_best = 1;
  } else {
    k.require_value("topk_method", std::string("greedy"), "greedy or group_limited_greedy");
    (void)k.find("n_group");  // read by group_limited_greedy only
    (void)k.find("topk_group");
  }
  c.experts.scale = k.number("routed_scaling_factor", 1.0);
  c.experts.shared_ffn_dim = shared_experts_width(k, "n_shared_experts", 2, ffn);
  read_dense_layers_first(k, c, 0);
}

}  // namespace

const FamilySpec& deepseek_v2_family() {
  static const FamilySpec spec{
      .family = Family::deepseek_v2,
      .hf = {.model_types = {"deepseek_v2"}, .read = read_hf, .rope_style = RopeStyle::interleaved},
  };
  return spec;
}

}  // namespace tapdiff::formats
