#include "model/graph.h"

#include <algorithm>

#include <fmt/core.h>

namespace tapdiff::model {

std::string to_string(const TensorId& id) { return fmt::format("{}/{}", id.layer, op_name(id.op)); }

Graph::Graph(const ModelConfig& config) : config_(config), n_layers_(config.n_layers) {
  const Block& b = config.block;
  auto add = [&](Op op, int layer, std::vector<TensorId> inputs) {
    steps_.push_back({op, layer, std::move(inputs)});
    return TensorId{op, layer};
  };
  // `op` on x where the block has it (a norm), else x itself.
  auto maybe = [&](bool present, Op op, int layer, TensorId x) { return present ? add(op, layer, {x}) : x; };
  // act(gate) * up, then down; or the router's chosen experts' FFNs weighted and summed.
  auto dense_ffn = [&](int layer, TensorId y) {
    if (b.ffn == Ffn::plain) return add(Op::ffn_down, layer, {add(Op::ffn_act, layer, {add(Op::ffn_up, layer, {y})})});
    const TensorId gate = add(Op::ffn_gate, layer, {y}), up = add(Op::ffn_up, layer, {y});
    return add(Op::ffn_down, layer, {add(Op::ffn_act, layer, {gate, up})});
  };
  auto mixture = [&](int layer, TensorId y) {
    const TensorId router = add(Op::moe_router, layer, {y});
    const bool scored = has_choice_scores(config);
    const TensorId ids = add(Op::moe_ids, layer, {scored ? add(Op::moe_scores, layer, {router}) : router});
    const TensorId routed = add(Op::moe_out, layer, {y, ids, add(Op::moe_weights, layer, {router, ids})});
    if (config.experts.shared_ffn_dim == 0) return routed;
    return add(Op::moe_sum, layer, {routed, add(Op::moe_shared, layer, {y})});
  };
  // A mixture beside the dense FFN (model/config.h Experts::beside_dense), both reading the
  // attention's residual through norms of their own.
  auto mixture_beside_dense = [&](int layer, TensorId residual, TensorId y) {
    const TensorId router = add(Op::moe_router, layer, {add(Op::moe_router_norm, layer, {residual})});
    const TensorId ids = add(Op::moe_ids, layer, {router});
    const TensorId weights = add(Op::moe_weights, layer, {router, ids});
    const TensorId routed = add(Op::moe_out, layer, {add(Op::moe_norm, layer, {residual}), ids, weights});
    const TensorId mixture_out = add(Op::moe_post_norm, layer, {routed});
    return add(Op::ffn_sum, layer, {add(Op::dense_post_norm, layer, {dense_ffn(layer, y)}), mixture_out});
  };
  // Latent attention (model/config.h LatentAttention): attn reads q, the heads' no-RoPE keys, their
  // values and the shared RoPE key part.
  auto latent_attention = [&](int layer, TensorId x) {
    const TensorId q_in = config.mla.q_rank > 0 ? add(Op::q_a_norm, layer, {add(Op::q_a_proj, layer, {x})}) : x;
    const TensorId q = add(Op::rope_q, layer, {add(Op::q_proj, layer, {q_in})});
    const TensorId kv_a = add(Op::kv_a_proj, layer, {x});
    const TensorId latent = add(Op::kv_a_norm, layer, {kv_a});
    const TensorId k = add(Op::k_proj, layer, {latent}), v = add(Op::v_proj, layer, {latent});
    const TensorId k_rope = add(Op::rope_k, layer, {kv_a});
    if (!config.sparse()) return add(Op::attn, layer, {q, k, v, k_rope});
    const TensorId index_q = add(Op::idx_rope_q, layer, {add(Op::idx_q_proj, layer, {q_in})});
    const TensorId index_k =
        add(Op::idx_rope_k, layer, {add(Op::idx_k_norm, layer, {add(Op::idx_k_proj, layer, {x})})});
    const TensorId index_w = add(Op::idx_weights, layer, {x});
    add(Op::idx_scores, layer, {index_q, index_k, index_w});
    return add(Op::attn, layer, {q, k, v, k_rope, add(Op::idx_ids, layer, {index_q, index_k, index_w})});
  };
  // q, k and v projected, then normed and rotated as the block says; a layer that attends over
  // another's cache (shares_kv) has q alone.
  auto attention = [&](int l, TensorId x) {
    const bool own_kv = !shares_kv(config, l), norms = has_qk_norm(config, l);
    TensorId q = add(Op::q_proj, l, {x}), k = own_kv ? add(Op::k_proj, l, {x}) : TensorId{};
    const TensorId v = own_kv ? maybe(b.v_norm, Op::v_norm, l, add(Op::v_proj, l, {x})) : TensorId{};
    const auto qk_norms = [&] {
      q = maybe(norms, Op::q_norm, l, q);
      k = maybe(norms && own_kv, Op::k_norm, l, k);
    };
    if (!b.qk_norm_after_rope) qk_norms();
    q = maybe(has_rope_q(config, l), Op::rope_q, l, q);
    k = maybe(uses_rope(config, l) && own_kv, Op::rope_k, l, k);
    if (b.qk_norm_after_rope) qk_norms();
    return own_kv ? add(Op::attn, l, {q, k, v}) : add(Op::attn, l, {q});
  };
  const TensorId embedding = add(Op::embed, -1, {});
  TensorId stream = embedding;  // the residual stream entering the next layer
  for (int l = 0; l < n_layers_; ++l) {
    const TensorId x = maybe(b.pre_norms, Op::attn_norm, l, stream);
    const TensorId attn = config.latent() ? latent_attention(l, x) : attention(l, x);
    const TensorId attn_out = maybe(b.post_norms, Op::attn_post_norm, l, add(Op::o_proj, l, {attn}));
    const TensorId layer_input = stream;
    stream = add(Op::attn_residual, l, {stream, attn_out});
    // A parallel block's FFN reads the layer's input (attn_norm's output, or its own norm of it).
    const TensorId y = b.parallel == Parallel::shared_norm ? x
                       : b.parallel == Parallel::own_norm  ? add(Op::ffn_norm, l, {layer_input})
                                                           : maybe(b.pre_norms, Op::ffn_norm, l, stream);
    const TensorId ffn = !uses_experts(config, l)      ? dense_ffn(l, y)
                         : config.experts.beside_dense ? mixture_beside_dense(l, stream, y)
                                                       : mixture(l, y);
    const TensorId ffn_out = maybe(b.post_norms, Op::ffn_post_norm, l, ffn);
    stream = add(Op::ffn_residual, l, {stream, ffn_out});
    if (config.layer_inputs.dim > 0) {  // Gemma 4's per-layer input (model/config.h LayerInputs)
      const TensorId input = add(Op::ple_input, l, {embedding});
      const TensorId act = add(Op::ple_act, l, {add(Op::ple_gate, l, {stream}), input});
      stream = add(Op::ple_residual, l, {stream, add(Op::ple_norm, l, {add(Op::ple_proj, l, {act})})});
    }
  }
  add(Op::logits, n_layers_, {add(Op::final_norm, n_layers_, {stream})});
}

std::optional<TensorId> Graph::norm_of(const TensorId& id) const {
  for (const Step& s : steps_)
    if (op_class(s.op) == OpClass::norm && s.inputs.size() == 1 && s.inputs.front() == id) return s.output();
  return std::nullopt;
}

Op last_residual(const ModelConfig& config) {
  return config.layer_inputs.dim > 0 ? Op::ple_residual : Op::ffn_residual;
}

int Graph::width(const TensorId& id) const { return op_width(config_, id); }

int Graph::max_width(Op op) const {
  int widest = 0;
  for (const Step& s : steps_)
    if (s.op == op) widest = std::max(widest, op_width(config_, s.output()));
  return widest;
}

std::size_t Graph::position(const TensorId& id) const {
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].output() == id) return i;
  return steps_.size();
}

