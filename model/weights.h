#pragma once
// A loaded model: its config and its weight tensors (views into memory-mapped files, never copied).
// The files are read into one by formats/load_model.h; the vocabulary is text's (text/vocabulary.h).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/dtype.h"
#include "model/ops.h"

namespace tapdiff::model {

// The weights of a decoder, named once; which of them a model has is its block's choice
// (model/block.h). Per-layer kinds use layer >= 0; the others use layer -1.
enum class WeightKind : std::uint8_t {
  token_embd,      // [vocab, dim]
  attn_norm,       // [dim]     (pre_norms only)
  wq,              // [q_dim, dim]
  wk,              // [kv_dim, dim]
  wv,              // [kv_dim, dim]
  bq,              // [q_dim]   (qkv_bias only)
  bk,              // [kv_dim]  (qkv_bias only)
  bv,              // [kv_dim]  (qkv_bias only)
  q_norm,          // [head_dim] (qk_norm per_head: one weight shared by every query head), [q_dim] (whole)
  k_norm,          // [head_dim] or [kv_dim], as q_norm
  wo,              // [dim, q_dim]
  bo,              // [dim]     (o_bias only)
  attn_post_norm,  // [dim]     (post_norms only)
  ffn_norm,        // [dim]     (pre_norms only, as attn_norm)
  ffn_gate,        // [ffn_dim, dim]
  ffn_up,          // [ffn_dim, dim]
  ffn_down,        // [dim, ffn_dim]
  b_gate,          // [ffn_dim] (mlp_bias only)
  b_up,            // [ffn_dim] (mlp_bias only)
  b_down,          // [dim]     (mlp_bias only)
  ffn_post_norm,   // [dim]   (post_norms only)
  moe_router,      // [experts.count, dim]                       (MoE layers, in place of ffn_gate ... b_down)
  moe_score_bias,  // [experts.count]: a sigmoid router's selection bias (experts.selection_bias only)
  expert_gate,     // [experts.count * experts.ffn_dim, dim]: expert e's rows [e * ffn_dim, (e + 1) * ffn_dim)
  expert_up,       // [experts.count * experts.ffn_dim, dim]
  expert_down,     // [experts.count * dim, experts.ffn_dim]: expert e's rows [e * dim, (e + 1) * dim)
  shexp_gate,      // [experts.shared_ffn_dim, dim]: the shared expert's (MoE layers with one)
  shexp_up,        // [experts.shared_ffn_dim, dim]
  shexp_down,      // [dim, experts.shared_ffn_dim]
  shexp_gate_inp,  // [1, dim]: the logit of its sigmoid gate (experts.shared_gate only)
  output_norm,     // [dim]
  output,          // [vocab, dim] (absent when tied_output)
  attn_norm_b,     // [dim]     (norm_bias only)
  ffn_norm_b,      // [dim]     (norm_bias only, where the block has ffn_norm)
  output_norm_b,   // [dim]     (norm_bias only)
  output_b,        // [vocab]   (output_bias only)
  pos_embd,        // [positions, dim] (learned_positions only): row position + position_offset
  xielu_alpha_p,   // [1] each (activation xielu: model/xielu.h)
  xielu_alpha_n,
  xielu_beta,
  xielu_eps,
  attn_sinks,     // [n_heads]: each head's sink logit (block.attention_sinks only)
  moe_router_b,   // [experts.count]: the router's bias (experts.router_bias only)
  expert_b_gate,  // [experts.count * experts.ffn_dim]: expert e's [e * ffn_dim, (e + 1) * ffn_dim) (experts.biases
                  // only)
  expert_b_up,    // [experts.count * experts.ffn_dim]
  expert_b_down,  // [experts.count * dim]
  // Latent attention's (model/config.h LatentAttention; wq, wk, wv are then q_proj's [n_heads *
  // head_dim, q_rank or dim], k_proj's [n_heads * nope_dim, kv_rank] and v_proj's [n_heads * v_dim, kv_rank]):
  wq_a,         // [q_rank, dim] (q_rank > 0)
  q_a_norm,     // [q_rank]
  wkv_a,        // [kv_rank + rope_dim, dim]
  kv_a_norm,    // [kv_rank]
  bq_a,         // [q_rank]  (mla.biases only)
  bkv_a,        // [kv_rank + rope_dim]  (mla.biases only)
  v_norm,       // [head_dim]: ones (block.v_norm only; the norm has no weight)
  layer_scale,  // [1]: the layer's output scale (block.layer_scale only)
  // Per-layer inputs' (model/config.h LayerInputs, of P channels a layer):
  ple_token_embd,  // [layer_inputs.vocab, n_layers * P]: the tokens' table
  ple_model_proj,  // [n_layers * P, dim]: the embedding's projection
  ple_proj_norm,   // [P]: its norm (RMS over each layer's P channels)
  ple_gate,        // [P, dim] per layer (per_layer_input_gate)
  ple_proj,        // [dim, P] per layer (per_layer_projection)
  ple_post_norm,   // [dim] per layer (post_per_layer_input_norm)
  // A mixture beside the dense FFN's (experts.beside_dense: Gemma 4's MoE block):
  moe_router_scale,  // [dim]: moe_router_norm's scale (the router's own, not offset by norm_offset)
  moe_expert_scale,  // [experts.count]: each expert's weight scale (experts.expert_scales only)
  moe_norm,          // [dim] (pre_feedforward_layernorm_2)
  moe_post_norm,     // [dim] (post_feedforward_layernorm_2)
  dense_post_norm,   // [dim] (post_feedforward_layernorm_1)
  // A sparse attention's indexer (model/config.h SparseIndexer, of H heads of D channels):
  idx_wq,        // [H * D, q_rank] (wq_b)
  idx_wk,        // [D, dim]
  idx_k_norm,    // [D]
  idx_k_norm_b,  // [D]
  idx_w_proj,    // [H, dim] (weights_proj)
};
std::string_view weight_kind_name(WeightKind kind);
bool is_per_layer(WeightKind kind);
// A norm weight or a bias (1-D), as opposed to a matrix.
bool is_vector(WeightKind kind);
// The matrix an op multiplies its input by and the bias it adds, where the model has one: q_proj
// (wq, bq) ... ffn_down (ffn_down, b_down), moe_router, and logits (output, or token_embd where
// tied); nullopt for an op without a matrix product. Both engines map ops to weights by it.
struct OpWeights {
  WeightKind matrix;
  std::optional<WeightKind> bias;
};
std::optional<OpWeights> op_weights(Op op, const ModelConfig& c);

// The weight a norm op scales by and the bias a LayerNorm adds where the block has them: attn_norm
// (attn_norm, attn_norm_b), q_norm, k_norm, attn_post_norm, ffn_norm (ffn_norm, ffn_norm_b),
// ffn_post_norm, final_norm (output_norm, output_norm_b); nullopt for an op that is no norm. Both
// engines map norm ops to weights by it.
struct NormWeights {
  WeightKind weight;
  std::optional<WeightKind> bias;
};
std::optional<NormWeights> norm_weights(Op op);

// An RMSNorm weight (scaled by norm_offset + w: model/block.h).
bool is_norm(WeightKind kind);

// Every kind, in the enum's order.
inline constexpr WeightKind kAllWeightKinds[] = {WeightKind::token_embd,
                                                 WeightKind::attn_norm,
                                                 WeightKind::wq,
                                                 WeightKind::wk,
                                                 WeightKind::wv,
                                                 WeightKind::bq,
                                                 WeightKind::bk,
                                                 WeightKind::bv,
                                                 WeightKind::q_norm,
                                                 WeightKind::k_norm,
                                                 WeightKind::wo,
                                                 WeightKind::bo,
                                                 WeightKind::attn_post_norm,
                                                 WeightKind::ffn_norm,
                                                 WeightKind::ffn_gate,
                                                 WeightKind::ffn_up,
                                                 WeightKind::ffn_down,
                                                 WeightKind::b_gate,
                                                 WeightKind::b_up,
                                                 WeightKind::b_down,
                                                 WeightKind::ffn_post_norm,
                                                 WeightKind::moe_router,
                                                 WeightKind::moe_score_bias,
                                                 WeightKind::expert_gate,
                                                 WeightKind::expert_up,
                                                 WeightKind::expert_down,
                                                 WeightKind::shexp_gate,
                                                 WeightKind::shexp_up,
                                                 WeightKind::shexp_down,
                                                 WeightKind::shexp_gate_inp,
                                                 WeightKind::output_norm,
                                                 WeightKind::output,
                                                 WeightKind::attn_norm_b,
                                                 WeightKind::ffn_norm_b,
                                                 WeightKind::output_norm_b,
                                                 WeightKind::output_b,
                                                 WeightKind::pos_embd,
                                                 WeightKind::xielu_alpha_p,
                                                 WeightKind::xielu_alpha_n,
                                                 WeightKind::xielu_beta,
                                                 WeightKind::xielu_eps,
                                                 WeightKind::attn_sinks,
                                                 WeightKind::moe_router_b,
                                                 WeightKind::expert_b_gate,
                                                 WeightKind::expert_b_up,
                                                 WeightKind::expert_b_down,
                                                 WeightKind::wq_a,
                                                 WeightKind::q_a_norm,
                                                 WeightKind::wkv_a,
                                                 WeightKind::kv_a_norm,
                                                 WeightKind::bq_a,
                                                 WeightKind::bkv_a,
                                                 WeightKind::v_norm,
                                                 WeightKind::layer_scale,
                                                 WeightKind::ple_token_embd,
                                                 WeightKind::ple_model_proj,
                                                 WeightKind::ple_proj_norm,
                                                 WeightKind::ple_gate,
                                                 WeightKind::ple_proj,
                                                 WeightKind::ple_post_norm,
                                                 WeightKind::moe_router_scale,
                                                 WeightKind::moe_expert_scale,
                                                 WeightKind::moe_norm,
                                                 WeightKind::moe_post_norm,
                                                 WeightKind::dense_post_norm,
                                                 WeightKind::idx_wq,
                                                 WeightKind::idx_wk,
                                                 WeightKind::idx_k_norm,
                                                 WeightKind::idx_k_norm_b,
                                                 WeightKind::idx_w_proj};
static_assert(std::size(kAllWeightKinds) == static_cast<std::size_t>(WeightKind::idx_w_proj) + 1);

// One weight tensor as stored: row-major [rows, cols] (cols contiguous; a 1-D tensor has rows = 1).
// For matrices rows = output features and cols = input features, so y = W x. Its rows lie in one
// span of a mapped file, or, for the experts of a model that stores each expert apart, in parts of
// equal row counts (stacked in order: part i holds rows [i * part_rows, (i + 1) * part_rows)).
struct WeightTensor {
  std::string name;  // name in the file, for messages
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::span<const std::byte> bytes;               // rows * row_bytes(dtype, cols) bytes; empty when in parts
  std::vector<std::span<const std::byte>> parts;  // rows / parts.size() rows each; empty when in bytes

