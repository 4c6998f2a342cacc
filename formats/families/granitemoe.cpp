// Granite-MoE: Granite's four scalars around Mixtral's block: every layer a mixture of experts,
// each intermediate_size wide. Its router takes the softmax over the top k logits, which is the
// softmax over all experts renormalised over the chosen ones (the same value, rounding apart), as
// llama.cpp computes it. Granite-MoE-Shared adds a shared expert shared_intermediate_size wide
// (0: none) without a gate. transformers saves the experts of a layer as block_sparse_moe's
// input_linear [experts, 2 ffn, dim] (gate rows first) and output_linear, the router as
// router.layer, the shared expert as shared_mlp.input_linear and output_linear.
// Its GGUF (granitemoe, both): experts feed_forward_length wide, the shared expert
// expert_shared_feed_forward_length wide where the key is there.
#include "formats/families/granite.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, c.block);
  read_granite_scales_hf(k, c);
  read_experts(k, c, "num_local_experts", "", c.ffn_dim, true);
  c.experts.shared_ffn_dim = k.integer("shared_intermediate_size", 0);
  if (c.experts.shared_ffn_dim < 0)
    k.fail("shared_intermediate_size", "a width >= 0", std::to_string(c.experts.shared_ffn_dim));
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_granite_gguf(f, prefix, c);
  read_gguf_experts(f, prefix, c, {.required = true});
  c.experts.shared_ffn_dim = int_key(f, prefix + "expert_shared_feed_forward_length", 0);
}

}  // namespace

const FamilySpec& granitemoe_family() {
  static const FamilySpec spec{
      .family = Family::granitemoe,
      .hf = {.model_types = {"granitemoe", "granitemoeshared"},
             .read = read_hf,
             .layer_names = {{"block_sparse_moe.input_linear.weight", "mlp.experts.gate_up_proj"},
                             {"block_sparse_moe.output_linear.weight", "mlp.experts.down_proj"},
                             {"block_sparse_moe.router.layer.", "mlp.gate."},
                             {"shared_mlp.input_linear.", "mlp.shared_experts.gate_up_proj."},
                             {"shared_mlp.output_linear.", "mlp.shared_experts.down_proj."}},
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"granitemoe"},
               .rope_style = RopeStyle::interleaved,
               .keys = {"embedding_scale", "residual_scale", "attention.scale", "logit_scale", "expert_count",
                        "expert_used_count", "expert_shared_feed_forward_length"},
               .read = read_gguf,
               .unread = {"attention.sliding_window"}},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
