#pragma once
// The forward pass of a decoder, written down once as an ordered list of steps, built from the
// family's block (model/block.h). Both engines execute this list; neither decides the order or the
// data flow.
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/ops.h"

namespace tapdiff::model {

// The output of one op at one layer (layer -1 for embed, n_layers for final_norm and logits).
struct TensorId {
  Op op = Op::embed;
  int layer = -1;
  friend bool operator==(const TensorId&, const TensorId&) = default;
};
std::string to_string(const TensorId& id);  // "3/q_proj"

// One op of the graph with the tensors it reads (the KV cache is implicit for attn: it appends its
// inputs k and v of the chunk (rope_k and v_proj, or k_proj in a layer without RoPE) to the
// layer's cache and attends over the whole cache with its input q; a sparse layer's attn reads
// idx_ids last, and its idx_scores and idx_ids append idx_rope_k to the indexer's cache alike).
struct Step {
  Op op = Op::embed;
  int layer = -1;
  std::vector<TensorId> inputs;
  TensorId output() const { return {op, layer}; }
};

class Graph {
 public:
  explicit Graph(const ModelConfig& config);
  const std::vector<Step>& steps() const { return steps_; }
  const ModelConfig& config() const { return config_; }
  int n_layers() const { return n_layers_; }
  // op_width(config, id), below.
  int width(const TensorId& id) const;
  // The widest of an op's outputs over the layers (what a buffer reused across them must hold).
  int max_width(Op op) const;
  // The index of the step that writes `id` (steps().size() for a tensor the graph has not).
  std::size_t position(const TensorId& id) const;
  // The norm that reads `id` alone, if the graph has one: what an engine may fuse with the op that
  // writes `id` (a residual add and the norm after it).
  std::optional<TensorId> norm_of(const TensorId& id) const;

 private:
  ModelConfig config_;
  int n_layers_ = 0;
  std::vector<Step> steps_;
};

// The residual add that ends a layer: ple_residual where the model has per-layer inputs, else
// ffn_residual (the one a layer's learned output scale multiplies: Block::layer_scale).
Op last_residual(const ModelConfig& config);

// Number of columns of an op's output for this model (dim, q_dim, kv_dim, ffn_dim or vocab).
// Needs no Graph: the dump reader checks widths for a config with any number of layers.
// A layer's attention ops are as wide as its heads (model/config.h AttentionShape).
int op_width(const ModelConfig& config, const TensorId& id);

// How an op's row splits into heads: q_proj, q_norm, rope_q, attn: n_heads of head_dim; k_proj,
// v_proj, k_norm, rope_k: n_kv_heads; every other op: none.
struct HeadLayout {
  int heads = 0;
  int head_dim = 0;
  bool has_heads() const { return heads > 0; }
};
HeadLayout head_layout(const TensorId& id, const ModelConfig& config);

}  // namespace tapdiff::model
