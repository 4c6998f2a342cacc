#include "bisect/compare/attention_uniformity.h"

#include "model/errors.h"

namespace tapdiff::bisect {

AttentionUniformity::AttentionUniformity(const model::ModelConfig& config)
    : config_(config), layers_(static_cast<std::size_t>(config.n_layers)) {
  for (int l = 0; l < config.n_layers; ++l)
    layers_[static_cast<std::size_t>(l)].sum.assign(
        static_cast<std::size_t>(model::attention_shape(config, l).n_kv_heads * model::value_head_dim(config, l)), 0.0);
}

bool AttentionUniformity::applies(const model::ModelConfig& config) {
  return !config.block.v_norm && config.kv_sources.empty();
}

void AttentionUniformity::add_values(int layer, const model::HostTensor& v) {
  layers_[static_cast<std::size_t>(layer)].pending = v;
}

void AttentionUniformity::add_attention(int layer, const model::HostTensor& a, const model::HostTensor& b) {
  Layer& l = layers_[static_cast<std::size_t>(layer)];
  TAPDIFF_ASSERT(l.pending.rows() == a.rows() && a.rows() == b.rows(), "{} value rows for {} attention rows",
                 l.pending.rows(), a.rows());
  const model::AttentionShape shape = model::attention_shape(config_, layer);
  const int d = model::value_head_dim(config_, layer), group = config_.n_heads / shape.n_kv_heads;
  for (std::int64_t t = 0; t < a.rows(); ++t) {
    for (std::size_t c = 0; c < l.sum.size(); ++c) l.sum[c] += l.pending.at(t, static_cast<std::int64_t>(c));
    ++l.count;
    for (int h = 0; h < config_.n_heads; ++h)
      for (int i = 0; i < d; ++i) {
        const std::int64_t col = static_cast<std::int64_t>(h) * d + i;
        const double mean = l.sum[static_cast<std::size_t>((h / group) * d + i)] / static_cast<double>(l.count);
        const double x = a.at(t, col), y = b.at(t, col);
        l.stats.a_to_uniform += (x - mean) * (x - mean);
        l.stats.b_to_uniform += (y - mean) * (y - mean);
        l.stats.b_to_a += (y - x) * (y - x);
      }
  }
  l.stats.rows += a.rows();
  l.pending = {};
}

}  // namespace tapdiff::bisect
