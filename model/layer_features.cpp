#include "model/layer_features.h"

namespace tapdiff::model {

std::string_view layer_feature(const ModelConfig& c) {
  if (c.block.v_norm) return "the values' norm (Gemma 4's v_norm)";
  if (c.layer_inputs.dim > 0) return "per-layer inputs (Gemma 4's hidden_size_per_layer_input)";
  if (!c.kv_sources.empty()) return "layers attending over another layer's cache (Gemma 4's num_kv_shared_layers)";
  if (c.block.layer_scale) return "a layer output's learned scale (Gemma 4's layer_scalar)";
  if (!c.layer_shapes.empty()) return "layers whose heads differ in number or width (Gemma 4's full layers)";
  if (!c.ffn_dims.empty()) return "layers of FFN widths of their own (Gemma 4's use_double_wide_mlp)";
  if (c.experts.beside_dense) return "a mixture of experts beside the dense FFN (Gemma 4's MoE block)";
  if (c.experts.expert_scales) return "experts' learned weight scales (Gemma 4's per_expert_scale)";
  return {};
}

}  // namespace tapdiff::model
