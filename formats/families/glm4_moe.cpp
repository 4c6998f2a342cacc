// GLM-4.5 (glm4_moe): GLM's attention (q, k and v biases where attention_bias, per-head q/k
// RMSNorm where use_qk_norm, RoPE rotate-half on the leading half of each head by default) and a
// mixture of experts from layer first_k_dense_replace on, with DeepSeek-V3's router: each expert's
// sigmoid, the choice made on it plus e_score_correction_bias within the topk_group best of n_group
// groups, the weights the unbiased sigmoids (renormalised where norm_topk_prob) times
// routed_scaling_factor; n_shared_experts experts' worth of shared expert (moe_intermediate_size
// times that), ungated, beside. The dense layers' FFN is intermediate_size wide.
// Its GGUF (glm4moe): the FFN's norm named post_attention_norm, leading_dense_block_count dense
// layers first, expert_gating_func sigmoid (absent: sigmoid), expert_weights_norm and _scale,
// expert_group_count and _used_count; a file with multi-token-prediction layers
// (nextn_predict_layers) is refused.
#include <fmt/format.h>

#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  c.block.qkv_bias = k.boolean("attention_bias", false);
  if (k.boolean("use_qk_norm", false)) c.block.qk_norm = QkNorm::per_head;
  read_sigmoid_experts_hf(k, c, {});
  // Multi-token-prediction layers after the decoder's: transformers' forward never runs them.
  if (const int mtp = k.integer("num_nextn_predict_layers", 0); mtp < 0)
    k.fail("num_nextn_predict_layers", "a layer count >= 0", std::to_string(mtp));
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  if (const int mtp = int_key(f, prefix + "nextn_predict_layers", 0); mtp > 0)
    throw_format_error(
        fmt::format("{}: metadata '{}nextn_predict_layers' = {}: multi-token-prediction layers are "
                    "not implemented",
                    f.path().string(), prefix, mtp));
  c.block.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  if (f.find_tensor("blk.0.attn_q_norm.weight") != nullptr) c.block.qk_norm = QkNorm::per_head;
  read_sigmoid_experts_gguf(f, prefix, c, 2);  // absent: sigmoid, as llama.cpp's glm4moe takes it
}

}  // namespace

const FamilySpec& glm4_moe_family() {
  static const FamilySpec spec{
      .family = Family::glm4_moe,
      .hf = {.model_types = {"glm4_moe"},
             .read = read_hf,
             .partial_rotary_factor = 0.5,
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"glm4moe"},
               .rope_style = RopeStyle::rotate_half,
               .keys = sigmoid_experts_gguf_keys({"nextn_predict_layers"}),
               .read = read_gguf,
               .partial_rotary = true,
               .layer_name = [](std::string_view name, const ModelConfig&) -> std::string_view {
                 return name == "post_attention_norm.weight" ? "ffn_norm.weight" : name;
               }},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block =
                    [](ModelConfig& c) {
                      c.block.qkv_bias = true;
                      synth_sigmoid_experts(c);
                    },
                .experts = true,
                .ffn_norm = "post_attention_norm"},
  };
  return spec;
}

}  // namespace tapdiff::formats