HeadLayout head_layout(const TensorId& id, const ModelConfig& config) {
  const Op op = id.op;
  const AttentionShape shape = attention_shape(config, id.layer);
  if (config.latent()) {
    switch (op) {
      case Op::k_proj: return {config.n_heads, config.mla.nope_dim};
      case Op::v_proj:
      case Op::attn: return {config.n_heads, config.mla.v_dim};
      case Op::rope_k: return {1, config.mla.rope_dim};
      case Op::idx_q_proj:
      case Op::idx_rope_q: return {config.indexer.heads, config.indexer.head_dim};
      case Op::idx_k_proj:
      case Op::idx_k_norm:
      case Op::idx_rope_k: return {1, config.indexer.head_dim};
      default: break;
    }
  }
  switch (op) {
    case Op::q_proj:
    case Op::q_norm:
    case Op::rope_q:
    case Op::attn: return {config.n_heads, shape.head_dim};
    case Op::k_proj:
    case Op::v_proj:
    case Op::k_norm:
    case Op::v_norm:
    case Op::rope_k: return {shape.n_kv_heads, shape.head_dim};
    case Op::embed:
    case Op::attn_norm:
    case Op::q_a_proj:
    case Op::q_a_norm:
    case Op::kv_a_proj:
    case Op::kv_a_norm:
    case Op::idx_q_proj:
    case Op::idx_k_proj:
    case Op::idx_k_norm:
    case Op::idx_rope_q:
    case Op::idx_rope_k:
    case Op::idx_weights:
    case Op::idx_scores:
    case Op::idx_ids:
    case Op::o_proj:
    case Op::attn_post_norm:
    case Op::attn_residual:
    case Op::ffn_norm:
    case Op::ffn_gate:
    case Op::ffn_up:
    case Op::ffn_act:
    case Op::ffn_down:
    case Op::moe_router_norm:
    case Op::moe_router:
    case Op::moe_scores:
    case Op::moe_ids:
    case Op::moe_weights:
    case Op::moe_norm:
    case Op::moe_out:
    case Op::moe_post_norm:
    case Op::moe_shared:
    case Op::moe_sum:
    case Op::dense_post_norm:
    case Op::ffn_sum:
    case Op::ffn_post_norm:
    case Op::ffn_residual:
    case Op::ple_input:
    case Op::ple_gate:
    case Op::ple_act:
    case Op::ple_proj:
    case Op::ple_norm:
    case Op::ple_residual:
    case Op::final_norm:
    case Op::logits: return {};
  }
  return {};
}

