// MiniMax-M2: q and k RMS-normed over the whole projection (OLMo 2's), rotate-half RoPE on
// partial_rotary_factor of each head, head_dim 128 where the config leaves it out, and in every
// layer a mixture of num_local_experts experts, each intermediate_size wide: a sigmoid router
// choosing on its scores plus the block's e_score_correction_bias, the weights the unbiased
// sigmoids always renormalised. router_jitter_noise acts only in training. transformers saves the
// experts as Mixtral's (block_sparse_moe.experts.E.w1/w3/w2, block_sparse_moe.gate) beside the bias.
// Released checkpoints state the rotated width as rotary_dim, which transformers takes as
// partial_rotary_factor = rotary_dim / head_dim where no factor is stated (a factor beside it must
// agree), and shared_intermediate_size 0 (no shared expert; another width is refused).
// Its GGUF (minimax-m2): expert_gating_func required (2, sigmoid), exp_probs_b.bias in every layer.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void sigmoid_router(Experts& e) {
  e.score = RouterScore::sigmoid;
  e.selection_bias = e.normalize = true;
}

bool states_rotary_factor(KeyReader& k) {
  if (k.find("partial_rotary_factor") != nullptr) return true;
  const auto in = [&](const char* key) {
    const nlohmann::json* p = k.find(key);
    return p != nullptr && p->is_object() && p->contains("partial_rotary_factor");
  };
  return in("rope_parameters") || in("rope_scaling");
}

void read_rotary_dim(KeyReader& k, ModelConfig& c) {
  if (k.find("rotary_dim") == nullptr) return;
  const int stated = k.integer("rotary_dim");
  if (stated == 0 || stated > c.head_dim || stated % 2 != 0)
    k.fail("rotary_dim", fmt::format("an even width of at most head_dim {}", c.head_dim), std::to_string(stated));
  if (!states_rotary_factor(k))
    c.rotary_dim = stated == c.head_dim ? 0 : stated;
  else if (model::rotary_dim(c) != stated)
    k.fail("rotary_dim", fmt::format("{}, the width partial_rotary_factor rotates", model::rotary_dim(c)),
           std::to_string(stated));
}

void read_hf(KeyReader& k, ModelConfig& c) {
  read_rotary_dim(k, c);
  if (const int shared = k.integer("shared_intermediate_size", 0); shared != 0)
    k.unsupported("shared_intermediate_size", shared, "0 only (MiniMax-M2 has no shared expert)");
  c.block.activation = read_activation(k, "hidden_act", "silu");
  c.block.qk_norm = QkNorm::whole;
  read_experts(k, c, "num_local_experts", "", c.ffn_dim, true);
  sigmoid_router(c.experts);
  k.number("router_jitter_noise", 0.0);
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  c.block.qk_norm = QkNorm::whole;
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  require_sigmoid_gating(f, prefix, std::nullopt);
  sigmoid_router(c.experts);
}

}  // namespace

const FamilySpec& minimax_m2_family() {
  static const FamilySpec spec{
      .family = Family::minimax_m2,
      .hf = {.model_types = {"minimax_m2"},
             .read = read_hf,
             .head_dim = 128,
             .layer_names = {{"block_sparse_moe.e_score_correction_bias", "mlp.gate.e_score_correction_bias"},
                             {"mlp.e_score_correction_bias", "mlp.gate.e_score_correction_bias"}},
             .tokenizer_class = "TokenizersBackend"},
      .gguf = {.architectures = {"minimax-m2"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length", "expert_gating_func"},
               .read = read_gguf,
               .partial_rotary = true},
      .llama_cpp = {.names_mapped = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
