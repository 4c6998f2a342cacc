#pragma once
// What the network is: the hyper-parameters of a Llama-family decoder, whatever file it came from.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/block.h"
#include "model/family.h"
#include "model/ops.h"
#include "model/rope.h"

namespace tapdiff::model {

// RopeStyle (how RoPE pairs a head's channels) is in model/rope.h.

// The RoPE of the sliding layers where a family gives them their own (Gemma 3: a local base of
// 10,000, without the full layers' scaling).
struct SlidingRope {
  double base = 10000.0;
  RopeScaling scaling;
};

// How a router's logits score the experts: the choice is made on the scores, the weights taken from them.
enum class RouterScore : std::uint8_t {
  softmax,  // softmax over every expert (Mixtral, the Qwen MoEs, OLMoE, Granite-MoE)
  sigmoid,  // each expert's sigmoid (GLM-4.5, DeepSeek-V3)
};

// The mixture-of-experts FFN: per token a router scores every expert, the `active` best (top-k)
// run, and their outputs are summed weighted by their scores (renormalised to sum 1 where
// `normalize`, then times `scale`). Where `groups` > 1 the experts lie in that many equal groups
// and the choice is limited to the experts of the `top_groups` groups whose `group_best` best
// choice scores sum highest (DeepSeek-V3's noaux_tc: two; DeepSeek-V2's group_limited_greedy: one).
struct Experts {
  int count = 0;                // experts of a MoE layer; 0: a dense model
  int active = 0;               // experts per token
  int ffn_dim = 0;              // one expert's FFN width
  bool normalize = false;       // the chosen weights renormalised (Mixtral; Qwen3-MoE's norm_topk_prob)
  std::vector<bool> layers;     // [n_layers]: which layers are MoE (Qwen3-MoE's dense layers); empty: all
  int shared_ffn_dim = 0;       // a shared expert beside the routed ones, this wide, every token through it; 0: none
  bool shared_gate = false;     // the shared expert's output scaled by sigmoid(x . w) (Qwen2-MoE's shared_expert_gate)
  bool shared_average = false;  // moe_sum the mean of the mixture and the shared expert (Cohere 2 MoE), not their sum
  RouterScore score = RouterScore::softmax;
  bool selection_bias = false;  // a per-expert bias added to the scores the choice is made on only
  // A sigmoid router whose top k is taken of its logits, not of their sigmoids (transformers' Llama 4:
  // the same choice in exact arithmetic, not where low precision rounds the sigmoids near 1 alike)
  bool choice_on_logits = false;
  bool router_bias =
      false;            // the router's logits carry a bias (moe_router_b: gpt-oss), the choice and weights made on them
  bool biases = false;  // each expert's gate, up and down carry biases (expert_b_gate ...: gpt-oss)
  int groups = 1;       // the experts in this many groups (n_group) ...
  int top_groups = 1;   // ... of which the choice may take this many (topk_group) ...
  int group_best = 2;   // ... each group scored by the sum of its this many best choice scores
  double scale = 1.0;   // the chosen weights times this (routed_scaling_factor)
  // Each chosen expert reads its token's input times its weight, and the experts' outputs are added
  // unweighted (Llama 4: the input scaled by the sigmoid of the expert's logit).
  bool weights_scale_input = false;
  // PhiMoE's sparsemixer at inference (two experts): the top expert's weight the softmax over the
  // experts whose logit lies within 2 mixer_eps of the top one (relative: (top - s) / max(|s|,
  // top)), the second's the same over the others relative to its own logit.
  bool sparsemixer = false;
  double mixer_eps = 0.0;
  // The mixture beside the layer's dense FFN, not in its place (Gemma 4's MoE block): the router
  // reads attn_residual through moe_router_norm (RMS without a weight, times its own scale and
  // 1/sqrt(dim)), the experts their own norm of it (moe_norm); their output normed (moe_post_norm)
  // is added to the dense FFN's normed output (dense_post_norm) in ffn_sum.
  bool beside_dense = false;
  bool expert_scales = false;  // each chosen weight times its expert's learned scale (moe_expert_scale)
  friend bool operator==(const Experts&, const Experts&) = default;
};

// Multi-head latent attention (DeepSeek-V2/V3): q from q_proj, or through a low-rank pair
// (q_a_proj, its RMS norm q_a_norm, then q_proj) where q_rank > 0; keys and values from one latent:
// kv_a_proj gives kv_rank latent channels then rope_dim channels of a key part shared by every head;
// kv_a_norm (RMS) of the latent feeds k_proj (each head's nope_dim no-RoPE key channels) and v_proj
// (each head's v_dim value channels). A head's key is its k_proj channels then the shared part after
// RoPE (rope_k); its query q_proj's nope_dim channels then rope_dim rotated ones (head_dim is
// nope_dim + rope_dim, rotary_dim rope_dim). What an MLA engine caches is kv_a_norm and rope_k.
struct LatentAttention {
  int q_rank = 0;   // q_lora_rank; 0: q_proj reads attn_norm's output
  int kv_rank = 0;  // kv_lora_rank; 0: the model has no latent attention
  int nope_dim = 0;
  int rope_dim = 0;
  int v_dim = 0;
  bool biases = false;     // q_a_proj and kv_a_proj carry biases (attention_bias)
  double norm_eps = 1e-6;  // q_a_norm's and kv_a_norm's (transformers' DeepseekV3RMSNorm default, not rms_norm_eps)
  friend bool operator==(const LatentAttention&, const LatentAttention&) = default;
};

// DeepSeek-V3.2's sparse attention (DSA) beside latent attention with a q rank: an indexer scores
// every cached position for each query and the attention sees only the top_k best (all of them
// while there are no more). Its query, heads of head_dim, comes from q_a_norm (idx_q_proj), its
// key, one of head_dim, from attn_norm's output (idx_k_proj) through a LayerNorm with a bias (eps
// 1e-6: idx_k_norm); both rotate-half turned on their leading rope_dim channels (idx_rope_q,
// idx_rope_k) at the latent attention's frequencies; per-head weights from attn_norm's output
// (idx_weights). Position p's score for query t: sum_h w[t,h] heads^-1/2 relu(q[t,h] . k[p]
// head_dim^-1/2). The op sequence: model/ops.def's idx_q_proj ... idx_ids.
struct SparseIndexer {
  int heads = 0;  // index_n_heads; 0: no indexer
  int head_dim = 0;
  int top_k = 0;
  static constexpr double kNormEps = 1e-6;
  friend bool operator==(const SparseIndexer&, const SparseIndexer&) = default;
};

// The attention heads of one layer where they differ from the model's n_kv_heads and head_dim
// (Gemma 4's full layers: num_global_key_value_heads of global_head_dim channels). Every layer has
// n_heads query heads.
struct AttentionShape {
  int n_kv_heads = 0;
  int head_dim = 0;
  friend bool operator==(const AttentionShape&, const AttentionShape&) = default;
};

// Gemma 4's per-layer inputs (hidden_size_per_layer_input): each layer ends by adding its output
// gated through `dim` channels by an input of its own, made once per token from a table of `vocab`
// rows (each n_layers * dim wide, the layer's slice times sqrt(dim)) and from the embedding
// (projected to n_layers * dim, times 1/sqrt(model dim), the layer's slice RMS-normed), their sum
// times 1/sqrt(2). The op sequence: model/ops.def's ple_input ... ple_residual.
struct LayerInputs {
  int dim = 0;    // channels per layer; 0: none
  int vocab = 0;  // the table's rows (vocab_size_per_layer_input)
  friend bool operator==(const LayerInputs&, const LayerInputs&) = default;
};

// The scales of a layer's input of them: the projection's 1/sqrt(dim), the table's sqrt(P) (as
// transformers keeps it: a float32 tensor), the sum's 1/sqrt(2).
struct LayerInputScales {
  double projection = 1, table = 1, sum = 1;
};
LayerInputScales layer_input_scales(const ModelConfig& config);

struct ModelConfig {
  Family family = Family::llama;
  int n_layers = 0;
  int dim = 0;         // residual stream width
  int n_heads = 0;     // query heads
  int n_kv_heads = 0;  // key/value heads (GQA: n_heads % n_kv_heads == 0)
  int head_dim = 0;
  std::vector<AttentionShape> layer_shapes;  // [n_layers]: each layer's heads; empty: n_kv_heads and head_dim in all
  int ffn_dim = 0;
  std::vector<int> ffn_dims;  // [n_layers]: each layer's dense FFN width where they differ (Gemma 4's double-wide
                              // MLP); empty: ffn_dim in all
  int vocab = 0;
  int context_length = 0;            // trained context; 0 = unknown
  int sliding_window = 0;            // attention window in tokens of the layers that slide; 0 = full causal attention
  std::vector<bool> sliding_layers;  // [n_layers]: which layers slide (Gemma 2, Qwen2 mixes); empty: all
  int attention_chunk = 0;           // > 0: a query of the chunked layers sees the keys of its own chunk of this
                                     // many positions only (Llama 4's attention_chunk_size); 0: none
  std::vector<bool> chunked_layers;  // [n_layers]: which layers are chunked; empty: all
  std::vector<bool> rope_layers;     // [n_layers]: which layers rotate q and k (SmolLM3); empty: all
  // [n_layers]: the layers whose values are k_proj's output, their v_proj k_proj's matrix (Gemma 4's
  // attention_k_eq_v on its full layers); empty: none
  std::vector<bool> values_from_keys;
  // [n_layers]: the layer whose keys and values each layer attends over: itself, or an earlier
  // layer of its kind whose cache it reads with no k/v ops of its own (Gemma 4's
  // num_kv_shared_layers); empty: every layer its own
  std::vector<int> kv_sources;
  double rope_base = 10000.0;
  int rotary_dim = 0;  // leading channels of a head that RoPE rotates; 0 = head_dim
  RopeScaling rope_scaling;
  std::optional<SlidingRope> sliding_rope;  // the sliding layers' RoPE; absent: rope_base and rope_scaling
  QueryTemperature query_temperature;       // Llama 4's, Ministral 3's (model/rope.h)
  double norm_eps = 1e-5;
  RopeStyle rope_style = RopeStyle::interleaved;
  bool tied_output = false;  // logits use the embedding matrix
  Block block;               // what each layer computes (model/block.h)
  Experts experts;           // count > 0: the FFN of the MoE layers
  LatentAttention mla;       // kv_rank > 0: every layer's attention is latent (model/config.h LatentAttention)
  SparseIndexer indexer;     // heads > 0: every layer's latent attention keeps the indexer's top_k positions
  LayerInputs layer_inputs;  // dim > 0: each layer ends with its per-layer input (Gemma 4)
  int bos_token = -1;        // -1 = none
  int eos_token = -1;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }  // a key's channels in the cache
  bool latent() const { return mla.kv_rank > 0; }
  bool sparse() const { return indexer.heads > 0; }
  int v_head_dim() const { return latent() ? mla.v_dim : head_dim; }  // a head's value channels
  int attn_dim() const { return n_heads * v_head_dim(); }             // attn's output: every head's values