int op_width(const ModelConfig& config, const TensorId& id) {
  const LatentAttention& mla = config.mla;
  const Op op = id.op;
  const int l = id.layer;
  switch (op) {
    case Op::q_a_proj:
    case Op::q_a_norm: return mla.q_rank;
    case Op::kv_a_proj: return mla.kv_rank + mla.rope_dim;
    case Op::kv_a_norm: return mla.kv_rank;
    case Op::idx_q_proj:
    case Op::idx_rope_q: return config.indexer.heads * config.indexer.head_dim;
    case Op::idx_k_proj:
    case Op::idx_k_norm:
    case Op::idx_rope_k: return config.indexer.head_dim;
    case Op::idx_weights: return config.indexer.heads;
    case Op::idx_scores: return config.indexer.top_k + 1;
    case Op::idx_ids: return config.indexer.top_k;
    case Op::embed:
    case Op::attn_norm:
    case Op::o_proj:
    case Op::attn_post_norm:
    case Op::attn_residual:
    case Op::ffn_norm:
    case Op::ffn_down:
    case Op::moe_router_norm:
    case Op::moe_norm:
    case Op::moe_out:
    case Op::moe_post_norm:
    case Op::moe_shared:
    case Op::moe_sum:
    case Op::dense_post_norm:
    case Op::ffn_sum:
    case Op::ffn_post_norm:
    case Op::ffn_residual:
    case Op::ple_proj:
    case Op::ple_norm:
    case Op::ple_residual:
    case Op::final_norm: return config.dim;
    case Op::ple_input:
    case Op::ple_gate:
    case Op::ple_act: return config.layer_inputs.dim;
    case Op::q_proj:
    case Op::q_norm:
    case Op::rope_q: return q_dim(config, l);
    case Op::attn: return attn_dim(config, l);
    case Op::k_proj: return config.latent() ? config.n_heads * mla.nope_dim : kv_dim(config, l);
    case Op::v_proj: return config.latent() ? config.attn_dim() : kv_dim(config, l);
    case Op::rope_k: return config.latent() ? mla.rope_dim : kv_dim(config, l);
    case Op::k_norm:
    case Op::v_norm: return kv_dim(config, l);
    case Op::ffn_gate:
    case Op::ffn_up:
    case Op::ffn_act: return ffn_dim(config, l);
    case Op::moe_router:
    case Op::moe_scores: return config.experts.count;
    case Op::moe_ids:
    case Op::moe_weights: return config.experts.active;
    case Op::logits: return config.vocab;
  }
  return 0;
}

}  // namespace tapdiff::model