  const std::byte* row(std::int64_t r) const {
    const std::size_t size = row_bytes(dtype, cols);
    if (parts.empty()) return bytes.data() + static_cast<std::size_t>(r) * size;
    const std::int64_t part_rows = rows / std::ssize(parts);
    return parts[static_cast<std::size_t>(r / part_rows)].data() + static_cast<std::size_t>(r % part_rows) * size;
  }
  // The tensor's bytes, gathered into `storage` when they lie in parts.
  std::span<const std::byte> contiguous(std::vector<std::byte>& storage) const;
  // Rows [first, first + count) of a tensor in one piece (a part of a fused projection), named
  // "<name>[first:end]".
  WeightTensor row_slice(std::int64_t first, std::int64_t count) const;
};

// One weight that a file's tensor holds: the whole tensor, or (rows > 0) its next `rows` rows, the
// parts of a fused projection in row order (Phi-3's q/k/v and gate/up); of a fused bias, its next
// `rows` values. Where `groups` > 1 the tensor is that many runs of the parts in turn, and a part
// is its rows of every run (GPT-NeoX's query_key_value: per head, q's rows, k's, v's).
struct WeightPart {
  WeightKind kind;
  int layer;              // -1 for whole-model tensors
  std::int64_t rows = 0;  // 0: the whole tensor
  std::int64_t groups = 1;
};

class MappedFile;  // model/mapped_file.h

class Model {
 public:
  Model(std::filesystem::path path, ModelConfig config);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const ModelConfig& config() const { return config_; }

