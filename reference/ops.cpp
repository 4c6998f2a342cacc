#include "reference/ops.h"

#include "reference/emulated_ops.h"

namespace tapdiff::reference {

template <typename S>
std::string Ops<S>::kernel(model::Op op) const {
  switch (model::op_class(op)) {
    case model::OpClass::gemm: return "eigen-gemm";
    case model::OpClass::attention: return "eigen-attention-per-head";
    case model::OpClass::experts: return "eigen-gemm-per-expert";
    case model::OpClass::activation:
    case model::OpClass::routing:
    case model::OpClass::embedding:
    case model::OpClass::norm:
    case model::OpClass::rope:
    case model::OpClass::residual: return "eigen-rowwise";
  }
  return "?";
}

template <typename S>
void Ops<S>::norm(const Mat<S>& x, const VecMap& w, const S* bias, double eps, Mat<S>& out) {
  reference::norm<S>(x, config_.block.norm, w, bias, eps, config_.block.norm_offset, out);
}

template <typename S>
void Ops<S>::head_norm(const Mat<S>& x, const VecMap& w, Mat<S>& out) {
  norm_groups<S>(x, config_.block.norm, w, config_.norm_eps, config_.block.norm_offset, out);
}

template <typename S>
void Ops<S>::product(const Mat<S>& x, model::WeightKind matrix, int layer, const S* bias, Mat<S>& out) {
  matmul<S>(x, weights_.get(matrix, layer).matrix(), bias, out);
}

template <typename S>
model::RopeFrequencies Ops<S>::rope_frequencies(int layer, int positions) const {
  return model::rope_frequencies(config_, layer, model::rope_base(config_, layer), positions);
}

template <typename S>
void Ops<S>::activation(const Mat<S>& x, const model::Xielu& xielu, Mat<S>& out) {
  reference::activation<S>(x, config_.block.activation, out, xielu);
}

template <typename S>
void Ops<S>::gated_activation(const Mat<S>& gate, const Mat<S>& up, Mat<S>& out) {
  reference::gated_activation<S>(gate, up, config_.block, out);
}

template <typename S>
void Ops<S>::attention(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int layer, int first_pos,
                       const AttentionExtras<S>& extras, Mat<S>& out) {
  attend(q, k_cache, v_cache, layer, first_pos, model::attention_scale(config_.block, model::head_dim(config_, layer)),
         extras, {}, out);
}

template <typename S>
void Ops<S>::attend(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int layer, int first_pos,
                    double scale, const AttentionExtras<S>& extras, AttentionRounding rounding, Mat<S>& out) const {
  const model::AttentionShape shape = model::attention_shape(config_, layer);
  reference::attention<S>(q, k_cache, v_cache, first_pos, config_.n_heads, shape.n_kv_heads, shape.head_dim,
                          model::value_head_dim(config_, layer), model::key_span(config_, layer), scale,
                          config_.block.attention_softcap, extras, rounding, out);
}

template <typename S>
std::unique_ptr<Ops<S>> make_ops(const model::Model& model, WeightStore<S>& weights, model::Precision precision,
                                 std::uint64_t weight_budget) {
  if constexpr (std::is_same_v<S, float>)
    if (precision != model::Precision::f32) return make_emulated_ops(model, weights, precision, weight_budget);
  (void)precision;
  (void)weight_budget;
  return std::make_unique<Ops<S>>(model, weights);
}

template class Ops<float>;
template class Ops<double>;
template std::unique_ptr<Ops<float>> make_ops(const model::Model&, WeightStore<float>&, model::Precision,
                                              std::uint64_t);
template std::unique_ptr<Ops<double>> make_ops(const model::Model&, WeightStore<double>&, model::Precision,
                                               std::uint64_t);

}  // namespace tapdiff::reference
