#include "model/graph.h"

#include <fmt/core.h>

namespace tapdiff::model {

std::string to_string(const TensorId& id) { return fmt::format("{}/{}", id.layer, op_name(id.op)); }

Graph::Graph(const ModelConfig& config) : config_(config), n_layers_(config.n_layers) {
  auto add = [&](Op op, int layer, std::vector<TensorId> inputs) { steps_.push_back({op, layer, std::move(inputs)}); };
  add(Op::embed, -1, {});
  TensorId stream{Op::embed, -1};  // the residual stream entering the next layer
  for (int l = 0; l < n_layers_; ++l) {
    add(Op::attn_norm, l, {stream});
    add(Op::q_proj, l, {{Op::attn_norm, l}});
    add(Op::k_proj, l, {{Op::attn_norm, l}});
    add(Op::v_proj, l, {{Op::attn_norm, l}});
    TensorId q{Op::q_proj, l}, k{Op::k_proj, l};
    if (config.qk_norm) {
      add(Op::q_norm, l, {q});
      add(Op::k_norm, l, {k});
      q = {Op::q_norm, l}, k = {Op::k_norm, l};
    }
    add(Op::rope_q, l, {q});
    add(Op::rope_k, l, {k});
    add(Op::attn, l, {{Op::rope_q, l}, {Op::rope_k, l}, {Op::v_proj, l}});
    add(Op::o_proj, l, {{Op::attn, l}});
    add(Op::attn_residual, l, {stream, {Op::o_proj, l}});
    add(Op::ffn_norm, l, {{Op::attn_residual, l}});
    add(Op::ffn_gate, l, {{Op::ffn_norm, l}});
    add(Op::ffn_up, l, {{Op::ffn_norm, l}});
    add(Op::ffn_act, l, {{Op::ffn_gate, l}, {Op::ffn_up, l}});
    add(Op::ffn_down, l, {{Op::ffn_act, l}});
    add(Op::ffn_residual, l, {{Op::attn_residual, l}, {Op::ffn_down, l}});
    stream = {Op::ffn_residual, l};
  }
  add(Op::final_norm, n_layers_, {stream});
  add(Op::logits, n_layers_, {{Op::final_norm, n_layers_}});
}

int Graph::width(Op op) const { return op_width(config_, op); }

int op_width(const ModelConfig& config, Op op) {
  switch (op) {
    case Op::embed:
    case Op::attn_norm:
    case Op::o_proj:
    case Op::attn_residual:
    case Op::ffn_norm:
    case Op::ffn_down:
    case Op::ffn_residual:
    case Op::final_norm: return config.dim;
    case Op::q_proj:
    case Op::q_norm:
    case Op::rope_q:
    case Op::attn: return config.q_dim();
    case Op::k_proj:
    case Op::v_proj:
    case Op::k_norm:
    case Op::rope_k: return config.kv_dim();
    case Op::ffn_gate:
    case Op::ffn_up:
    case Op::ffn_act: return config.ffn_dim;
    case Op::logits: return config.vocab;
  }
  return 0;
}

}  // namespace tapdiff::model
