// DeepSeek-V3.2 (deepseek_v32): DeepSeek-V3's layers (formats/families/deepseek_v3.cpp) whose
// latent attention sees, for each query, only the index_topk positions its indexer scores best
// (DeepSeek Sparse Attention: model/config.h SparseIndexer, index_n_heads heads of index_head_dim
// channels). transformers' class keeps q's low rank (q_lora_rank, required), turns the attention's
// RoPE on interleaved pairs (a rope_interleave other than true refused) and the indexer's
// rotate-half; every layer's type is indexed_attention (layer_types); mlp_layer_types, where
// stated, says which layers are mixtures (else first_k_dense_replace).
// No GGUF: llama.cpp's converter writes no deepseek2 file with an indexer.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/families/latent_attention.h"
#include "formats/families/sigmoid_experts.h"
#include "formats/family_spec.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

void read_layer_types(KeyReader& k, int n_layers) {
  const nlohmann::json* types = per_layer_array(k, "layer_types", n_layers, "layer types");
  if (types == nullptr) return;
  for (const nlohmann::json& t : *types)
    if (t != "indexed_attention") k.unsupported("layer_types", t, "indexed_attention in every layer");
}

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_latent_attention_hf(k, c);
  if (c.mla.q_rank == 0) k.fail("q_lora_rank", "a rank >= 1 (the indexer reads q's low-rank input)", "null");
  if (const nlohmann::json* v = k.find("rope_interleave"); v != nullptr && *v != true)
    k.unsupported("rope_interleave", *v, "true (DeepSeek-V3.2's attention turns interleaved pairs)");
  c.rope_style = RopeStyle::interleaved;
  read_sigmoid_experts_hf(k, c, {.normalize = true, .shared_experts = 1, .dense_layers = 3, .mlp_layer_types = true});
  no_mlp_bias(k);  // its config class has the key, its MLP no bias
  read_layer_types(k, c.n_layers);
  c.indexer = {.heads = k.integer("index_n_heads", 64),
               .head_dim = k.integer("index_head_dim", 128),
               .top_k = k.integer("index_topk", 2048)};
  if (c.indexer.heads < 1 || c.indexer.top_k < 1 || c.indexer.head_dim < c.mla.rope_dim)
    k.fail(c.indexer.heads < 1   ? "index_n_heads"
           : c.indexer.top_k < 1 ? "index_topk"
                                 : "index_head_dim",
           "an indexer of one head or more, keeping one position or more, heads at least qk_rope_head_dim wide",
           fmt::format("{} heads of {}, top {}", c.indexer.heads, c.indexer.head_dim, c.indexer.top_k));
  (void)k.integer("num_nextn_predict_layers", 0);  // multi-token-prediction layers transformers never runs
}

}  // namespace

const FamilySpec& deepseek_v32_family() {
  static const FamilySpec spec{
      .family = Family::deepseek_v32,
      .hf = {.model_types = {"deepseek_v32"}, .read = read_hf},
  };
  return spec;
}

}  // namespace tapdiff::formats