  // The tensor, or FormatError naming the file and the missing tensor.
  const WeightTensor& weight(WeightKind kind, int layer = -1) const;
  const WeightTensor* find(WeightKind kind, int layer = -1) const;
  const std::map<std::pair<WeightKind, int>, WeightTensor>& tensors() const { return tensors_; }
  // sha256 of the model file (of every file, in order, for multi-file models): remembered from an
  // earlier run (model/sha256_cache.h), or computed on first use or by prefetch_sha256()'s thread.
  const std::string& sha256() const;
  // Starts finding sha256() on a thread of its own, so that hashing overlaps other work (loading
  // the weights onto a device); sha256() then waits for it.
  void prefetch_sha256() const;

  // For loaders: take ownership of a mapping and register tensors that point into it.
  const MappedFile& adopt(std::unique_ptr<MappedFile> file);
  // Keeps bytes a loader made (a part gathered from runs of a fused tensor) for the model's life.
  std::span<const std::byte> hold(std::vector<std::byte> bytes);
  void add(WeightKind kind, int layer, WeightTensor tensor);
  // Adds a [1, values] f32 weight the loader computed (held by the model), named `name`.
  void add_values(WeightKind kind, int layer, std::string name, std::span<const float> values);
  // Adds each part of `whole`, a tensor of `file`: FormatError when the parts' rows (a vector's
  // values) do not add up to the tensor's, or when another tensor already gave one of them.
  void add_parts(const WeightTensor& whole, std::span<const WeightPart> parts, const std::string& file);
  // Checks that every tensor the config needs is present with the shape the config implies.
  void validate() const;