  // Throws FormatError("<source>: ...") when the numbers cannot describe a working model.
  void validate(const std::string& source) const;
};

// A layer's heads: layer_shapes' entry, or n_kv_heads and head_dim (also for a layer outside the
// blocks: the embedding's -1, the final norm's n_layers).
AttentionShape attention_shape(const ModelConfig& config, int layer);
int head_dim(const ModelConfig& config, int layer);
// A head's value channels: head_dim, latent attention's v_head_dim.
int value_head_dim(const ModelConfig& config, int layer);

int q_dim(const ModelConfig& config, int layer);     // n_heads * the layer's head_dim
int kv_dim(const ModelConfig& config, int layer);    // a key's channels in the layer's cache
int attn_dim(const ModelConfig& config, int layer);  // attn's output in the layer: every head's values
// A layer's dense FFN width: ffn_dims' entry, or ffn_dim.
int ffn_dim(const ModelConfig& config, int layer);

// The layer whose KV cache a layer attends over (kv_sources; itself where empty), and whether that
// is another's (the layer then has no k_proj ... rope_k, v_proj, v_norm).
int kv_source(const ModelConfig& config, int layer);
bool shares_kv(const ModelConfig& config, int layer);

// The epsilon of a norm op: mla.norm_eps for latent attention's, the indexer's own for its key's,
// norm_eps for the others.
double norm_eps(const ModelConfig& config, Op op);
// What a norm op computes: the block's norm, but the indexer's key's LayerNorm (idx_k_norm).
NormKind norm_kind(const ModelConfig& config, Op op);
// Whether a layer is one of the sliding ones (sliding_layers; empty: all of them).
bool slides(const ModelConfig& config, int layer);
// The keys a query at position pos sees in a layer: the cache rows [first(pos), pos].
struct KeySpan {
  int window = 0;  // > 0: the last `window` positions (a sliding layer's)
  int chunk = 0;   // > 0: those from the start of pos's chunk of `chunk` positions (a chunked layer's)
  std::int64_t first(std::int64_t pos) const;
  friend bool operator==(const KeySpan&, const KeySpan&) = default;
};
// A layer's span: sliding_window where the layer slides, attention_chunk where it is chunked.
KeySpan key_span(const ModelConfig& config, int layer);
// Whether every layer sees every earlier position (no window, no chunk).
bool full_attention(const ModelConfig& config);
// Whether a layer takes sliding_rope in place of rope_base and rope_scaling.
bool uses_sliding_rope(const ModelConfig& config, int layer);
// A layer's RoPE base and scaling.
double rope_base(const ModelConfig& config, int layer);
const RopeScaling& rope_scaling(const ModelConfig& config, int layer);
// Whether a layer rotates q and k (its graph has rope_q and rope_k).
bool uses_rope(const ModelConfig& config, int layer);
// Whether the query temperature scales a layer's q (model/rope.h QueryTemperature); in a layer that
// does not rotate, rope_q then turns q by no angle and scales it only.
bool scales_query(const ModelConfig& config, int layer);
// Whether a layer's graph has rope_q: it rotates, or scales its q.
bool has_rope_q(const ModelConfig& config, int layer);
// Whether a layer's graph has q_norm and k_norm (model/block.h QkNorm).
bool has_qk_norm(const ModelConfig& config, int layer);
// Whether a layer's FFN is the mixture of experts (its graph has moe_router ... moe_out).
bool uses_experts(const ModelConfig& config, int layer);
// Whether the router's choice is made on scores of their own (moe_scores): a sigmoid router's (but
// one that chooses on its logits), or a router's with a selection bias.
bool has_choice_scores(const ModelConfig& config);
// The op whose values moe_ids chooses by: moe_scores where the model has them, else moe_router.
Op choice_op(const ModelConfig& config);

std::string_view rope_style_name(RopeStyle style);
nlohmann::json to_json(const ModelConfig& config);

}  // namespace tapdiff::model
