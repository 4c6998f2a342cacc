// Qwen2-MoE: Qwen2's attention (biases on q, k and v where qkv_bias, the default) and in its MoE
// layers (Qwen3-MoE's choice of them) a mixture beside a shared expert: softmax over the router's
// logits, the top k, renormalised only where norm_topk_prob (default false); each expert
// moe_intermediate_size wide; the shared expert shared_expert_intermediate_size wide, its output
// scaled by sigmoid(shared_expert_gate x) and added to the mixture's. Without layer_types a config
// slides layer i where use_sliding_window, i even and i < max_window_layers, as Qwen2MoeConfig sets.
// Its GGUF (qwen2moe): every layer a mixture, never renormalised; the shared expert
// expert_shared_feed_forward_length wide (absent: feed_forward_length).
#include "formats/families/qwen2.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  c.block.qkv_bias = k.boolean("qkv_bias", true);
  const bool slides = k.boolean("use_sliding_window", false);
  const int below = k.integer("max_window_layers", 28);  // Qwen2MoeConfig's default
  read_layer_types(k, c, slides, [&](int layer) { return (layer + 1) % 2 == 1 && layer < below; });
  read_experts(k, c, "num_experts", "", k.integer("moe_intermediate_size"), k.boolean("norm_topk_prob", false));
  c.experts.shared_ffn_dim = k.integer("shared_expert_intermediate_size");
  if (c.experts.shared_ffn_dim < 1)
    k.fail("shared_expert_intermediate_size", "a width >= 1 (Qwen2-MoE always has a shared expert)",
           std::to_string(c.experts.shared_ffn_dim));
  c.experts.shared_gate = true;
  read_qwen_moe_layers(k, c);
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.qkv_bias = true;
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .renormalise = false, .required = true});
  c.experts.shared_ffn_dim = int_key(f, prefix + "expert_shared_feed_forward_length", c.ffn_dim);
  c.experts.shared_gate = true;
}

}  // namespace

const FamilySpec& qwen2_moe_family() {
  static const FamilySpec spec{
      .family = Family::qwen2_moe,
      .hf = {.model_types = {"qwen2_moe"}, .read = read_hf, .tokenizer_class = "Qwen2Tokenizer"},
      .gguf = {.architectures = {"qwen2moe"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length",
                        "expert_shared_feed_forward_length"},
               .read = read_gguf},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block =
                    [](ModelConfig& c) {
                      c.block.qkv_bias = true;
                      c.experts.normalize = false;
                      c.experts.shared_ffn_dim = c.ffn_dim / 2;
                      c.experts.shared_gate = true;
                    },
                .experts = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