 private:
  std::filesystem::path path_;
  ModelConfig config_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::deque<std::vector<std::byte>> held_;  // a deque: the spans into each stay valid as it grows
  std::map<std::pair<WeightKind, int>, WeightTensor> tensors_;
  std::string find_sha256() const;  // the cache's, or hashed (stopping early once stop_hashing_ is set)
  mutable std::mutex sha256_mutex_;
  mutable std::atomic<bool> stop_hashing_{false};
  mutable std::shared_future<std::string> sha256_;  // after files_: done with them before they unmap
};

// Weights of ones for the norms of a family whose norms have none (OLMo), the same as none; a norm
// weight the file holds is refused (the family's model has no place for it).
void add_unit_norms(Model& model);
// Weights of ones for the per-head norms that have none: the q and k norms of QkNorm::per_head_plain,
// the value norm (block.v_norm); one the file holds is refused.
void add_unit_head_norms(Model& model);
// v_proj's matrix (and bias) in the layers whose values are their keys' projection
// (ModelConfig::values_from_keys): k_proj's, the same bytes; a v_proj the file holds for such a
// layer is refused.
void add_values_from_keys(Model& model);

// UsageError naming the file where an engine cannot run the model as loaded: a GGUF's LongRoPE
// without a context size (formats::LoadOptions::context_size).
void require_runnable(const Model& m);

}  // namespace tapdiff::model
