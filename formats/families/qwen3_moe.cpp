// Qwen3-MoE: Qwen3's attention and a mixture of experts in its FFNs. In a Hugging Face folder a
// layer is MoE unless listed in mlp_only_layers or off the decoder_sparse_step (layer + 1 a
// multiple of it), as Qwen3MoeDecoderLayer chooses; the dense layers' FFN is intermediate_size
// wide, each expert's moe_intermediate_size; the chosen weights renormalised where
// norm_topk_prob. llama.cpp's qwen3moe requires every layer to be MoE.
#include "formats/families/qwen2.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  read_attention_bias(k, c.block);
  c.block.qk_norm = QkNorm::per_head;
  read_qwen2_windows(k, c);
  read_experts(k, c, "num_experts", "num_local_experts", k.integer("moe_intermediate_size"),
               k.boolean("norm_topk_prob", false));
  read_qwen_moe_layers(k, c);
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.qk_norm = QkNorm::per_head;
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
}

}  // namespace

const FamilySpec& qwen3_moe_family() {
  static const FamilySpec spec{
      .family = Family::qwen3_moe,
      .hf = {.model_types = {"qwen3_moe"}, .read = read_hf, .tokenizer_class = "Qwen2Tokenizer"},
      .gguf = {.architectures = {"qwen3moe"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length"},
               .read = read_gguf},
      .llama_cpp = {.names_mapped = true},
      .synth = {.block = [](ModelConfig& c) { c.block.qk_norm = QkNorm::per_head; }, .experts = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
